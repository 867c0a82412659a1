"""Automatic mixed precision (torch.amp): autocast and GradScaler.

Inside ``with ember.autocast():`` (or a function decorated with it) matmul, linear and
convolution run in bfloat16 on the CPU (float16 on CUDA) and softmax, norms, losses and
reductions in float32; the state is per thread and scopes nest. ``GradScaler`` scales the loss
so float16 gradients do not underflow and skips the steps whose gradients overflowed. Both are
Ember's C++ (``ember._C.amp``; Note [Autocast] in core/amp/autocast.cpp, Note [Loss scaling] in
api/amp/grad_scaler.cpp).
"""

import warnings
from typing import Any, Dict, Optional

from ember import _errors
from ember._C import Tensor, dtype
from ember._C import amp as _native
from ember.autograd.grad_mode import _DecoratorContextManager

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype"]


def is_autocast_enabled(device_type: str = "cpu") -> bool:
    """Whether autocast is on for device_type ("cpu", "cuda") on this thread."""
    return _native.is_autocast_enabled(device_type)


def get_autocast_dtype(device_type: str = "cpu") -> dtype:
    """The lower-precision dtype autocast uses for device_type on this thread."""
    return _native.get_autocast_dtype(device_type)


class autocast(_DecoratorContextManager):
    """Mixed precision in its scope (torch.autocast): ops that gain from a lower precision run in
    dtype (bfloat16 on the CPU, float16 elsewhere, by default), those that need range in float32.
    A context manager and a decorator; enabled=False turns autocast off inside. cache_enabled is
    accepted for compatibility (Ember keeps no cache of cast weights)."""

    def __init__(self, device_type: str = "cpu", dtype: Optional[dtype] = None, enabled: bool = True,
                 cache_enabled: Optional[bool] = None):
        if not isinstance(device_type, str):
            raise _errors.TypeError(f"[autocast] device_type must be a str such as 'cpu' or 'cuda': got "
                                    f"{type(device_type).__name__}")
        self.device_type = device_type
        self.fast_dtype = dtype
        self.enabled = bool(enabled)
        self.cache_enabled = cache_enabled
        self._scopes: list = []

    def __enter__(self) -> "autocast":
        self._scopes.append(_native.AutocastScope(self.device_type, self.fast_dtype, self.enabled))
        return self

    def __exit__(self, *exc: Any) -> None:
        self._scopes.pop().exit()

    def clone(self) -> "autocast":
        """A fresh scope with the same settings (each use of the decorator gets its own)."""
        return autocast(self.device_type, self.fast_dtype, self.enabled, self.cache_enabled)


class GradScaler:
    """Loss scaling (torch.amp.GradScaler): scaler.scale(loss).backward(); scaler.step(opt);
    scaler.update(). step() unscales the gradients (unless unscale_ did), skips the optimizer
    step if any is inf or NaN, and update() then backs the scale off by backoff_factor; after
    growth_interval clean steps it grows by growth_factor. With device 'cuda' and no CUDA device
    it disables itself with a warning, as PyTorch does. Works with the built-in optimizers and
    with ember.optim.Optimizer subclasses; the inf/NaN check covers all the optimizers
    unscaled in a step together."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        from ember import cuda
        self._device = device
        if enabled and device == "cuda" and not cuda.is_available():
            warnings.warn("ember.amp.GradScaler is enabled, but CUDA is not available; disabling it "
                          "(pass device='cpu' to scale on the CPU)")
            enabled = False
        self._native = _native.GradScaler(float(init_scale), float(growth_factor), float(backoff_factor),
                                          int(growth_interval), bool(enabled))

    def scale(self, outputs: Any) -> Any:
        """outputs (a tensor, or lists and tuples of them) multiplied by the scale."""
        if not self.is_enabled():
            return outputs
        if isinstance(outputs, Tensor):
            return self._native.scale(outputs)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise _errors.TypeError(f"[amp.GradScaler] scale() takes a tensor or lists and tuples of tensors: got "
                                f"{type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divides the optimizer's gradients by the scale and checks them for inf and NaN; once
        per step (call it before clipping the gradients)."""
        if not self.is_enabled():
            return
        native = _native_optimizer(optimizer)
        if native is not None:
            self._native.unscale_(native)
        else:
            self._native.unscale_(id(optimizer), _params_of(optimizer))

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """optimizer.step(*args, **kwargs) unless a gradient is inf or NaN (unscaling first if
        unscale_ was not called); returns what it returned, or None when skipped."""
        if not self.is_enabled():
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise _errors.NotImplementedError("[amp.GradScaler] step() with a closure is not supported")
        native = _native_optimizer(optimizer)
        run = lambda: optimizer.step(*args, **kwargs)  # noqa: E731
        if native is not None:
            return self._native.step(native, run)
        return self._native.step(id(optimizer), _params_of(optimizer), run)

    def update(self, new_scale: Optional[float] = None) -> None:
        """Adapts the scale to this step (or sets it to new_scale) and starts the next step."""
        if not self.is_enabled():
            return
        self._native.update(None if new_scale is None else float(new_scale))

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._native.get_scale() if self.is_enabled() else 1.0

    def is_enabled(self) -> bool:
        """Whether the scaler scales."""
        return self._native.enabled

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._native.growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by."""
        return self._native.backoff_factor

    def get_growth_interval(self) -> int:
        """Clean steps before the scale grows."""
        return self._native.growth_interval

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
        ({} when disabled)."""
        if not self.is_enabled():
            return {}
        s = self._native.state_dict()
        return {"scale": s["scale"].item(), "growth_factor": self.get_growth_factor(),
                "backoff_factor": self.get_backoff_factor(), "growth_interval": self.get_growth_interval(),
                "_growth_tracker": int(s["growth_tracker"].item())}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict(): scale, growth tracker and settings."""
        if not self.is_enabled():
            return
        if len(state_dict) == 0:
            raise _errors.ValueError("[amp.GradScaler] load_state_dict: the state is empty (saved from a disabled "
                                     "GradScaler?)")
        import ember
        native = _native.GradScaler(float(state_dict["scale"]), float(state_dict["growth_factor"]),
                                    float(state_dict["backoff_factor"]), int(state_dict["growth_interval"]), True)
        native.load_state_dict({
            "scale": ember.tensor(float(state_dict["scale"]), dtype=ember.float64),
            "growth_tracker": ember.tensor(int(state_dict["_growth_tracker"]), dtype=ember.int64),
        })
        self._native = native


def _native_optimizer(optimizer: Any) -> Any:
    """The C++ optimizer of a built-in optimizer, None for one written in Python."""
    from ember.optim import Optimizer, _NativeOptimizer
    if isinstance(optimizer, _NativeOptimizer):
        return optimizer._native
    if not isinstance(optimizer, Optimizer):
        raise _errors.TypeError(f"[amp.GradScaler] {type(optimizer).__name__} is not an ember.optim.Optimizer")
    return None


def _params_of(optimizer: Any) -> list:
    return [p for group in optimizer.param_groups for p in group["params"]]
