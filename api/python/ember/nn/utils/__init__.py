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


def clip_grad_norm(parameters: _Params, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """clip_grad_norm_ under its deprecated name (a FutureWarning)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def get_total_norm(tensors: _Params, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The norm of all `tensors` together (the norm of their norms)."""
    import ember
    from ember._errors import ValueError
    tensors = [t for t in _as_list(tensors) if t is not None]
    if not tensors:
        return ember.tensor(0.0)
    norms = ember.stack([ember.linalg.vector_norm(t.detach(), norm_type).to(tensors[0].dtype)
                         for t in tensors])
    total = ember.linalg.vector_norm(norms, norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise ValueError(f"[nn.utils.get_total_norm] the total norm of order {norm_type} is "
                         f"non-finite, so it cannot be clipped (error_if_nonfinite=False skips "
                         f"this check)")
    return total


def clip_grads_with_norm_(parameters: _Params, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scales the gradients by max_norm / (total_norm + 1e-6) where that is below 1."""
    from ember.autograd.grad_mode import no_grad
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    with no_grad():
        for g in grads:
            g.mul_(coef.to(g.dtype))


def _convert_conv_weights(module, memory_format, kinds):
    from ember.autograd.grad_mode import no_grad
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone().contiguous(
                memory_format=memory_format)
    for child in module.children():
        _convert_conv_weights(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Puts the weights of every Conv2d and ConvTranspose2d in `module` in `memory_format`."""
    from ember.nn import Conv2d, ConvTranspose2d
    return _convert_conv_weights(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Puts the weights of every Conv3d and ConvTranspose3d in `module` in `memory_format`."""
    from ember.nn import Conv3d, ConvTranspose3d
    return _convert_conv_weights(module, memory_format, (Conv3d, ConvTranspose3d))


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) whose parameters need not be initialised (PyTorch makes it on
    the meta device; Ember makes it on its device, initialised)."""
    import inspect
    native = getattr(module_cls.__init__, "__nb_signature__", None)
    if native is not None:  # a bound class: its __init__'s signatures
        has_device = "device" in str(native)
    else:
        has_device = "device" in inspect.signature(module_cls).parameters
    if not has_device:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)


from ember.nn.utils import rnn  # noqa: E402,F401  (torch.nn.utils.rnn)
from ember.nn.utils import fusion, parametrizations, parametrize, stateless  # noqa: E402,F401
from ember.nn.utils.fusion import (  # noqa: E402,F401
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
