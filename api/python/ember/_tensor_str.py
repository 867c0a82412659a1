"""How tensors print: torch.set_printoptions and torch._tensor_str's helpers, over the core's
print options (ember::PrintOptions, core/ops/print.cpp), which C++ users set the same way."""

import contextlib
import math

from ember import _C

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]

_INT64_MAX = 2**63 - 1


def _count(name, value):
    """A whole number of the options, float('inf') (never summarise / never wrap) included."""
    if isinstance(value, float):
        if math.isinf(value) and value > 0:
            return _INT64_MAX
        if not value.is_integer():
            raise TypeError(f"[set_printoptions] {name} must be a whole number: got {value}")
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"[set_printoptions] {name} must be an int: got {type(value).__name__}")
    return min(value, _INT64_MAX)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Sets how tensors print, as torch.set_printoptions: a profile ('default', 'short', 'full')
    first, then each option given; sci_mode is always set (None: chosen per tensor)."""
    options = _C._print_options() if profile is None else _C._print_profile(profile)
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(options, name, _count(name, value))
    if sci_mode is not None and not isinstance(sci_mode, bool):
        raise TypeError(f"[set_printoptions] sci_mode must be a bool or None: got {sci_mode!r}")
    options.sci_mode = sci_mode
    _C._set_print_options(options)


def get_printoptions():
    """The print options in force, as a dict of set_printoptions' keywords."""
    o = _C._print_options()
    return {"precision": o.precision, "threshold": o.threshold, "edgeitems": o.edgeitems,
            "linewidth": o.linewidth, "sci_mode": o.sci_mode}


@contextlib.contextmanager
def printoptions(**kwargs):
    """Within the block, tensors print with these options; the earlier ones come back after."""
    saved = _C._print_options()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        _C._set_print_options(saved)
