"""Reverse-mode automatic differentiation (torch.autograd)."""

from typing import Optional, Sequence, Union

from ember._C import Tensor
from ember._C import autograd as _native
from ember.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from ember.autograd.grad_mode import (  # noqa: F401
    detect_anomaly,
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)

_Tensors = Union[Tensor, Sequence[Tensor]]


def _as_list(x) -> list:
    if x is None:
        return []
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def backward(tensors: _Tensors, grad_tensors: Optional[Sequence[Optional[Tensor]]] = None,
             retain_graph: Optional[bool] = None, create_graph: bool = False,
             inputs: Optional[_Tensors] = None) -> None:
    """Accumulates the gradients of tensors (weighted by grad_tensors) into the leaves' .grad
    (only into `inputs`, if given)."""
    ts = _as_list(tensors)
    gs = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(ts)
    if inputs is not None:
        ins = _as_list(inputs)
        grads = _native.grad(ts, ins, gs, retain_graph, create_graph, True)
        with no_grad():
            for t, g in zip(ins, grads):
                if g is not None:
                    t.grad = g.detach() if t.grad is None else t.grad + g
        return
    _native.backward(ts, gs, retain_graph, create_graph)


def grad(outputs: _Tensors, inputs: _Tensors, grad_outputs: Optional[Sequence[Optional[Tensor]]] = None,
         retain_graph: Optional[bool] = None, create_graph: bool = False, only_inputs: bool = True,
         allow_unused: Optional[bool] = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The gradients of outputs w.r.t. inputs, without touching .grad (torch.autograd.grad)."""
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched is not supported")
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    unused_ok = bool(allow_unused) or materialize_grads
    result = _native.grad(outs, ins, gos, retain_graph, create_graph, unused_ok)
    if materialize_grads:
        from ember import zeros_like
        result = [g if g is not None else zeros_like(i) for g, i in zip(result, ins)]
    return tuple(result)


def gradcheck(func, inputs: _Tensors, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Compares func's analytical gradients with finite differences (float64 inputs; those that
    require grad are checked)."""
    ok, message = _native.gradcheck(func, _as_list(inputs), eps, atol, rtol)
    if not ok and raise_exception:
        raise RuntimeError(f"gradcheck failed: {message}")
    return ok


def gradgradcheck(func, inputs: _Tensors, grad_outputs=None, *, eps: float = 1e-6,
                  atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True,
                  **_ignored) -> bool:
    """Checks func's second derivatives the same way."""
    ok, message = _native.gradgradcheck(func, _as_list(inputs), eps, atol, rtol)
    if not ok and raise_exception:
        raise RuntimeError(f"gradgradcheck failed: {message}")
    return ok
