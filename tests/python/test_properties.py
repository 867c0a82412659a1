"""Property-based tests: generated shapes, layouts, dtypes and values, checked against NumPy and
against the reference backend.

Every test draws its inputs with Hypothesis: 0-dim and empty tensors, transposed, sliced, expanded
(stride 0) and self-overlapping views among them. An op must either give NumPy's answer (in
float64, within the dtype's tolerance) or raise an `ember.Error` where NumPy or PyTorch refuse the
input too: never crash, never a silently different value. The default profile is derandomized
(the same examples on every run, as CI needs); `EMBER_HYPOTHESIS=explore` draws new ones, many
more of them, to look for new failures.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember

settings.register_profile(
    "ci", derandomize=True, deadline=None, max_examples=60, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile(
    "explore", deadline=None, max_examples=2000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("explore" if os.environ.get("EMBER_HYPOTHESIS") == "explore" else "ci")

FLOATS = [ember.float32, ember.float64]
INTS = [ember.int32, ember.int64]
ALL = FLOATS + INTS + [ember.bool]
NP = {ember.float32: np.float32, ember.float64: np.float64, ember.int32: np.int32,
      ember.int64: np.int64, ember.bool: np.bool_, ember.uint8: np.uint8, ember.int8: np.int8}
# Tolerances of a float result against a float64 NumPy computation.
RTOL = {ember.float32: 2e-5, ember.float64: 1e-12}
ATOL = {ember.float32: 1e-5, ember.float64: 1e-12}


def values(dtype, lo=-8, hi=8):
    """A strategy of element values of `dtype` in [lo, hi] (no NaN, no infinity)."""
    if dtype == ember.bool:
        return st.booleans()
    if dtype in INTS:
        return st.integers(lo, hi)
    lo, hi = float(np.float32(lo)), float(np.float32(hi))  # bounds a float32 can hold
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def arrays(draw, dtype, shape, lo=-8, hi=8):
    """A NumPy array of `dtype`'s NumPy type and `shape` with values from values()."""
    return draw(hnp.arrays(NP[dtype], shape, elements=values(dtype, lo, hi)))


LAYOUTS = ["contiguous", "transposed", "sliced", "expanded", "overlapping"]


@st.composite
def tensors(draw, dtypes=ALL, shape=None, min_dims=0, max_dims=4, max_side=4, layouts=LAYOUTS,
            lo=-8, hi=8):
    """(ember tensor, NumPy array of the same values) in one of the layouts.

    transposed: a contiguous tensor of the reversed shape, permuted; sliced: every other element
    of a tensor twice the size on each dim; expanded: size-1 dims broadcast with stride 0;
    overlapping: as_strided over a short buffer so that different indices share elements (only
    for reading: such a tensor is never written to)."""
    dtype = draw(st.sampled_from(dtypes))
    if shape is None:
        shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0,
                                      max_side=max_side))
    shape = tuple(shape)
    layout = draw(st.sampled_from(layouts))
    nd = len(shape)
    if layout == "transposed" and nd >= 2:
        base = draw(arrays(dtype, shape[::-1], lo, hi))
        t = ember.tensor(base).permute(*reversed(range(nd)))
        return t, base.transpose()
    if layout == "sliced" and nd >= 1:
        base = draw(arrays(dtype, tuple(2 * s for s in shape), lo, hi))
        index = tuple(slice(None, None, 2) for _ in shape)
        return ember.tensor(base)[index], base[index]
    if layout == "expanded" and nd >= 1:
        small = tuple(s if draw(st.booleans()) else 1 for s in shape)
        base = draw(arrays(dtype, small, lo, hi))
        return ember.tensor(base).expand(*shape), np.broadcast_to(base, shape)
    if layout == "overlapping" and nd >= 1 and all(s > 0 for s in shape):
        strides = tuple(draw(st.integers(0, 2)) for _ in shape)
        storage = 1 + sum((s - 1) * st_ for s, st_ in zip(shape, strides))
        base = draw(arrays(dtype, (storage,), lo, hi))
        t = ember.tensor(base).as_strided(shape, strides)
        item = base.itemsize
        a = np.lib.stride_tricks.as_strided(base, shape, tuple(s * item for s in strides),
                                            writeable=False)
        return t, a
    base = draw(arrays(dtype, shape, lo, hi))
    return ember.tensor(base), base


def to_numpy(t):
    """A tensor's values as a NumPy array (a copy, on the host)."""
    return t.detach().cpu().numpy().copy()


def assert_close(got, want, dtype):
    """got (ember tensor) equals want (NumPy, any precision) within dtype's tolerance."""
    g = to_numpy(got)
    assert g.shape == np.shape(want), (g.shape, np.shape(want))
    if dtype in RTOL:
        np.testing.assert_allclose(g.astype(np.float64), np.asarray(want, np.float64),
                                   rtol=RTOL[dtype], atol=ATOL[dtype], equal_nan=True)
    else:
        np.testing.assert_array_equal(g, np.asarray(want).astype(g.dtype))


def result_type(a, b):
    """PyTorch's result dtype of a binary op on tensors a and b (Note [Type promotion])."""
    order = [ember.bool, ember.uint8, ember.int8, ember.int32, ember.int64, ember.float16,
             ember.bfloat16, ember.float32, ember.float64]

    def category(dt):
        return 2 if dt in FLOATS else (1 if dt != ember.bool else 0)

    if (a.dim() == 0) == (b.dim() == 0):
        return max(a.dtype, b.dtype, key=order.index)
    dimmed, zero = (a, b) if a.dim() > 0 else (b, a)
    if category(zero.dtype) > category(dimmed.dtype):
        return zero.dtype if zero.dtype in FLOATS else ember.int64
    return dimmed.dtype


# ---------------------------------------------------------------------------------------------
# Unary elementwise ops
# ---------------------------------------------------------------------------------------------

# op name -> (NumPy function in float64, domain (lo, hi) of the generated values)
UNARY = {
    "neg": (np.negative, (-8, 8)),
    "abs": (np.abs, (-8, 8)),
    "exp": (np.exp, (-8, 8)),
    "expm1": (np.expm1, (-8, 8)),
    "log": (np.log, (0.01, 8)),
    "log1p": (np.log1p, (-0.99, 8)),
    "log2": (np.log2, (0.01, 8)),
    "log10": (np.log10, (0.01, 8)),
    "sqrt": (np.sqrt, (0, 8)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 8)),
    "sin": (np.sin, (-8, 8)),
    "cos": (np.cos, (-8, 8)),
    "tan": (np.tan, (-1.2, 1.2)),
    "tanh": (np.tanh, (-8, 8)),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-8, 8)),
    "relu": (lambda x: np.maximum(x, 0), (-8, 8)),
    "floor": (np.floor, (-8, 8)),
    "ceil": (np.ceil, (-8, 8)),
    "trunc": (np.trunc, (-8, 8)),
    "sign": (np.sign, (-8, 8)),
    "square": (np.square, (-8, 8)),
    "reciprocal": (lambda x: 1 / x, (0.01, 8)),
    "erf": (lambda x: np.vectorize(math.erf)(x) if np.size(x) else x, (-4, 4)),
    "exp2": (np.exp2, (-8, 8)),
    "asin": (np.arcsin, (-0.99, 0.99)),
    "acos": (np.arccos, (-0.99, 0.99)),
    "atan": (np.arctan, (-8, 8)),
    "sinh": (np.sinh, (-8, 8)),
    "cosh": (np.cosh, (-8, 8)),
    "asinh": (np.arcsinh, (-8, 8)),
    "acosh": (np.arccosh, (1, 8)),
    "atanh": (np.arctanh, (-0.99, 0.99)),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_ops_match_numpy_on_every_layout(name, data):
    fn, (lo, hi) = UNARY[name]
    t, a = data.draw(tensors(dtypes=FLOATS, lo=lo, hi=hi))
    got = getattr(ember, name)(t)
    assert got.dtype == t.dtype and tuple(got.shape) == a.shape
    assert_close(got, fn(a.astype(np.float64)), t.dtype)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "neg", "abs", "tanh", "sigmoid", "relu"])
@given(data=st.data())
def test_in_place_unary_ops_write_through_views(name, data):
    """x.op_() on a transposed or sliced view changes exactly the view's elements of its base."""
    fn, (lo, hi) = UNARY[name]
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    base = data.draw(arrays(dtype, tuple(2 * s for s in shape), lo, hi))
    b = ember.tensor(base)
    index = tuple(slice(1, None, 2) for _ in shape)
    view = b[index]
    if data.draw(st.booleans()) and len(shape) >= 2:
        view = view.transpose(0, len(shape) - 1)
    getattr(view, name + "_")()
    want = base.astype(np.float64)
    want[index] = fn(want[index])
    assert_close(b, want, dtype)


# ---------------------------------------------------------------------------------------------
# Binary elementwise ops, broadcasting and type promotion
# ---------------------------------------------------------------------------------------------

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


@st.composite
def broadcast_pair(draw, dtypes=ALL, lo=-8, hi=8):
    """Two tensors (and arrays) whose shapes broadcast, each in its own layout and dtype."""
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                    min_side=0, max_side=4))
    a = draw(tensors(dtypes=dtypes, shape=shapes.input_shapes[0], lo=lo, hi=hi))
    b = draw(tensors(dtypes=dtypes, shape=shapes.input_shapes[1], lo=lo, hi=hi))
    return a, b, shapes.result_shape


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_ops_broadcast_and_promote_like_pytorch(name, data):
    (x, a), (y, b), shape = data.draw(broadcast_pair())
    if name == "sub":
        assume(ember.bool not in (x.dtype, y.dtype))  # PyTorch refuses bool subtraction
    out = getattr(ember, name)(x, y)
    assert tuple(out.shape) == shape
    want_dtype = ember.bool if name in COMPARISONS else result_type(x, y)
    assert out.dtype == want_dtype, (x.dtype, x.dim(), y.dtype, y.dim(), out.dtype)
    want = BINARY[name](a.astype(np.float64), b.astype(np.float64))
    if want_dtype == ember.bool:
        want = want.astype(bool)
    assert_close(out, want, want_dtype)


@given(data=st.data())
def test_true_division_of_any_dtypes_is_float(data):
    (x, a), (y, b), shape = data.draw(broadcast_pair(lo=1, hi=8))
    out = x / y
    assert out.dtype in FLOATS
    with np.errstate(divide="ignore", invalid="ignore"):
        want = a.astype(np.float64) / b.astype(np.float64)
    assert_close(out, want, out.dtype)


@given(data=st.data())
def test_integer_floor_division_and_remainder_are_exact(data):
    (x, a), (y, b), shape = data.draw(broadcast_pair(dtypes=INTS, lo=-50, hi=50))
    assume(np.all(b != 0))
    np.testing.assert_array_equal(to_numpy(ember.floor_divide(x, y)),
                                  np.floor_divide(a.astype(np.int64), b.astype(np.int64)))
    np.testing.assert_array_equal(to_numpy(ember.remainder(x, y)),
                                  np.remainder(a.astype(np.int64), b.astype(np.int64)))


# ---------------------------------------------------------------------------------------------
# In-place ops on views of one base: overlap
# ---------------------------------------------------------------------------------------------

def _geometry_equal(p, q):
    return (p.__array_interface__["data"][0] == q.__array_interface__["data"][0]
            and p.shape == q.shape and p.strides == q.strides)


@given(data=st.data())
def test_in_place_add_between_views_of_one_buffer(data):
    """out.add_(src) where both are views of one buffer: disjoint views and the same view give
    NumPy's answer (computed from a copy of src); views that share only some elements are refused
    with an error, as PyTorch refuses them; never a silently different value."""
    n = data.draw(st.integers(1, 12))
    base = np.arange(n, dtype=np.float64) + 1
    buf = ember.tensor(base)
    out_start = data.draw(st.integers(0, n - 1))
    src_start = data.draw(st.integers(0, n - 1))
    length = data.draw(st.integers(1, n - max(out_start, src_start)))
    out_view, src_view = buf[out_start:out_start + length], buf[src_start:src_start + length]
    a_out, a_src = base[out_start:out_start + length], base[src_start:src_start + length]
    partial = np.shares_memory(a_out, a_src) and not _geometry_equal(a_out, a_src)
    want = base.copy()
    want[out_start:out_start + length] += a_src.copy()
    if partial:
        with pytest.raises(ember.Error):
            out_view.add_(src_view)
        np.testing.assert_array_equal(to_numpy(buf), base)  # nothing was written
    else:
        out_view.add_(src_view)
        np.testing.assert_array_equal(to_numpy(buf), want)


@given(data=st.data())
def test_writing_into_an_expanded_tensor_is_refused(data):
    t, _ = data.draw(tensors(dtypes=FLOATS, min_dims=1, layouts=["expanded"]))
    # An empty tensor has no element to write twice (PyTorch takes it too).
    assume(t.numel() > 0 and any(s > 1 and st_ == 0 for s, st_ in zip(t.shape, t.stride())))
    with pytest.raises(ember.Error):
        t.add_(1)


@given(data=st.data())
def test_copy_from_a_different_layout_of_the_same_memory(data):
    """a.copy_(a.t()) and its kin: the result is the source's values as they were before."""
    side = data.draw(st.integers(0, 5))
    base = np.arange(side * side, dtype=np.float64).reshape(side, side)
    a = ember.tensor(base)
    a.copy_(a.t())
    np.testing.assert_array_equal(to_numpy(a), base.T)


# ---------------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "amax": np.amax,
    "amin": np.amin,
    "prod": np.prod,
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@given(data=st.data())
def test_reductions_over_any_dims_match_numpy(name, data):
    t, a = data.draw(tensors(dtypes=FLOATS, min_dims=1, lo=-2, hi=2))
    nd = t.dim()
    dims = data.draw(st.lists(st.integers(-nd, nd - 1), min_size=1, max_size=nd,
                              unique_by=lambda d: d % nd))
    if name == "prod":
        dims = dims[:1]  # prod reduces one dim, as in PyTorch
    keepdim = data.draw(st.booleans())
    axis = tuple(d % nd for d in dims)
    empty_reduced = any(a.shape[d] == 0 for d in axis)
    if name in ("amax", "amin") and empty_reduced:
        with pytest.raises(IndexError):  # PyTorch: IndexError, as there is no identity
            getattr(ember, name)(t, dims, keepdim)
        return
    got = getattr(ember, name)(t, dims[0] if name == "prod" else dims, keepdim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's mean of nothing
        want = REDUCTIONS[name](a.astype(np.float64), axis=axis, keepdims=keepdim)
    assert_close(got, want, t.dtype)


@given(data=st.data())
def test_full_reductions_match_numpy_for_every_dtype(data):
    t, a = data.draw(tensors(dtypes=ALL, lo=-3, hi=3))
    got = t.sum()
    want_dtype = ember.int64 if t.dtype in INTS + [ember.bool] else t.dtype
    assert got.dtype == want_dtype
    assert_close(got, np.sum(a.astype(np.float64)), want_dtype)


@given(data=st.data())
def test_argmax_points_at_a_maximum(data):
    t, a = data.draw(tensors(dtypes=FLOATS + INTS, min_dims=1, layouts=["contiguous",
                                                                      "transposed", "sliced"]))
    assume(a.size > 0)
    d = data.draw(st.integers(0, t.dim() - 1))
    assume(a.shape[d] > 0)
    idx = to_numpy(t.argmax(d))
    picked = np.take_along_axis(a, np.expand_dims(idx, d), d).squeeze(d)
    np.testing.assert_array_equal(picked, a.max(axis=d))


# ---------------------------------------------------------------------------------------------
# Shape ops and matmul
# ---------------------------------------------------------------------------------------------

@given(data=st.data())
def test_reshape_gives_numpys_values_or_an_error_where_numpy_refuses(data):
    t, a = data.draw(tensors(dtypes=ALL))
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6))
    if data.draw(st.booleans()) and len(shape) > 0:
        shape = list(shape)
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
        shape = tuple(shape)
    try:
        want = a.reshape(shape)
    except ValueError:
        with pytest.raises(ember.Error):
            t.reshape(shape)
        return
    assert_close(t.reshape(shape), want, t.dtype)


@given(data=st.data())
def test_contiguous_permute_and_transpose_keep_values(data):
    t, a = data.draw(tensors(dtypes=ALL, min_dims=1))
    perm = data.draw(st.permutations(range(t.dim())))
    assert_close(t.permute(*perm).contiguous(), a.transpose(perm), t.dtype)
    assert t.permute(*perm).contiguous().is_contiguous()


# The most dims a tensor may have (EMBER_MAX_DIMS); NumPy 2 has the same limit.
MAX_DIMS = 64


@st.composite
def many_dim_shapes(draw):
    """Shapes of 9 to MAX_DIMS dims, mostly of size 1, with at most 10 dims of size 2 or 3."""
    nd = draw(st.integers(9, MAX_DIMS))
    shape = [1] * nd
    for i in draw(st.lists(st.integers(0, nd - 1), max_size=10)):
        shape[i] = draw(st.integers(2, 3)) if shape[i] == 1 else 2
    return tuple(shape)


@given(data=st.data())
def test_tensors_up_to_the_dimension_limit_match_numpy(data):
    """Kernels index with arrays of EMBER_MAX_DIMS entries: every op, every layout, any rank."""
    # "sliced" doubles every dim of its base: 2**64 elements.
    layouts = ["contiguous", "transposed", "expanded", "overlapping"]
    t, a = data.draw(tensors(dtypes=FLOATS, shape=data.draw(many_dim_shapes()), layouts=layouts))
    nd = t.dim()
    perm = data.draw(st.permutations(range(nd)))
    assert_close(t.permute(*perm).contiguous(), a.transpose(perm), t.dtype)
    assert_close(t.permute(*perm).exp(), np.exp(a.astype(np.float64)).transpose(perm), t.dtype)
    assert_close(t.sum(), a.astype(np.float64).sum(), t.dtype)
    dim = data.draw(st.integers(-nd, nd - 1))
    assert_close(t.sum(dim), a.astype(np.float64).sum(dim), t.dtype)
    assert_close(t.amax(dim), a.max(dim), t.dtype)
    assert_close(t + t.permute(*perm).permute(*np.argsort(perm)), 2 * a.astype(np.float64),
                 t.dtype)


def test_one_dim_past_the_limit_is_a_value_error():
    for make in (lambda: ember.ones([1] * (MAX_DIMS + 1)), lambda: ember.ones(1).view([1] * 65),
                 lambda: ember.ones([1] * MAX_DIMS).unsqueeze(0)):
        with pytest.raises(ValueError, match="at most 64"):
            make()
    assert ember.ones([1] * MAX_DIMS).dim() == MAX_DIMS


@given(data=st.data())
def test_cat_and_stack_of_mixed_layouts(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    dtype = data.draw(st.sampled_from(ALL))
    parts = [data.draw(tensors(dtypes=[dtype], shape=shape)) for _ in range(data.draw(
        st.integers(1, 3)))]
    d = data.draw(st.integers(0, len(shape) - 1))
    assert_close(ember.cat([p[0] for p in parts], d), np.concatenate([p[1] for p in parts], d),
                 dtype)
    assert_close(ember.stack([p[0] for p in parts], d), np.stack([p[1] for p in parts], d), dtype)


@given(data=st.data())
def test_matmul_of_any_ranks_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    n, k, m = (data.draw(st.integers(0, 5)) for _ in range(3))
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    left = batch.input_shapes[0] + (n, k) if data.draw(st.booleans()) else (k,)
    right = batch.input_shapes[1] + (k, m) if data.draw(st.booleans()) else (k,)
    x, a = data.draw(tensors(dtypes=[dtype], shape=left, lo=-2, hi=2,
                             layouts=["contiguous", "transposed", "sliced", "expanded"]))
    y, b = data.draw(tensors(dtypes=[dtype], shape=right, lo=-2, hi=2,
                             layouts=["contiguous", "transposed", "sliced", "expanded"]))
    assert_close(ember.matmul(x, y), np.matmul(a.astype(np.float64), b.astype(np.float64)), dtype)


# ---------------------------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------------------------

@given(data=st.data())
def test_basic_indexing_matches_numpy(data):
    t, a = data.draw(tensors(dtypes=ALL, min_dims=1, layouts=["contiguous", "transposed"]))
    index = data.draw(hnp.basic_indices(a.shape, min_dims=0, allow_newaxis=True,
                                        allow_ellipsis=True))
    assume(not any(isinstance(i, slice) and i.step is not None and i.step < 0
                   for i in (index if isinstance(index, tuple) else (index,))))
    assert_close(t[index], a[index], t.dtype)


@given(data=st.data())
def test_integer_array_and_mask_indexing_match_numpy(data):
    t, a = data.draw(tensors(dtypes=ALL, min_dims=1, layouts=["contiguous", "transposed"]))
    d0 = a.shape[0]
    if data.draw(st.booleans()):
        mask = data.draw(hnp.arrays(np.bool_, a.shape[:1]))
        assert_close(t[ember.tensor(mask)], a[mask], t.dtype)
    else:
        assume(d0 > 0)
        idx = data.draw(hnp.arrays(np.int64, data.draw(hnp.array_shapes(min_dims=1, max_dims=2,
                                                                        min_side=0, max_side=3)),
                                   elements=st.integers(-d0, d0 - 1)))
        assert_close(t[ember.tensor(idx)], a[idx], t.dtype)


@given(data=st.data())
def test_setitem_with_basic_indices_matches_numpy(data):
    dtype = data.draw(st.sampled_from(FLOATS + INTS))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    a = data.draw(arrays(dtype, shape))
    t = ember.tensor(a)
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=False,
                                        allow_ellipsis=True))
    assume(not any(isinstance(i, slice) and i.step is not None and i.step < 0
                   for i in (index if isinstance(index, tuple) else (index,))))
    value = data.draw(values(dtype))
    t[index] = value
    a = a.copy()
    a[index] = value
    assert_close(t, a, dtype)


@given(data=st.data())
def test_out_of_range_indices_raise_index_error(data):
    t, a = data.draw(tensors(dtypes=ALL, min_dims=1, layouts=["contiguous"]))
    d0 = a.shape[0]
    bad = data.draw(st.one_of(st.integers(d0, d0 + 100), st.integers(-d0 - 100, -d0 - 1)))
    with pytest.raises(IndexError):
        t[bad]
    with pytest.raises(IndexError):
        t[ember.tensor([bad])]


# ---------------------------------------------------------------------------------------------
# Nested lists into tensors
# ---------------------------------------------------------------------------------------------

@st.composite
def nested(draw, depth=None):
    """A regular nested list (and its NumPy array) of ints, floats or bools."""
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    kind = draw(st.sampled_from([np.int64, np.float64, np.bool_]))
    elements = {np.int64: st.integers(-2**40, 2**40), np.float64: st.floats(-1e6, 1e6),
                np.bool_: st.booleans()}[kind]
    a = draw(hnp.arrays(kind, shape, elements=elements))
    return a.tolist(), a


@given(data=st.data())
def test_tensor_of_nested_lists_matches_numpy(data):
    lst, a = data.draw(nested())
    a = np.array(lst, dtype=a.dtype)  # [] of shape (0, 0) is a list of shape (0,)
    t = ember.tensor(lst)
    assert tuple(t.shape) == a.shape
    want = {np.dtype(np.int64): ember.int64, np.dtype(np.float64): ember.float32,
            np.dtype(np.bool_): ember.bool}[a.dtype]
    if a.size:
        assert t.dtype == want
    if want == ember.float32:
        np.testing.assert_allclose(to_numpy(t), a.astype(np.float32))
    else:
        np.testing.assert_array_equal(to_numpy(t), a)


@given(data=st.data())
def test_ragged_nested_lists_are_refused(data):
    rows = data.draw(st.lists(st.lists(st.integers(0, 9), max_size=3), min_size=2, max_size=4))
    assume(len({len(r) for r in rows}) > 1)
    with pytest.raises((ember.Error, ValueError, TypeError)):
        ember.tensor(rows)


# ---------------------------------------------------------------------------------------------
# The CPU backend against the reference backend
# ---------------------------------------------------------------------------------------------

REFERENCE_OPS = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y.abs() + 1),
    # matmul takes one dtype, as PyTorch's: both operands in their promoted dtype.
    "matmul_t": lambda x, y: ember.matmul(x.reshape(x.numel(), 1).to((x + y).dtype),
                                          y.reshape(1, y.numel()).to((x + y).dtype)),
    "softmax": lambda x, y: ember.softmax(x + y, -1) if (x + y).dim() else x + y,
    "log_softmax": lambda x, y: ember.log_softmax(x + y, -1) if (x + y).dim() else x + y,
    "sum_dim": lambda x, y: (x * y).sum(-1) if (x * y).dim() else x * y,
    "cumsum": lambda x, y: ember.cumsum(x - y, -1) if (x - y).dim() else x - y,
    "where": lambda x, y: ember.where(x > y, x, y),
    "tanh_sigmoid": lambda x, y: ember.tanh(x) * ember.sigmoid(y),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_OPS))
@given(data=st.data())
def test_cpu_backend_agrees_with_the_reference_backend(name, data):
    (x, _), (y, _), _ = data.draw(broadcast_pair(dtypes=FLOATS, lo=-3, hi=3))
    fn = REFERENCE_OPS[name]
    got = fn(x, y)
    ref = fn(x.to("reference"), y.to("reference"))
    assert ref.device.type == "reference"
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_allclose(to_numpy(got).astype(np.float64), to_numpy(ref).astype(np.float64),
                               rtol=RTOL[got.dtype] * 10, atol=ATOL[got.dtype] * 10)


# ---------------------------------------------------------------------------------------------
# Autograd of elementwise compositions against finite differences
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["exp", "sin", "tanh", "sigmoid", "square", "log1p", "expm1"])
@given(data=st.data())
def test_gradients_of_unary_ops_match_central_differences(name, data):
    fn, (lo, hi) = UNARY[name]
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3))
    a = data.draw(arrays(ember.float64, shape, max(lo, -3), min(hi, 3)))
    x = ember.tensor(a, requires_grad=True)
    getattr(ember, name)(x).sum().backward()
    eps = 1e-6
    want = (fn(a + eps) - fn(a - eps)) / (2 * eps)
    np.testing.assert_allclose(to_numpy(x.grad), want, rtol=1e-5, atol=1e-6)
