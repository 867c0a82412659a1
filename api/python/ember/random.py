"""torch.random: the default generators' seeds and states, and fork_rng. Every function works on
the core's generators (ember._C.Generator, Note [Random numbers on every device]); nothing here
draws a number."""

import contextlib
from typing import Iterable, Iterator, Optional

from ember import _C

#: The CPU's default generator (torch.default_generator), the process-wide one the factories use.
default_generator: _C.Generator = _C._default_generator()


def manual_seed(seed: int) -> _C.Generator:
    """Seeds the default generators of every device; returns the CPU's."""
    _C.manual_seed(int(seed))
    return default_generator


def seed() -> int:
    """Seeds every device's default generator from a non-deterministic source; returns the seed."""
    s = default_generator.seed()
    _C.manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed the CPU's default generator was last given."""
    return default_generator.initial_seed()


def get_rng_state() -> _C.Tensor:
    """The CPU default generator's whole state, as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: _C.Tensor) -> None:
    """Restores a state from get_rng_state()."""
    default_generator.set_state(new_state)


def _device_generators(devices: Optional[Iterable], device_type: str) -> list:
    if devices is None:
        devices = range(_C.device_count(device_type))
    gens = []
    for d in devices:
        if isinstance(d, str):
            d = _C.device(d)
        elif not isinstance(d, _C.device):
            d = _C.device(device_type, int(d))
        gens.append(_C._default_generator(d))
    return gens


@contextlib.contextmanager
def fork_rng(devices: Optional[Iterable] = None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type: str = "cuda") -> Iterator[None]:
    """Restores the CPU's generator, and those of `devices` (every device of `device_type` by
    default), to their states at entry when the block ends, however it ends."""
    if not enabled:
        yield
        return
    gens = [default_generator] + _device_generators(devices, device_type)
    states = [g.get_state() for g in gens]
    try:
        yield
    finally:
        for g, s in zip(gens, states):
            g.set_state(s)


__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
