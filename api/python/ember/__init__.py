"""Ember: an eager deep-learning runtime with reverse-mode autograd, from Python.

The names follow PyTorch's: ``ember.tensor``, ``ember.nn.Module``, ``ember.optim.SGD``,
``ember.utils.data.DataLoader`` and so on. The native core (``ember._C``) holds the tensors,
ops, autograd engine and layers; the backends (CPU, CUDA, reference, communication) are
plugins found next to it at import. See README.md and ARCHITECTURE.md, "Python".
"""

from ember import _C
from ember import _spellings

_spellings.install()  # before the names are copied below
from ember._C import *  # noqa: F401,F403,E402  (tensors, dtypes, devices, factories, ops, errors)
from ember._C import Tensor, dtype, device, Generator  # noqa: F401
from ember._size import Size  # noqa: F401
from ember._legacy_types import *  # noqa: F401,F403  (FloatTensor, LongTensor, ...)
from ember._errors import (  # noqa: F401
    DeviceError,
    DistributedError,
    Error,
    FileNotFoundError,
    IndexError,
    InternalError,
    IoError,
    KeyError,
    NotImplementedError,
    OutOfMemoryError,
    PluginError,
    TypeError,
    ValueError,
)

import builtins as _builtins
from typing import Any as _Any
from ember import return_types  # noqa: F401
from ember.autograd import (  # noqa: F401
    no_grad,
    enable_grad,
    set_grad_enabled,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
)
from ember import autograd, nn, optim, amp, utils, io, profiler, distributed, models, cuda, datasets, ops  # noqa: F401
from ember import accelerator, backends, distributions, jit, linalg, onnx, serialization  # noqa: F401
from ember import multiprocessing  # noqa: F401  (tensors through shared memory between processes)
from ember import random  # noqa: F401  (torch.random)
from ember._tensor_str import set_printoptions  # noqa: F401
from ember.random import default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state  # noqa: F401
from ember.amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401
from ember.io import save, load  # noqa: F401
from ember._compile import compile  # noqa: F401  (torch.compile)
from ember._C.functional import pixel_shuffle, pixel_unshuffle  # noqa: F401  (torch.pixel_shuffle)
from ember._C.functional import cosine_similarity, pairwise_distance  # noqa: F401
from ember._C.functional import adaptive_avg_pool1d, adaptive_max_pool1d, avg_pool1d, max_pool1d  # noqa: F401
from ember._C.functional import threshold  # noqa: F401
from ember._torch_functions import *  # noqa: F401,F403,E402  (torch.abs_, torch.conv2d, torch.pi...)
from ember import _composites  # noqa: E402

_composites.install()  # torch.median, torch.kron, linalg.matrix_exp... and their Tensor methods
from ember import special  # noqa: F401,E402  (torch.special, over the ops and composites above)

__version__ = _C.version()


def is_tensor(obj: object) -> _builtins.bool:
    """True if obj is an ember.Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> _builtins.int:
    """The number of elements of input."""
    return input.numel()


def clone(input: Tensor, *, memory_format: _Any = None) -> Tensor:
    """A copy of input that autograd tracks (Tensor.clone)."""
    return input.clone() if memory_format is None else input.clone(memory_format=memory_format)


def plugins() -> _builtins.list:
    """The plugin files discovery considered and what happened to each (``ember plugins``)."""
    return _C.plugin_report()["plugins"]  # type: ignore[index, no-any-return]


def load_plugin(path: str) -> dict:  # type: ignore[type-arg]
    """Loads one plugin file (a backend or an op library); returns its record. A plugin that
    fails is reported in the record, not raised, unless plugins are strict."""
    return _C.load_plugin(str(path))  # type: ignore[no-any-return]


# PyTorch's dtype names, including those that shadow Python's builtins inside this module
# (ember.float, ember.int, ember.bool); kept out of _C, whose stubs need the builtins.
bool = _C._dtypes["bool"]
float = float32  # noqa: F405
double = float64  # noqa: F405
half = float16  # noqa: F405
long = int64  # noqa: F405
int = int32  # noqa: F405
