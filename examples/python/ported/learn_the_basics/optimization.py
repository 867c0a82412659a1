# PyTorch's "Learn the Basics" tutorial, Optimization (pytorch/tutorials
# beginner_source/basics/optimization_tutorial.py), run by Ember: its code with the imports naming
# ember instead of torch and torchvision (ToTensor from _vision.py) and the data from Ember's
# Fashion-MNIST reader, which takes torchvision's arguments, instead of a download (marked below;
# EMBER_EXAMPLE_LIMIT=N keeps the first N samples, EMBER_EXAMPLE_EPOCHS the number of epochs).
# The tutorial's prose is left out; nothing else is changed.
import os

import ember as torch
from ember import nn
from ember.utils.data import DataLoader
from ember import datasets
from _vision import ToTensor

limit = int(os.environ.get("EMBER_EXAMPLE_LIMIT", "0")) or None  # Data: the first N samples
training_data = datasets.FashionMNIST(
    root=None,  # Data: Ember's Fashion-MNIST (was root="data")
    train=True,
    download=True,
    transform=ToTensor(),
    limit=limit,
)

test_data = datasets.FashionMNIST(
    root=None,  # Data: Ember's Fashion-MNIST (was root="data")
    train=False,
    download=True,
    transform=ToTensor(),
    limit=limit,
)

train_dataloader = DataLoader(training_data, batch_size=64)
test_dataloader = DataLoader(test_data, batch_size=64)

class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits

model = NeuralNetwork()


learning_rate = 1e-3
batch_size = 64
epochs = 5


# Initialize the loss function
loss_fn = nn.CrossEntropyLoss()


optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)


def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    # Set the model to training mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        # Compute prediction and loss
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 100 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    # Set the model to evaluation mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0

    # Evaluating the model with torch.no_grad() ensures that no gradients are computed during test mode
    # also serves to reduce unnecessary gradient computations and memory usage for tensors with requires_grad=True
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()

    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")


loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

epochs = int(os.environ.get("EMBER_EXAMPLE_EPOCHS", "10"))  # was: epochs = 10
for t in range(epochs):
    print(f"Epoch {t+1}\n-------------------------------")
    train_loop(train_dataloader, model, loss_fn, optimizer)
    test_loop(test_dataloader, model, loss_fn)
print("Done!")
