"""torch.serialization: the globals a weights_only load may rebuild besides tensors and plain
containers (``add_safe_globals``, the ``safe_globals`` context), for files one trusts to name
them."""

import contextlib
from typing import Any, Iterator, List, Set, Tuple

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

_safe: List[Any] = []

# What weights_only allows without being told, beyond tensors and containers: the builtins
# PyTorch's weights_only unpickler allows too.
_DEFAULT_ALLOWED: Set[Tuple[str, str]] = {
    ("builtins", n) for n in ("set", "frozenset", "bytearray", "complex", "slice", "range")
}


def _name_of(g: Any) -> Tuple[str, str]:
    if isinstance(g, tuple):  # (object, "module.name") as PyTorch allows
        module, _, name = g[1].rpartition(".")
        return module, name
    return g.__module__, g.__qualname__


def add_safe_globals(globals_list: List[Any]) -> None:
    """Lets weights_only loads rebuild these classes and functions."""
    _safe.extend(globals_list)


def clear_safe_globals() -> None:
    """Forgets every global add_safe_globals allowed."""
    _safe.clear()


def get_safe_globals() -> List[Any]:
    """The globals add_safe_globals allowed."""
    return list(_safe)


@contextlib.contextmanager
def safe_globals(globals_list: List[Any]) -> Iterator[None]:
    """Allows these globals within the with block only."""
    n = len(_safe)
    _safe.extend(globals_list)
    try:
        yield
    finally:
        del _safe[n:]


def _allowed() -> Set[Tuple[str, str]]:
    return {_name_of(g) for g in _safe}
