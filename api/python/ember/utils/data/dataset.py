"""Datasets (torch.utils.data.dataset): map-style and iterable datasets, the C++ TensorDataset,
concatenations, subsets and random splits."""

import bisect
import inspect
import itertools
import math
import operator
import warnings
from typing import Generic, Iterable, Iterator, List, Optional, Sequence, Tuple, TypeVar, Union

from ember import _C
from ember._C import Generator, Tensor
from ember._C import data as _native

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset",
           "StackDataset", "random_split"]


class Dataset(Generic[T_co]):
    """A map-style dataset: subclass it and define ``__getitem__(index)`` and ``__len__()``
    (samplers need the length). A ``__getitems__(indices)`` returning the list of samples, if
    defined, is what the DataLoader calls to fetch a batch in one call."""

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: "Dataset[T_co]") -> "ConcatDataset[T_co]":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A dataset that is a stream of samples: subclass it and define ``__iter__()``. With
    DataLoader workers, each worker thread iterates its own ``iter(dataset)``; split the work
    with ``get_worker_info()`` or every worker yields every sample."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other: "Dataset[T_co]") -> "ChainDataset":  # type: ignore[override]
        return ChainDataset([self, other])


class TensorDataset(_native.TensorDataset, Dataset[Tuple[Tensor, ...]]):
    """Samples are the rows (dim 0) of tensors that share ``size(0)``: ``dataset[i]`` is
    ``tuple(t[i] for t in tensors)``. Backed by Ember's C++ TensorDataset, so a DataLoader makes
    each batch with one index_select per tensor, without the GIL."""

    def __getitem__(self, index) -> Tuple[Tensor, ...]:
        try:
            i = operator.index(index)
        except TypeError:
            return tuple(t[index] for t in self.tensors)
        return _native.TensorDataset.__getitem__(self, i)

    def __reduce__(self):
        # Pickled (to worker processes under spawn) as its tensors, which multiprocessing sends
        # through shared memory, and the attributes of a subclass.
        return _rebuild_native, (type(self), _native.TensorDataset, tuple(self.tensors),
                                 dict(self.__dict__))


def _rebuild_native(cls, native, args, state):
    """Unpickles a C++ dataset of Python class `cls`: `native`'s constructor on `args`, then the
    instance's attributes."""
    obj = cls.__new__(cls)
    native.__init__(obj, *args)
    obj.__dict__.update(state)
    return obj


# The __getitem__ methods whose samples the C++ get_batch and __getitems__ make (Note [Native
# batches] in api/python/src/data.cpp); a subclass overriding __getitem__ is fetched through it.
_NATIVE_GETITEMS = (inspect.getattr_static(_native.Dataset, "__getitem__"),
                    TensorDataset.__dict__["__getitem__"])
_NATIVE_GETITEMS_BATCH = inspect.getattr_static(_native.Dataset, "__getitems__")


def _native_samples(dataset) -> bool:
    """True for a C++ dataset whose samples are its C++ ones (__getitem__ not overridden, or
    overridden by one marked ``_native_without_transforms`` (ember.datasets') on a dataset given
    no torchvision-style transform or target_transform)."""
    if not isinstance(dataset, _native.Dataset):
        return False
    getitem = inspect.getattr_static(type(dataset), "__getitem__")
    if getitem in _NATIVE_GETITEMS:
        return True
    return getattr(getitem, "_native_without_transforms", False) and \
        getattr(dataset, "transform", None) is None and \
        getattr(dataset, "target_transform", None) is None


def _getitems(dataset):
    """The dataset's __getitems__ if it has one that fetches what __getitem__ would, else None."""
    getitems = getattr(dataset, "__getitems__", None)
    if not callable(getitems):
        return None
    if inspect.getattr_static(type(dataset), "__getitems__", None) is _NATIVE_GETITEMS_BATCH and \
            not _native_samples(dataset):
        return None
    return getitems


def _native_batch(dataset):
    """A function making a collated batch of `dataset` in one C++ call, or None."""
    if _native_samples(dataset):
        return dataset.get_batch
    if isinstance(dataset, Subset) and type(dataset).__getitem__ is Subset.__getitem__:
        inner = _native_batch(dataset.dataset)
        if inner is not None:
            indices = dataset.indices
            return lambda batch: inner([indices[i] for i in batch])
    return None


class ConcatDataset(Dataset[T_co]):
    """Several map-style datasets one after the other."""

    datasets: List[Dataset[T_co]]
    cumulative_sizes: List[int]

    @staticmethod
    def cumsum(sequence) -> List[int]:
        """The running totals of the lengths of `sequence`'s datasets."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        if idx < 0:
            if -idx > len(self):
                raise IndexError(f"index {idx} out of range for a dataset of {len(self)}")
            idx += len(self)
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        if d == len(self.datasets):
            raise IndexError(f"index {idx} out of range for a dataset of {len(self)}")
        return self.datasets[d][idx - (self.cumulative_sizes[d - 1] if d else 0)]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type, misc]


class StackDataset(Dataset[T_co]):
    """Several datasets of one length side by side: sample i is the tuple of their samples i
    (``StackDataset(a, b)``) or the dict of them by name (``StackDataset(image=a, text=b)``)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(self._length != len(d) for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else dict(kwargs)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: List[int]) -> list:
        """The samples at `indices`, each dataset's through its own __getitems__ if it has one."""
        items = self.datasets.items() if isinstance(self.datasets, dict) else \
            enumerate(self.datasets)
        columns = {}
        for key, d in items:
            getitems = _getitems(d)
            columns[key] = getitems(indices) if getitems is not None else [d[i] for i in indices]
        if isinstance(self.datasets, dict):
            return [{k: columns[k][j] for k in columns} for j in range(len(indices))]
        return [tuple(columns[k][j] for k in range(len(columns))) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class Subset(Dataset[T_co]):
    """The samples of `dataset` at `indices`, in that order."""

    dataset: Dataset[T_co]
    indices: Sequence[int]

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: List[int]) -> List[T_co]:
        """The samples at `indices`, through the dataset's own __getitems__ if it has one."""
        getitems = _getitems(self.dataset)
        if getitems is not None:
            return getitems([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[Union[int, float]],
                 generator: Optional[Generator] = None) -> List[Subset[T_co]]:
    """Splits `dataset` into disjoint random subsets of the given lengths, or fractions summing to
    1 (the remainder of the rounding goes one by one to the first subsets). The permutation is
    drawn from `generator` (the default generator if None), so ember.manual_seed fixes it."""
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, length in enumerate(counts):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                              "dataset.", stacklevel=2)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths ({sum(lengths)}) does not equal the length of the "
                         f"input dataset ({n})")
    indices = _C.randperm(n, generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]  # type: ignore[arg-type]
