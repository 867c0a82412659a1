"""CUDA devices (torch.cuda): whether they are there, how many, and their streams."""

from typing import Optional, Union

from ember import _C

_Device = Union[_C.device, str, int, None]


def _device(d: _Device) -> _C.device:
    if d is None:
        return _C.device("cuda")
    if isinstance(d, int):
        return _C.device("cuda", d)
    return _C.device(d) if isinstance(d, str) else d


def is_available() -> bool:
    """True if the CUDA backend loaded and found at least one GPU."""
    return device_count() > 0


def device_count() -> int:
    """The number of CUDA devices (0 without the backend or a GPU)."""
    return _C.device_count("cuda")


def current_device() -> int:
    """This thread's current CUDA device index."""
    return _C.device("cuda").index or 0


def set_device(device: _Device) -> None:
    """Makes a CUDA device this thread's current one."""
    _C._set_current_device(_device(device))


def synchronize(device: _Device = None) -> None:
    """Waits for all work queued on a CUDA device."""
    _C.synchronize(_device(device))


def current_stream(device: _Device = None) -> _C.Stream:
    """This thread's current stream of a CUDA device."""
    return _C.current_stream(_device(device))


def default_stream(device: _Device = None) -> _C.Stream:
    """The default stream of a CUDA device."""
    return _C.default_stream(_device(device))


def Stream(device: _Device = None, priority: int = 0) -> _C.Stream:  # noqa: N802
    """A stream from the device's pool (high priority if priority < 0)."""
    return _C.stream_from_pool(_device(device), priority < 0)


def Event(enable_timing: bool = False, device: _Device = None) -> _C.Event:  # noqa: N802
    """An event on a CUDA device."""
    return _C.Event(_device(device), enable_timing)


class stream:
    """Makes a stream current for its scope (torch.cuda.stream)."""

    def __init__(self, s: Optional[_C.Stream]):
        self.s = s

    def __enter__(self):
        if self.s is not None:
            self._prev = _C.current_stream(self.s.device)
            _C.set_current_stream(self.s)
        return self.s

    def __exit__(self, *exc):
        if self.s is not None:
            _C.set_current_stream(self._prev)
        return False


def memory_allocated(device: _Device = None) -> int:
    """Bytes held by live tensors on a CUDA device."""
    return _C.memory_stats(_device(device))["allocated"]


def memory_reserved(device: _Device = None) -> int:
    """Bytes the caching allocator holds on a CUDA device."""
    return _C.memory_stats(_device(device))["reserved"]


def max_memory_allocated(device: _Device = None) -> int:
    """High-water mark of memory_allocated."""
    return _C.memory_stats(_device(device))["peak_allocated"]


def empty_cache() -> None:
    """Returns cached, unused CUDA memory to the driver."""
    if is_available():
        _C.empty_cache(_C.device("cuda"))


def _generator(device: _Device) -> _C.Generator:
    return _C._default_generator(_device(device))


def get_rng_state(device: _Device = "cuda") -> _C.Tensor:
    """The state of a CUDA device's default generator, as a uint8 tensor."""
    return _generator(device).get_state()


def set_rng_state(new_state: _C.Tensor, device: _Device = "cuda") -> None:
    """Restores a CUDA device's default generator from get_rng_state()."""
    _generator(device).set_state(new_state)


def get_rng_state_all() -> list:
    """The states of every CUDA device's default generator."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restores every CUDA device's default generator, in device order."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def initial_seed() -> int:
    """The seed the current CUDA device's default generator was last given."""
    return _generator(None).initial_seed()


def manual_seed(seed: int) -> None:
    """Seeds every device's default generator (Ember seeds all devices together)."""
    _C.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seeds every device's default generator."""
    _C.manual_seed(seed)
