"""Keywords of PyTorch's signatures that the native bindings spell another way, mapped here
until the bindings take them: ``scatter(dim, index, value=v)`` is ``scatter(dim, index, v)``
(PyTorch's overload for a scalar source; Ember's binding names its source ``src``), for
``Tensor.scatter``, ``Tensor.scatter_`` and ``ember.scatter``."""

import functools

from ember import _C

_MISSING = object()


def _scalar_source_as_value(fn):
    if getattr(fn, "_ember_value_keyword", False):
        return fn

    @functools.wraps(fn)
    def call(*args, value=_MISSING, **kwargs):
        if value is not _MISSING:
            kwargs["src"] = value
        return fn(*args, **kwargs)

    call._ember_value_keyword = True
    return call


def install() -> None:
    """Wraps the functions named in the module docstring."""
    for name in ("scatter", "scatter_"):
        setattr(_C.Tensor, name, _scalar_source_as_value(getattr(_C.Tensor, name)))
    _C.scatter = _scalar_source_as_value(_C.scatter)
