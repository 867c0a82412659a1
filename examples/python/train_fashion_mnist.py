"""Trains a small CNN on Fashion-MNIST (Debian's dataset-fashion-mnist) from Python:
about 90% test accuracy after 2 epochs.    python examples/python/train_fashion_mnist.py [epochs]"""

import sys
import time

import ember
from ember import nn
from ember.utils.data import DataLoader


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                                        nn.Dropout(0.25), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


def main(epochs=2):
    ember.manual_seed(0)
    train = DataLoader(ember.datasets.FashionMNIST(train=True), batch_size=64, shuffle=True, num_workers=1)
    test = DataLoader(ember.datasets.FashionMNIST(train=False), batch_size=500)
    model = CNN()
    opt = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = ember.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(train))
    for epoch in range(epochs):
        model.train()
        start = time.time()
        for images, labels in train:
            loss = nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        with ember.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test)
        accuracy = correct / len(test.dataset)
        print(f"epoch {epoch + 1}: loss {loss.item():.3f}, test accuracy {accuracy:.4f}, {time.time() - start:.0f} s")
    return accuracy


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
