"""A Python module made of Ember's C++ layers, and Python modules inside a C++ container:
they nest either way, train together and save as one state dict.

    python examples/python/mixed_modules.py
"""

import os
import tempfile

import ember
from ember import nn


class Residual(nn.Module):
    """x + f(x): a Python block around C++ layers."""

    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU())
        self.gate = nn.Parameter(ember.zeros(1))

    def forward(self, x):
        return x + self.gate.tanh() * self.body(x)


class SequenceClassifier(nn.Module):
    """An LSTM (cuDNN's on a GPU, oneDNN's on the CPU) under Python residual blocks."""

    def __init__(self, features, width, classes):
        super().__init__()
        self.rnn = nn.LSTM(features, width, batch_first=True)
        # A C++ Sequential holding Python modules: it calls their forward from C++.
        self.blocks = nn.Sequential(*[Residual(width) for _ in range(2)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        out, (h, _) = self.rnn(x)
        return self.head(self.blocks(h[-1]))


def main():
    ember.manual_seed(0)
    model = SequenceClassifier(features=3, width=16, classes=2)
    print(model)
    x = ember.randn(64, 10, 3)
    y = (x[:, :, 0].sum(dim=1) > 0).long()  # the sign of the first feature's sum
    opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(60):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    print(f"loss {loss.item():.3f}, training accuracy {accuracy:.2f}")

    path = os.path.join(tempfile.mkdtemp(), "classifier.safetensors")
    ember.save(model.state_dict(), path)
    copy = SequenceClassifier(features=3, width=16, classes=2)
    copy.load_state_dict(ember.load(path))
    assert ember.equal(copy(x), model(x))
    print(f"saved {len(model.state_dict())} tensors to {path} and loaded them into a fresh model")


if __name__ == "__main__":
    main()
