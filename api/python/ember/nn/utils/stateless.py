"""torch.nn.utils.stateless: calling a module with other tensors in place of its parameters and
buffers (functional_call), for a call; the module is left as it was."""

import contextlib
import warnings
from typing import Any, Dict, Optional, Tuple, Union

from ember._C import Tensor
from ember._C.nn import Module

__all__ = ["functional_call"]


@contextlib.contextmanager
def _reparametrized(module: Module, tensors: Dict[str, Tensor], tie_weights: bool, strict: bool):
    # A parameter's slot, which a C++ layer reads, takes the given tensor itself (its autograd
    # history kept) for the call, and its own tensor back afterwards; a buffer is swapped in its
    # slot. The module's listings keep their order.
    from ember._errors import KeyError
    params = dict(module.named_parameters(remove_duplicate=False))
    buffers = dict(module.named_buffers())
    if strict:
        missing = sorted((set(params) | set(buffers)) - set(tensors))
        unexpected = sorted(set(tensors) - set(params) - set(buffers))
        if missing or unexpected:
            raise KeyError(f"[nn.utils.stateless.functional_call] Error(s) in reparametrizing for "
                           f"{type(module).__name__}: missing key(s): {missing}, unexpected "
                           f"key(s): {unexpected}")
    tensors = dict(tensors)
    if tie_weights:
        for name, t in params.items():
            if name in tensors:
                continue
            for other, u in params.items():
                if u is t and other in tensors:
                    tensors[name] = tensors[other]
                    break
    swapped_params, swapped_buffers = [], []
    try:
        for name, value in tensors.items():
            owner_path, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_path)
            if name in params:
                swapped_params.append((owner, attr, params[name]))
                owner._write_slot(attr, value)
            elif name in buffers:
                swapped_buffers.append((owner, attr, buffers[name]))
                setattr(owner, attr, value)
            elif strict:
                raise KeyError(f"[nn.utils.stateless.functional_call] unexpected key '{name}'")
        yield
    finally:
        for owner, attr, original in reversed(swapped_params):
            owner._write_slot(attr, original)
        for owner, attr, original in reversed(swapped_buffers):
            setattr(owner, attr, original)


def functional_call(module: Module,
                    parameters_and_buffers: Union[Dict[str, Tensor], Tuple[Dict[str, Tensor], ...]],
                    args: Optional[Union[Any, Tuple]] = None,
                    kwargs: Optional[Dict[str, Any]] = None, *, tie_weights: bool = True,
                    strict: bool = False):
    """module(*args, **kwargs) with the tensors of `parameters_and_buffers` (by dotted name) in
    place of those parameters and buffers; the gradient flows to the given tensors. Deprecated
    in PyTorch for torch.func.functional_call (a FutureWarning)."""
    warnings.warn("This API is deprecated as of PyTorch 2.0 and will be removed in a future "
                  "version of PyTorch. Please use torch.func.functional_call instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    if isinstance(parameters_and_buffers, (list, tuple)):
        merged: Dict[str, Tensor] = {}
        for d in parameters_and_buffers:
            merged.update(d)
        parameters_and_buffers = merged
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **(kwargs or {}))
