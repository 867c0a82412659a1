"""DistributedSampler (torch.utils.data.distributed): each rank's share of an epoch."""

from typing import Iterator, Optional, Sized

from ember._C import data as _native
from ember.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[int]):
    """This rank's share of the dataset: every rank draws the same permutation (seeded by `seed`
    and the epoch) and takes every num_replicas-th index from position `rank`, so the ranks'
    shares are disjoint and equally long: padded with the permutation's first indices, or with
    `drop_last` cut to len(dataset) // num_replicas. num_replicas and rank default to the default
    process group's (ember.distributed). Call ``set_epoch(epoch)`` before each epoch for a new
    order. Ember's C++ sampler, so a Python and a C++ trainer see the same orders."""

    def __init__(self, dataset: Sized, num_replicas: Optional[int] = None,
                 rank: Optional[int] = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        self._native = _native.DistributedSampler(
            rank=-1 if rank is None else rank, world_size=-1 if num_replicas is None else num_replicas,
            shuffle=shuffle, seed=seed, drop_last=drop_last)
        self.dataset = dataset
        self.num_replicas = self._native.world_size
        self.rank = self._native.rank
        self.epoch = 0
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last

    @property
    def num_samples(self) -> int:
        """Indices this rank gets per epoch."""
        return self._native.num_samples(len(self.dataset))

    @property
    def total_size(self) -> int:
        """Indices all ranks get per epoch together."""
        return self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        return iter(self._native.indices(len(self.dataset), self.epoch))

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch, which (with the seed) chooses the permutation."""
        self.epoch = epoch
