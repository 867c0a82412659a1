"""torch functions Ember writes in Python over its ops, as composites whose gradients autograd
derives: order statistics (median, kthvalue, mode, quantile...), running extrema, splitting and
stacking helpers, elementwise forms (logit, xlogy, heaviside...), products (kron, tensordot...)
and linalg's conveniences. Each is also the Tensor method where PyTorch has one. Checked against
NumPy in tests/python/test_composites.py."""

import builtins
import math
from typing import Any, Optional, Sequence, Tuple

import ember
from ember import return_types
from ember._C import Tensor
from ember._errors import IndexError, TypeError, ValueError

_Dim = Optional[int]


def _wrap(dim: int, ndim: int, op: str) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"[{op}] dim {dim} is out of range for a tensor of {ndim} dims")
    return dim % n


# ---- order statistics --------------------------------------------------------------------------

def _rows(input: Tensor, dim: _Dim, op: str) -> Tuple[Tensor, int]:
    """input with `dim` last (flattened for dim None) and that dim's original position."""
    if dim is None:
        return input.reshape(-1), 0
    if input.dim() == 0:
        _wrap(dim, 0, op)
        return input.reshape(1), 0
    d = _wrap(dim, input.dim(), op)
    return input.movedim(d, -1), d


def _finish(values: Tensor, indices: Tensor, input: Tensor, d: int, keepdim: bool):
    """values and indices ([..., 1] over the rows of _rows) back in input's layout."""
    if input.dim() == 0:
        return values.reshape(()), indices.reshape(())
    values, indices = values.movedim(-1, d), indices.movedim(-1, d)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values, indices


def _pick(rows: Tensor, position: Tensor) -> Tuple[Tensor, Tensor]:
    """The position-th smallest of each row ([..., 1]) and its index."""
    values, indices = rows.sort(-1)
    return values.gather(-1, position), indices.gather(-1, position)


def _median(input: Tensor, dim: _Dim, keepdim: bool, ignore_nan: bool, op: str):
    rows, d = (input.reshape(1, -1), 0) if dim is None else _rows(input, dim, op)
    n = rows.shape[-1]
    if n == 0:
        raise IndexError(f"[{op}] cannot compute the median of an empty dim")
    nan = rows.isnan()
    count = (~nan).sum(-1, keepdim=True) if ignore_nan else \
        ember.full(rows.shape[:-1] + (1,), n, dtype=ember.int64, device=rows.device)
    position = ((count - 1).clamp(min=0) // 2)
    values, indices = _pick(rows, position)
    if not ignore_nan:  # a row with a NaN has the median NaN, at its first NaN
        has_nan = nan.any(-1, keepdim=True)
        first_nan = nan.to(ember.int64).argmax(-1, keepdim=True)
        values = ember.where(has_nan, ember.full_like(values, math.nan), values)
        indices = ember.where(has_nan, first_nan, indices)
    else:  # an all-NaN row: NaN at index 0
        empty = count == 0
        values = ember.where(empty, ember.full_like(values, math.nan), values)
        indices = ember.where(empty, ember.zeros_like(indices), indices)
    if dim is None:
        return values.reshape(())
    return getattr(return_types, op)(*_finish(values, indices, input, d, keepdim))


def median(input: Tensor, dim: _Dim = None, keepdim: bool = False) -> Any:
    """The lower median of all elements, or (values, indices) along dim; NaN where a NaN is."""
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input: Tensor, dim: _Dim = None, keepdim: bool = False) -> Any:
    """median ignoring NaNs (NaN only where every element is)."""
    return _median(input, dim, keepdim, True, "nanmedian")


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The k-th smallest element along dim (k counted from 1) and its index."""
    rows, d = _rows(input, dim, "kthvalue")
    if not 1 <= k <= rows.shape[-1]:
        raise IndexError(f"[kthvalue] selected number k={k} out of range for a dim of size "
                         f"{rows.shape[-1]}")
    position = ember.full(rows.shape[:-1] + (1,), k - 1, dtype=ember.int64, device=rows.device)
    return return_types.kthvalue(*_finish(*_pick(rows, position), input, d, keepdim))


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along dim (the smallest of equally frequent ones) and the index
    of its last occurrence, as PyTorch's CPU kernel gives it."""
    rows, d = _rows(input, dim, "mode")
    n = rows.shape[-1]
    if n == 0:
        raise IndexError("[mode] cannot compute the mode of an empty dim")
    ordered = rows.sort(-1).values
    starts = ember.ones_like(ordered, dtype=ember.bool)
    if n > 1:
        starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    run = starts.to(ember.int64).cumsum(-1) - 1  # each element's run of equal values
    counts = ember.zeros_like(run).scatter_add(-1, run, ember.ones_like(run))
    best = counts.argmax(-1, keepdim=True)  # the first (smallest) most frequent run
    first = (run == best).to(ember.int64).argmax(-1, keepdim=True)
    values = ordered.gather(-1, first)
    positions = ember.arange(n, device=rows.device).expand(rows.shape)
    indices = ember.where(rows == values, positions, -1).amax(-1, keepdim=True)
    return return_types.mode(*_finish(values.detach(), indices, input, d, keepdim))


def _quantile(input: Tensor, q: Any, dim: _Dim, keepdim: bool, interpolation: str,
              ignore_nan: bool, op: str) -> Tensor:
    if not input.is_floating_point():
        raise TypeError(f"[{op}] input must be a float tensor: got {input.dtype}")
    scalar_q = not isinstance(q, Tensor)
    qs = ember.tensor([q] if scalar_q else q.reshape(-1).tolist(), dtype=ember.float64)
    if isinstance(q, Tensor) and q.dim() > 1:
        raise ValueError(f"[{op}] q must be a scalar or a 1-d tensor: got {q.dim()} dims")
    if bool(((qs < 0) | (qs > 1)).any()):
        raise ValueError(f"[{op}] q values must be in the range [0, 1]")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"[{op}] interpolation must be one of linear, lower, higher, midpoint "
                         f"or nearest: got '{interpolation}'")
    rows, d = (input.reshape(1, -1), 0) if dim is None else _rows(input, dim, op)
    n = rows.shape[-1]
    if n == 0:
        raise IndexError(f"[{op}] input is empty along the reduced dim")
    ordered = rows.sort(-1).values  # NaN last
    nan = rows.isnan()
    count = (~nan).sum(-1, keepdim=True) if ignore_nan else \
        ember.full(rows.shape[:-1] + (1,), n, dtype=ember.int64, device=rows.device)
    last = (count - 1).clamp(min=0).to(ember.float64)  # [..., 1]
    pos = last * qs.to(rows.device)  # [..., Q]
    lo, hi = pos.floor(), pos.ceil()
    if interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = hi = pos.round()
    below = ordered.gather(-1, lo.to(ember.int64))
    above = ordered.gather(-1, hi.to(ember.int64))
    if interpolation == "midpoint":
        out = below + (above - below) * 0.5
    else:
        out = below + (above - below) * (pos - lo).to(rows.dtype)
    bad = (count == 0) if ignore_nan else nan.any(-1, keepdim=True)
    out = ember.where(bad, ember.full_like(out, math.nan), out)
    out = out.movedim(-1, 0)  # [Q, ...rows]
    if dim is None:
        out = out.reshape((len(qs),) + ((1,) * input.dim() if keepdim else ()))
    else:
        out = out.unsqueeze(d + 1) if keepdim and input.dim() > 0 else out
        if input.dim() > 0:
            out = out.movedim(-1, d + 1) if keepdim else out
    return out[0] if scalar_q else out


def quantile(input: Tensor, q: Any, dim: _Dim = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Optional[Tensor] = None) -> Tensor:
    """The q-th quantiles of all elements or along dim (q a number or a 1-d tensor, whose
    quantiles come first), interpolated as NumPy's methods of the same names; NaN where a NaN is."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q: Any, dim: _Dim = None, keepdim: bool = False, *,
                interpolation: str = "linear", out: Optional[Tensor] = None) -> Tensor:
    """quantile ignoring NaNs."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def msort(input: Tensor) -> Tensor:
    """input sorted along its first dim."""
    return input.sort(0).values


def aminmax(input: Tensor, *, dim: _Dim = None, keepdim: bool = False) -> Any:
    """(min, max) of all elements or along dim."""
    if dim is None:
        if keepdim:
            shape = (1,) * input.dim()
            return return_types.aminmax(input.amin().reshape(shape), input.amax().reshape(shape))
        return return_types.aminmax(input.amin(), input.amax())
    return return_types.aminmax(input.amin(dim, keepdim), input.amax(dim, keepdim))


def _cumulative(input: Tensor, dim: int, better, op: str) -> Tuple[Tensor, Tensor]:
    d = _wrap(dim, input.dim(), op)
    if input.dim() == 0:
        return input.clone(), ember.zeros((), dtype=ember.int64, device=input.device)
    rows = input.movedim(d, 0)
    values, indices = [rows[0]], [ember.zeros_like(rows[0], dtype=ember.int64)]
    for i in range(1, rows.shape[0]):
        take = better(rows[i], values[-1])
        if rows[i].is_floating_point():  # a NaN is kept from where it first appears
            take = (take & ~values[-1].isnan()) | rows[i].isnan()
        values.append(ember.where(take, rows[i], values[-1]))
        indices.append(ember.where(take, ember.full_like(indices[-1], i), indices[-1]))
    if rows.shape[0] == 0:
        return input.clone(), ember.zeros(input.shape, dtype=ember.int64, device=input.device)
    return ember.stack(values).movedim(0, d), ember.stack(indices).movedim(0, d)


def cummax(input: Tensor, dim: int) -> Any:
    """The running maxima along dim and the index each was reached at (the last of equals)."""
    return return_types.cummax(*_cumulative(input, dim, lambda a, b: a >= b, "cummax"))


def cummin(input: Tensor, dim: int) -> Any:
    """The running minima along dim and the index each was reached at (the last of equals)."""
    return return_types.cummin(*_cumulative(input, dim, lambda a, b: a <= b, "cummin"))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along dim, computed stably."""
    d = _wrap(dim, input.dim(), "logcumsumexp")
    if input.dim() == 0 or input.numel() == 0:
        return input.clone()
    rows = input.movedim(d, 0)
    out = [rows[0]]
    for i in range(1, rows.shape[0]):  # out_i = logaddexp(out_{i-1}, x_i): no overflow
        out.append(ember.logaddexp(out[-1], rows[i]))
    return ember.stack(out).movedim(0, d)


def std_mean(input: Tensor, dim: Any = None, *, correction: Any = 1, keepdim: bool = False):
    """(std, mean) over dim."""
    return (input.std(dim, correction=correction, keepdim=keepdim),
            input.mean(dim, keepdim=keepdim) if dim is not None else
            (input.mean().reshape((1,) * input.dim()) if keepdim else input.mean()))


def var_mean(input: Tensor, dim: Any = None, *, correction: Any = 1, keepdim: bool = False):
    """(var, mean) over dim."""
    return (input.var(dim, correction=correction, keepdim=keepdim),
            input.mean(dim, keepdim=keepdim) if dim is not None else
            (input.mean().reshape((1,) * input.dim()) if keepdim else input.mean()))


# ---- splitting, stacking, reorienting -----------------------------------------------------------

def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> Tuple[Tensor, ...]:
    """Views of input along dim: n nearly equal parts (the first size % n one longer), or the
    parts between the given indices."""
    d = _wrap(dim, input.dim(), "tensor_split")
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor) and indices_or_sections.dim() == 0:
        indices_or_sections = int(indices_or_sections)
    if isinstance(indices_or_sections, builtins.int):
        n = indices_or_sections
        if n <= 0:
            raise ValueError(f"[tensor_split] number of sections must be larger than 0: got {n}")
        bounds, start = [], 0
        for i in range(n):
            start += size // n + (1 if i < size % n else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in (indices_or_sections.tolist() if isinstance(
            indices_or_sections, Tensor) else indices_or_sections)]
    out, start = [], 0
    for stop in bounds + [size]:
        lo = min(max(start if start >= 0 else start + size, 0), size)
        hi = min(max(stop if stop >= 0 else stop + size, lo), size)
        out.append(input.narrow(d, lo, hi - lo))
        start = stop
    return tuple(out)


def _split_along(input: Tensor, sections: Any, dim: int, need: int, op: str):
    if input.dim() < need:
        raise ValueError(f"[{op}] needs a tensor of at least {need} dims: got {input.dim()}")
    if isinstance(sections, builtins.int) and input.shape[dim] % sections != 0:
        raise ValueError(f"[{op}] attempted to split along dimension {dim}, but the size of the "
                         f"dimension {input.shape[dim]} is not divisible by the split_size "
                         f"{sections}!")
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:
    """tensor_split along dim 1 (dim 0 for a 1-d tensor), equal parts only."""
    return _split_along(input, indices_or_sections, 1 if input.dim() > 1 else 0, 1, "hsplit")


def vsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:
    """tensor_split along dim 0 of a tensor of 2 or more dims, equal parts only."""
    return _split_along(input, indices_or_sections, 0, 2, "vsplit")


def dsplit(input: Tensor, indices_or_sections: Any) -> Tuple[Tensor, ...]:
    """tensor_split along dim 2 of a tensor of 3 or more dims, equal parts only."""
    return _split_along(input, indices_or_sections, 2, 3, "dsplit")


def _atleast(n: int, tensors: Any):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        if t.dim() == 0:
            t = t.reshape((1,) * n)
        elif t.dim() == 1 and n >= 2:
            t = t.unsqueeze(0)
            if n == 3:
                t = t.unsqueeze(-1)
        elif t.dim() == 2 and n == 3:
            t = t.unsqueeze(-1)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dim (a 0-d one becomes [1])."""
    return _atleast(1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dims (a 1-d one becomes a row)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dims ([N] becomes [1, N, 1], [M, N] becomes [M, N, 1])."""
    return _atleast(3, tensors)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors side by side as columns (1-d ones as [N, 1])."""
    return ember.hstack([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors])


def row_stack(tensors: Sequence[Tensor]) -> Tensor:
    """vstack (its older name)."""
    return ember.vstack(list(tensors))


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors concatenated along dim 2 (each made at least 3-d)."""
    return ember.cat([_atleast(3, (t,)) for t in tensors], dim=2)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """input rotated by k quarter turns in the plane of dims, from the first towards the second."""
    if len(dims) != 2:
        raise ValueError(f"[rot90] expected 2 dims: got {len(dims)}")
    d0, d1 = (_wrap(d, input.dim(), "rot90") for d in dims)
    if d0 == d1:
        raise ValueError(f"[rot90] the dims must differ: got {tuple(dims)}")
    k %= 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone()


def fliplr(input: Tensor) -> Tensor:
    """input with dim 1 reversed (at least 2-d)."""
    if input.dim() < 2:
        raise ValueError("[fliplr] input must be >= 2-d")
    return input.flip([1])


def flipud(input: Tensor) -> Tensor:
    """input with dim 0 reversed (at least 1-d)."""
    if input.dim() < 1:
        raise ValueError("[flipud] input must be >= 1-d")
    return input.flip([0])


def moveaxis(input: Tensor, source: Any, destination: Any) -> Tensor:
    """movedim under NumPy's name."""
    return input.movedim(source, destination)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """input repeated dims times per dim (fewer dims than input: ones in front)."""
    dims = tuple(dims)
    if len(dims) < input.dim():
        dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims)


# ---- elementwise ------------------------------------------------------------------------------

def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] if eps is given."""
    p = input if eps is None else input.clamp(eps, 1 - eps)
    return (p / (1 - p)).log()


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2^input + 2^other), computed stably."""
    top = ember.maximum(input, other)
    low = ember.minimum(input, other)
    return top + (1 + (low - top).exp2()).log2()


def xlogy(input: Any, other: Any) -> Tensor:
    """input * log(other), 0 where input is 0 (NaN where other is)."""
    x = input if isinstance(input, Tensor) else ember.tensor(input)
    y = other if isinstance(other, Tensor) else ember.tensor(other)
    out = x * y.log()
    return ember.where((x == 0) & ~y.isnan(), ember.zeros_like(out), out)


def sinc(input: Tensor) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0."""
    x = input if input.is_floating_point() else input.to(ember.float32)
    px = x * math.pi
    safe = ember.where(x == 0, ember.ones_like(px), px)
    return ember.where(x == 0, ember.ones_like(px), safe.sin() / safe)


def frac(input: Tensor) -> Tensor:
    """input - trunc(input)."""
    return input - input.trunc()


def fix(input: Tensor) -> Tensor:
    """trunc under NumPy's name."""
    return input.trunc()


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians."""
    return input * (math.pi / 180)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees."""
    return input * (180 / math.pi)


def signbit(input: Tensor) -> Tensor:
    """Whether each sign bit is set (true for -0.0 and negative NaN payloads aside)."""
    if not input.is_floating_point():
        return input < 0
    return (input < 0) | ((input == 0) & ((1 / input) < 0))


def copysign(input: Any, other: Any) -> Tensor:
    """|input| with the sign (bit) of other."""
    x = input if isinstance(input, Tensor) else ember.tensor(input)
    y = other if isinstance(other, Tensor) else ember.tensor(other, dtype=ember.float32)
    if not x.is_floating_point():
        x = x.to(ember.float32)
    return ember.where(signbit(y), -x.abs(), x.abs())


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 where input < 0, values where input == 0, 1 where input > 0 (both of one dtype)."""
    if input.dtype != values.dtype:
        raise TypeError(f"[heaviside] is not implemented for tensors with different dtypes: "
                        f"{input.dtype} and {values.dtype}")
    return ember.where(input == 0, values, (input > 0).to(input.dtype))


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise maximum, ignoring a NaN when the other value is not NaN."""
    return ember.where(input.isnan(), other, ember.where(other.isnan(), input,
                                                         ember.maximum(input, other)))


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """The elementwise minimum, ignoring a NaN when the other value is not NaN."""
    return ember.where(input.isnan(), other, ember.where(other.isnan(), input,
                                                         ember.minimum(input, other)))


def float_power(input: Any, exponent: Any) -> Tensor:
    """input ** exponent in float64."""
    x = input.to(ember.float64) if isinstance(input, Tensor) else ember.tensor(
        input, dtype=ember.float64)
    e = exponent.to(ember.float64) if isinstance(exponent, Tensor) else exponent
    return x.pow(e)


def isneginf(input: Tensor) -> Tensor:
    """Where input is -inf."""
    return input.isinf() & (input < 0)


def isposinf(input: Tensor) -> Tensor:
    """Where input is +inf."""
    return input.isinf() & (input > 0)


def isreal(input: Tensor) -> Tensor:
    """True everywhere: Ember's tensors are real."""
    return ember.ones_like(input, dtype=ember.bool)


# ---- products ---------------------------------------------------------------------------------

def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None,
         append: Optional[Tensor] = None) -> Tensor:
    """The n-th forward difference along dim (with prepend/append concatenated first)."""
    d = _wrap(dim, input.dim(), "diff")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = ember.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = x.shape[d]
        x = x.narrow(d, 1, max(size - 1, 0)) - x.narrow(d, 0, max(size - 1, 0))
        if x.dtype == ember.bool:
            x = x != 0
    return x


def cross(input: Tensor, other: Tensor, dim: Optional[int] = None) -> Tensor:
    """The cross product of 3-vectors along dim (the first dim of size 3 when None, as torch.cross
    does)."""
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise ValueError(f"[cross] no dim of size 3 in input of shape {list(input.shape)}")
    a, b = ember.broadcast_tensors(input, other)
    d = _wrap(dim, a.dim(), "cross")
    if a.shape[d] != 3:
        raise ValueError(f"[cross] dim {dim} must have size 3: got {a.shape[d]}")
    a0, a1, a2 = a.unbind(d)
    b0, b1, b2 = b.unbind(d)
    return ember.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product."""
    n = max(input.dim(), other.dim())
    a = input.reshape((1,) * (n - input.dim()) + tuple(input.shape))
    b = other.reshape((1,) * (n - other.dim()) + tuple(other.shape))
    shape_a = [s for pair in zip(a.shape, (1,) * n) for s in pair]
    shape_b = [s for pair in zip((1,) * n, b.shape) for s in pair]
    out = a.reshape(shape_a) * b.reshape(shape_b)
    return out.reshape([x * y for x, y in zip(a.shape, b.shape)])


def inner(input: Tensor, other: Tensor) -> Tensor:
    """The sum over the last dims of input and other of their products (a scalar times a tensor
    for 0-d ones)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return tensordot(input, other, ([input.dim() - 1], [other.dim() - 1]))


def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """outer under its older name."""
    return ember.outer(input, vec2)


def tensordot(a: Tensor, b: Tensor, dims: Any = 2, out: Optional[Tensor] = None) -> Tensor:
    """The sum over the given dims of a and b (the last `dims` of a and first of b, for an int)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, builtins.int):
        if dims < 0:
            raise ValueError(f"[tensordot] expects dims >= 0: got {dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        dims_a, dims_b = ([dims[0]] if isinstance(dims[0], builtins.int) else list(dims[0]),
                          [dims[1]] if isinstance(dims[1], builtins.int) else list(dims[1]))
    dims_a = [_wrap(d, a.dim(), "tensordot") for d in dims_a]
    dims_b = [_wrap(d, b.dim(), "tensordot") for d in dims_b]
    if len(dims_a) != len(dims_b):
        raise ValueError("[tensordot] both dim lists should have the same length")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a.shape[d] for d in free_a), k)
    right = b.permute(dims_b + free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    return (left @ right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element of each 1-d tensor, one per row."""
    if len(tensors) == 1:
        return tensors[0]
    grids = ember.meshgrid(*tensors, indexing="ij")
    return ember.stack([g.reshape(-1) for g in grids], dim=1)


def block_diag(*tensors: Tensor) -> Tensor:
    """The tensors (0-, 1- or 2-d) as the blocks of a block-diagonal matrix."""
    blocks = [t.reshape(1, -1) if t.dim() < 2 else t for t in tensors]
    for t in blocks:
        if t.dim() != 2:
            raise ValueError(f"[block_diag] tensors must have 2 or fewer dims: got {t.dim()}")
    rows = builtins.sum(t.shape[0] for t in blocks)
    cols = builtins.sum(t.shape[1] for t in blocks)
    dtype = blocks[0].dtype if blocks else ember.float32
    for t in blocks[1:]:  # promoted as the dtypes of two 0-d tensors are
        dtype = (ember.zeros((), dtype=dtype) + ember.zeros((), dtype=t.dtype)).dtype
    out_rows, r, c = [], 0, 0
    for t in blocks:
        left = ember.zeros(t.shape[0], c, dtype=dtype)
        right = ember.zeros(t.shape[0], cols - c - t.shape[1], dtype=dtype)
        out_rows.append(ember.cat([left, t.to(dtype), right], 1))
        r, c = r + t.shape[0], c + t.shape[1]
    return ember.cat(out_rows, 0) if out_rows else ember.zeros(rows, cols, dtype=dtype)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with input's elements on its offset-th diagonal."""
    return ember.diag(input.reshape(-1), offset)


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other."""
    return ember.linalg.vector_norm(input - other, p)


# ---- linalg ------------------------------------------------------------------------------------

def _matrix_exp(a: Tensor) -> Tensor:
    # Scaling and squaring a Taylor series: the 1-norm scaled to at most 1/2, where 18 terms leave
    # an error below 1e-21.
    norm = float(a.detach().abs().sum(-2).max()) if a.numel() else 0.0
    squarings = math.ceil(math.log2(norm)) + 1 if norm > 0.5 else 0
    a = a / (2 ** squarings)
    eye = ember.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    result, term = eye + a, a
    for k in range(2, 18):
        term = term @ a / k
        result = result + term
    for _ in range(squarings):
        result = result @ result
    return result


def matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix of A."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"[matrix_exp] expected a square matrix or batch of them: got "
                         f"{list(A.shape)}")
    return _matrix_exp(A)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """A to the integer power n (the inverse's for n < 0), by repeated squaring."""
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"[matrix_power] expected a square matrix or batch of them: got "
                         f"{list(A.shape)}")
    if n < 0:
        A, n = ember.linalg.inv(A), -n
    result = ember.eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone()
    base = A
    while n:
        if n & 1:
            result = result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i the i-th column of A
    below its diagonal with a 1 on it (LAPACK's orgqr)."""
    n, k = A.shape[-2], A.shape[-1]
    if tau.shape[-1] > k or k > n:
        raise ValueError(f"[householder_product] needs input.shape[-2] >= input.shape[-1] >= "
                         f"tau.shape[-1]: got {list(A.shape)} and {list(tau.shape)}")
    eye = ember.eye(n, dtype=A.dtype, device=A.device)
    q = eye[:, :k].expand(*A.shape[:-2], n, k)
    for i in reversed(range(tau.shape[-1])):
        v = A[..., :, i:i + 1].tril(-i) * (1 - eye[:, i:i + 1]) + eye[:, i:i + 1]
        q = q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.transpose(-2, -1) @ q))
    return q


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of the vectors along dim (broadcast)."""
    return (x * y).sum(dim)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of the matrices (the first and last may be vectors)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ValueError(f"[multi_dot] expected at least 2 tensors: got {len(tensors)}")
    first_1d, last_1d = tensors[0].dim() == 1, tensors[-1].dim() == 1
    if first_1d:
        tensors[0] = tensors[0].unsqueeze(0)
    if last_1d:
        tensors[-1] = tensors[-1].unsqueeze(1)
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    if first_1d:
        out = out.squeeze(0)
    if last_1d:
        out = out.squeeze(-1)
    return out


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along dim (default the last)."""
    return cross(input, other, dim)


def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of the matrices of A (torch.diagonal with dims -2 and -1)."""
    return A.diagonal(offset, dim1, dim2)


def vander(x: Tensor, N: Optional[int] = None) -> Tensor:
    """[x^0, x^1, ..., x^(N-1)] along a new last dim (linalg.vander: increasing powers)."""
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise ValueError(f"[vander] N must be greater than 1: got {n}")
    powers = [ember.ones_like(x)]
    for _ in range(1, n):
        powers.append(powers[-1] * x)
    return ember.stack(powers, -1)


def matrix_rank(A: Tensor, *, atol: Optional[float] = None, rtol: Optional[float] = None,
                hermitian: bool = False, tol: Optional[float] = None) -> Tensor:
    """The number of singular values above max(atol, rtol * the largest); by default rtol is
    eps * max(m, n), as in PyTorch."""
    s = ember.linalg.svdvals(A)
    if tol is not None:
        atol, rtol = tol, 0.0
    if rtol is None:
        rtol = 0.0 if (atol is not None and atol > 0) else \
            ember.finfo(A.dtype).eps * max(A.shape[-2], A.shape[-1])
    top = s.amax(-1, keepdim=True) if s.shape[-1] else ember.zeros(s.shape[:-1] + (1,))
    bound = ember.maximum(ember.full_like(top, atol or 0.0), top * rtol)
    return (s > bound).sum(-1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number of A in norm p (2, the default: the ratio of the extreme singular
    values; -2: its inverse; others: norm(A, p) * norm(inv(A), p))."""
    if p is None or p in (2, -2):
        s = ember.linalg.svdvals(A)
        ratio = s[..., 0] / s[..., -1]
        return ratio if p in (None, 2) else 1 / ratio
    return ember.linalg.matrix_norm(A, p) * ember.linalg.matrix_norm(ember.linalg.inv(A), p)


def _info(A: Tensor) -> Tensor:
    return ember.zeros(A.shape[:-2], dtype=ember.int32, device=A.device)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> Any:
    """(linalg.solve(A, B), info): info is 0, as a singular A raises LinAlgError."""
    return return_types.linalg_solve_ex(ember.linalg.solve(A, B, left=left), _info(A))


def inv_ex(A: Tensor, *, check_errors: bool = False) -> Any:
    """(linalg.inv(A), info): info is 0, as a singular A raises LinAlgError."""
    return return_types.linalg_inv_ex(ember.linalg.inv(A), _info(A))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> Any:
    """(linalg.cholesky(A), info): info is 0, as a non-positive-definite A raises LinAlgError."""
    return return_types.linalg_cholesky_ex(ember.linalg.cholesky(A, upper=upper), _info(A))


_TORCH = ("median", "nanmedian", "kthvalue", "mode", "quantile", "nanquantile", "msort",
          "aminmax", "cummax", "cummin", "logcumsumexp", "std_mean", "var_mean", "tensor_split",
          "hsplit", "vsplit", "dsplit", "atleast_1d", "atleast_2d", "atleast_3d", "column_stack",
          "row_stack", "dstack", "rot90", "fliplr", "flipud", "moveaxis", "tile", "logit",
          "logaddexp2", "xlogy", "sinc", "frac", "fix", "deg2rad", "rad2deg", "signbit",
          "copysign", "heaviside", "fmax", "fmin", "float_power", "isneginf", "isposinf",
          "isreal", "diff", "cross", "kron", "inner", "ger", "tensordot", "cartesian_prod",
          "block_diag", "diagflat", "dist", "matrix_exp", "matrix_power")
# The Tensor methods of the same names (PyTorch's, not every function has one).
_METHODS = ("median", "nanmedian", "kthvalue", "mode", "quantile", "nanquantile", "msort",
            "aminmax", "cummax", "cummin", "logcumsumexp", "tensor_split", "hsplit", "vsplit",
            "dsplit", "rot90", "fliplr", "flipud", "moveaxis", "tile", "logit", "logaddexp2",
            "xlogy", "sinc", "frac", "fix", "deg2rad", "rad2deg", "signbit", "copysign",
            "heaviside", "fmax", "fmin", "float_power", "isneginf", "isposinf", "isreal", "diff",
            "cross", "kron", "inner", "ger", "diagflat", "dist", "matrix_exp", "matrix_power")
# The methods with an in-place form, x.<name>_(...) (float_power_ below, for its dtype rule).
_INPLACE = ("logit", "xlogy", "sinc", "frac", "deg2rad", "rad2deg", "copysign", "heaviside")


def _inplace_method(name: str) -> Any:
    op = globals()[name]

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return ember._C._apply_inplace(self, name + "_", lambda value: op(value, *args, **kwargs))

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: this tensor becomes {name}(self, ...) (its dtype and shape kept)."
    return method


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """In place: self = self ** exponent, for a float64 self (float_power's result dtype)."""
    if self.dtype != ember.float64:
        raise TypeError(f"[float_power_] the base given to float_power_ has dtype {self.dtype} but "
                        f"the operation's result requires dtype ember.float64")
    return ember._C._apply_inplace(self, "float_power_", lambda value: float_power(value, exponent))


_LINALG = {"matrix_exp": matrix_exp, "matrix_power": matrix_power,
           "householder_product": householder_product, "vecdot": vecdot,
           "multi_dot": multi_dot, "cross": linalg_cross, "diagonal": linalg_diagonal,
           "vander": vander, "matrix_rank": matrix_rank, "cond": cond, "solve_ex": solve_ex,
           "inv_ex": inv_ex, "cholesky_ex": cholesky_ex}


def install() -> None:
    """Adds the functions to ember (and ember.linalg) where it lacks them, and the methods to
    Tensor."""
    from ember import linalg
    for name in _TORCH:
        if not hasattr(ember, name):
            setattr(ember, name, globals()[name])
    for name in _METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, globals()[name])
    for name in _INPLACE:
        if not hasattr(Tensor, name + "_"):
            setattr(Tensor, name + "_", _inplace_method(name))
    if not hasattr(Tensor, "float_power_"):
        Tensor.float_power_ = float_power_
    for name, fn in _LINALG.items():
        if not hasattr(linalg, name):
            setattr(linalg, name, fn)
    if not hasattr(linalg, "matmul"):
        linalg.matmul = ember.matmul
