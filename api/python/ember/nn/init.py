"""In-place initialisers with PyTorch's formulas (torch.nn.init)."""

from ember._C.nn.init import (  # noqa: F401
    _calculate_fan_in_and_fan_out,
    calculate_gain,
    constant_,
    kaiming_normal_,
    kaiming_uniform_,
    normal_,
    orthogonal_,
    ones_,
    uniform_,
    xavier_normal_,
    xavier_uniform_,
    zeros_,
)
from ember._C import Tensor
from ember.autograd.grad_mode import no_grad


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fills tensor from N(mean, std^2) redrawn outside [a, b] (resampling rejected values)."""
    import ember
    with no_grad():
        normal_(tensor, mean, std, generator=generator)
        for _ in range(100):
            bad = (tensor < a) | (tensor > b)
            if not bool(bad.any()):
                break
            fresh = ember.empty_like(tensor)
            normal_(fresh, mean, std, generator=generator)
            tensor.copy_(ember.where(bad, fresh, tensor))
        tensor.clamp_(a, b)
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-d tensor with the identity."""
    import ember
    with no_grad():
        tensor.copy_(ember.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype, device=tensor.device))
    return tensor
