"""Utilities for modules and their gradients (torch.nn.utils)."""

from typing import Iterable, Union

from ember._C import Tensor
from ember._C.nn import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm  # noqa: F401

_Params = Union[Tensor, Iterable[Tensor]]


def _as_list(parameters: _Params) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(parameters: _Params, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scales the gradients so their total norm is at most max_norm; returns the norm before."""
    import ember
    from ember._C import optim as _optim
    params = _as_list(parameters)
    norm = _optim.clip_grad_norm_(params, float(max_norm), float(norm_type), error_if_nonfinite)
    grads = [p.grad for p in params if p.grad is not None]
    # The total norm in the gradients' dtype, as PyTorch returns it.
    return ember.tensor(norm, dtype=grads[0].dtype if grads else ember.float32)


def clip_grad_value_(parameters: _Params, clip_value: float, foreach=None) -> None:
    """Clamps every gradient element to [-clip_value, clip_value]."""
    from ember._C import optim as _optim
    _optim.clip_grad_value_(_as_list(parameters), float(clip_value))


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened into one vector."""
    import ember
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies slices of vec into the parameters, in order."""
    from ember.autograd.grad_mode import no_grad
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].view_as(p))
            offset += n
from ember.nn.utils import rnn  # noqa: E402,F401  (torch.nn.utils.rnn)
