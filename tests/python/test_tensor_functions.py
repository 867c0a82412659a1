"""PyTorch's tensor functions made of core composites (isclose, nan_to_num, nansum, lerp,
addcmul, clamp with tensor bounds, meshgrid, diag, repeat_interleave, cdist, searchsorted, histc,
unique, the index_* family, scatter_reduce, masked_scatter, the in-place shape ops) against NumPy
on random inputs and edge cases: empty and 0-d tensors, NaN and inf, integer dtypes."""

import warnings

import numpy as np
import pytest

import ember
from helpers import assert_close

INF, NAN = float("inf"), float("nan")


def t(a, dtype=None):
    return ember.tensor(np.asarray(a)) if dtype is None else ember.tensor(np.asarray(a), dtype=dtype)


# ---- isclose, allclose, nan_to_num ---------------------------------------------------------------

def test_isclose_and_allclose_match_numpy_with_nan_and_inf(rng):
    a = rng.standard_normal(50)
    b = a + rng.standard_normal(50) * np.where(rng.random(50) < 0.5, 1e-9, 1e-3)
    a[:6] = [INF, -INF, NAN, NAN, INF, 1.0]
    b[:6] = [INF, INF, NAN, 1.0, 1e308, NAN]
    for rtol, atol, equal_nan in [(1e-5, 1e-8, False), (1e-5, 1e-8, True), (0.0, 0.0, False),
                                  (1e-2, 0.0, True)]:
        want = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        got = ember.isclose(t(a), t(b), rtol=rtol, atol=atol, equal_nan=equal_nan)
        assert got.dtype == ember.bool
        np.testing.assert_array_equal(got.numpy(), want)
        assert t(a).isclose(t(b), rtol, atol, equal_nan).numpy().tolist() == want.tolist()
    assert ember.allclose(t([1.0, NAN]), t([1.0 + 1e-9, NAN]), equal_nan=True) is True
    assert ember.allclose(t([1.0, NAN]), t([1.0, NAN])) is False
    assert ember.allclose(t(np.zeros((0, 3))), t(np.zeros((0, 3)))) is True
    # Integers, broadcasting, 0-d.
    np.testing.assert_array_equal(ember.isclose(t([1, 5, 10]), t(11), rtol=0.1, atol=0).numpy(),
                                  np.isclose([1, 5, 10], 11, rtol=0.1, atol=0))
    with pytest.raises(TypeError, match=r"\[isclose\].*float32.*int64"):
        ember.isclose(t([1.0], ember.float32), t([1]))
    with pytest.raises(ValueError, match=r"\[isclose\] rtol"):
        ember.isclose(t([1.0]), t([1.0]), rtol=-1.0)


@pytest.mark.parametrize("dtype,np_dtype", [(ember.float32, np.float32), (ember.float64, np.float64),
                                            (ember.float16, np.float16)])
def test_nan_to_num_matches_numpy_with_dtype_aware_defaults(dtype, np_dtype):
    x = np.array([1.5, NAN, INF, -INF, -2.0, 0.0], dtype=np_dtype)
    assert_close(ember.nan_to_num(t(x, dtype)), np.nan_to_num(x), rtol=0, atol=0)
    assert_close(t(x, dtype).nan_to_num(nan=7.0, posinf=1.0, neginf=-3.0),
                 np.nan_to_num(x, nan=7.0, posinf=1.0, neginf=-3.0), rtol=0, atol=0)
    y = t(x, dtype)
    assert y.nan_to_num_(neginf=0.0) is y
    assert_close(y, np.nan_to_num(x, neginf=0.0), rtol=0, atol=0)


def test_nan_to_num_edges_and_gradient():
    i = t([1, 2, 3])
    assert ember.nan_to_num(i).tolist() == [1, 2, 3] and ember.nan_to_num(i).dtype == ember.int64
    assert ember.nan_to_num(t(NAN)).item() == 0.0 and ember.nan_to_num(t(NAN)).dim() == 0
    assert ember.nan_to_num(ember.zeros(0, 2)).shape == (0, 2)
    x = t([1.0, NAN, INF]).requires_grad_()
    ember.nan_to_num(x).sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 0.0]


# ---- nansum, nanmean ---------------------------------------------------------------------------

def test_nansum_and_nanmean_match_numpy(rng):
    x = rng.standard_normal((4, 5))
    x[rng.random((4, 5)) < 0.3] = NAN
    x[2] = NAN
    for dim, keepdim in [(None, False), (0, False), (1, True), ((0, 1), False)]:
        axis = dim if dim is not None else None
        assert_close(ember.nansum(t(x), dim=dim, keepdim=keepdim),
                     np.nansum(x, axis=axis, keepdims=keepdim))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # "Mean of empty slice"
            want = np.nanmean(x, axis=axis, keepdims=keepdim)
        assert_close(t(x).nanmean(dim=dim, keepdim=keepdim), want)
    assert ember.nansum(t([1, 2, 3])).item() == 6 and ember.nansum(t([1, 2])).dtype == ember.int64
    assert ember.nansum(ember.zeros(0)).item() == 0.0
    assert ember.nansum(t([NAN]), dtype=ember.float64).dtype == ember.float64
    with pytest.raises(TypeError, match=r"\[nanmean\].*int64"):
        ember.nanmean(t([1, 2]))
    x = t([1.0, NAN, 3.0]).requires_grad_()
    x.nanmean().backward()
    assert x.grad.tolist() == [0.5, 0.0, 0.5]


# ---- lerp, addcmul, addcdiv, clamp with tensor bounds ----------------------------------------------

def test_lerp_scalar_and_tensor_weight(rng):
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    w = rng.uniform(-1, 2, (3, 1)).astype(np.float32)
    for weight in [0.25, 0.75, 1.0, -0.3]:
        assert_close(ember.lerp(t(a), t(b), weight), a + weight * (b - a), rtol=1e-5, atol=1e-6)
    assert_close(t(a).lerp(t(b), t(w)), a + w * (b - a), rtol=1e-5, atol=1e-6)
    # Weight 1 gives end exactly (PyTorch's second branch), where start + (end - start) rounds.
    start, end = t([1e8, 0.1], ember.float32), t([3.0, 0.7], ember.float32)
    assert ember.lerp(start, end, 1.0).tolist() == end.tolist()
    x = t(a.copy())
    assert x.lerp_(t(b), 0.5) is x
    assert_close(x, a + 0.5 * (b - a))
    with pytest.raises(TypeError, match=r"\[lerp\]"):
        ember.lerp(t([1, 2]), t([3, 4]), 0.5)
    with pytest.raises(TypeError, match=r"\[lerp\].*float64"):
        ember.lerp(t([1.0], ember.float32), t([2.0], ember.float32), t([0.5], ember.float64))


def test_addcmul_and_addcdiv_match_numpy_and_work_in_place(rng):
    x, a = rng.standard_normal((2, 3)), rng.standard_normal(3)
    b = rng.uniform(0.5, 2.0, (2, 1))
    assert_close(ember.addcmul(t(x), t(a), t(b), value=0.5), x + 0.5 * a * b)
    assert_close(t(x).addcdiv(t(a), t(b), value=-2), x - 2 * a / b)
    assert_close(ember.addcmul(t(x), t(a), t(b)), x + a * b)
    y = t(x)
    assert y.addcmul_(t(a), t(b), value=3) is y
    assert_close(y, x + 3 * a * b)
    y = t(x)
    assert y.addcdiv_(t(a), t(b)) is y
    assert_close(y, x + a / b)
    assert ember.addcmul(t([1, 2]), t([3, 4]), t([5, 6]), value=2).tolist() == [31, 50]
    with pytest.raises(TypeError, match=r"\[addcdiv\] integer division"):
        ember.addcdiv(t([1.0]), t([1]), t([2]))
    with pytest.raises(TypeError, match=r"\[addcmul\].*value"):
        ember.addcmul(t([1]), t([1]), t([1]), value=0.5)


def test_clamp_and_clip_take_tensor_bounds(rng):
    x = rng.standard_normal((3, 4))
    lo, hi = rng.standard_normal(4) - 0.5, rng.standard_normal((3, 1)) + 0.5
    want = np.minimum(np.maximum(x, lo), hi)
    assert_close(ember.clamp(t(x), min=t(lo), max=t(hi)), want, rtol=0, atol=0)
    assert_close(t(x).clip(t(lo), t(hi)), want, rtol=0, atol=0)
    assert_close(ember.clamp(t(x), min=t(lo)), np.maximum(x, lo), rtol=0, atol=0)
    assert_close(ember.clamp(t(x), max=t(hi)), np.minimum(x, hi), rtol=0, atol=0)
    assert_close(ember.clamp(t(x), min=t(lo), max=0.5), np.minimum(np.maximum(x, lo), 0.5))
    y = t(x)
    assert y.clamp_(min=t(lo), max=t(hi)) is y
    assert_close(y, want, rtol=0, atol=0)
    z = t(x)
    z.clip_(max=t(hi))
    assert_close(z, np.minimum(x, hi), rtol=0, atol=0)
    r = ember.clamp(t([NAN, 0.0, 5.0]), min=t([0.0, NAN, 0.0]), max=t([1.0]))
    assert np.isnan(r[0].item()) and np.isnan(r[1].item()) and r[2].item() == 1.0
    assert ember.clamp(t([1, 5, 9]), min=t([2]), max=t([6])).tolist() == [2, 5, 6]
    g = t([-2.0, 0.5, 3.0]).requires_grad_()
    ember.clamp(g, min=t([-1.0]), max=t([1.0])).sum().backward()
    assert g.grad.tolist() == [0.0, 1.0, 0.0]


# ---- meshgrid, diag, diag_embed, diagonal, tril/triu_indices -------------------------------------

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.arange(2), np.arange(3) + 10, np.arange(4) - 20
    got = ember.meshgrid(t(a), t(b), t(c), indexing=indexing)
    for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing)):
        assert_close(g, w, rtol=0, atol=0)
    got = ember.meshgrid([t(a), t(b)], indexing=indexing)
    for g, w in zip(got, np.meshgrid(a, b, indexing=indexing)):
        assert_close(g, w, rtol=0, atol=0)
    assert ember.meshgrid(t(5), t([1, 2]))[0].shape == (1, 2)
    with pytest.raises(ValueError, match=r"\[meshgrid\].*'ab'"):
        ember.meshgrid(t(a), indexing="ab")


def test_broadcast_tensors_and_shapes_match_numpy():
    a, b = t(np.arange(3.0).reshape(3, 1)), t(np.arange(4.0))
    got = ember.broadcast_tensors(a, b)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, np.broadcast_arrays(np.arange(3.0).reshape(3, 1), np.arange(4.0))):
        assert_close(g, w, rtol=0, atol=0)
    assert got[0].data_ptr() == a.data_ptr()  # views, not copies
    assert ember.broadcast_shapes((2, 1), (3,), 1) == ember.Size([2, 3])
    assert isinstance(ember.broadcast_shapes((5,)), ember.Size)
    with pytest.raises(ValueError, match=r"\[broadcast_tensors\].*cannot be broadcast"):
        ember.broadcast_tensors(t([1.0, 2.0]), t([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match=r"\[broadcast_shapes\]"):
        ember.broadcast_shapes((2,), (3,))


def test_ops_returning_several_tensors_return_tuples():
    # PyTorch returns tuples from split, chunk, unbind, meshgrid and broadcast_tensors.
    x = ember.arange(6.0)
    for got in (x.split(2), x.chunk(3), x.reshape(2, 3).unbind(), ember.split(x, [2, 4]),
                ember.meshgrid(x, x), ember.broadcast_tensors(x, x)):
        assert isinstance(got, tuple), type(got)


def test_diag_diag_embed_and_diagonal_match_numpy(rng):
    v = rng.standard_normal(4)
    m = rng.standard_normal((3, 5))
    for k in [-3, -1, 0, 2, 6]:
        assert_close(ember.diag(t(v), k), np.diag(v, k), rtol=0, atol=0)
        assert_close(t(m).diag(k), np.diag(m, k), rtol=0, atol=0)
    assert ember.diag(t([1, 2]), 1).dtype == ember.int64
    assert ember.diag(ember.zeros(0)).shape == (0, 0)
    mt = t(m)
    ember.diag(mt).fill_(0)  # a copy: the input is untouched
    assert_close(mt, m, rtol=0, atol=0)
    x = rng.standard_normal((2, 3))
    emb = ember.diag_embed(t(x), offset=1, dim1=0, dim2=2)
    want = np.zeros((4, 2, 4))
    for b in range(2):
        want[:, b, :] = np.diag(x[b], 1)
    assert_close(emb, want, rtol=0, atol=0)
    assert_close(t(x).diag_embed(), np.stack([np.diag(r) for r in x]), rtol=0, atol=0)
    y = rng.standard_normal((3, 4, 5))
    for off, d1, d2 in [(0, 0, 1), (1, 2, 0), (-2, -1, -3), (7, 0, 2)]:
        assert_close(ember.diagonal(t(y), off, d1, d2), np.diagonal(y, off, d1, d2), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"\[diag\].*3-d"):
        ember.diag(ember.zeros(2, 2, 2))


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 2, -1), (2, 5, 2), (0, 3, 0), (3, 3, -5)])
def test_tril_and_triu_indices_match_numpy(row, col, offset):
    assert ember.tril_indices(row, col, offset).numpy().tolist() == \
        np.stack(np.tril_indices(row, offset, col)).tolist()
    assert ember.triu_indices(row, col, offset).numpy().tolist() == \
        np.stack(np.triu_indices(row, offset, col)).tolist()
    assert ember.tril_indices(row, col, offset, dtype=ember.int32).dtype == ember.int32


# ---- repeat_interleave, cdist ------------------------------------------------------------------

def test_repeat_interleave_matches_numpy_repeat(rng):
    x = rng.standard_normal((2, 3))
    assert_close(ember.repeat_interleave(t(x), 2), np.repeat(x, 2), rtol=0, atol=0)
    assert_close(t(x).repeat_interleave(3, dim=1), np.repeat(x, 3, axis=1), rtol=0, atol=0)
    r = np.array([1, 0, 2])
    assert_close(t(x).repeat_interleave(t(r), dim=1), np.repeat(x, r, axis=1), rtol=0, atol=0)
    assert_close(ember.repeat_interleave(t(x), t([2]), dim=0, output_size=4), np.repeat(x, 2, axis=0))
    assert ember.repeat_interleave(t([2, 0, 3])).tolist() == [0, 0, 2, 2, 2]
    assert ember.repeat_interleave(t(7), 3).tolist() == [7, 7, 7]
    assert ember.repeat_interleave(ember.zeros(0), 4).shape == (0,)
    g = t(x).requires_grad_()
    ember.repeat_interleave(g, t([1, 0, 2]), dim=1).sum().backward()
    assert_close(g.grad, np.tile([1.0, 0.0, 2.0], (2, 1)))
    with pytest.raises(ValueError, match=r"\[repeat_interleave\].*negative"):
        ember.repeat_interleave(t(x), -1)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\].*negative"):
        ember.repeat_interleave(t(x), t([1, -1, 1]), dim=1)
    with pytest.raises(ValueError, match=r"\[repeat_interleave\] output_size"):
        ember.repeat_interleave(t(x), 2, dim=0, output_size=3)


@pytest.mark.parametrize("p", [2.0, 1.0, INF, 0.5, 3.0, 0.0])
def test_cdist_matches_numpy(rng, p):
    a, b = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3))
    diff = np.abs(a[:, :, None, :] - b[:, None, :, :])
    if p == INF:
        want = diff.max(-1)
    elif p == 0:
        want = (diff != 0).sum(-1).astype(np.float64)
    else:
        want = (diff ** p).sum(-1) ** (1 / p)
    assert_close(ember.cdist(t(a), t(b), p=p), want, rtol=1e-6, atol=1e-9)


def test_cdist_gradient_matches_the_formula(rng):
    a, b = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    x = t(a).requires_grad_()
    ember.cdist(x, t(b)).sum().backward()
    d = a[:, None, :] - b[None, :, :]
    want = (d / np.linalg.norm(d, axis=-1, keepdims=True)).sum(1)
    assert_close(x.grad, want)
    with pytest.raises(ValueError, match=r"\[cdist\].*columns"):
        ember.cdist(ember.zeros(2, 3), ember.zeros(2, 4))


# ---- searchsorted, bucketize, histc ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_searchsorted_matches_numpy(rng, dtype):
    seq = np.sort(rng.integers(0, 10, (3, 12))).astype(dtype)
    vals = rng.integers(-2, 12, (3, 7)).astype(dtype)
    for side in ["left", "right"]:
        want = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, vals)])
        got = ember.searchsorted(t(seq), t(vals), side=side)
        assert got.dtype == ember.int64 and got.numpy().tolist() == want.tolist()
        got = ember.searchsorted(t(seq), t(vals), right=side == "right", out_int32=True)
        assert got.dtype == ember.int32 and got.numpy().tolist() == want.tolist()
        want1 = np.searchsorted(seq[0], vals, side=side)
        assert ember.searchsorted(t(seq[0]), t(vals), side=side).numpy().tolist() == want1.tolist()
    assert ember.searchsorted(t([1.0, 3.0, 5.0]), 3.0).item() == 1
    assert ember.searchsorted(t([1.0, 3.0, 5.0]), 3, right=True).item() == 2
    unsorted = np.array([5.0, 1.0, 3.0])
    sorter = np.argsort(unsorted)
    assert ember.searchsorted(t(unsorted), t([2.0, 4.0]), sorter=t(sorter)).tolist() == \
        np.searchsorted(unsorted, [2.0, 4.0], sorter=sorter).tolist()
    assert ember.searchsorted(t([1.0, 2.0]), ember.zeros(0)).shape == (0,)
    with pytest.raises(ValueError, match=r"\[searchsorted\].*\[3, 12\].*\[2, 7\]"):
        ember.searchsorted(t(seq), t(vals[:2]))
    with pytest.raises(ValueError, match=r"\[searchsorted\].*opposites"):
        ember.searchsorted(t(seq), t(vals), right=True, side="left")


def test_bucketize_matches_numpy_digitize(rng):
    bounds = np.array([-1.0, 0.0, 0.5, 2.0])
    x = np.concatenate([rng.standard_normal(20), bounds])
    assert ember.bucketize(t(x), t(bounds)).numpy().tolist() == \
        np.digitize(x, bounds, right=True).tolist()
    assert ember.bucketize(t(x), t(bounds), right=True).numpy().tolist() == \
        np.digitize(x, bounds, right=False).tolist()
    assert ember.bucketize(0.5, t(bounds)).item() == 2
    with pytest.raises(ValueError, match=r"\[bucketize\]"):
        ember.bucketize(t(x), t(bounds).view(2, 2))


def test_histc_matches_numpy_histogram(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    got = ember.histc(t(x), bins=7, min=-1.5, max=2.0)
    want, _ = np.histogram(x.astype(np.float64), bins=7, range=(-1.5, 2.0))
    assert got.dtype == ember.float32 and got.numpy().tolist() == want.tolist()
    got = t(x).histc(bins=5)  # min == max: the data's range
    want, _ = np.histogram(x.astype(np.float64), bins=5, range=(x.min(), x.max()))
    assert got.numpy().tolist() == want.tolist()
    y = np.array([0.0, 1.0, NAN, INF, -INF, 3.0])
    assert ember.histc(t(y), bins=3, min=0, max=3).tolist() == [1.0, 1.0, 1.0]
    assert ember.histc(ember.zeros(0), bins=2).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match=r"\[histc\] bins must be > 0: got 0"):
        ember.histc(t(x), bins=0)
    with pytest.raises(ValueError, match=r"\[histc\] max must be larger than min"):
        ember.histc(t(x), min=1, max=0)
    with pytest.raises(TypeError, match=r"\[histc\].*int64"):
        ember.histc(t([1, 2]))


# ---- unique, unique_consecutive --------------------------------------------------------------------

def test_unique_matches_numpy(rng):
    x = rng.integers(-3, 4, (5, 6))
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    assert ember.unique(t(x)).tolist() == vals.tolist()
    u, i, c = t(x).unique(return_inverse=True, return_counts=True)
    assert u.tolist() == vals.tolist() and c.tolist() == counts.tolist()
    assert i.shape == (5, 6) and i.numpy().ravel().tolist() == inv.ravel().tolist()
    u, c = ember.unique(t(x), return_counts=True)
    assert c.tolist() == counts.tolist()
    rows = rng.integers(0, 2, (8, 3))
    vals, inv, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    u, i, c = ember.unique(t(rows), dim=0, return_inverse=True, return_counts=True)
    assert u.numpy().tolist() == vals.tolist() and c.tolist() == counts.tolist()
    assert i.tolist() == inv.ravel().tolist()
    vals = np.unique(rows, axis=1)
    assert ember.unique(t(rows), dim=1).numpy().tolist() == vals.tolist()
    f = np.array([2.5, NAN, -1.0, 2.5, INF])
    assert ember.unique(t(f)).numpy()[:3].tolist() == [-1.0, 2.5, INF]
    assert ember.unique(t([True, False, True])).tolist() == [False, True]
    assert ember.unique(ember.zeros(0)).shape == (0,)
    assert ember.unique(t(3)).tolist() == [3]


def test_unique_consecutive_matches_a_loop(rng):
    x = rng.integers(0, 3, 30)
    runs, counts, inverse = [], [], []
    for v in x:
        if not runs or runs[-1] != v:
            runs.append(v)
            counts.append(0)
        counts[-1] += 1
        inverse.append(len(runs) - 1)
    u, i, c = ember.unique_consecutive(t(x), return_inverse=True, return_counts=True)
    assert u.tolist() == runs and i.tolist() == inverse and c.tolist() == counts
    assert t(x).unique_consecutive().tolist() == runs
    m = t([[1, 1, 2], [1, 1, 2], [0, 0, 0], [1, 1, 2]])
    assert ember.unique_consecutive(m, dim=0).tolist() == [[1, 1, 2], [0, 0, 0], [1, 1, 2]]


# ---- index_add, index_copy, index_fill, scatter_reduce, masked_scatter --------------------------------

def test_index_add_copy_fill_match_numpy(rng):
    x = rng.standard_normal((4, 3))
    src = rng.standard_normal((4, 5))
    idx = np.array([2, 0, 2, 1, 2])
    want = x.copy()
    for j, k in enumerate(idx):
        want[:, k] += 2.0 * src[:, j]
    got = ember.index_add(t(x), 1, t(idx), t(src), alpha=2.0)
    assert_close(got, want)
    y = t(x)
    assert y.index_add_(1, t(idx), t(src), alpha=2.0) is y
    assert_close(y, want)
    ints = t([0, 0, 0])
    ints.index_add_(0, t([0, 2, 0]), t([1, 2, 3]))
    assert ints.tolist() == [4, 0, 2]
    cp = x.copy()
    cp[[3, 1]] = src[:2, :3]
    assert_close(t(x).index_copy(0, t([3, 1]), t(src[:2, :3])), cp, rtol=0, atol=0)
    f = x.copy()
    f[:, [0, 2]] = -1.5
    assert_close(t(x).index_fill(1, t([0, 2]), -1.5), f, rtol=0, atol=0)
    z = t(x)
    z.index_fill_(1, t([0, 2]), t(-1.5))
    assert_close(z, f, rtol=0, atol=0)
    assert ember.index_add(t(1.0), 0, t([0]), t(2.0)).item() == 3.0
    with pytest.raises(IndexError, match=r"\[index_add\] index 5"):
        ember.index_add(t(x), 0, t([5]), t(src[:1, :3]))
    with pytest.raises(IndexError, match=r"\[index_add_\]|\[index_add\]"):
        t(x).index_add_(0, t([-1]), t(src[:1, :3]))
    with pytest.raises(IndexError, match=r"\[index_copy\] index 4"):
        t(x).index_copy_(0, t([4]), t(src[:1, :3]))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_a_loop(rng, reduce, include_self):
    x = rng.standard_normal((3, 4))
    src = rng.standard_normal((5, 4))
    index = rng.integers(0, 3, (4, 4))
    bound = {}
    for i in range(4):
        for j in range(4):
            bound.setdefault((index[i, j], j), []).append(src[i, j])
    want = x.copy()
    ops = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}
    for (r, c), vs in bound.items():
        want[r, c] = ops[reduce](vs + ([x[r, c]] if include_self else []))
    got = ember.scatter_reduce(t(x), 0, t(index), t(src), reduce, include_self=include_self)
    assert_close(got, want, rtol=1e-12, atol=1e-12)
    y = t(x)
    assert y.scatter_reduce_(0, t(index), t(src), reduce=reduce, include_self=include_self) is y
    assert_close(y, want, rtol=1e-12, atol=1e-12)


def test_scatter_reduce_integers_and_errors():
    x = t([10, 20, 30])
    got = x.scatter_reduce(0, t([0, 0, 2]), t([1, 4, 5]), "mean")
    assert got.tolist() == [5, 20, 17]  # integer means round down, as in PyTorch
    assert x.scatter_reduce(0, t([0, 0]), t([3, 4]), "prod", include_self=False).tolist() == [12, 20, 30]
    assert x.scatter_add(0, t([1]), t([5])).tolist() == [10, 25, 30]
    y = t([1.0, 2.0])
    y.scatter_add_(0, t([1, 1]), t([1.0, 1.0]))
    assert y.tolist() == [1.0, 4.0]
    with pytest.raises(ValueError, match=r"\[scatter_reduce\].*'max'"):
        x.scatter_reduce(0, t([0]), t([1]), "max")
    with pytest.raises(IndexError, match=r"\[scatter_reduce\] index 3"):
        x.scatter_reduce(0, t([3]), t([1]), "sum")


def test_masked_scatter_matches_numpy(rng):
    x = rng.standard_normal((3, 4))
    mask = rng.random((1, 4)) < 0.5
    src = rng.standard_normal(20)
    want = x.copy()
    full = np.broadcast_to(mask, x.shape)
    want[full] = src[:full.sum()]
    assert_close(t(x).masked_scatter(t(mask), t(src)), want, rtol=0, atol=0)
    y = t(x)
    assert y.masked_scatter_(t(mask), t(src)) is y
    assert_close(y, want, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"\[masked_scatter\]"):
        t(x).masked_scatter(t(np.ones((3, 4), bool)), t(src[:5]))


# ---- unsqueeze_, squeeze_, t_, transpose_ ------------------------------------------------------

def test_shape_changes_in_place_keep_the_object_and_its_data():
    x = ember.arange(6.0).view(2, 3)
    same = x
    assert x.unsqueeze_(0) is same and x.shape == (1, 2, 3)
    assert x.squeeze_() is same and x.shape == (2, 3)
    assert x.t_() is same and x.shape == (3, 2)
    assert x.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    assert x.transpose_(0, 1) is same and x.is_contiguous()
    x.unsqueeze_(1).unsqueeze_(0)
    assert x.shape == (1, 2, 1, 3)
    x.squeeze_((0, 2))
    assert x.shape == (2, 3)
    v = ember.zeros(2, 3)
    row = v[1]
    row.unsqueeze_(0)
    row.fill_(4.0)
    assert v.tolist() == [[0.0] * 3, [4.0] * 3]
    w = ember.ones(3, requires_grad=True)
    with pytest.raises(NotImplementedError, match=r"\[unsqueeze_\].*requires grad"):
        w.unsqueeze_(0)
    with ember.no_grad():
        w.unsqueeze_(0)
    assert w.shape == (1, 3)
    with pytest.raises(ValueError, match=r"\[t\]"):
        ember.zeros(2, 2, 2).t_()


def test_rnn_cells_match_the_layers_step():
    import numpy as np
    ember.manual_seed(0)
    x, h, c = ember.randn(3, 4), ember.randn(3, 5), ember.randn(3, 5)
    lstm = ember.nn.LSTMCell(4, 5)
    h1, c1 = ember.lstm_cell(x, (h, c), lstm.weight_ih, lstm.weight_hh, lstm.bias_ih, lstm.bias_hh)
    h2, c2 = lstm(x, (h, c))
    np.testing.assert_allclose(h1.detach().numpy(), h2.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1.detach().numpy(), c2.detach().numpy(), rtol=1e-5, atol=1e-6)
    gru = ember.nn.GRUCell(4, 5)
    np.testing.assert_allclose(
        ember.gru_cell(x, h, gru.weight_ih, gru.weight_hh, gru.bias_ih, gru.bias_hh).detach().numpy(),
        gru(x, h).detach().numpy(), rtol=1e-5, atol=1e-6)
    rnn = ember.nn.RNNCell(4, 5, nonlinearity="relu")
    np.testing.assert_allclose(
        ember.rnn_relu_cell(x, h, rnn.weight_ih, rnn.weight_hh, rnn.bias_ih, rnn.bias_hh)
        .detach().numpy(), rnn(x, h).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_level_translations():
    import numpy as np
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ember.range(1, 4).tolist() == [1.0, 2.0, 3.0, 4.0]
        assert ember.range(0, 1, 0.25).dtype is ember.float32
    s = ember.empty_strided((2, 3), (1, 2))
    assert s.shape == (2, 3) and s.stride() == (1, 2)
    x = ember.arange(6.0).view(2, 3)
    np.testing.assert_array_equal(ember.constant_pad_nd(x, [1, 1], -1.0).numpy(),
                                  np.pad(np.arange(6.0).reshape(2, 3), ((0, 0), (1, 1)),
                                         constant_values=-1.0))
    w = ember.randn(4, 2, 3, 3)
    img = ember.randn(1, 2, 6, 6)
    np.testing.assert_allclose(
        ember.convolution(img, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1).numpy(),
        ember.nn.functional.conv2d(img, w, padding=1).numpy(), rtol=1e-6)
    assert x.get_device() == -1 and ember.get_device(x) == -1
    assert ember.asarray(x) is x and ember.asarray([1, 2]).dtype is ember.int64
    assert x.new_empty_strided((2, 2), (2, 1)).dtype is x.dtype
    assert not ember.is_anomaly_enabled()
    ember.set_anomaly_enabled(True)
    try:
        assert ember.is_anomaly_enabled()
    finally:
        ember.set_anomaly_enabled(False)
