"""The named tuples ops return: values and indices (torch.return_types)."""

from typing import NamedTuple

from ember._C import Tensor


class max(NamedTuple):
    """max(input, dim): the largest values and their indices."""

    values: Tensor
    indices: Tensor


class min(NamedTuple):
    """min(input, dim): the smallest values and their indices."""

    values: Tensor
    indices: Tensor


class sort(NamedTuple):
    """sort(input, dim): the sorted values and the indices that sort."""

    values: Tensor
    indices: Tensor


class topk(NamedTuple):
    """topk(input, k): the k largest (or smallest) values and their indices."""

    values: Tensor
    indices: Tensor


class IncompatibleKeys(NamedTuple):
    """What load_state_dict did not match: keys the module has that the dict lacks, and keys the
    dict has that the module lacks."""

    missing_keys: list
    unexpected_keys: list
