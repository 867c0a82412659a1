"""Samplers (torch.utils.data.sampler): the order in which an epoch visits a dataset, and its
grouping into batches. Random orders come from ember's generators, so ember.manual_seed (or the
`generator` argument) makes them reproducible."""

import itertools
from typing import Generic, Iterable, Iterator, List, Optional, Sequence, Sized, TypeVar, Union

from ember import _C
from ember._C import Generator

T_co = TypeVar("T_co", covariant=True)

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _draw_seed(generator: Optional[Generator] = None) -> int:
    """A seed drawn from `generator` (the default generator if None)."""
    return int(_C.randint(0, 2**62, (), generator=generator).item())


class Sampler(Generic[T_co]):
    """Base of the samplers: subclass it and define ``__iter__`` (indices, or lists of indices for
    a batch sampler) and, where it is known, ``__len__``."""

    def __init__(self, data_source: Optional[Sized] = None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler[int]):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random permutation each epoch (or `num_samples` draws with replacement). Without a
    generator, each epoch draws its seed from the default generator, so epochs differ and
    ember.manual_seed fixes them all."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: Optional[int] = None, generator: Optional[Generator] = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        """Indices per epoch: len(data_source) unless given."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator()
            generator.manual_seed(_draw_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _C.randint(n, (32,), generator=generator).tolist()
            yield from _C.randint(n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _C.randperm(n, generator=generator).tolist()
            yield from _C.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order each epoch."""

    def __init__(self, indices: Sequence[int], generator: Optional[Generator] = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _C.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Optional[Generator] = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = _C.as_tensor(weights, dtype=_C.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = _C.multinomial(self.weights, self.num_samples, self.replacement,
                               generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[List[int]]):
    """Groups another sampler's indices into lists of `batch_size` (the last one shorter unless
    `drop_last`)."""

    def __init__(self, sampler: Union[Sampler[int], Iterable[int]], batch_size: int,
                 drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[List[int]]:
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
