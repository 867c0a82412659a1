"""The functional forms of the layers (torch.nn.functional)."""

import math

from ember._C.functional import *  # noqa: F401,F403


def _fixing(fn, suffix, what, **fixed):
    """fn under PyTorch's name for it with the keywords `fixed` set: the *_with_indices max
    poolings (return_indices=True) and the in-place activations fn_ (inplace=True)."""

    def run(input, *args, **kwargs):
        return fn(input, *args, **fixed, **kwargs)

    run.__name__ = fn.__name__ + suffix
    run.__doc__ = f"{fn.__name__} {what}."
    return run


def _with_indices(pool):
    return _fixing(pool, "_with_indices", "returning (output, indices)", return_indices=True)


def _in_place(fn):
    return _fixing(fn, "_", "in place", inplace=True)


max_pool1d_with_indices = _with_indices(max_pool1d)  # noqa: F405
max_pool2d_with_indices = _with_indices(max_pool2d)  # noqa: F405
max_pool3d_with_indices = _with_indices(max_pool3d)  # noqa: F405
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d)  # noqa: F405
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d)  # noqa: F405
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d)  # noqa: F405


relu_ = _in_place(relu)  # noqa: F405
elu_ = _in_place(elu)  # noqa: F405
celu_ = _in_place(celu)  # noqa: F405
selu_ = _in_place(selu)  # noqa: F405
leaky_relu_ = _in_place(leaky_relu)  # noqa: F405
hardtanh_ = _in_place(hardtanh)  # noqa: F405
threshold_ = _in_place(threshold)  # noqa: F405


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """PyTorch's older name of interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)  # noqa: F405


def upsample_nearest(input, size=None, scale_factor=None):
    """interpolate in 'nearest' mode (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode="nearest")  # noqa: F405


def upsample_bilinear(input, size=None, scale_factor=None):
    """interpolate in 'bilinear' mode with align_corners=True (PyTorch's older name)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)  # noqa: F405


# PyTorch's functional forms that Ember writes in Python over its ops (as PyTorch writes
# gumbel_softmax; the others are composites whose gradients autograd derives from those ops).

def _reduction(size_average, reduce, reduction: str, op: str) -> str:
    """PyTorch's legacy size_average/reduce folded into a reduction name, which is checked."""
    if size_average is not None or reduce is not None:
        if reduce is False:
            return "none"
        return "sum" if size_average is False else "mean"
    if reduction not in ("mean", "sum", "none"):
        from ember._errors import ValueError
        raise ValueError(f"[{op}] reduction '{reduction}' is not one of 'mean', 'sum', 'none'")
    return reduction


def _check_probability(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        from ember._errors import ValueError
        raise ValueError(f"[{op}] dropout probability has to be between 0 and 1, but got {p}")


def _alpha_dropout(input, p: float, training: bool, inplace: bool, feature: bool, op: str):
    # Note [Alpha dropout]: as PyTorch's (ATen's _dropout_impl with alpha): a dropped unit takes
    # SELU's negative saturation -alpha' (alpha' = SELU's scale * alpha = 1.7581...), and the result
    # is a * (x * keep + alpha' (keep - 1)) + alpha' a p, with a = ((alpha'^2 p + 1)(1 - p))^-1/2,
    # which keeps a standard-normal input's mean 0 and variance 1. The feature form draws one keep
    # per channel ([N, C, 1, ...]). p = 1 gives zeros, as PyTorch's does.
    import ember
    _check_probability(p, op)
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    if feature:
        if input.dim() < 2:
            from ember._errors import ValueError
            raise ValueError(f"[{op}] feature dropout needs an input of at least 2 dims: got "
                             f"{input.dim()}")
        noise_shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    else:
        noise_shape = list(input.shape)
    keep = (ember.rand(noise_shape, dtype=input.dtype, device=input.device) < 1 - p).to(input.dtype)
    alpha = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = (keep - 1) * (alpha * a) + alpha * a * p
    if inplace:
        return input.mul_(keep * a).add_(b)
    return input * (keep * a) + b


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps SELU's self-normalisation: dropped units take its negative saturation
    and the result is rescaled to the input's mean and variance (Note [Alpha dropout])."""
    return _alpha_dropout(input, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """alpha_dropout of whole channels ([N, C, ...]: one draw per (n, c))."""
    return _alpha_dropout(input, p, training, inplace, True, "feature_alpha_dropout")


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False):
    """Randomized leaky ReLU: in training each non-positive element is scaled by a slope drawn
    from U(lower, upper); in eval by their mean (lower + upper) / 2."""
    import ember
    if lower > upper:
        from ember._errors import ValueError
        raise ValueError(f"[rrelu] lower bound should be less than or equal to the upper bound: "
                         f"got lower={lower}, upper={upper}")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)  # noqa: F405
    noise = ember.empty_like(input).uniform_(lower, upper)
    slope = ember.where(input > 0, ember.ones_like(input), noise)
    return input.mul_(slope) if inplace else input * slope


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """rrelu in place."""
    return rrelu(input, lower, upper, training, inplace=True)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,
                      size_average=None, reduce=None, reduction: str = "mean"):
    """The multi-class hinge loss: for each sample (a row of input [N, C], or input [C]) with
    class y, sum over i != y of w[y] max(0, margin - x[y] + x[i])^p, divided by C."""
    import ember
    from ember._errors import IndexError, ValueError
    reduction = _reduction(size_average, reduce, reduction, "multi_margin_loss")
    if p not in (1, 2):
        raise ValueError(f"[multi_margin_loss] only p == 1 and p == 2 are supported: got p={p}")
    if weight is not None and weight.dim() != 1:
        raise ValueError(f"[multi_margin_loss] weight must be one-dimensional: got "
                         f"{list(weight.shape)}")
    if input.dim() > 2 or input.dim() >= 1 and input.shape[-1] == 0:
        raise ValueError(f"[multi_margin_loss] expected a non-empty vector or matrix with "
                         f"optional 0-dim batch size: got input {list(input.shape)}")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    nframe, dim = x.shape
    if target.dim() > 1 or target.numel() != nframe:
        raise ValueError(f"[multi_margin_loss] inconsistent target size: expected {nframe} but "
                         f"got {list(target.shape)}")
    if weight is not None and weight.numel() != dim:
        raise ValueError(f"[multi_margin_loss] inconsistent weight size: expected {dim} but got "
                         f"{list(weight.shape)}")
    t = target.reshape(nframe).to(ember.int64)
    if nframe and bool(((t < 0) | (t >= dim)).any()):
        raise IndexError(f"[multi_margin_loss] target out of range: classes are 0..{dim - 1}, "
                         f"got {t.tolist()}")
    z = relu(margin - x.gather(1, t.unsqueeze(1)) + x)  # noqa: F405
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    z = z.masked_fill(one_hot(t, dim).to(ember.bool), 0)  # noqa: F405  (no term for i == y)
    loss = z.sum(1) / dim
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss if target.dim() > 0 else loss.reshape(())


def pdist(input, p: float = 2.0):
    """The p-norm distances between the rows of input [N, M], for each pair i < j in row-major
    order ([N (N - 1) / 2]), as the upper triangle of cdist(input, input)."""
    import ember
    from ember._errors import ValueError
    if input.dim() != 2:
        raise ValueError(f"[pdist] only supports 2-d tensors: got {input.dim()}-d")
    if p < 0:
        raise ValueError(f"[pdist] only supports non-negative p values: got {p}")
    n = input.shape[0]
    rows = ember.triu_indices(n, n, 1, device=input.device)
    diff = input.index_select(0, rows[0]) - input.index_select(0, rows[1])
    return ember.linalg.vector_norm(diff, p, dim=1)


def gumbel_softmax(logits, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1):
    """A sample of the Gumbel-softmax (concrete) distribution over dim: softmax((logits + g) /
    tau) with g standard Gumbel noise; with `hard`, the one-hot of its argmax, whose gradient is
    the soft sample's (the straight-through estimator)."""
    import ember
    if eps != 1e-10:
        import warnings
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # -log(E), E ~ Exp(1): E = -log(U) with U ~ U(0, 1], so 1 - rand (rand is in [0, 1)).
    # E is kept above 0 (U = 1), where -log(E) would be +inf.
    exponential = (-(1 - ember.rand_like(logits)).log()).clamp(min=ember.finfo(logits.dtype).tiny)
    gumbels = -exponential.log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = ember.zeros_like(logits).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft
