"""Activation checkpointing (torch.utils.checkpoint): a block's intermediate tensors are not
kept for backward but recomputed there, with the random generators as they were."""

from typing import Any, Callable, Optional

from ember._C import Tensor
from ember._C import autograd as _native


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: Optional[bool] = None,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """function(*args, **kwargs) without keeping its intermediate tensors; backward runs it
    again. The tensor arguments are the block's inputs; others are passed through unchanged."""
    positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    single = []

    def block(*tensors):
        full = list(args)
        for i, t in zip(positions, tensors):
            full[i] = t
        out = function(*full, **kwargs)
        single.append(isinstance(out, Tensor))
        return out

    outputs = _native.checkpoint(block, [args[i] for i in positions], preserve_rng_state)
    return outputs[0] if single and single[0] else tuple(outputs)


def checkpoint_sequential(functions, segments: int, input: Tensor, use_reentrant: Optional[bool] = None,
                          preserve_rng_state: bool = True) -> Tensor:
    """Runs a Sequential (or a list of modules) in `segments` segments, each checkpointed."""
    from ember import nn

    if isinstance(functions, nn.Sequential):
        return nn._native.checkpoint_sequential(functions, segments, input, None, preserve_rng_state)
    modules = list(functions)
    size = (len(modules) + segments - 1) // segments
    x = input
    for start in range(0, len(modules), size):
        chunk = modules[start:start + size]

        def run(t, chunk=chunk):
            for m in chunk:
                t = m(t)
            return t

        x = checkpoint(run, x, preserve_rng_state=preserve_rng_state) if start + size < len(modules) else run(x)
    return x
