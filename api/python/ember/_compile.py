"""ember.compile: a model or function of tensors captured once per input signature as the kernel
calls it makes, and replayed from a static memory plan (ember::compile, ARCHITECTURE.md,
"Compiled functions").

::

    fast = ember.compile(model)                 # or ember.compile(model, example_inputs=(x,))
    with ember.no_grad():
        y = fast(x)                             # captured at the first call, replayed after
    fast.report()                               # captures, replays, eager calls and why

What the capture cannot stand for runs eagerly, never frozen: a value the function reads on the
host (``if x.sum() > 0``, ``.item()``, an index's bounds) is checked at every replay and, when it
differs, the function runs and is captured again; random numbers (dropout in training mode),
copies between devices, keyword or non-tensor arguments, and calls that autograd must record
(grad mode on with inputs or parameters that require grad) run the function itself.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from ember import _C
from ember._C import Tensor

__all__ = ["compile"]


def _signature(tensors: tuple) -> tuple:
    return tuple((tuple(t.shape), t.stride(), t.dtype, t.device) for t in tensors)


def _flatten(out: Any) -> tuple[list, Any]:
    """The tensors of a result (a tensor, or a tuple, list or dict of them) and its shape."""
    if isinstance(out, Tensor):
        return [out], None
    if isinstance(out, (tuple, list)) and all(isinstance(t, Tensor) for t in out):
        return list(out), (type(out), len(out))
    if isinstance(out, dict) and all(isinstance(t, Tensor) for t in out.values()):
        return list(out.values()), (dict, list(out.keys()))
    raise TypeError(
        "[compile] the compiled function must return a tensor, or a tuple, list or dict of "
        f"tensors: got {type(out).__name__}")


def _unflatten(spec: Any, flat: list) -> Any:
    if spec is None:
        return flat[0]
    kind, arg = spec
    if kind is dict:
        return dict(zip(arg, flat))
    return kind(flat) if kind is list else tuple(flat)


class CompiledFunction:
    """A model or function whose calls are replayed (see the module's docstring)."""

    def __init__(self, fn: Callable, example_inputs: Any = None):
        self._fn = fn
        self._specs: dict = {}
        self._eager_reason = ""
        self._python_eager = 0
        self._version = _C._module_structure_version()
        self._watched = self._watch()
        self._compiled = _C.CompiledFunction(weakref.WeakMethod(self._run_flat),
                                             list(self._watched))
        if example_inputs is not None:
            inputs = (example_inputs,) if isinstance(example_inputs, Tensor) else example_inputs
            from ember.autograd import no_grad
            with no_grad():
                self(*inputs)

    def _watch(self) -> tuple:
        parameters = getattr(self._fn, "parameters", None)
        buffers = getattr(self._fn, "buffers", None)
        if not callable(parameters):
            return ()
        return tuple(parameters()) + (tuple(buffers()) if callable(buffers) else ())

    def _run_flat(self, *tensors: Tensor) -> list:
        flat, spec = _flatten(self._fn(*tensors))
        self._specs[_signature(tensors)] = spec
        return flat

    def _eager(self, reason: str, args: tuple, kwargs: dict) -> Any:
        self._eager_reason = reason
        self._python_eager += 1
        return self._fn(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs or not args or not all(isinstance(a, Tensor) for a in args):
            return self._eager("[compile] only positional tensor arguments are captured", args,
                               kwargs)
        if _C.autograd.is_grad_enabled() and (any(a.requires_grad for a in args) or
                                  any(t.requires_grad for t in self._watched)):
            return self._eager("[compile] replays are for inference: autograd must record this "
                               "call (run it under ember.no_grad() or ember.inference_mode())",
                               args, kwargs)
        version = _C._module_structure_version()
        if version != self._version:
            # Some module's entries were set: look again for replaced parameter objects.
            self._version = version
            watched = self._watch()
            if len(watched) != len(self._watched) or any(
                    a is not b for a, b in zip(watched, self._watched)):
                self._watched = watched
                self._specs.clear()
                self._compiled = _C.CompiledFunction(weakref.WeakMethod(self._run_flat),
                                                     list(watched))
        flat = self._compiled(list(args))
        if len(self._specs) == 1:  # one result structure so far: no need to look it up
            return _unflatten(next(iter(self._specs.values())), flat)
        return _unflatten(self._specs[_signature(args)], flat)

    def report(self) -> dict:
        """Captures, replays, eager calls and why, the newest capture's kernel calls, guards and
        memory (planned_bytes beside intermediate_bytes, one buffer each)."""
        r = self._compiled.report()
        r["eager_calls"] += self._python_eager
        if self._eager_reason and (not r["eager_reason"] or self._python_eager):
            r["eager_reason"] = self._eager_reason
        return r

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._fn, name)


def compile(model: Any = None, example_inputs: Any = None, *, fullgraph: bool = False,
            dynamic: Any = None, backend: Any = "inductor", mode: Any = None,
            options: Any = None, disable: bool = False) -> Any:
    """torch.compile's signature: a callable that captures `model` (a module or a function of
    tensors) per input signature and replays it; with `example_inputs`, captured at once.
    `fullgraph`, `dynamic`, `backend`, `mode` and `options` are accepted and have no effect;
    `disable=True` returns `model` itself. Used as a decorator with or without arguments."""
    if disable:
        return model if model is not None else (lambda m: m)
    if model is None:
        return lambda m: CompiledFunction(m, example_inputs)
    return CompiledFunction(model, example_inputs)
