"""ember.linalg against numpy.linalg on random (Hypothesis-drawn) batches of matrices, float32
and float64, on the CPU (LAPACK) and reference backends; gradients against central differences
computed here with NumPy; the errors: LinAlgError (RuntimeError and ValueError at once) naming the
batch element, and the kinds of bad arguments. torch.det, torch.inverse and torch.slogdet too."""

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
import ember.linalg as LA

settings.register_profile(
    "linalg-ci", derandomize=True, deadline=None, max_examples=25, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.register_profile(
    "linalg-explore", deadline=None, max_examples=500,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
settings.load_profile("linalg-explore" if os.environ.get("EMBER_HYPOTHESIS") == "explore"
                      else "linalg-ci")

DEVICES = ["cpu", "reference"]
DTYPES = {ember.float32: (np.float32, 2e-4), ember.float64: (np.float64, 1e-9)}


def t(a, dtype=ember.float64, device="cpu"):
    return ember.tensor(np.ascontiguousarray(a)).to(dtype).to(device)


def n(x):
    return x.to("cpu").to(ember.float64).numpy()


@st.composite
def batches(draw, square=True, min_side=1, max_side=5):
    """A float64 array of shape batch + [m, n], batch of 0 to 2 dims, entries in [-1, 1]."""
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    m = draw(st.integers(min_side, max_side))
    k = m if square else draw(st.integers(min_side, max_side))
    seed = draw(st.integers(0, 2**32 - 1))
    return np.random.default_rng(seed).uniform(-1, 1, size=tuple(batch) + (m, k))


def shifted(a):
    """a + m I: well conditioned for entries in [-1, 1]."""
    return a + a.shape[-1] * np.eye(a.shape[-1])


def spd(a):
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1])


def close(got, want, tol):
    np.testing.assert_allclose(n(got), want, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@given(a=batches())
def test_inv_det_slogdet_match_numpy(device, dtype, a):
    _, tol = DTYPES[dtype]
    x = t(a, dtype, device)
    close(LA.det(x), np.linalg.det(a), tol)
    close(ember.det(x), np.linalg.det(a), tol)
    close(x.det(), np.linalg.det(a), tol)
    sign, logabs = LA.slogdet(x)
    want_sign, want_log = np.linalg.slogdet(a)
    np.testing.assert_array_equal(n(sign), want_sign)
    close(logabs, want_log, tol)
    s = shifted(a)
    close(LA.inv(t(s, dtype, device)), np.linalg.inv(s), tol)
    close(ember.inverse(t(s, dtype, device)), np.linalg.inv(s), tol)
    close(t(s, dtype, device).inverse(), np.linalg.inv(s), tol)


@pytest.mark.parametrize("device", DEVICES)
@given(a=batches(), k=st.integers(1, 3), vector=st.booleans(), data=st.data())
def test_solve_matches_numpy_with_broadcast_batches(device, a, k, vector, data):
    s = shifted(a)
    m = a.shape[-1]
    if vector:
        b = np.random.default_rng(k).uniform(-1, 1, size=a.shape[:-1])
        want = np.linalg.solve(s, b[..., None])[..., 0]
    else:
        extra = data.draw(st.sampled_from([(), (2,)]))  # B may have more batch dims
        b = np.random.default_rng(k).uniform(-1, 1, size=extra + a.shape[:-2] + (m, k))
        want = np.linalg.solve(s, b)
    close(LA.solve(t(s, device=device), t(b, device=device)), want, 1e-9)
    if not vector:
        bt = np.swapaxes(b, -1, -2)
        want_right = np.swapaxes(np.linalg.solve(np.swapaxes(s, -1, -2), b), -1, -2)
        close(LA.solve(t(s, device=device), t(bt, device=device), left=False), want_right, 1e-9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@given(a=batches())
def test_cholesky_and_eigh_match_numpy(device, dtype, a):
    _, tol = DTYPES[dtype]
    p = spd(a)
    close(LA.cholesky(t(p, dtype, device)), np.linalg.cholesky(p), tol * 10)
    close(LA.cholesky(t(p, dtype, device), upper=True),
          np.swapaxes(np.linalg.cholesky(p), -1, -2), tol * 10)
    sym = a + np.swapaxes(a, -1, -2)
    for uplo in ("L", "U"):
        w, v = LA.eigh(t(sym, dtype, device), UPLO=uplo)
        want_w = np.linalg.eigvalsh(sym, UPLO=uplo)
        close(w, want_w, tol)
        close(LA.eigvalsh(t(sym, dtype, device), UPLO=uplo), want_w, tol)
        # Eigenvectors up to sign: A V = V diag(w), V orthonormal.
        vv = n(v)
        np.testing.assert_allclose(sym @ vv, vv * want_w[..., None, :], atol=tol * 100)
        np.testing.assert_allclose(np.swapaxes(vv, -1, -2) @ vv,
                                   np.broadcast_to(np.eye(a.shape[-1]), vv.shape), atol=tol * 100)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@given(a=batches(square=False), full=st.booleans())
def test_qr_and_svd_match_numpy(device, dtype, a, full):
    _, tol = DTYPES[dtype]
    x = t(a, dtype, device)
    mode = "complete" if full else "reduced"
    q, r = LA.qr(x, mode=mode)
    # numpy.linalg.qr takes no batches before 2.0's; compare through QR = A and R's |diagonal|.
    qq, rr = n(q), n(r)
    np.testing.assert_allclose(qq @ rr, a, atol=tol * 100)
    k = min(a.shape[-2], a.shape[-1])
    want_r = np.linalg.qr(a.reshape(-1, *a.shape[-2:])[0], mode=mode)[1]
    np.testing.assert_allclose(np.abs(rr.reshape(-1, *rr.shape[-2:])[0]), np.abs(want_r),
                               atol=tol * 100)
    assert LA.qr(x, mode="r").Q.numel() == 0
    u, s, vh = LA.svd(x, full_matrices=full)
    np.testing.assert_allclose(n(s), np.linalg.svd(a, compute_uv=False), atol=tol * 100)
    close(LA.svdvals(x), np.linalg.svd(a, compute_uv=False), tol * 10)
    uu, vv = n(u), n(vh)
    np.testing.assert_allclose((uu[..., :, :k] * n(s)[..., None, :]) @ vv[..., :k, :], a,
                               atol=tol * 100)
    assert uu.shape[-1] == (a.shape[-2] if full else k)
    assert vv.shape[-2] == (a.shape[-1] if full else k)


@pytest.mark.parametrize("device", DEVICES)
@given(a=batches(square=False, min_side=2))
def test_pinv_lstsq_and_norms_match_numpy(device, a):
    x = t(a, device=device)
    close(LA.pinv(x), np.linalg.pinv(a), 1e-8)
    sym = a[..., :1, :1] if a.shape[-1] != a.shape[-2] else a + np.swapaxes(a, -1, -2)
    close(LA.pinv(t(sym, device=device), hermitian=True), np.linalg.pinv(sym, hermitian=True), 1e-8)
    if a.ndim == 2:
        b = np.linspace(-1, 1, a.shape[0] * 2).reshape(a.shape[0], 2)
        sol, res, rank, sv = LA.lstsq(x, t(b, device=device), driver="gelsd")
        want_sol, want_res, want_rank, want_sv = np.linalg.lstsq(a, b, rcond=None)
        close(sol, want_sol, 1e-8)
        assert int(rank.item()) == want_rank
        close(sv, want_sv, 1e-9)
        if want_res.size:
            close(res, want_res, 1e-8)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        want = np.linalg.norm(a, ord=ord, axis=(-2, -1))
        close(LA.matrix_norm(x, ord=ord), want, 1e-9)
        close(LA.norm(x, ord=ord, dim=(-2, -1)), want, 1e-9)
    for ord in (0, 1, 2, 3.5, math.inf, -math.inf):
        want = np.linalg.norm(a.reshape(-1), ord=ord)
        close(LA.vector_norm(x, ord=ord), want, 1e-9)
    close(LA.norm(x), np.linalg.norm(a.reshape(-1)), 1e-9)
    close(LA.vector_norm(x, ord=2, dim=-1, keepdim=True),
          np.linalg.norm(a, axis=-1, keepdims=True), 1e-9)


def numerical_grad(f, a, eps=1e-6):
    """Central differences of the scalar function f (of a NumPy array) at a."""
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def grad_of(f, a, device):
    x = t(a, device=device).requires_grad_()
    f(x).backward()
    return n(x.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [
    # (name, ember function of a tensor giving a scalar, the same with NumPy, input shape)
    ("det", lambda x: LA.det(x).sum(), lambda a: np.linalg.det(a).sum(), (2, 3, 3)),
    ("slogdet", lambda x: LA.slogdet(x)[1].sum(), lambda a: np.linalg.slogdet(a)[1].sum(), (3, 3)),
    ("inv", lambda x: (LA.inv(x + 3 * ember.eye(3, dtype=x.dtype, device=x.device)) ** 2).sum(),
     lambda a: (np.linalg.inv(a + 3 * np.eye(3)) ** 2).sum(), (2, 3, 3)),
    ("solve", lambda x: LA.solve(x + 3 * ember.eye(3, dtype=x.dtype, device=x.device),
                                 ember.ones(3, dtype=x.dtype, device=x.device)).sum(),
     lambda a: np.linalg.solve(a + 3 * np.eye(3), np.ones(3)).sum(), (3, 3)),
    ("cholesky", lambda x: LA.cholesky(x @ x.mT + 3 * ember.eye(3, dtype=x.dtype, device=x.device)).sin().sum(),
     lambda a: np.sin(np.linalg.cholesky(a @ a.T + 3 * np.eye(3))).sum(), (3, 3)),
    ("eigvalsh", lambda x: (LA.eigvalsh(x + x.mT) ** 3).sum(),
     lambda a: (np.linalg.eigvalsh(a + a.T) ** 3).sum(), (4, 4)),
    ("eigh vectors", lambda x: (LA.eigh(x + x.mT)[1] ** 2 * ember.arange(4.0, dtype=x.dtype, device=x.device)).sum(),
     lambda a: (np.linalg.eigh(a + a.T)[1] ** 2 * np.arange(4.0)).sum(), (4, 4)),
    ("svdvals", lambda x: LA.svdvals(x).pow(2).sum() + LA.svdvals(x)[0],
     lambda a: (np.linalg.svd(a, compute_uv=False) ** 2).sum() + np.linalg.svd(a, compute_uv=False)[0],
     (4, 3)),
    ("qr", lambda x: (LA.qr(x).R ** 2).sum() + LA.qr(x).Q[..., 0, :].abs().sum(),
     lambda a: (np.linalg.qr(a)[1] ** 2).sum() + np.abs(np.linalg.qr(a)[0][0, :]).sum(), (4, 3)),
    ("pinv", lambda x: LA.pinv(x).sin().sum(), lambda a: np.sin(np.linalg.pinv(a)).sum(), (3, 4)),
    ("matrix_norm nuc", lambda x: LA.matrix_norm(x, "nuc"), lambda a: np.linalg.norm(a, "nuc"), (3, 3)),
    ("norm 2", lambda x: LA.norm(x, 2), lambda a: np.linalg.norm(a, 2), (3, 4)),
], ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_gradients_match_finite_differences(device, case, rng):
    _, f, f_np, shape = case
    a = rng.uniform(-1, 1, size=shape)
    np.testing.assert_allclose(grad_of(f, a, device), numerical_grad(f_np, a), rtol=1e-5, atol=1e-6)


def test_gradcheck_through_ember():
    a = ember.randn(2, 3, 3, dtype=ember.float64).requires_grad_()
    assert ember.autograd.gradcheck(lambda x: LA.inv(x + 3 * ember.eye(3, dtype=ember.float64)), [a])
    assert ember.autograd.gradgradcheck(lambda x: LA.det(x), [a])


def test_linalg_error_names_the_batch_element_and_pivot():
    a = ember.stack([ember.eye(3), ember.tensor([[1.0, 2, 3], [2, 4, 6], [0, 0, 1]])])
    with pytest.raises(LA.LinAlgError) as e:
        LA.inv(a)
    assert str(e.value) == ("[linalg.inv] (batch element 1) the matrix is singular: U[1, 1] of its "
                            "LU factorization is exactly zero (use linalg.pinv or linalg.lstsq "
                            "for singular systems)")
    # torch.linalg.LinAlgError is a RuntimeError, numpy.linalg.LinAlgError a ValueError.
    assert isinstance(e.value, RuntimeError) and isinstance(e.value, ValueError)
    assert isinstance(e.value, ember.ValueError)
    assert type(e.value).__module__ == "ember.linalg" and type(e.value).__name__ == "LinAlgError"
    with pytest.raises(LA.LinAlgError, match="singular"):
        LA.solve(ember.zeros(2, 2), ember.ones(2))
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.cholesky\] .*not positive-definite.*order 2"):
        LA.cholesky(ember.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(LA.LinAlgError, match=r"\(batch element 0\) .*non-finite"):
        LA.eigh(ember.full((1, 2, 2), math.nan))
    with pytest.raises(LA.LinAlgError, match="non-finite"):
        LA.svd(ember.tensor([[1.0, math.inf], [0.0, 1.0]]))
    # A singular matrix is no error for det and slogdet, and NaN propagates through inv.
    assert LA.det(ember.zeros(2, 2)).item() == 0.0
    assert LA.slogdet(ember.zeros(2, 2)).logabsdet.item() == -math.inf
    assert math.isnan(LA.inv(ember.tensor([[math.nan, 1.0], [1.0, 1.0]]))[0, 0].item())


def test_bad_arguments_raise_the_kinds_pytorch_raises():
    with pytest.raises(ValueError, match=r"\[linalg.inv\] expected a batch of square matrices: got shape \[2, 3\]"):
        LA.inv(ember.ones(2, 3))
    with pytest.raises(TypeError, match=r"\[linalg.det\] expected a float32 or float64 tensor: got int64"):
        LA.det(ember.ones(2, 2, dtype=ember.int64))
    with pytest.raises(TypeError, match="float16"):
        LA.svd(ember.ones(2, 2, dtype=ember.float16))
    with pytest.raises(ValueError, match="at least 2 dims"):
        LA.cholesky(ember.ones(3))
    with pytest.raises(TypeError, match="float32 and float64"):
        LA.solve(ember.eye(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="'X'"):
        LA.eigh(ember.eye(2), UPLO="X")
    with pytest.raises(ValueError, match="'full'"):
        LA.qr(ember.eye(2), mode="full")
    with pytest.raises(ValueError, match="order 3"):
        LA.matrix_norm(ember.eye(2), ord=3)
    with pytest.raises(TypeError, match="ord must be a number or a string"):
        LA.norm(ember.eye(2), ord=[1])
    with pytest.raises(ValueError, match="driver"):
        LA.lstsq(ember.eye(2), ember.ones(2, 1), driver="lapack")
    with pytest.raises(NotImplementedError, match="mode='r'"):
        LA.qr(ember.randn(3, 2, requires_grad=True), mode="r").R.sum().backward()


def test_named_tuples_and_empty_inputs():
    x = ember.randn(4, 3, dtype=ember.float64)
    u, s, vh = LA.svd(x, full_matrices=False)
    r = LA.svd(x, full_matrices=False)
    assert r.U.shape == (4, 3) and r.S.shape == (3,) and r.Vh.shape == (3, 3)
    assert LA.eigh(ember.eye(2)).eigenvalues.shape == (2,)
    assert ember.slogdet(ember.eye(2)).sign.item() == 1.0
    assert x.slogdet is not None
    sol = LA.lstsq(x, ember.ones(4, 2, dtype=ember.float64))
    assert sol.solution.shape == (3, 2) and sol.residuals.shape == (2,) and sol.rank.item() == 3
    assert sol.singular_values.numel() == 0  # gelsy, the default, gives none
    assert LA.det(ember.zeros(2, 0, 0)).tolist() == [1.0, 1.0]
    assert LA.inv(ember.zeros(0, 3, 3)).shape == (0, 3, 3)
    assert LA.svdvals(ember.zeros(2, 0, 4)).shape == (2, 0)


def test_lu_factor_lu_and_lu_solve_reconstruct_and_solve():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((3, 4, 4))
    b = rng.standard_normal((3, 4, 2))
    LU, pivots = ember.linalg.lu_factor(ember.tensor(a))
    assert pivots.dtype is ember.int32 and pivots.shape == (3, 4)
    P, L, U = ember.lu_unpack(LU, pivots)
    np.testing.assert_allclose((P @ L @ U).numpy(), a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ember.linalg.lu_solve(LU, pivots, ember.tensor(b)).numpy(),
                               np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(ember.lu_solve(ember.tensor(b), LU, pivots).numpy(),
                               np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(
        ember.linalg.lu_solve(LU, pivots, ember.tensor(b), adjoint=True).numpy(),
        np.linalg.solve(np.swapaxes(a, -1, -2), b), rtol=1e-10)
    got = ember.linalg.lu(ember.tensor(a))
    np.testing.assert_allclose((got.P @ got.L @ got.U).numpy(), a, rtol=1e-10, atol=1e-12)
    # Row pivoting as LAPACK's getrf: |L| <= 1 below the diagonal.
    assert float(got.L.abs().max()) <= 1.0
    ex = ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [2.0, 4.0]]))
    assert ex.info.item() == 2
    with pytest.raises(ember.linalg.LinAlgError):
        ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [2.0, 4.0]]))
    packed, piv = ember.tensor(a[0]).lu()
    np.testing.assert_allclose(packed.numpy(), LU[0].numpy())
