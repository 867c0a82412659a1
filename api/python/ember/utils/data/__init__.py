"""Data loading (torch.utils.data): datasets, samplers, collation and the DataLoader.

Map-style datasets subclass ``Dataset`` (``__getitem__``, ``__len__``), streams subclass
``IterableDataset`` (``__iter__``); ``DataLoader`` batches either, shuffled and made ahead by
worker processes if asked (or worker threads: ``worker_mode="thread"``), their batches sent back
through shared memory. ``TensorDataset`` and the datasets of ``ember.datasets`` are Ember's C++
datasets, whose batches are made in one call without the GIL.
"""

from ember.utils.data._collate import default_collate, default_convert
from ember.utils.data.dataloader import DataLoader, WorkerInfo, get_worker_info
from ember.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember.utils.data.distributed import DistributedSampler
from ember.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler",
    "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset",
    "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler", "WorkerInfo",
    "default_collate", "default_convert", "get_worker_info", "random_split",
]
