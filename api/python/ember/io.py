"""Saving and loading (torch.save, torch.load, safetensors).

``ember.save(obj, f)`` writes a dict of tensors (a state_dict) as a safetensors file (readable by
the safetensors library and PyTorch) and any other picklable object (a checkpoint with numbers
and nested dicts, a whole module, a list of tensors) in torch.save's zip format, which PyTorch's
torch.load reads too. ``f`` is a path or a binary file object. A path is written as torch.save
does, but atomically: a regular file through a temporary renamed over it, so a crash never
leaves half a file; a symlink's target (the link stays), a FIFO or device through itself; a
directory is refused. A path ending in ``.safetensors`` takes only a dict of tensors.

``ember.load(f)`` reads either format and returns what was saved: a safetensors file's tensors
by name, a torch.save file's object as it was nested. With ``weights_only=True`` (the default, as
in PyTorch 2.6 and later) a torch.save file is read by Ember's restricted reader, which runs none
of its code and rebuilds only tensors and plain containers (plus the globals allowed with
``ember.serialization.add_safe_globals``); ``weights_only=False`` unpickles anything, for files
one trusts (whole modules). A missing file raises ember.FileNotFoundError (a FileNotFoundError),
a malformed one ember.IoError (an OSError) naming what is wrong.
"""

import io as _io
import os
import pickle
import tempfile
import zipfile
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Dict, Optional, Union

from ember import _C
from ember._C import Tensor
from ember._C import io as _native

__all__ = ["save", "load", "load_metadata", "load_torch"]

PathLike = Union[str, "os.PathLike[str]"]

# Note [Files PyTorch reads]
# A torch.save file is a zip archive of `<name>/data.pkl` (the pickled object, protocol 2),
# `<name>/data/<key>` (each storage's bytes, little-endian), `<name>/byteorder` and
# `<name>/version`. In the pickle a tensor is torch._utils._rebuild_tensor_v2(storage, offset,
# sizes, strides, requires_grad, OrderedDict()) over a persistent id ('storage',
# torch.<T>Storage, key, 'cpu', numel); the storage types and the rebuild function are pickled
# by name as globals of torch (written directly, so torch need not be importable), so PyTorch
# reads Ember's files as its own, with weights_only=True for state dicts and checkpoints. Ember
# writes one storage per tensor holding its elements in row-major order: a view is saved as its
# values, and two tensors that shared memory load as two.
_STORAGE_TYPES = {
    "FloatStorage": _C.float32, "DoubleStorage": _C.float64, "HalfStorage": _C.float16,
    "BFloat16Storage": _C.bfloat16, "LongStorage": _C.int64, "IntStorage": _C.int32,
    "CharStorage": _C.int8, "ByteStorage": _C.uint8, "BoolStorage": _C._dtypes["bool"],
}
_STORAGE_OF = {dtype: name for name, dtype in _STORAGE_TYPES.items()}
_ARCHIVE = "archive"


def _path(f: Any, fn: str) -> str:
    if not isinstance(f, (str, os.PathLike)):
        raise TypeError(f"ember.{fn} takes a path (str or os.PathLike), got {type(f).__name__}")
    return os.fspath(f)


def _is_path(f: Any) -> bool:
    return isinstance(f, (str, os.PathLike))


def _is_tensor_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


class _TorchName:
    """A global of torch's, pickled by name (GLOBAL) without importing torch."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle's save_reduce asks for a callable
        raise TypeError(f"{self.module}.{self.name} is only a name to pickle")


_REBUILD = _TorchName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchName("torch._utils", "_rebuild_parameter")


class _Rebuilt:
    """A value pickled as the call `reduce` (a (function, args) pair) makes."""

    def __init__(self, reduce: Any) -> None:
        self.reduce = reduce


class _Pickler(pickle._Pickler):  # the Python pickler: it lets a type be written by hand
    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file: Any, storages: Dict[str, bytes]) -> None:
        super().__init__(file, protocol=2)
        self._storages = storages

    def _save_torch_name(self, obj: _TorchName) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_TorchName] = _save_torch_name

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, tuple) and len(obj) == 4 and obj[0] == "ember.storage":
            _, key, dtype, numel = obj
            return ("storage", _TorchName("torch", _STORAGE_OF[dtype]), key, "cpu", numel)
        return None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _Rebuilt):
            return obj.reduce
        if not isinstance(obj, Tensor):
            return NotImplemented
        if obj.dtype not in _STORAGE_OF:
            raise TypeError(f"[io.save] tensors of dtype {obj.dtype} cannot be saved")
        key = str(len(self._storages))
        self._storages[key] = _native.tensor_bytes(obj)
        storage = ("ember.storage", key, obj.dtype, obj.numel())
        strides, stride = [], 1
        for size in reversed(tuple(obj.shape)):
            strides.insert(0, stride)
            stride *= max(size, 1)
        rebuilt = (_REBUILD, (storage, 0, tuple(obj.shape), tuple(strides), obj.requires_grad,
                              OrderedDict()))
        if isinstance(obj, _C.Parameter):  # torch.nn.Parameter when PyTorch reads it
            return (_REBUILD_PARAMETER, (_Rebuilt(rebuilt), obj.requires_grad, OrderedDict()))
        return rebuilt


def _torch_bytes(obj: Any) -> bytes:
    """obj in torch.save's format (Note [Files PyTorch reads])."""
    storages: Dict[str, bytes] = {}
    data = _io.BytesIO()
    _Pickler(data, storages).dump(obj)
    out = _io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{_ARCHIVE}/data.pkl", data.getvalue())
        z.writestr(f"{_ARCHIVE}/byteorder", "little")
        for key, raw in storages.items():
            z.writestr(f"{_ARCHIVE}/data/{key}", raw)
        z.writestr(f"{_ARCHIVE}/version", "3\n")
    return out.getvalue()


def save(obj: Any, f: Any, metadata: Optional[Mapping[str, str]] = None,
         pickle_protocol: int = 2) -> None:
    """Writes obj to f (a path or a binary file object): a dict of tensors as safetensors (with
    optional string metadata), anything else in torch.save's format."""
    safetensors_path = _is_path(f) and os.fspath(f).endswith(".safetensors")
    if safetensors_path or (metadata is not None) or (_is_path(f) and _is_tensor_dict(obj)):
        if not _is_path(f):
            raise TypeError("[io.save] metadata is written to safetensors files, which take a path")
        _native.save(obj, os.fspath(f), metadata)
        return
    data = _torch_bytes(obj)
    if _is_path(f):
        _native.write_file(os.fspath(f), data)
    elif callable(getattr(f, "write", None)):
        f.write(data)
    else:
        raise TypeError(f"ember.save takes a path (str or os.PathLike) or a binary file object, "
                        f"got {type(f).__name__}")


def _to_location(obj: Any, map_location: Any) -> Any:
    if map_location is None:
        return obj
    if isinstance(obj, Tensor):
        if callable(map_location):
            return map_location(obj, "cpu")
        if isinstance(map_location, Mapping):
            return obj.to(map_location.get("cpu", "cpu"))
        return obj.to(map_location)
    if isinstance(obj, dict):
        items = ((k, _to_location(v, map_location)) for k, v in obj.items())
        return OrderedDict(items) if isinstance(obj, OrderedDict) else dict(items)
    if isinstance(obj, list):
        return [_to_location(v, map_location) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_to_location(v, map_location) for v in obj)
    return obj


class _Unpickler(pickle.Unpickler):
    """Unpickles a torch.save file's data.pkl, its storages read from the archive. With
    `allowed` (a set of (module, name)), only those globals (and the ones that rebuild tensors)
    are found; without, every global is imported, as pickle does."""

    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str,
                 allowed: Optional[set]) -> None:
        super().__init__(_io.BytesIO(data))
        self._archive, self._prefix, self._allowed = archive, prefix, allowed
        self._storages: Dict[str, Tensor] = {}

    def find_class(self, module: str, name: str) -> Any:
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_parameter"):
            return _rebuild_tensor if name == "_rebuild_tensor_v2" else _rebuild_parameter
        if module == "torch" and name in _STORAGE_TYPES:
            return _STORAGE_TYPES[name]
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module == "ember._utils" and name == "_rebuild_module":
            # Safe under weights_only: the class it rebuilds is itself a global, found (and so
            # allowed or refused) by this method first (Note [Copying and pickling modules]).
            from ember._utils import _rebuild_module
            return _rebuild_module
        if self._allowed is not None and (module, name) not in self._allowed:
            raise pickle.UnpicklingError(
                f"global '{module}.{name}' is not allowed with weights_only=True (allow it with "
                f"ember.serialization.add_safe_globals, or load a file you trust with "
                f"weights_only=False)")
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        _, dtype, key, _location, numel = pid
        if key not in self._storages:
            raw = self._archive.read(f"{self._prefix}data/{key}")
            self._storages[key] = _native.tensor_from_bytes(raw, dtype)
        t = self._storages[key]
        if t.numel() < numel:
            raise pickle.UnpicklingError(f"storage {key} holds {t.numel()} elements, not {numel}")
        return t


def _rebuild_tensor(storage: Tensor, offset: int, sizes: Any, strides: Any, requires_grad: bool,
                    *_: Any) -> Tensor:
    t = storage.as_strided(tuple(sizes), tuple(strides), offset)
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_parameter(data: Tensor, requires_grad: bool, *_: Any) -> Any:
    return _C.Parameter(data, requires_grad)


def _unpickle(path: str, allowed: Optional[set]) -> Any:
    try:
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if not pkl:
                raise _C.IoError(f"[io.load] {path}: a zip archive without data.pkl is not a "
                                 f"torch.save file")
            prefix = pkl[0][: -len("data.pkl")]
            if f"{prefix}byteorder" in z.namelist() and \
                    z.read(f"{prefix}byteorder").strip() not in (b"", b"little"):
                raise _C.IoError(f"[io.load] {path}: only little-endian files are unpickled")
            return _Unpickler(z.read(pkl[0]), z, prefix, allowed).load()
    except (pickle.UnpicklingError, zipfile.BadZipFile, EOFError, KeyError, ValueError,
            AttributeError, ImportError, IndexError, TypeError) as e:
        raise _C.IoError(f"[io.load] {path}: {type(e).__name__}: {e}") from e


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: Optional[bool] = None, mmap: Any = None, **pickle_load_args: Any) -> Any:
    """What f (a path or a binary file object) holds: a safetensors file's tensors by name, a
    torch.save file's object as saved, tensors on the CPU or moved by `map_location` (a device,
    its name, a {'cpu': device} dict or a function of (tensor, 'cpu'))."""
    if not _is_path(f):
        if not callable(getattr(f, "read", None)):
            raise TypeError(f"ember.load takes a path (str or os.PathLike) or a binary file "
                            f"object, got {type(f).__name__}")
        with tempfile.NamedTemporaryFile(prefix="ember-load-") as tmp:
            tmp.write(f.read())
            tmp.flush()
            return load(tmp.name, map_location, weights_only=weights_only)
    path = os.fspath(f)
    with open(path, "rb") if os.path.isfile(path) else _io.BytesIO() as probe:
        head = probe.read(4)
    if head[:2] != b"PK":  # safetensors (or not a file: the native reader says what is wrong)
        return _to_location(_native.load(path), map_location)
    if weights_only is False:
        return _to_location(_unpickle(path, None), map_location)
    from ember import serialization
    allowed = serialization._allowed()
    if allowed:
        return _to_location(_unpickle(path, serialization._DEFAULT_ALLOWED | allowed),
                            map_location)
    return _to_location(_native.load_object(path), map_location)


def load_metadata(f: PathLike) -> Dict[str, str]:
    """The string metadata of a safetensors file (its header is validated as by load)."""
    return _native.load_metadata(_path(f, "load_metadata"))


def load_torch(f: PathLike):
    """The tensors and the other values (ints, floats, strings... as str()) of a torch.save file,
    each by dotted name: ``tensors, values = load_torch("checkpoint.pt")``."""
    return _native.load_torch(_path(f, "load_torch"))
