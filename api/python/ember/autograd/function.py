"""Custom differentiable functions written in Python (torch.autograd.Function)."""

import functools
from typing import Any, Optional, Tuple

from ember._C import Tensor
from ember._C import autograd as _native
from ember.autograd.grad_mode import no_grad


class FunctionCtx:
    """What forward hands to backward: saved tensors (version-checked) and any attribute."""

    def __init__(self):
        self._native = _native._FunctionCtx()
        self.needs_input_grad: Tuple[bool, ...] = ()
        self.materialize_grads = True
        self._dirty: Tuple[Tensor, ...] = ()

    def save_for_backward(self, *tensors: Optional[Tensor]) -> None:
        """Saves tensors (inputs or outputs of forward) for backward."""
        self._native.save_for_backward([t for t in tensors])

    @property
    def saved_tensors(self) -> Tuple[Tensor, ...]:
        """The saved tensors; raises if one was modified in place since it was saved."""
        return tuple(self._native.saved_tensors())

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that get no gradient (integer indices, masks)."""
        self._native.mark_non_differentiable(list(tensors))

    def mark_dirty(self, *tensors: Tensor) -> None:
        """Inputs forward modified in place (recorded for PyTorch compatibility)."""
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether missing output gradients reach backward as zeros (True) or None."""
        self.materialize_grads = value


class _FunctionMeta(type):
    """Gives every Function subclass the name its backward node shows (<Name>Backward)."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = name + "Backward"


class Function(metaclass=_FunctionMeta):
    """Base of custom functions: subclass with static forward(ctx, *args) and backward(ctx,
    *grad_outputs), then call Cls.apply(*args). PyTorch 2's style, forward(*args) with a
    separate setup_context(ctx, inputs, output), works too."""

    @staticmethod
    def forward(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation; runs with gradient recording off."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx: Any, inputs: Tuple[Any, ...], output: Any) -> Any:
        """Saves what backward needs, when forward does not take ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Gradients of forward's inputs (one per input; None for non-tensors) from those of its
        outputs."""
        raise NotImplementedError("You must implement the backward function for custom autograd.Function.")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs forward below autograd and records backward for the tensor arguments."""
        ctx = FunctionCtx()
        tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = [args[i] for i in tensor_positions]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        new_style = cls.setup_context is not Function.setup_context
        with no_grad():
            if new_style:
                output = cls.forward(*args, **kwargs)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if new_style:
            cls.setup_context(ctx, args, output)
        is_tuple = isinstance(output, (tuple, list))
        outputs = list(output) if is_tuple else [output]
        tensor_outputs = [o for o in outputs if isinstance(o, Tensor)]
        # backward gets one gradient per output of forward: the native node sees only the
        # differentiable ones; the others get zeros (or None without materialize_grads).
        differentiable = [isinstance(o, Tensor) and o.dtype.is_floating_point
                          and not ctx._native.is_non_differentiable(o) for o in outputs]
        placeholders = [o if isinstance(o, Tensor) and not d else None
                        for o, d in zip(outputs, differentiable)]
        n_args = len(args)

        def backward(*grads):
            it = iter(grads)
            full = []
            for d, p in zip(differentiable, placeholders):
                if d:
                    full.append(next(it))
                elif p is not None and ctx.materialize_grads:
                    from ember import zeros_like
                    full.append(zeros_like(p, dtype=p.dtype if p.dtype.is_floating_point else None))
                else:
                    full.append(None)
            result = cls.backward(ctx, *full)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < n_args:
                result = result + (None,) * (n_args - len(result))
            if len(result) != n_args:
                raise RuntimeError(
                    f"function {cls._backward_name} returned an incorrect number of gradients "
                    f"(expected {n_args}, got {len(result)})")
            return tuple(result[i] for i in tensor_positions)

        recorded = _native._record_function(cls._backward_name, inputs, tensor_outputs, ctx._native, backward)
        it = iter(recorded)
        outputs = [next(it) if isinstance(o, Tensor) else o for o in outputs]
        if is_tuple:
            return type(output)(outputs) if isinstance(output, tuple) else outputs
        return outputs[0]


def once_differentiable(fn):
    """Marks a backward as not differentiable again: it runs with recording off."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)

    return wrapper
