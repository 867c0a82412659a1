"""default_collate and default_convert (torch.utils.data._utils.collate): samples into batches."""

import collections.abc
import copy
import re

from ember import _C
from ember._C import Tensor

__all__ = ["default_collate", "default_convert"]

_NUMPY_STRINGS = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(obj) -> bool:
    return type(obj).__module__ == "numpy" and type(obj).__name__ not in ("str_", "bytes_", "string_")


def default_convert(data):
    """Converts NumPy arrays and scalars to tensors, inside lists, tuples and dicts too; the
    collate_fn of a DataLoader with batch_size=None."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy(data):
        if type(data).__name__ == "ndarray" and _NUMPY_STRINGS.search(data.dtype.str) is not None:
            return data
        return _C.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        try:
            return type(data)(converted)  # type: ignore[call-arg]
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted_list = [default_convert(d) for d in data]
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            clone[:] = converted_list
            return clone
        try:
            return type(data)(converted_list)  # type: ignore[call-arg]
        except TypeError:
            return converted_list
    return data


def default_collate(batch):
    """Collates a list of samples into a batch: tensors are stacked along a new dim 0, NumPy
    arrays likewise (as tensors), Python floats become a float64 tensor, ints an int64 tensor
    (bools a bool one), strings stay a list; tuples (to a list), lists, dicts and namedtuples are
    collated field by field."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _C.stack(list(batch), 0)
    if _is_numpy(elem):
        import numpy as np

        if type(elem).__name__ in ("ndarray", "memmap"):
            if _NUMPY_STRINGS.search(elem.dtype.str) is not None:
                raise TypeError(_ERROR.format(elem.dtype))
            return _C.as_tensor(np.stack(batch))
        if elem.shape == ():
            return _C.as_tensor(np.array(batch))
    elif isinstance(elem, float):
        return _C.tensor(batch, dtype=_C.float64)
    elif isinstance(elem, int):
        return _C.tensor(batch)
    elif isinstance(elem, (str, bytes)):
        return batch
    elif isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(collated)
            return clone
        try:
            return type(elem)(collated)  # type: ignore[call-arg]
        except TypeError:
            return collated
    elif isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    elif isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            clone[:] = transposed
            return clone
        try:
            return type(elem)(transposed)  # type: ignore[call-arg]
        except TypeError:
            return transposed
    raise TypeError(_ERROR.format(type(elem)))
