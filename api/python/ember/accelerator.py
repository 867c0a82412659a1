"""The accelerator (torch.accelerator): the one device type of a higher priority than the CPU
that a backend plugin registered (CUDA with Ember's own plugins), whether it has devices, and
which one this thread uses. Scripts written as

    device = ember.accelerator.current_accelerator() if ember.accelerator.is_available() else "cpu"

run on the accelerator where there is one and on the CPU elsewhere, as with PyTorch.
"""

from typing import Optional, Union

from ember import _C

__all__ = ["current_accelerator", "current_device_index", "current_device_idx", "device_count",
           "is_available", "set_device_index", "set_device_idx", "synchronize"]


def _accelerator_type() -> Optional[dict]:
    """The registered device type of highest priority above the CPU's, or None."""
    types = _C.device_types()
    cpu = next(t["priority"] for t in types if t["name"] == "cpu")
    above = [t for t in types if t["priority"] > cpu]
    return max(above, key=lambda t: t["priority"]) if above else None


def current_accelerator(check_available: bool = False) -> Optional[_C.device]:
    """The accelerator's device type (a device without an index), or None where no backend
    registers one; with check_available, None also where it has no device."""
    t = _accelerator_type()
    if t is None or (check_available and t["count"] == 0):
        return None
    return _C.device(t["name"])


def is_available() -> bool:
    """True if an accelerator is registered and has at least one device."""
    t = _accelerator_type()
    return t is not None and t["count"] > 0


def device_count() -> int:
    """The number of accelerator devices (0 without one)."""
    t = _accelerator_type()
    return 0 if t is None else t["count"]


def _require() -> str:
    t = _accelerator_type()
    if t is None or t["count"] == 0:
        reason = "" if t is None else f": {t['reason']}"
        raise _C.DeviceError(f"[accelerator] no accelerator device is available{reason}")
    return t["name"]


def current_device_index() -> int:
    """This thread's current accelerator device index."""
    return _C.device(_require()).index or 0


def set_device_index(device: Union[_C.device, str, int]) -> None:
    """Makes an accelerator device this thread's current one."""
    name = _require()
    index = device if isinstance(device, int) else _C.device(device).index or 0
    _C._set_current_device(_C.device(name, index))


current_device_idx = current_device_index
set_device_idx = set_device_index


def synchronize(device: Union[_C.device, str, int, None] = None) -> None:
    """Waits for all work queued on an accelerator device (the current one by default)."""
    name = _require()
    index = current_device_index() if device is None else (
        device if isinstance(device, int) else _C.device(device).index or 0)
    _C.synchronize(_C.device(name, index))
