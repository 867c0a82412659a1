"""torch's own function forms of what Ember has as Tensor methods or nn.functional: the in-place
ops as functions (``torch.abs_(x)`` is ``x.abs_()``), the functionals torch also exposes (some
with torch's argument order, or its losses' integer reductions), the deprecated autocast getters,
math constants, and ``Tensor.resize``. Each is a translation, with no behaviour of its own."""

import builtins
import math
import warnings
from typing import Any

from ember._C import Tensor
from ember.amp import get_autocast_dtype, is_autocast_enabled
from ember.nn import functional as F

e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

# torch.X(input, ...) is input.X(...) for these.
_METHOD_FORMS = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "detach", "erf_", "exp2_", "exp_", "expm1_", "fill_",
    "floor_", "is_complex", "is_floating_point", "is_inference", "log10_", "log1p_", "log2_",
    "log_", "nan_to_num_", "neg_", "negative_", "reciprocal_", "round_", "rsqrt_", "sigmoid_",
    "sin_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "zero_", "erfc_", "fix_",
    "gcd_", "lcm_", "deg2rad_", "rad2deg_", "frac_", "logit_", "sinc_", "xlogy_", "ldexp_")


def _method_form(name: str):
    def call(input: Tensor, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"input.{name}(...) (Tensor.{name})."
    return call


for _name in _METHOD_FORMS:
    globals()[_name] = _method_form(_name)

# The functionals torch exposes with nn.functional's arguments.
from ember.nn.functional import (  # noqa: E402,F401
    bilinear,
    celu,
    celu_,
    channel_shuffle,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool3d,
    rms_norm,
    selu,
    selu_,
    threshold_,
)


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """nn.functional.dropout(input, p, train)."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """dropout in place."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """nn.functional.alpha_dropout(input, p, train)."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """alpha_dropout in place."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """nn.functional.feature_alpha_dropout(input, p, train)."""
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """feature_alpha_dropout in place."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator: Any = None) -> Tensor:
    """nn.functional.rrelu: random slopes for the negative part in training, their mean in eval."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator: Any = None) -> Tensor:
    """rrelu in place."""
    return F.rrelu(input, lower, upper, training, inplace=True)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """nn.functional.pdist: the distances between the rows of input, each pair i < j once."""
    return F.pdist(input, p)


def batch_norm(input: Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,
               training: bool, momentum: float, eps: float, cudnn_enabled: bool = True) -> Tensor:
    """nn.functional.batch_norm with torch's argument order (weight and bias first)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Any, bias: Any, running_mean: Any, running_var: Any,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Tensor:
    """nn.functional.instance_norm with torch's argument order (weight and bias first)."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def layer_norm(input: Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enable: bool = True) -> Tensor:
    """nn.functional.layer_norm."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Tensor:
    """nn.functional.group_norm."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """nn.functional.embedding with torch's argument order (the table first; padding_idx -1 for
    none)."""
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


# torch's losses take the reduction as ATen's enum: 0 none, 1 mean, 2 sum.
_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction: int) -> str:
    if not isinstance(reduction, builtins.int) or not 0 <= reduction < 3:
        from ember._errors import ValueError
        raise ValueError(f"reduction must be 0 (none), 1 (mean) or 2 (sum): got {reduction!r}")
    return _REDUCTIONS[reduction]


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, log_target: bool = False) -> Tensor:
    """nn.functional.kl_div with an integer reduction."""
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Any = None,
                                     pos_weight: Any = None, reduction: int = 1) -> Tensor:
    """nn.functional.binary_cross_entropy_with_logits with an integer reduction."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    """nn.functional.cosine_embedding_loss with an integer reduction."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:
    """nn.functional.hinge_embedding_loss with an integer reduction."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    """nn.functional.margin_ranking_loss with an integer reduction."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """nn.functional.poisson_nll_loss with an integer reduction."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        reduction: int = 1) -> Tensor:
    """nn.functional.triplet_margin_loss with an integer reduction."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def get_autocast_gpu_dtype() -> Any:
    """get_autocast_dtype("cuda") under its deprecated name (a DeprecationWarning)."""
    warnings.warn("torch.get_autocast_gpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cuda') instead.", DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype() -> Any:
    """get_autocast_dtype("cpu") under its deprecated name (a DeprecationWarning)."""
    warnings.warn("torch.get_autocast_cpu_dtype() is deprecated. Please use "
                  "torch.get_autocast_dtype('cpu') instead.", DeprecationWarning, stacklevel=2)
    return get_autocast_dtype("cpu")


def is_autocast_cpu_enabled() -> bool:
    """is_autocast_enabled("cpu") under its deprecated name (a DeprecationWarning)."""
    warnings.warn("torch.is_autocast_cpu_enabled() is deprecated. Please use "
                  "torch.is_autocast_enabled('cpu') instead.", DeprecationWarning, stacklevel=2)
    return is_autocast_enabled("cpu")


def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of the matrices, in order (deprecated: linalg.multi_dot)."""
    from ember import linalg
    if len(matrices) == 1:
        return matrices[0].clone()
    return linalg.multi_dot(matrices)


# Note [float32 matmul precision]
# torch.set_float32_matmul_precision says how much precision float32 matmuls may give up for
# speed: "highest" none, "high" TF32 or the like, "medium" bfloat16-level. Ember's only such trade
# is TF32 in the CUDA backend's cuBLAS matmuls, the option backends.cuda.matmul.allow_tf32, so the
# setting turns that option on ("high", "medium") or off ("highest"), as PyTorch's does; the
# getter reads the option, so either way of setting it is seen.
_matmul_precision = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """How much precision float32 matmuls may give up: "highest", "high" or "medium"."""
    global _matmul_precision
    from ember import backends
    from ember._errors import ValueError
    if precision not in ("highest", "high", "medium"):
        raise ValueError(f"[set_float32_matmul_precision] expected 'highest', 'high' or 'medium': "
                         f"got {precision!r}")
    backends.cuda.matmul.allow_tf32 = precision != "highest"
    _matmul_precision = precision


def get_float32_matmul_precision() -> str:
    """The float32 matmul precision: "highest" unless TF32 is allowed."""
    from ember import backends
    if not backends.cuda.matmul.allow_tf32:
        return "highest"
    return "high" if _matmul_precision == "highest" else _matmul_precision


def get_device(input: Tensor) -> int:
    """The index of input's device: -1 for the CPU (Tensor.get_device)."""
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


def is_anomaly_enabled() -> bool:
    """True while autograd's anomaly detection is on (autograd.detect_anomaly)."""
    from ember import _C
    return _C.autograd.is_anomaly_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns autograd's anomaly detection on or off (autograd.set_detect_anomaly); it always
    checks backward results for NaN, whatever check_nan says."""
    from ember import autograd
    autograd.set_detect_anomaly(enabled)


def is_anomaly_check_nan_enabled() -> bool:
    """True while anomaly detection checks backward results for NaN (always, when it is on)."""
    return is_anomaly_enabled()


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    """F.ctc_loss with torch's integer reduction (0 none, 1 mean, 2 sum); none by default, as
    torch.ctc_loss gives (F.ctc_loss's default is the mean)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      reduction=_reduction(reduction), zero_infinity=zero_infinity)


def constant_pad_nd(input: Tensor, pad: Any, value: float = 0) -> Tensor:
    """input padded with value: pad holds (before, after) pairs from the last dim (F.pad)."""
    return F.pad(input, list(pad), "constant", value)


def convolution(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
                dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Tensor:
    """The convolution (or transposed convolution) over weight.dim() - 2 spatial dims."""
    n = weight.dim() - 2
    if n not in (1, 2, 3):
        from ember._errors import ValueError
        raise ValueError(f"[convolution] expected a weight of 3 to 5 dims: got {weight.dim()}")
    if transposed:
        conv = getattr(F, f"conv_transpose{n}d")
        return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(F, f"conv{n}d")(input, weight, bias, stride, padding, dilation, groups)


def _gates(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any, b_hh: Any) -> Any:
    return F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh)


def lstm_cell(input: Tensor, hx: Any, w_ih: Tensor, w_hh: Tensor, b_ih: Any = None,
              b_hh: Any = None) -> Any:
    """One LSTM step: (h, c) from hx = (h, c), gates in PyTorch's order i, f, g, o."""
    h, c = hx
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any = None,
             b_hh: Any = None) -> Tensor:
    """One GRU step, gates in PyTorch's order r, z, n (n = tanh(W_in x + r * (W_hn h + b_hn)))."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    ir, iz, in_ = gi.chunk(3, -1)
    hr, hz, hn = gh.chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1 - z) * n + z * hx


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any = None,
                  b_hh: Any = None) -> Tensor:
    """One Elman RNN step with tanh."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Any = None,
                  b_hh: Any = None) -> Tensor:
    """One Elman RNN step with ReLU."""
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


def range(start: float = 0, end: Any = None, step: float = 1, *, dtype: Any = None,
          device: Any = None, requires_grad: bool = False) -> Tensor:
    """start, start + step, ... up to end included (deprecated: arange, whose end is excluded),
    in the default floating dtype unless told otherwise."""
    import ember
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    if step == 0 or (end - start) * step < 0:
        from ember._errors import ValueError
        raise ValueError(f"[range] upper bound and step sign are inconsistent: start {start}, "
                         f"end {end}, step {step}")
    count = math.floor((end - start) / step) + 1
    out = ember.arange(count, dtype=ember.float64, device=device) * step + start
    out = out.to(dtype or ember.get_default_dtype())
    return out.requires_grad_() if requires_grad else out


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of `size` laid out with `stride` over just enough memory."""
    import ember
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        from ember._errors import ValueError
        raise ValueError(f"[empty_strided] size and stride must have the same length: got "
                         f"{len(size)} and {len(stride)}")
    extent = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    out = ember.empty(extent, dtype=dtype, device=device).as_strided(size, stride)
    return out.requires_grad_() if requires_grad else out


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: Any = None,
            requires_grad: bool = False) -> Tensor:
    """obj as a tensor: a tensor itself (converted only if dtype or device say so), else
    as_tensor (sharing a buffer's memory where it can) unless copy=True."""
    import ember
    if isinstance(obj, Tensor):
        out = obj.to(dtype=dtype or obj.dtype, device=device or obj.device)
        if copy and out is obj:
            out = obj.clone()
    elif copy:
        out = ember.tensor(obj, dtype=dtype, device=device)
    else:
        out = ember.as_tensor(obj, dtype=dtype, device=device)
    return out.requires_grad_() if requires_grad else out


def _new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None,
                       device: Any = None, requires_grad: bool = False) -> Tensor:
    """empty_strided with this tensor's dtype and device unless given."""
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


Tensor.get_device = get_device
Tensor.new_empty_strided = _new_empty_strided


def _tensor_resize(self: Tensor, *sizes: Any) -> Tensor:
    """The tensor's elements in shape `sizes`, a view where possible (deprecated: reshape)."""
    from ember._errors import ValueError
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    if len(sizes) == 1 and not isinstance(sizes[0], builtins.int):
        sizes = tuple(sizes[0])
    if math.prod(sizes) != self.numel():
        raise ValueError(f"[resize] requested resize to {'x'.join(map(str, sizes))} "
                         f"({math.prod(sizes)} elements in total), but the given tensor has a "
                         f"size of {'x'.join(map(str, self.shape))} ({self.numel()} elements); "
                         f"autograd's resize can only change the shape of a given tensor, while "
                         f"preserving the number of elements")
    return self.reshape(sizes)


Tensor.resize = _tensor_resize

__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "builtins", "math", "warnings", "Any", "Tensor", "F", "get_autocast_dtype",
    "is_autocast_enabled")]
