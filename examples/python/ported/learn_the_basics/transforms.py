# PyTorch's "Learn the Basics" tutorial, Transforms (pytorch/tutorials
# beginner_source/basics/transforms_tutorial.py), run by Ember: its code with the imports naming
# ember instead of torch and torchvision (ToTensor and Lambda, plain code, from _vision.py) and
# the data from Ember's Fashion-MNIST reader, which takes torchvision's arguments, instead of a
# download (marked below). The tutorial's prose is left out; nothing else is changed.
import ember as torch
from ember import datasets
from _vision import ToTensor, Lambda

ds = datasets.FashionMNIST(
    root=None,  # Data: Ember's Fashion-MNIST (was root="data")
    train=True,
    download=True,
    transform=ToTensor(),
    target_transform=Lambda(lambda y: torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1))
)

target_transform = Lambda(lambda y: torch.zeros(
    10, dtype=torch.float).scatter_(dim=0, index=torch.tensor(y), value=1))
