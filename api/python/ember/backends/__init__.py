"""Backend switches (torch.backends): cuDNN's and cuBLAS's options on the CUDA backend, and what
is built in. An option set where the CUDA backend is not loaded is kept and has no effect, as
PyTorch's flags are on a build without CUDA."""

import sys
from typing import Dict

from ember import _C

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]


def _has_type(name: str) -> bool:
    return any(t["name"] == name for t in _C.device_types())


class _Options:
    """Boolean options of one backend, read from and written to the backend where it is
    loaded."""

    _keys: Dict[str, str] = {}  # attribute -> the backend's option key ("" for Python-side only)
    _defaults: Dict[str, bool] = {}  # values of the Python-side options before they are set
    _type = "cuda"

    def __init__(self) -> None:
        object.__setattr__(self, "_kept", {})

    def __getattr__(self, name: str) -> bool:
        keys = type(self)._keys
        if name not in keys:
            raise AttributeError(f"module 'ember.backends' has no attribute '{name}'")
        if keys[name] and _has_type(self._type):
            return _C.backend_option(self._type, keys[name]) == "1"
        return self._kept.get(name, self._defaults.get(name, False))

    def __setattr__(self, name: str, value: bool) -> None:
        keys = type(self)._keys
        if name not in keys:
            raise AttributeError(f"ember.backends has no option '{name}'")
        if not isinstance(value, bool):
            raise TypeError(f"[backends] {name} must be a bool: got {type(value).__name__}")
        if keys[name] and _has_type(self._type):
            _C.set_backend_option(self._type, keys[name], "1" if value else "0")
        self._kept[name] = value


class _Cudnn(_Options):
    """torch.backends.cudnn: benchmark (pick algorithms by timing them), allow_tf32, and the
    flags Ember's cuDNN paths always honour (enabled, deterministic)."""

    _keys = {"benchmark": "cudnn.benchmark", "allow_tf32": "cudnn.allow_tf32", "enabled": "",
             "deterministic": ""}
    _defaults = {"enabled": True, "deterministic": False}

    def is_available(self) -> bool:
        """True if the CUDA backend is loaded and has a device (cuDNN comes with it)."""
        return _C.device_count("cuda") > 0

    def version(self):
        """None: the version is the CUDA backend's, reported by `ember doctor`."""
        return None


class _Matmul(_Options):
    """torch.backends.cuda.matmul: allow_tf32 for float32 matmuls on CUDA."""

    _keys = {"allow_tf32": "matmul.allow_tf32"}


class _Cuda:
    """torch.backends.cuda."""

    def __init__(self) -> None:
        self.matmul = _Matmul()

    def is_built(self) -> bool:
        """True if the CUDA backend plugin is loaded (with or without a GPU)."""
        return _has_type("cuda")


class _Built:
    """A backend that is or is not part of this installation."""

    def __init__(self, available) -> None:
        self._available = available

    def is_available(self) -> bool:
        """Whether this backend can run here."""
        return self._available()

    def is_built(self) -> bool:
        """Whether this backend is part of the installation."""
        return self._available()


cudnn = _Cudnn()
cuda = _Cuda()
mps = _Built(lambda: False)  # Apple's Metal: no Ember backend
mkldnn = _Built(lambda: _has_type("cpu"))  # oneDNN runs the CPU backend
openmp = _Built(lambda: _has_type("cpu"))

# `import ember.backends.cudnn as cudnn` (as scripts import torch's) finds these objects as the
# submodules they stand for, as PyTorch registers its own flag modules.
for _name in __all__:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]
