"""torch functions Ember writes in Python over its ops (ember/_composites.py): order statistics,
running extrema, splitting and stacking, elementwise forms, products and linalg's conveniences,
against NumPy float64 (and PyTorch's documented tie rules), with gradcheck where they are
differentiable."""

import math

import numpy as np
import pytest

import ember
from helpers import assert_close

rng = np.random.default_rng(0)


def f64(a, grad=False):
    t = ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64)
    return t.requires_grad_(True) if grad else t


def test_median_kthvalue_and_msort_match_numpy():
    x = rng.normal(size=(4, 7))
    t = f64(x)
    assert_close(ember.median(t), np.sort(x, axis=None)[(x.size - 1) // 2])
    values, indices = ember.median(t, 1)
    assert_close(values, np.sort(x, 1)[:, 3])
    assert_close(t.gather(1, indices.unsqueeze(1)).squeeze(1), values.numpy())
    even = f64(rng.normal(size=(3, 6)))
    assert_close(even.median(1, keepdim=True).values, np.sort(even.numpy(), 1)[:, 2:3])  # lower
    v, i = ember.kthvalue(t, 3, 0)
    assert_close(v, np.sort(x, 0)[2])
    assert np.array_equal(i.numpy(), np.argsort(x, 0, kind="stable")[2])
    assert_close(t.msort(), np.sort(x, 0))
    assert ember.autograd.gradcheck(lambda a: ember.median(a, 1).values, (f64(x, grad=True),))
    with pytest.raises(IndexError, match="out of range"):
        ember.kthvalue(t, 8, 1)


def test_median_and_nanmedian_with_nans():
    t = f64([[1.0, math.nan, 2.0], [3.0, 1.0, 2.0], [math.nan] * 3])
    values, indices = ember.median(t, 1)
    assert np.isnan(values[0].item()) and indices[0].item() == 1
    assert values[1].item() == 2.0
    assert math.isnan(ember.median(t).item())
    v, i = ember.nanmedian(t, 1)
    assert v.tolist()[:2] == [1.0, 2.0] and math.isnan(v[2].item()) and i[2].item() == 0
    assert ember.nanmedian(f64([1.0, math.nan, 3.0, 2.0])).item() == 2.0


def test_mode_takes_the_smallest_most_frequent_value_and_its_last_index():
    x = ember.tensor([[1.0, 3, 3, 2, 2, 5], [4, 4, 1, 1, 0, 9]])
    values, indices = ember.mode(x, 1)  # PyTorch 2.15: values [2, 1], indices [4, 3]
    assert values.tolist() == [2.0, 1.0] and indices.tolist() == [4, 3]
    assert x.mode(0).values.tolist() == [1.0, 3.0, 1.0, 1.0, 0.0, 5.0]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_numpy(interpolation):
    x = rng.normal(size=(5, 8))
    q = [0.0, 0.1, 0.5, 0.75, 1.0]
    got = ember.quantile(f64(x), f64(q), dim=1, keepdim=True, interpolation=interpolation)
    want = np.quantile(x, q, axis=1, keepdims=True, method=interpolation)
    assert got.shape == want.shape
    assert_close(got, want, rtol=1e-12)
    assert_close(ember.quantile(f64(x), 0.3, interpolation=interpolation),
                 np.quantile(x, 0.3, method=interpolation), rtol=1e-12)
    y = x.copy()
    y[1, 2] = np.nan
    assert_close(ember.nanquantile(f64(y), 0.4, dim=1, interpolation=interpolation),
                 np.nanquantile(y, 0.4, axis=1, method=interpolation), rtol=1e-12)
    assert np.isnan(ember.quantile(f64(y), 0.4, dim=1)[1].item())


def test_quantile_errors_and_gradient():
    with pytest.raises(ValueError, match=r"in the range \[0, 1\]"):
        ember.quantile(ember.rand(4), 1.5)
    with pytest.raises(TypeError, match="float tensor"):
        ember.quantile(ember.arange(4), 0.5)
    assert ember.autograd.gradcheck(lambda a: ember.quantile(a, 0.3, dim=0),
                                    (f64(rng.normal(size=(6, 2)), grad=True),))


def test_running_extrema_and_logcumsumexp():
    x = ember.tensor([1.0, 3, 2, 3, 5])
    v, i = ember.cummax(x, 0)
    assert v.tolist() == [1, 3, 3, 3, 5] and i.tolist() == [0, 1, 1, 3, 4]  # PyTorch's ties
    v, i = x.cummin(0)
    assert v.tolist() == [1] * 5 and i.tolist() == [0] * 5
    a = rng.normal(size=(3, 5))
    assert_close(ember.cummax(f64(a), 1).values, np.maximum.accumulate(a, 1))
    assert_close(ember.logcumsumexp(f64(a), 1), np.logaddexp.accumulate(a, 1), rtol=1e-12)
    assert_close(ember.logcumsumexp(f64([-1000.0, 0.0, -1000.0]), 0), [-1000.0, 0.0, 0.0])
    mn, mx = ember.aminmax(f64(a), dim=0)
    assert_close(mn, a.min(0))
    assert_close(mx, a.max(0))
    s, m = ember.std_mean(f64(a), 1)
    assert_close(s, a.std(1, ddof=1), rtol=1e-12)
    assert_close(m, a.mean(1), rtol=1e-12)
    v, m = ember.var_mean(f64(a), 0, correction=0)
    assert_close(v, a.var(0), rtol=1e-12)


def test_splitting_stacking_and_reorienting_match_numpy():
    x = np.arange(24.0).reshape(2, 3, 4)
    t = f64(x)
    for got, want in zip(ember.tensor_split(f64(np.arange(7.0)), 3), np.array_split(np.arange(7.0), 3)):
        assert_close(got, want)
    for got, want in zip(t.tensor_split([1, 3], 2), np.split(x, [1, 3], 2)):
        assert_close(got, want)
    assert [p.shape[2] for p in ember.dsplit(t, 2)] == [2, 2]
    assert [p.shape[1] for p in ember.hsplit(t, [1])] == [1, 2]
    assert [p.shape[0] for p in ember.vsplit(t, 2)] == [1, 1]
    with pytest.raises(ValueError, match="not divisible"):
        ember.hsplit(t, 2)
    assert ember.atleast_1d(f64(1.0)).shape == (1,)
    assert ember.atleast_2d(f64([1.0, 2.0])).shape == (1, 2)
    assert [a.shape for a in ember.atleast_3d(f64([1.0, 2.0]), f64(np.ones((2, 2))))] == \
        [(1, 2, 1), (2, 2, 1)]
    a, b = np.arange(3.0), np.arange(3.0, 6.0)
    assert_close(ember.column_stack([f64(a), f64(b)]), np.column_stack([a, b]))
    assert_close(ember.row_stack([f64(a), f64(b)]), np.vstack([a, b]))
    assert_close(ember.dstack([f64(a), f64(b)]), np.dstack([a, b]))
    m = np.arange(6.0).reshape(2, 3)
    for k in (-1, 0, 1, 2, 3, 5):
        assert_close(ember.rot90(f64(m), k), np.rot90(m, k))
    assert_close(f64(x).rot90(1, [1, 2]), np.rot90(x, 1, (1, 2)))
    assert_close(ember.fliplr(f64(m)), np.fliplr(m))
    assert_close(ember.flipud(f64(m)), np.flipud(m))
    assert ember.moveaxis(t, 0, -1).shape == (3, 4, 2)
    assert_close(ember.tile(f64(m), (2,)), np.tile(m, (2,)))
    assert_close(f64(m).tile((2, 1, 2)), np.tile(m, (2, 1, 2)))


def test_elementwise_forms_match_numpy():
    x = rng.uniform(0.05, 0.95, size=8)
    assert_close(ember.logit(f64(x)), np.log(x / (1 - x)), rtol=1e-12)
    assert_close(ember.logit(f64([0.0, 1.0]), eps=0.1), np.log([1 / 9, 9]), rtol=1e-12)
    a, b = rng.normal(size=6) * 50, rng.normal(size=6) * 50
    assert_close(ember.logaddexp2(f64(a), f64(b)), np.logaddexp2(a, b), rtol=1e-12)
    assert_close(ember.xlogy(f64([0.0, 2.0, 0.0]), f64([0.0, 3.0, math.nan])),
                 [0.0, 2 * math.log(3), math.nan])
    assert_close(ember.sinc(f64([0.0, 0.5, -1.5, 2.0])), np.sinc([0.0, 0.5, -1.5, 2.0]),
                 atol=1e-15)
    v = np.array([-2.5, -0.0, 0.0, 1.75])
    assert_close(ember.frac(f64(v)), v - np.trunc(v))
    assert_close(ember.fix(f64(v)), np.fix(v))
    assert_close(ember.deg2rad(f64([180.0])), [math.pi])
    assert_close(ember.rad2deg(f64([math.pi])), [180.0])
    assert ember.signbit(f64(v)).tolist() == [True, True, False, False]
    assert_close(ember.copysign(f64([1.0, -2.0, 3.0]), f64([-0.0, 1.0, -5.0])), [-1.0, 2.0, -3.0])
    assert ember.heaviside(f64([-1.0, 0.0, 2.0]), f64([0.5])).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(TypeError, match="different dtypes"):
        ember.heaviside(ember.tensor([1.0]), ember.tensor([1]))
    n = math.nan
    assert_close(ember.fmax(f64([1.0, n, n, 4.0]), f64([2.0, 3.0, n, -1.0])), [2.0, 3.0, n, 4.0])
    assert_close(ember.fmin(f64([1.0, n, n, 4.0]), f64([2.0, 3.0, n, -1.0])), [1.0, 3.0, n, -1.0])
    fp = ember.float_power(ember.tensor([2, 3]), 3)
    assert fp.dtype == ember.float64 and fp.tolist() == [8.0, 27.0]
    w = f64([-math.inf, math.inf, 1.0])
    assert ember.isneginf(w).tolist() == [True, False, False]
    assert ember.isposinf(w).tolist() == [False, True, False]
    assert ember.isreal(w).tolist() == [True] * 3
    assert ember.autograd.gradcheck(ember.logit, (f64(x, grad=True),))
    assert ember.autograd.gradcheck(ember.logaddexp2, (f64(a / 50, grad=True), f64(b / 50, grad=True)))


def test_products_match_numpy():
    a, b = rng.normal(size=(2, 3)), rng.normal(size=(4, 2))
    assert_close(ember.kron(f64(a), f64(b)), np.kron(a, b), rtol=1e-12)
    assert_close(ember.kron(f64([1.0, 2.0]), f64(np.eye(2))), np.kron([1.0, 2.0], np.eye(2)))
    x, y = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    assert_close(ember.cross(f64(x), f64(y), dim=1), np.cross(x, y), rtol=1e-12)
    assert_close(ember.linalg.cross(f64(x), f64(y)), np.cross(x, y), rtol=1e-12)
    p, q = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4))
    assert_close(ember.inner(f64(p), f64(q)), np.inner(p, q), rtol=1e-12)
    assert_close(ember.ger(f64([1.0, 2.0]), f64([3.0, 4.0, 5.0])), np.outer([1, 2], [3, 4, 5]))
    c, d = rng.normal(size=(3, 4, 5)), rng.normal(size=(4, 5, 2))
    assert_close(ember.tensordot(f64(c), f64(d)), np.tensordot(c, d), rtol=1e-12)
    assert_close(ember.tensordot(f64(c), f64(d), ([1], [0])), np.tensordot(c, d, ([1], [0])),
                 rtol=1e-12)
    got = ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4, 5]))
    assert got.tolist() == [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]]
    bd = ember.block_diag(f64([[1.0, 2.0]]), f64(3.0), f64(np.ones((2, 2))))
    want = np.zeros((4, 5))
    want[0, :2], want[1, 2], want[2:, 3:] = [1, 2], 3, 1
    assert_close(bd, want)
    assert_close(ember.diagflat(f64([[1.0, 2.0]]), 1), np.diagflat([1.0, 2.0], 1))
    e = rng.normal(size=(3, 7))
    assert_close(ember.diff(f64(e)), np.diff(e), rtol=1e-12)
    assert_close(ember.diff(f64(e), 2, 0), np.diff(e, 2, 0), rtol=1e-12)
    assert_close(f64(e).diff(prepend=f64(np.zeros((3, 1)))), np.diff(e, prepend=0), rtol=1e-12)
    assert_close(ember.dist(f64(x), f64(y), 3), (np.abs(x - y) ** 3).sum() ** (1 / 3), rtol=1e-12)
    assert ember.autograd.gradcheck(ember.kron, (f64(a, grad=True), f64(b, grad=True)))


def test_linalg_conveniences():
    a = rng.normal(size=(4, 4)) * 0.6
    eigvals, vecs = np.linalg.eig(a)
    want = (vecs @ np.diag(np.exp(eigvals)) @ np.linalg.inv(vecs)).real
    assert_close(ember.linalg.matrix_exp(f64(a)), want, rtol=1e-10, atol=1e-12)
    assert_close(ember.matrix_exp(f64(a * 20)), (vecs @ np.diag(np.exp(20 * eigvals)) @
                                                  np.linalg.inv(vecs)).real, rtol=1e-8)
    for n in (-2, 0, 1, 3, 6):
        assert_close(ember.linalg.matrix_power(f64(a), n), np.linalg.matrix_power(a, n), rtol=1e-9)
    x, y = rng.normal(size=(3, 5)), rng.normal(size=(5,))
    assert_close(ember.linalg.vecdot(f64(x), f64(y)), x @ y, rtol=1e-12)
    mats = [rng.normal(size=s) for s in [(3,), (3, 4), (4, 2), (2,)]]
    assert_close(ember.linalg.multi_dot([f64(m) for m in mats]), np.linalg.multi_dot(mats),
                 rtol=1e-12)
    assert_close(ember.linalg.matmul(f64(x), f64(y)), x @ y, rtol=1e-12)
    assert_close(ember.linalg.diagonal(f64(np.arange(18.0).reshape(2, 3, 3)), offset=1),
                 np.diagonal(np.arange(18.0).reshape(2, 3, 3), 1, -2, -1))
    assert_close(ember.linalg.vander(f64([1.0, 2.0, 3.0])), np.vander([1, 2, 3], increasing=True))
    low_rank = rng.normal(size=(6, 2)) @ rng.normal(size=(2, 5))
    assert ember.linalg.matrix_rank(f64(low_rank)).item() == 2
    assert_close(ember.linalg.cond(f64(a)), np.linalg.cond(a), rtol=1e-10)
    assert_close(ember.linalg.cond(f64(a), "fro"), np.linalg.cond(a, "fro"), rtol=1e-10)
    spd = a @ a.T + 4 * np.eye(4)
    result, info = ember.linalg.solve_ex(f64(spd), f64(np.eye(4)))
    assert_close(result, np.linalg.inv(spd), rtol=1e-10)
    assert info.item() == 0
    assert_close(ember.linalg.inv_ex(f64(spd)).inverse, np.linalg.inv(spd), rtol=1e-10)
    assert_close(ember.linalg.cholesky_ex(f64(spd)).L, np.linalg.cholesky(spd), rtol=1e-10)
    # householder_product: zero taus give I's columns; one reflection I - tau v v^T, v the
    # column below the diagonal with 1 on it (what is above is ignored); two, their product.
    assert_close(ember.linalg.householder_product(f64(np.zeros((4, 2))), f64(np.zeros(2))),
                 np.eye(4)[:, :2])
    v1, v2 = np.array([1.0, 0.5, -0.25]), np.array([0.0, 1.0, 2.0])
    h1 = np.eye(3) - 0.7 * np.outer(v1, v1)
    h2 = np.eye(3) - 0.3 * np.outer(v2, v2)
    a2 = np.array([[9.0, 9.0], [0.5, 9.0], [-0.25, 2.0]])
    assert_close(ember.linalg.householder_product(f64(a2), f64([0.7, 0.3])), (h1 @ h2)[:, :2],
                 rtol=1e-12)


def test_inplace_forms_of_the_composites_follow_the_in_place_rules():
    x = ember.tensor([0.25, 0.5, 0.75])
    for name, args in (("logit", ()), ("xlogy", (ember.tensor([2.0, 3.0, 4.0]),)), ("sinc", ()),
                       ("frac", ()), ("deg2rad", ()), ("rad2deg", ()),
                       ("copysign", (ember.tensor([-1.0, 1.0, -0.0]),)),
                       ("heaviside", (ember.tensor([9.0, 9.0, 9.0]),))):
        y = x.clone()
        assert getattr(y, name + "_")(*args) is y, name
        assert_close(y, getattr(ember, name)(x, *args))
    # Integer self with a floating result: refused, as PyTorch refuses, and left unchanged.
    i = ember.tensor([1, 2])
    with pytest.raises(TypeError, match="sinc_.*can't be cast"):
        i.sinc_()
    assert i.tolist() == [1, 2]
    with pytest.raises(TypeError, match="float_power_.*float64"):
        x.clone().float_power_(2)
    d = ember.tensor([2.0, 3.0], dtype=ember.float64)
    assert d.float_power_(2) is d and d.tolist() == [4.0, 9.0]
    # Recorded by autograd as an in-place op: the gradient flows through it.
    leaf = ember.tensor([1.0, 2.0], requires_grad=True)
    a = leaf * 1
    a.deg2rad_()
    a.sum().backward()
    assert_close(leaf.grad, ember.full((2,), math.pi / 180))
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.deg2rad_()
    # torch's function forms and the other in-place names.
    e = ember.tensor([0.5, 1.0])
    assert ember.erfc_(e) is e and abs(e[0].item() - math.erfc(0.5)) < 1e-6
    g = ember.tensor([12, 18])
    assert ember.gcd_(g, ember.tensor([8, 27])).tolist() == [4, 9]
    assert ember.lcm_(ember.tensor([4, 6]), ember.tensor([6, 4])).tolist() == [12, 12]
    c = ember.tensor([[1, 2], [3, 4]])
    assert c.cumsum_(1) is c and c.tolist() == [[1, 3], [3, 7]]
    assert c.cumprod_(0).tolist() == [[1, 3], [3, 21]]
    assert ember.is_same_size(c, ember.zeros(2, 2)) and not ember.is_same_size(c, ember.zeros(4))
    assert ember.is_signed(c) and not ember.is_signed(ember.zeros(1, dtype=ember.uint8))
