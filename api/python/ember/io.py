"""Saving and loading tensors (torch.save, torch.load, safetensors).

``ember.save(module.state_dict(), "model.safetensors")`` writes a safetensors file (readable by
the safetensors library and PyTorch), atomically: a temporary beside the target, renamed over it,
so a crash never leaves half a file. As torch.save, it writes what the path names: a symlink's
target (the link stays), a FIFO or device through itself; a directory is refused. ``ember.load(path)`` reads a safetensors file or a file
written by torch.save (PyTorch 1.6+), returning its tensors on the CPU by name; a torch.save file
is read by a restricted unpickler that runs none of its code (as weights_only=True would). A
missing file raises ember.FileNotFoundError (a FileNotFoundError), a malformed one ember.IoError
(an OSError) naming what is wrong.
"""

import os
from typing import Any, Dict, Mapping, Optional, Union

from ember._C import Tensor
from ember._C import io as _native

__all__ = ["save", "load", "load_metadata", "load_torch"]

PathLike = Union[str, "os.PathLike[str]"]


def _path(f: Any, fn: str) -> str:
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ember.{fn} takes a path (str or os.PathLike), got {type(f).__name__}")
    return os.fspath(f)


def save(obj: Mapping[str, Tensor], f: PathLike, metadata: Optional[Mapping[str, str]] = None) -> None:
    """Writes a dict of tensors (a module's or optimizer's state_dict(); tensors on any device,
    with any strides) to `f` as a safetensors file, with optional string metadata: a file
    atomically, a symlink's target, a FIFO or device written through."""
    _native.save(obj, _path(f, "save"), metadata)


def load(f: PathLike, map_location: Any = None, *, weights_only: bool = True) -> Dict[str, Tensor]:
    """The tensors of a safetensors or torch.save file by name (a nested checkpoint's by dotted
    name, "model.fc.weight"), on the CPU or moved to `map_location` (a device or its name).
    ``weights_only`` is accepted for torch.load's signature: Ember only ever reads tensors and
    plain values, never code, whatever it says."""
    tensors = _native.load(_path(f, "load"))
    if map_location is not None:
        tensors = {name: t.to(map_location) for name, t in tensors.items()}
    return tensors


def load_metadata(f: PathLike) -> Dict[str, str]:
    """The string metadata of a safetensors file (its header is validated as by load)."""
    return _native.load_metadata(_path(f, "load_metadata"))


def load_torch(f: PathLike):
    """The tensors and the other values (ints, floats, strings... as str()) of a torch.save file,
    each by dotted name: ``tensors, values = load_torch("checkpoint.pt")``."""
    return _native.load_torch(_path(f, "load_torch"))
