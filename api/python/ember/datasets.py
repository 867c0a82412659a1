"""Datasets read by Ember's C++ (torchvision.datasets' names): MNIST and Fashion-MNIST from their
IDX files, and ``read_idx`` for any IDX file of bytes.

Samples are ``(image, label)``: image float32 [1, 28, 28] in [0, 1] (what torchvision's
``ToTensor()`` makes of its images), label an int64 0-d tensor. A DataLoader over them (or a Subset
of them) makes each batch in one C++ call::

    train = ember.datasets.FashionMNIST(train=True)   # 60000 samples
    loader = ember.utils.data.DataLoader(train, batch_size=64, shuffle=True)

torchvision's ``transform`` and ``target_transform`` are taken too: a dataset given either makes
its samples in Python, ``transform`` getting the image as torchvision's gets its PIL image (here the
uint8 [28, 28] tensor of the file's bytes, a row of ``.data``) and ``target_transform`` the label as
an int.
"""

import os
from typing import Any, Callable, List, Optional, Tuple, Union

from ember._C import Tensor, uint8
from ember._C import data as _native
from ember._C.data import find_fashion_mnist, read_idx  # noqa: F401
from ember.utils.data import Dataset
from ember.utils.data.dataset import _rebuild_native

__all__ = ["MNIST", "FashionMNIST", "find_fashion_mnist", "read_idx"]

PathLike = Union[str, "os.PathLike[str]"]


class MNIST(_native.MNIST, Dataset):
    """MNIST-format images and labels read from the four IDX files (gzipped or not) in `root`:
    ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte`` and the ``t10k-`` pair. ``limit``
    keeps the first samples only. ``images`` and ``labels`` are the whole tensors.
    ``transform``/``target_transform``, as torchvision's, apply to each sample (module
    docstring); ``download`` is accepted for torchvision's signature: Ember reads files only."""

    def __init__(self, root: PathLike, train: bool = True, limit: Optional[int] = None,
                 transform: Optional[Callable[[Tensor], Any]] = None,
                 target_transform: Optional[Callable[[int], Any]] = None,
                 download: bool = False) -> None:
        super().__init__(os.fspath(root), train, limit)
        self.root = os.fspath(root)
        self.train = train
        self.limit = limit
        self.transform = transform
        self.target_transform = target_transform

    def __getitem__(self, index: int) -> Tuple[Any, Any]:
        if self.transform is None and self.target_transform is None:
            return _native.Dataset.__getitem__(self, index)
        image, label = self.images[index], int(self.labels[index])
        if self.transform is not None:
            image = self.transform(image.squeeze(0).mul(255).round().to(uint8))
        return image, label if self.target_transform is None else self.target_transform(label)

    # Without transforms, the samples are the C++ ones: a DataLoader makes a batch in one call.
    __getitem__._native_without_transforms = True  # type: ignore[attr-defined]

    def __reduce__(self):
        # Pickled (to worker processes under spawn) as where its files are: read again there.
        return _rebuild_native, (type(self), _native.MNIST, (self.root, self.train, self.limit),
                                 dict(self.__dict__))

    @property
    def targets(self) -> Tensor:
        """The labels, int64 [N] (torchvision's name)."""
        return self.labels

    @property
    def data(self) -> Tensor:
        """The images as torchvision's MNIST holds them: uint8 [N, 28, 28], the file's bytes."""
        return self.images.squeeze(1).mul(255).round().to(uint8)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(root={self.root!r}, split={'train' if self.train else 'test'}, "
                f"samples={len(self)})")


class FashionMNIST(MNIST):
    """Fashion-MNIST: 60000 training and 10000 test images of 10 kinds of clothing. With no
    `root`, the directory is $EMBER_DATA_DIR or that of Debian's ``dataset-fashion-mnist``
    package (/usr/share/datasets/fashion-mnist); an ember.IoError names where it looked."""

    classes: List[str] = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                          "Sneaker", "Bag", "Ankle boot"]

    def __init__(self, root: Optional[PathLike] = None, train: bool = True,
                 limit: Optional[int] = None,
                 transform: Optional[Callable[[Tensor], Any]] = None,
                 target_transform: Optional[Callable[[int], Any]] = None,
                 download: bool = False) -> None:
        super().__init__(find_fashion_mnist(None if root is None else os.fspath(root)), train,
                         limit, transform, target_transform, download)
