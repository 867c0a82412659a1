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


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-d convolution weight with the Dirac delta: each of the first
    min(out/groups, in) output channels of each group passes its input channel through, unchanged,
    at the kernel's centre."""
    from ember._errors import ValueError
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError(f"[nn.init.dirac_] only tensors with 3, 4, or 5 dimensions are "
                         f"supported: got {dims}")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError(f"[nn.init.dirac_] dim 0 ({sizes[0]}) must be divisible by "
                         f"groups={groups}")
    out_per_group = sizes[0] // groups
    centre = tuple(s // 2 for s in sizes[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(out_per_group, sizes[1])):
                tensor[(g * out_per_group + d, d) + centre] = 1
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fills a 2-d tensor from N(0, std^2) and zeroes ceil(sparsity * rows) random entries of each
    column (Martens, 2010)."""
    import math

    import ember
    from ember._errors import ValueError
    if tensor.dim() != 2:
        raise ValueError(f"[nn.init.sparse_] only tensors with 2 dimensions are supported: got "
                         f"{tensor.dim()}")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        normal_(tensor, 0, std, generator=generator)
        for col in range(cols):
            zero_rows = ember.randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
            tensor[zero_rows, col] = 0
    return tensor


def _deprecated(meth, old_name: str):
    """PyTorch's deprecated name of an initialiser: meth, with a FutureWarning."""
    new_name = meth.__name__

    def deprecated_init(*args, **kwargs):
        import warnings
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__name__ = old_name
    deprecated_init.__doc__ = f"{new_name}, under its deprecated name (a FutureWarning)."
    return deprecated_init


uniform = _deprecated(uniform_, "uniform")
normal = _deprecated(normal_, "normal")
constant = _deprecated(constant_, "constant")
eye = _deprecated(eye_, "eye")
dirac = _deprecated(dirac_, "dirac")
xavier_uniform = _deprecated(xavier_uniform_, "xavier_uniform")
xavier_normal = _deprecated(xavier_normal_, "xavier_normal")
kaiming_uniform = _deprecated(kaiming_uniform_, "kaiming_uniform")
kaiming_normal = _deprecated(kaiming_normal_, "kaiming_normal")
orthogonal = _deprecated(orthogonal_, "orthogonal")
sparse = _deprecated(sparse_, "sparse")
