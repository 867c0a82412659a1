"""Ops from Python against NumPy (float64 references) and, where it is installed, PyTorch on the
same random inputs: names, keywords, defaults, broadcasting, promotion and operators."""

import copy
import json
import math
import pathlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import assert_close


def t(a):
    return ember.tensor(a)


def test_binary_arithmetic_broadcasts_and_promotes(rng):
    a = rng.standard_normal((3, 1, 4)).astype(np.float32)
    b = rng.standard_normal((5, 1)).astype(np.float32)
    ta, tb = t(a), t(b)
    assert_close(ta + tb, a + b)
    assert_close(ta - tb, a - b)
    assert_close(ta * tb, a * b)
    assert_close(ta / (tb + 3), a / (b + 3), rtol=1e-5)
    assert_close(ember.add(ta, tb, alpha=2.5), a + 2.5 * b, rtol=1e-5)
    assert_close(ember.sub(ta, tb, alpha=0.5), a - 0.5 * b, rtol=1e-5)
    assert_close(ta.mul(tb), a * b)
    assert_close(ember.maximum(ta, tb), np.maximum(a, b))
    assert_close(ember.minimum(ta, tb), np.minimum(a, b))
    # Promotion, as PyTorch: int + float -> float32; int / int -> float32.
    i = ember.tensor([1, 2, 3])
    assert (i + 1.5).dtype is ember.float32
    assert (i / 2).dtype is ember.float32 and (i / 2).tolist() == [0.5, 1.0, 1.5]
    # A 0-d operand of a higher category decides the dtype; of the same category it does not.
    assert (i + ember.tensor(2.0, dtype=ember.float64)).dtype is ember.float64
    h = ember.ones(2, dtype=ember.float16)
    assert (h + ember.tensor(2.0, dtype=ember.float64)).dtype is ember.float16
    assert (ember.ones(2, dtype=ember.float16) + ember.ones(2)).dtype is ember.float32
    assert (i + True).dtype is ember.int64


def test_scalars_on_either_side_and_reverse_operators():
    x = ember.tensor([1.0, 2.0, 4.0])
    assert (1 + x).tolist() == [2, 3, 5]
    assert (1 - x).tolist() == [0, -1, -3]
    assert (2 * x).tolist() == [2, 4, 8]
    assert (8 / x).tolist() == [8, 4, 2]
    assert (x ** 2).tolist() == [1, 4, 16]
    assert (2 ** x).tolist() == [2, 4, 16]
    assert ember.pow(2, x).tolist() == [2, 4, 16]
    assert (-x).tolist() == [-1, -2, -4] and (+x).tolist() == x.tolist() and abs(-x).tolist() == x.tolist()
    assert (x // 3).tolist() == [0, 0, 1] and (-x // 3).tolist() == [-1, -1, -2]
    assert (x % 3).tolist() == [1, 2, 1] and ((-x) % 3).tolist() == [2, 1, 2]
    assert (7 // ember.tensor([2, -2])).tolist() == [3, -4]
    assert (ember.tensor([7, -7]) // 2).tolist() == [3, -4]
    assert (ember.tensor([-7, 7]) % 3).tolist() == [2, 1]
    assert ember.fmod(ember.tensor([-7.0, 7.0]), 3).tolist() == [-1, 1]
    assert ember.div(ember.tensor([-7.0, 7.0]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert ember.div(ember.tensor([-7, 7]), 2, rounding_mode="floor").tolist() == [-4, 3]
    m = ember.ones(2, 3)
    assert (m @ ember.ones(3)).tolist() == [3.0, 3.0]


def test_comparisons_and_logic():
    x = ember.tensor([1.0, 2.0, 3.0])
    assert (x > 1.5).tolist() == [False, True, True] and (x > 1.5).dtype is ember.bool
    assert (x == ember.tensor([1.0, 0.0, 3.0])).tolist() == [True, False, True]
    assert (x != 2).tolist() == [True, False, True]
    assert ember.le(x, 2).tolist() == [True, True, False]
    assert ember.ge(x, ember.tensor(2.0)).tolist() == [False, True, True]
    a, b = x > 1, x < 3
    assert (a & b).tolist() == [False, True, False]
    assert (a | b).tolist() == [True, True, True]
    assert (a ^ b).tolist() == [True, False, True]
    assert (~a).tolist() == [True, False, False]
    assert ember.logical_not(a).tolist() == [True, False, False]
    assert (x == None) is False  # noqa: E711 (comparison with a non-tensor is plain False)
    assert (x == "a") is False
    nan = ember.tensor([float("nan"), 1.0, float("inf")])
    assert ember.isnan(nan).tolist() == [True, False, False]
    assert ember.isinf(nan).tolist() == [False, False, True]
    assert ember.isfinite(nan).tolist() == [False, True, False]
    assert ember.equal(x, x.clone()) and not ember.equal(x, x + 1)


def test_where_and_clamp(rng):
    a = rng.standard_normal(10).astype(np.float32)
    ta = t(a)
    assert_close(ember.where(ta > 0, ta, ember.zeros(10)), np.where(a > 0, a, 0))
    assert_close(ember.where(ta > 0, ta, 0.0), np.where(a > 0, a, 0))
    assert_close(ember.where(ta > 0, 1.0, ta), np.where(a > 0, 1, a))
    assert_close(ta.where(ta > 0, -1.0), np.where(a > 0, a, -1))
    assert_close(ember.clamp(ta, -0.5, 0.5), np.clip(a, -0.5, 0.5))
    assert_close(ta.clamp(min=0), np.maximum(a, 0))
    assert_close(ta.clip(max=0.1), np.minimum(a, 0.1))
    nz = ember.where(t([[0, 1], [1, 0]]) > 0)
    assert [n.tolist() for n in nz] == [[0, 1], [1, 0]]
    with pytest.raises(ValueError, match="min"):
        ember.clamp(ta)


UNARY = [
    ("exp", np.exp), ("log", lambda v: np.log(np.abs(v) + 1)), ("sqrt", lambda v: np.sqrt(np.abs(v))),
    ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh), ("abs", np.abs), ("neg", np.negative),
    ("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("relu", lambda v: np.maximum(v, 0)),
    ("floor", np.floor), ("ceil", np.ceil), ("sign", np.sign), ("square", np.square),
    ("erf", np.vectorize(math.erf)), ("log1p", lambda v: np.log1p(np.abs(v))),
    ("rsqrt", lambda v: 1 / np.sqrt(np.abs(v) + 1)), ("trunc", np.trunc), ("exp2", np.exp2),
    ("log2", lambda v: np.log2(np.abs(v) + 1)), ("reciprocal", lambda v: 1 / (np.abs(v) + 1)),
]


@pytest.mark.parametrize("name,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_functions_and_methods(rng, name, ref):
    a = rng.standard_normal(50) * 3
    arg = a
    if name in ("log", "sqrt", "log1p", "log2"):
        arg = np.abs(a) + (1 if name in ("log", "log2") else 0)
        expected = {"log": np.log, "sqrt": np.sqrt, "log1p": np.log1p, "log2": np.log2}[name](arg)
    elif name in ("rsqrt", "reciprocal"):
        arg = np.abs(a) + 1
        expected = 1 / np.sqrt(arg) if name == "rsqrt" else 1 / arg
    else:
        expected = ref(a)
    x = ember.tensor(arg, dtype=ember.float64)
    assert_close(getattr(ember, name)(x), expected, rtol=1e-6, atol=1e-8)
    assert_close(getattr(x, name)(), expected, rtol=1e-6, atol=1e-8)


def test_round_is_half_to_even_and_takes_decimals():
    assert ember.round(t([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]
    assert_close(ember.round(t([1.2345, 2.3456], ), decimals=2), [1.23, 2.35], atol=1e-6)


REDUCTIONS = [("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min)]


@pytest.mark.parametrize("name,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_over_dims(rng, name, ref):
    a = rng.standard_normal((3, 4, 5))
    x = ember.tensor(a)
    assert_close(getattr(x, name)(), ref(a), rtol=1e-6, atol=1e-8)
    for dim in (0, 1, -1, (0, 2), [1, 2]):
        for keepdim in (False, True):
            axis = tuple(dim) if isinstance(dim, (tuple, list)) else dim
            expected = ref(a, axis=axis, keepdims=keepdim)
            assert_close(getattr(ember, name)(x, dim, keepdim=keepdim), expected, rtol=1e-6, atol=1e-8)
            assert_close(getattr(x, name)(dim=dim, keepdim=keepdim), expected, rtol=1e-6, atol=1e-8)


def test_reduction_variants(rng):
    a = rng.standard_normal((4, 6))
    x = ember.tensor(a)
    assert_close(x.var(), a.var(ddof=1), rtol=1e-6)
    assert_close(x.var(1, unbiased=False), a.var(axis=1), rtol=1e-6)
    assert_close(ember.std(x, dim=0, correction=0), a.std(axis=0), rtol=1e-6)
    assert_close(x.prod(1), a.prod(axis=1), rtol=1e-6)
    assert_close(x.norm(), np.linalg.norm(a), rtol=1e-6)
    assert_close(x.norm(p=1, dim=1), np.abs(a).sum(axis=1), rtol=1e-6)
    assert_close(ember.logsumexp(x, 1), np.log(np.exp(a).sum(axis=1)), rtol=1e-6)
    assert_close(x.cumsum(1), a.cumsum(axis=1), rtol=1e-6)
    assert_close(x.cumprod(0), a.cumprod(axis=0), rtol=1e-6)
    assert x.argmax().item() == a.argmax() and x.argmin(1).tolist() == a.argmin(axis=1).tolist()
    values, indices = x.max(1)
    assert_close(values, a.max(axis=1)) and indices.tolist() == a.argmax(axis=1).tolist()
    r = ember.min(x, dim=0, keepdim=True)
    assert r.values.shape == (1, 6) and r.indices.tolist() == [a.argmin(axis=0).tolist()]
    assert_close(ember.max(x, ember.zeros(4, 6, dtype=ember.float64)), np.maximum(a, 0))
    assert x.max().item() == a.max()
    assert ember.tensor([1, 2]).sum().dtype is ember.int64
    assert ember.tensor([1, 2], dtype=ember.int32).sum(dtype=ember.float64).dtype is ember.float64
    assert (x > 0).any().item() and not (x > 100).any().item() and (x < 100).all().item()
    assert ember.count_nonzero(ember.tensor([0, 1, 2, 0])).item() == 2


def test_softmax_family(rng):
    a = rng.standard_normal((3, 5))
    x = ember.tensor(a)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    assert_close(x.softmax(1), sm, rtol=1e-6)
    assert_close(ember.softmax(x, dim=-1), sm, rtol=1e-6)
    assert_close(F.log_softmax(x, dim=1), np.log(sm), rtol=1e-6)
    assert_close(F.softmin(x, dim=1), ember.softmax(-x, 1), rtol=1e-6)


def test_products(rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    x, y = ember.tensor(a), ember.tensor(b)
    assert_close(x @ y, a @ b, rtol=1e-6)
    assert_close(ember.mm(x, y), a @ b, rtol=1e-6)
    assert_close(ember.matmul(x, y[:, 0]), a @ b[:, 0], rtol=1e-6)
    ba, bb = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    assert_close(ember.bmm(ember.tensor(ba), ember.tensor(bb)), ba @ bb, rtol=1e-6)
    assert_close(ember.einsum("bij,bjk->bik", ember.tensor(ba), ember.tensor(bb)), ba @ bb, rtol=1e-6)
    assert_close(ember.einsum("ij->ji", [x]), a.T)
    v = rng.standard_normal(4)
    assert_close(ember.dot(ember.tensor(v), ember.tensor(v)), v @ v, rtol=1e-6)
    assert_close(ember.outer(ember.tensor(v), ember.tensor(v)), np.outer(v, v), rtol=1e-6)
    assert_close(ember.mv(x, ember.tensor(v)), a @ v, rtol=1e-6)
    c = rng.standard_normal((3, 2))
    assert_close(ember.addmm(ember.tensor(c), x, y, beta=0.5, alpha=2.0), 0.5 * c + 2 * a @ b, rtol=1e-6)
    assert_close(ember.trace(ember.tensor(np.eye(3) * 2)), 6.0)


def test_views_and_shapes(rng):
    a = rng.standard_normal((2, 3, 4))
    x = ember.tensor(a)
    assert_close(x.view(6, 4), a.reshape(6, 4))
    assert_close(x.view((4, -1)), a.reshape(4, 6))
    assert_close(x.reshape(-1), a.reshape(-1))
    assert_close(ember.reshape(x, (3, 8)), a.reshape(3, 8))
    assert_close(x.permute(2, 0, 1), a.transpose(2, 0, 1))
    assert_close(x.permute((1, 2, 0)), a.transpose(1, 2, 0))
    assert_close(x.transpose(0, 2), a.swapaxes(0, 2))
    assert_close(x.unsqueeze(1).squeeze(1), a)
    assert x.unsqueeze(0).unsqueeze(-1).shape == (1, 2, 3, 4, 1)
    assert x.unsqueeze(0).unsqueeze(-1).squeeze().shape == (2, 3, 4)
    assert x.unsqueeze(0).unsqueeze(-1).squeeze((0, -1)).shape == (2, 3, 4)
    assert_close(x.flatten(1), a.reshape(2, 12))
    assert x.flatten().shape == (24,) and x.unflatten(2, (2, 2)).shape == (2, 3, 2, 2)
    assert_close(x.narrow(1, 1, 2), a[:, 1:3])
    assert_close(x.select(2, -1), a[:, :, -1])
    assert_close(ember.movedim(x, 0, -1), np.moveaxis(a, 0, -1))
    e = ember.tensor([[1.0], [2.0]]).expand(2, 3)
    assert e.tolist() == [[1, 1, 1], [2, 2, 2]] and e.stride() == (1, 0)
    assert_close(ember.tensor([[1.0, 2.0]]).repeat(2, 2), np.tile([[1.0, 2.0]], (2, 2)))
    assert_close(x.flip(0), a[::-1])
    assert_close(x.flip((1, 2)), a[:, ::-1, ::-1])
    assert_close(ember.roll(x, 1, 2), np.roll(a, 1, axis=2))
    assert_close(ember.roll(x, -2), np.roll(a, -2))
    assert_close(ember.tril(x[0]), np.tril(a[0])) and True
    assert_close(ember.triu(x[0], 1), np.triu(a[0], 1))
    assert_close(x[0].diagonal(), np.diagonal(a[0]))
    assert_close(x.diagonal(1, 1, 2), np.diagonal(a, 1, 1, 2))
    assert_close(x.contiguous(), a)
    assert x.view_as(ember.zeros(24)).shape == (24,)
    assert x.T.shape == (4, 3, 2) and x.t if True else None


def test_joining_and_splitting(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    x, y = ember.tensor(a), ember.tensor(b)
    assert_close(ember.cat([x, y]), np.concatenate([a, b]))
    assert_close(ember.cat((x, y), dim=1), np.concatenate([a, b], axis=1))
    assert_close(ember.concat([x, y], -1), np.concatenate([a, b], axis=-1))
    assert_close(ember.stack([x, y], 1), np.stack([a, b], axis=1))
    assert_close(ember.hstack([x, y]), np.hstack([a, b]))
    assert_close(ember.vstack([x, y]), np.vstack([a, b]))
    parts = ember.arange(10).split(3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    parts = ember.split(ember.arange(10), [2, 8])
    assert [p.tolist() for p in parts] == [[0, 1], list(range(2, 10))]
    assert [c.shape for c in ember.arange(10).chunk(3)] == [(4,), (4,), (2,)]
    assert [u.tolist() for u in x.unbind(1)] == [a[:, i].tolist() for i in range(3)]


def test_indexing_ops(rng):
    a = rng.standard_normal((4, 5))
    x = ember.tensor(a)
    idx = ember.tensor([3, 0, 3])
    assert_close(x.index_select(0, idx), a[[3, 0, 3]])
    g = ember.tensor([[0, 4], [1, 1], [2, 0], [4, 3]])
    assert_close(ember.gather(x, 1, g), np.take_along_axis(a, g.numpy(), 1))
    s = ember.zeros(3, 4).scatter(1, ember.tensor([[1], [3], [0]]), ember.ones(3, 1))
    assert s.tolist() == [[0, 1, 0, 0], [0, 0, 0, 1], [1, 0, 0, 0]]
    assert ember.zeros(2, 2).scatter(0, ember.tensor([[1, 0]]), 5.0).tolist() == [[0, 5], [5, 0]]
    sa = ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.tensor([1.0, 2.0, 3.0]))
    assert sa.tolist() == [3, 0, 3]
    m = x > 0
    assert_close(x.masked_fill(m, 0.0), np.where(a > 0, 0, a))
    assert_close(x.masked_select(m), a[a > 0])
    assert ember.nonzero(ember.tensor([[0, 1], [1, 0]])).tolist() == [[0, 1], [1, 0]]
    assert [n.tolist() for n in ember.tensor([0, 2, 0, 3]).nonzero(as_tuple=True)] == [[1, 3]]
    v, i = ember.sort(ember.tensor([3.0, 1.0, 2.0]))
    assert v.tolist() == [1, 2, 3] and i.tolist() == [1, 2, 0]
    r = ember.tensor([3.0, 1.0, 2.0]).sort(descending=True)
    assert r.values.tolist() == [3, 2, 1] and r.indices.tolist() == [0, 2, 1]
    assert ember.argsort(ember.tensor([3, 1, 2])).tolist() == [1, 2, 0]
    top = x.topk(2, dim=1)
    assert_close(top.values, -np.sort(-a, axis=1)[:, :2])
    low = ember.topk(x, 2, largest=False)
    assert_close(low.values, np.sort(a, axis=1)[:, :2])


def test_in_place_ops_write_through_and_return_self():
    x = ember.tensor([1.0, 2.0])
    y = x.add_(1)
    assert y is x and x.tolist() == [2, 3]
    x.mul_(2).sub_(1, alpha=2).div_(2)
    assert x.tolist() == [1.0, 2.0]
    x += 1
    x *= ember.tensor([2.0, 0.5])
    x -= 1
    x /= 2
    assert x.tolist() == [1.5, 0.25]
    view = x[0:1]
    view.fill_(9)
    assert x.tolist() == [9.0, 0.25]
    x.zero_()
    assert x.tolist() == [0, 0]
    x.copy_(ember.tensor([5, 6]))
    assert x.tolist() == [5.0, 6.0] and x.dtype is ember.float32
    x.clamp_(max=5.5).neg_().abs_().sqrt_()
    assert_close(x, np.sqrt([5.0, 5.5]))
    assert ember.relu_(ember.tensor([-1.0, 1.0])).tolist() == [0, 1]


def test_functional_activations(rng):
    a = rng.standard_normal(20) * 3
    x = ember.tensor(a)
    assert_close(F.relu(x), np.maximum(a, 0))
    assert_close(F.relu6(x), np.clip(a, 0, 6))
    assert_close(F.leaky_relu(x, 0.2), np.where(a > 0, a, 0.2 * a))
    assert_close(F.elu(x, alpha=0.5), np.where(a > 0, a, 0.5 * (np.exp(a) - 1)), rtol=1e-6)
    assert_close(F.silu(x), a / (1 + np.exp(-a)), rtol=1e-6)
    assert_close(F.softplus(x, beta=2), np.where(2 * a > 20, a, np.log1p(np.exp(2 * a)) / 2), rtol=1e-6)
    assert_close(F.hardtanh(x, -2, 2), np.clip(a, -2, 2))
    assert_close(F.logsigmoid(x), -np.log1p(np.exp(-a)), rtol=1e-6)
    assert_close(F.gelu(x), a * 0.5 * (1 + np.vectorize(math.erf)(a / math.sqrt(2))), rtol=1e-6)
    assert_close(F.mish(x), a * np.tanh(np.log1p(np.exp(a))), rtol=1e-6)
    assert_close(F.hardsigmoid(x), np.clip(a + 3, 0, 6) / 6, rtol=1e-6)
    assert_close(F.softsign(x), a / (1 + np.abs(a)), rtol=1e-6)
    assert_close(ember.nn.Softsign()(x), a / (1 + np.abs(a)), rtol=1e-6)  # the C++ layer
    assert_close(F.normalize(ember.tensor(a.reshape(4, 5))), a.reshape(4, 5) /
                 np.linalg.norm(a.reshape(4, 5), axis=1, keepdims=True), rtol=1e-6)
    y = x.clone()
    F.relu(y, inplace=True)
    assert_close(y, np.maximum(a, 0))


def conv2d_reference(x, w, b, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3]))
    return out + b.reshape(1, -1, 1, 1)


def test_conv_pool_and_norms_against_float64_references(rng):
    x = rng.standard_normal((2, 3, 7, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    b = rng.standard_normal(4)
    ex = ember.tensor(x)
    out = F.conv2d(ex, ember.tensor(w), ember.tensor(b), stride=2, padding=1)
    assert_close(out, conv2d_reference(x, w, b, 2, 1), rtol=1e-6, atol=1e-8)
    same = F.conv2d(ex, ember.tensor(w), padding="same")
    assert same.shape == (2, 4, 7, 6)
    assert_close(same, conv2d_reference(x, w, np.zeros(4), 1, 1), rtol=1e-6, atol=1e-8)
    mp = F.max_pool2d(ex, 2)
    assert_close(mp, x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    ap = F.avg_pool2d(ex, (2, 3))
    assert_close(ap, x[:, :, :6, :6].reshape(2, 3, 3, 2, 2, 3).mean(axis=(3, 5)), rtol=1e-6)
    assert_close(F.adaptive_avg_pool2d(ex, 1), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)
    assert F.adaptive_avg_pool2d(ex, (None, 2)).shape == (2, 3, 7, 2)
    values, indices = F.max_pool2d(ex, 2, return_indices=True)
    assert values.shape == indices.shape == (2, 3, 3, 3) and indices.dtype is ember.int64
    ln = F.layer_norm(ex, (7, 6))
    mu, var = x.mean(axis=(2, 3), keepdims=True), x.var(axis=(2, 3), keepdims=True)
    assert_close(ln, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-7)
    bn = F.batch_norm(ex, None, None, training=True)
    mu, var = x.mean(axis=(0, 2, 3), keepdims=True), x.var(axis=(0, 2, 3), keepdims=True)
    assert_close(bn, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-7)
    gn = F.group_norm(ex, 1)
    mu, var = x.mean(axis=(1, 2, 3), keepdims=True), x.var(axis=(1, 2, 3), keepdims=True)
    assert_close(gn, (x - mu) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-7)


def test_losses_against_formulas(rng):
    logits = rng.standard_normal((5, 4))
    target = np.array([0, 3, 1, 1, 2])
    lt, tt = ember.tensor(logits), ember.tensor(target)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    ce = -logp[np.arange(5), target]
    assert_close(F.cross_entropy(lt, tt), ce.mean(), rtol=1e-6)
    assert_close(F.cross_entropy(lt, tt, reduction="none"), ce, rtol=1e-6)
    assert_close(F.cross_entropy(lt, tt, reduction="sum"), ce.sum(), rtol=1e-6)
    assert_close(F.nll_loss(ember.tensor(logp), tt), ce.mean(), rtol=1e-6)
    w = np.array([1.0, 2.0, 0.5, 1.5])
    assert_close(F.cross_entropy(lt, tt, weight=ember.tensor(w)), (ce * w[target]).sum() / w[target].sum(), rtol=1e-6)
    ig = F.cross_entropy(lt, tt, ignore_index=1)
    assert_close(ig, ce[target != 1].mean(), rtol=1e-6)
    a, b = rng.standard_normal(6), rng.standard_normal(6)
    ea, eb = ember.tensor(a), ember.tensor(b)
    assert_close(F.mse_loss(ea, eb), ((a - b) ** 2).mean(), rtol=1e-6)
    assert_close(F.l1_loss(ea, eb, reduction="sum"), np.abs(a - b).sum(), rtol=1e-6)
    d = np.abs(a - b)
    assert_close(F.huber_loss(ea, eb, delta=0.5), np.where(d < 0.5, 0.5 * d**2, 0.5 * (d - 0.25)).mean(), rtol=1e-6)
    assert_close(F.smooth_l1_loss(ea, eb, beta=0.5), np.where(d < 0.5, 0.5 * d**2 / 0.5, d - 0.25).mean(), rtol=1e-6)
    p = 1 / (1 + np.exp(-a))
    y = (b > 0).astype(np.float64)
    bce = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert_close(F.binary_cross_entropy(ember.tensor(p), ember.tensor(y)), bce.mean(), rtol=1e-6)
    assert_close(F.binary_cross_entropy_with_logits(ea, ember.tensor(y)), bce.mean(), rtol=1e-6)
    q = np.exp(logp)
    kl = (q * (np.log(q) - logp)).sum() / 5
    assert_close(F.kl_div(ember.tensor(logp), ember.tensor(q), reduction="batchmean"), kl, rtol=1e-6, atol=1e-9)
    # PyTorch's legacy arguments fold into a reduction.
    assert_close(F.mse_loss(ea, eb, size_average=False), ((a - b) ** 2).sum(), rtol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        F.mse_loss(ea, eb, reduction="avg")


def test_embedding_one_hot_pad_interpolate_attention(rng):
    w = rng.standard_normal((10, 3))
    idx = ember.tensor([[1, 2], [9, 0]])
    assert_close(F.embedding(idx, ember.tensor(w)), w[[[1, 2], [9, 0]]])
    assert F.one_hot(ember.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]
    x = ember.tensor(rng.standard_normal((1, 1, 2, 3)))
    assert_close(F.pad(x, (1, 2)), np.pad(x.numpy(), ((0, 0), (0, 0), (0, 0), (1, 2))))
    assert_close(F.pad(x, (1, 1, 1, 1), value=2.0), np.pad(x.numpy(), ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=2))
    up = F.interpolate(x, scale_factor=2)
    assert_close(up, x.numpy().repeat(2, axis=2).repeat(2, axis=3))
    assert F.interpolate(x, size=(4, 6), mode="bilinear").shape == (1, 1, 4, 6)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    s = q @ k.transpose(0, 2, 1) / 2.0
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    ref = (e / e.sum(axis=-1, keepdims=True)) @ v
    out = F.scaled_dot_product_attention(ember.tensor(q), ember.tensor(k), ember.tensor(v))
    assert_close(out, ref, rtol=1e-6, atol=1e-8)


def test_ops_match_pytorch_on_random_inputs(torch, rng):
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5)).astype(np.float32)
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    cases = [
        lambda m, x, y: m.add(x, y, alpha=0.3),
        lambda m, x, y: (x * y).sum(dim=(0, 2), keepdim=True),
        lambda m, x, y: m.softmax(x, dim=1),
        lambda m, x, y: x.std(dim=1, unbiased=False),
        lambda m, x, y: m.where(x > 0, x, y),
        lambda m, x, y: m.nn.functional.gelu(x, approximate="tanh"),
        lambda m, x, y: m.nn.functional.layer_norm(x, (5,)),
        lambda m, x, y: x.permute(2, 0, 1).reshape(5, -1).t().contiguous(),
        lambda m, x, y: m.cumsum(x, dim=-1),
        lambda m, x, y: x.clamp(min=-0.5, max=0.25),
        lambda m, x, y: m.logsumexp(x, dim=2),
        lambda m, x, y: x.norm(p=3, dim=0),
        lambda m, x, y: m.matmul(x, y.t()),
        lambda m, x, y: x[1:, ::2, -1],
        lambda m, x, y: x.var(0) + y.mean(),
        lambda m, x, y: m.nn.functional.log_softmax(x, dim=0),
    ]
    for i, case in enumerate(cases):
        assert_close(case(ember, ea, eb), case(torch, ta, tb).numpy(), rtol=1e-4, atol=1e-5), i


@pytest.mark.parametrize("reduce", [
    lambda x: x.amax(0), lambda x: x.amin(0), lambda x: x.amax((1, 0)), lambda x: x.max(0),
    lambda x: x.min(0), lambda x: x.argmax(0), lambda x: x.argmin(0), lambda x: ember.amax(x, 0),
    lambda x: x.max(dim=0, keepdim=True), lambda x: ember.argmin(x, dim=-2),
])
def test_reducing_an_empty_dim_without_identity_is_an_index_error_as_in_pytorch(reduce):
    with pytest.raises(IndexError, match="expected reduction dim 0 to have non-zero size") as info:
        reduce(ember.zeros(0, 3))
    assert isinstance(info.value, ember.IndexError)
    # Over a dim that is not empty, the result is empty; with no dim, an error asking for one.
    assert ember.zeros(0, 3).amax(1).shape == (0,)
    with pytest.raises(RuntimeError, match="specify a dim"):
        ember.zeros(0, 3).max()


def test_arguments_of_the_wrong_type_are_type_errors_not_bad_cast():
    with pytest.raises(TypeError, match=r"\[einsum\] operands must be tensors, got int"):
        ember.einsum("i,i->", [ember.ones(2), 3])
    with pytest.raises(TypeError, match="has a type this call cannot take"):
        ember.randint(1.5, (2,))


def test_a_gradient_hook_returning_a_non_tensor_is_a_type_error():
    x = ember.ones(2, requires_grad=True)
    x.register_hook(lambda g: "not a gradient")
    with pytest.raises(TypeError, match=r"\[register_hook\] a gradient hook returned str"):
        (x * 2).sum().backward()


# ---- Outputs that overlap their inputs (Note [Overlapping operands] in core/dispatch/call.cpp) --

SELF_OVERLAP = "more than one element of the written-to tensor refers to a single memory location"
PARTIAL_OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single"


def test_an_input_partially_overlapping_the_output_is_refused_as_pytorch_does():
    x = ember.arange(6.0)
    # Without the check the kernel read its own writes: the cumulative sums 0 1 3 6 10 15.
    with pytest.raises(RuntimeError, match=PARTIAL_OVERLAP):
        x[1:].add_(x[:-1])
    with pytest.raises(NotImplementedError, match=r"\[add_\].*clone\(\)"):
        x[1:] += x[:-1]
    assert x.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.raises(RuntimeError, match=PARTIAL_OVERLAP):
        x.add_(x[0])
    assert_close(x[1:] + x[:-1], np.arange(1.0, 10.0, 2.0))  # out of place: a fresh output


def test_writing_into_an_expanded_tensor_is_refused():
    e = ember.zeros(1).expand(4)
    with pytest.raises(RuntimeError, match=SELF_OVERLAP):  # was silently 4 everywhere
        e.add_(1)
    with pytest.raises(RuntimeError, match=SELF_OVERLAP):
        e.zero_()
    with pytest.raises(RuntimeError, match=SELF_OVERLAP):
        e.copy_(ember.arange(4.0))
    assert e.tolist() == [0, 0, 0, 0]


def test_an_input_over_the_outputs_memory_in_another_order_gives_the_out_of_place_result(rng):
    a = ember.arange(4.0).view(2, 2)
    a.copy_(a.t())  # was [[0, 2], [2, 3]]
    assert a.tolist() == [[0, 2], [1, 3]]
    w = rng.standard_normal((3, 3)).astype(np.float32)
    tw = ember.tensor(w)
    tw.add_(tw.t())
    assert_close(tw, w + w.T)
    # A layer's weight replaced by its own transpose, then updated in place.
    lin = ember.nn.Linear(3, 3, bias=False)
    w0 = lin.weight.detach().numpy().copy()
    lin.weight.data = lin.weight.data.t()
    with ember.no_grad():
        lin.weight.mul_(2)
        lin.weight.copy_(lin.weight.t())
    assert_close(lin.weight, 2 * w0)


def test_disjoint_views_of_one_tensor_still_run_in_place():
    m = ember.arange(9.0).view(3, 3)
    m[:, 0].copy_(m[:, 1])  # columns interleave in memory but share no element
    assert m.tolist() == [[1, 1, 2], [4, 4, 5], [7, 7, 8]]
    g = ember.arange(8.0).view(2, 4)
    a, b = g.chunk(2, dim=1)
    a.mul_(b)
    assert g.tolist() == [[0, 3, 2, 3], [24, 35, 6, 7]]
    v = ember.arange(6.0)
    v[::2] += v[1::2]
    assert v.tolist() == [1, 1, 5, 3, 9, 5]


# ---- 0-d tensors and dim arguments (Note [Dims of a 0-d tensor] in core/tensor/shape.cpp) ------

ZERO_D_OPS = {
    # name: (call with dim d, the result for dims 0 and -1 as PyTorch gives it)
    "flip": (lambda x, d: x.flip(d), 2.0),
    "flip_list": (lambda x, d: ember.flip(x, [d]), 2.0),
    "roll": (lambda x, d: x.roll(1, d), 2.0),
    "movedim": (lambda x, d: x.movedim(d, 0), 2.0),
    "sum": (lambda x, d: x.sum(d), 2.0),
    "mean": (lambda x, d: x.mean(d), 2.0),
    "prod": (lambda x, d: x.prod(d), 2.0),
    "amax": (lambda x, d: x.amax(d), 2.0),
    "amin": (lambda x, d: x.amin(d), 2.0),
    "argmax": (lambda x, d: x.argmax(d), 0),
    "argmin": (lambda x, d: x.argmin(d), 0),
    "max": (lambda x, d: x.max(d)[0], 2.0),
    "min": (lambda x, d: x.min(d)[1], 0),
    "logsumexp": (lambda x, d: x.logsumexp(d), 2.0),
    "norm": (lambda x, d: x.norm(dim=d), 2.0),
    "std": (lambda x, d: x.std(d, unbiased=False), 0.0),
    "softmax": (lambda x, d: x.softmax(d), 1.0),
    "log_softmax": (lambda x, d: x.log_softmax(d), 0.0),
    "cumsum": (lambda x, d: x.cumsum(d), 2.0),
    "cumprod": (lambda x, d: x.cumprod(d), 2.0),
    "transpose": (lambda x, d: x.transpose(d, 0), 2.0),
    "squeeze": (lambda x, d: x.squeeze(d), 2.0),
    "index_select": (lambda x, d: x.index_select(d, ember.tensor([0])), 2.0),
    "gather": (lambda x, d: x.gather(d, ember.tensor(0)), 2.0),
    "scatter_add": (lambda x, d: x.scatter_add(d, ember.tensor(0), ember.tensor(5.0)), 7.0),
    "sort": (lambda x, d: x.sort(d)[0], 2.0),
    "argsort": (lambda x, d: x.argsort(d), 0),
    "topk": (lambda x, d: x.topk(1, d)[0], 2.0),
    "all": (lambda x, d: x.all(d), True),
    "count_nonzero": (lambda x, d: x.count_nonzero(d), 1),
}


@pytest.mark.parametrize("name", sorted(ZERO_D_OPS))
def test_ops_taking_a_dim_treat_a_0d_tensor_as_pytorch_does(name):
    fn, expected = ZERO_D_OPS[name]
    x = ember.tensor(2.0)
    for d in (0, -1):
        r = fn(x, d)
        assert r.shape == (), (name, d, r.shape)
        assert r.item() == expected, (name, d)
    for d in (1, -2):
        with pytest.raises(IndexError, match="out of range"):
            fn(x, d)
    assert x.item() == 2.0  # and the input is left alone


@pytest.mark.parametrize("call", [
    lambda x: x.size(0), lambda x: x.stride(-1), lambda x: x.select(0, 0),
    lambda x: x.narrow(0, 0, 1), lambda x: x.unbind(0), lambda x: x.unflatten(0, (1,)),
    lambda x: x.diagonal(), lambda x: x[0],
])
def test_ops_that_need_a_dim_refuse_a_0d_tensor_with_an_index_error(call):
    with pytest.raises(IndexError):
        call(ember.tensor(2.0))


def test_flip_and_roll_of_a_0d_tensor_are_copies():
    x = ember.tensor(2.0)
    for y in (x.flip(0), x.roll(3, 0), x.flip([])):
        y.add_(1)
        assert x.item() == 2.0
    assert x.flatten().shape == (1,) and x.unsqueeze(-1).shape == (1,)


# ---- In-place forms of every op (Note [In-place forms of every op] in ops.cpp) -----------------

_INPLACE_CASES = [
    ("absolute", ()), ("ceil", ()), ("clamp_max", (0.5,)), ("clamp_min", (-0.5,)),
    ("clip", (-0.5, 0.5)), ("cos", ()), ("divide", (2.0,)), ("erf", ()), ("exp2", ()),
    ("expm1", ()), ("floor", ()), ("floor_divide", (0.7,)), ("fmod", (0.3,)), ("log1p", ()),
    ("multiply", (3.0,)), ("negative", ()), ("pow", (2,)), ("reciprocal", ()), ("remainder", (0.4,)),
    ("round", ()), ("sign", ()), ("sin", ()), ("square", ()), ("subtract", (1.0,)), ("tan", ()),
    ("trunc", ()), ("true_divide", (4.0,)), ("eq", (0.25,)), ("lt", (0.0,)), ("ge", (0.1,)),
    ("tril", ()), ("triu", (1,)), ("logical_not", ()), ("asin", ()), ("arccos", ()), ("atan", ()),
    ("sinh", ()), ("cosh", ()), ("asinh", ()), ("atanh", ()), ("erfinv", ()),
    ("atan2", (ember.tensor(0.5),)), ("hypot", (ember.tensor(0.5),)),
    ("logaddexp", (ember.tensor(-0.5),)),
]


@pytest.mark.parametrize("name,args", _INPLACE_CASES, ids=[c[0] for c in _INPLACE_CASES])
def test_in_place_forms_equal_the_op_and_return_the_tensor(name, args):
    base = ember.tensor([[0.25, -1.5, 0.75], [2.0, -0.2, 0.1]])
    want = getattr(base, name)(*args)
    x = base.clone()
    version = x._version
    got = getattr(x, name + "_")(*args)
    assert got is x and x._version > version
    np.testing.assert_allclose(x.numpy(), want.to(ember.float32).numpy(), rtol=1e-6)
    # Through a view, its base sees the change.
    y = base.clone()
    getattr(y.t(), name + "_")(*args)
    np.testing.assert_allclose(y.numpy(), getattr(base.t(), name)(*args).to(ember.float32).t().numpy(),
                               rtol=1e-6)


def test_in_place_forms_refuse_results_the_tensor_cannot_hold():
    i = ember.tensor([1, 2, 3])
    with pytest.raises(TypeError, match=r"\[sin_\] result type float32 can't be cast"):
        i.sin_()
    assert i.tolist() == [1, 2, 3]
    i.eq_(2)  # a bool result fits an integer tensor, as in PyTorch
    assert i.tolist() == [0, 1, 0] and i.dtype == ember.int64
    # multiply_ is mul_'s other name: the core's in-place op says which op refused.
    with pytest.raises(TypeError, match=r"\[mul_\] result type int64 can't be cast to the "
                                        r"desired output type bool"):
        ember.tensor([True]).multiply_(2)


def test_in_place_forms_are_recorded_by_autograd():
    w = ember.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with pytest.raises(ember.Error, match=r"\[sin_\] a leaf tensor that requires grad"):
        w.sin_()
    h = w * 1
    h.sin_().pow_(2)
    h.sum().backward()
    want = 2 * np.sin(w.detach().numpy()) * np.cos(w.detach().numpy())
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)


def test_uniform_and_normal_fill_in_place():
    w = ember.zeros(4000)
    assert w.uniform_(-0.1, 0.1) is w
    assert -0.1 <= w.min().item() and w.max().item() < 0.1 and abs(w.mean().item()) < 0.01
    w.normal_(2.0, 0.5)
    assert abs(w.mean().item() - 2.0) < 0.05 and abs(w.std().item() - 0.5) < 0.05
    g1, g2 = ember.Generator(), ember.Generator()
    g1.manual_seed(7)
    g2.manual_seed(7)
    assert ember.zeros(5).uniform_(generator=g1).equal(ember.zeros(5).uniform_(generator=g2))
    with pytest.raises(NotImplementedError, match=r"\[uniform_\] not implemented for int64"):
        ember.zeros(2, dtype=ember.int64).uniform_()
    p = ember.nn.Linear(2, 2).weight
    p.data.uniform_(-1, 1)  # the way scripts initialise weights
    with pytest.raises(ember.Error, match="leaf tensor that requires grad"):
        p.uniform_()


# ---- out= ------------------------------------------------------------------------------------

def test_every_function_takes_out_and_returns_it():
    a, b = ember.ones(2, 3), ember.full((3, 2), 2.0)
    out = ember.empty(0)
    assert ember.matmul(a, b, out=out) is out
    assert out.tolist() == [[6.0, 6.0], [6.0, 6.0]]
    same = ember.zeros(2, 3, dtype=ember.float64)
    ptr = same.data_ptr()
    ember.add(a, a, alpha=2, out=same)
    assert same.data_ptr() == ptr and same.dtype == ember.float64 and same.sum().item() == 18
    values, indices = ember.empty(0), ember.empty(0, dtype=ember.int64)
    got = ember.max(ember.tensor([[1.0, 5.0], [7.0, 2.0]]), 1, out=(values, indices))
    assert got[0] is values and values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert ember.arange(3, out=ember.empty(0)).tolist() == [0.0, 1.0, 2.0]
    assert ember.linalg.inv(2 * ember.eye(2), out=ember.empty(2, 2)).tolist() == \
        [[0.5, 0.0], [0.0, 0.5]]
    assert ember.sin(a, out=None).equal(a.sin())  # out=None is no out


def test_out_refuses_what_pytorch_refuses():
    a = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"\[add\] result type float32 can't be cast"):
        ember.add(a, a, out=ember.empty(2, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        ember.mul(a.clone().requires_grad_(), a, out=ember.empty(2, 3))
    with pytest.warns(UserWarning, match=r"resized from shape \[5\]"):
        ember.add(a, a, out=ember.empty(5))
    with pytest.raises(TypeError, match="out must be a Tensor"):
        ember.add(a, a, out=[1.0])
    with pytest.raises(TypeError, match="out must be a tuple of 2 tensors"):
        ember.max(a, 1, out=ember.empty(0))
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ember.add(a, "x")  # a call without out= still gets the function's own message


def test_normal_takes_tensors_of_means_and_stds():
    z = ember.normal(ember.tensor([0.0, 100.0]), ember.zeros(3, 1))
    assert z.shape == (3, 2) and z.tolist() == [[0.0, 100.0]] * 3
    ember.manual_seed(0)
    s = ember.normal(ember.full((4000,), 5.0), 0.5)
    assert abs(s.mean().item() - 5.0) < 0.05 and abs(s.std().item() - 0.5) < 0.05
    assert ember.normal(2.0, ember.zeros(2)).tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match=r"\[normal\] expects std >= 0.0"):
        ember.normal(ember.zeros(2), ember.tensor([1.0, -1.0]))


# ---- interpolate: every mode against PyTorch (fixtures/make_interpolate.py) --------------------

INTERPOLATE_CASES = json.loads(
    (pathlib.Path(__file__).with_name("fixtures") / "interpolate.json").read_text())


def test_interpolate_matches_pytorch_in_every_mode():
    want = np.load(pathlib.Path(__file__).with_name("fixtures") / "interpolate.npz")
    rng = np.random.default_rng(0)
    for i, (shape, kw) in enumerate(INTERPOLATE_CASES):
        x = rng.standard_normal(shape)
        got = F.interpolate(ember.tensor(x), **kw)
        assert got.shape == want[f"y{i}"].shape, (shape, kw)
        np.testing.assert_allclose(got.numpy(), want[f"y{i}"], rtol=0, atol=1e-10,
                                   err_msg=f"{shape} {kw}")
    modes = {kw["mode"] for _, kw in INTERPOLATE_CASES}
    assert modes == {"nearest", "nearest-exact", "area", "linear", "bilinear", "bicubic",
                     "trilinear"}


def test_interpolate_has_gradients_and_upsample_module():
    for mode, shape in [("bicubic", (1, 2, 4, 5)), ("trilinear", (1, 1, 3, 2, 4)),
                        ("area", (1, 2, 6)), ("nearest-exact", (1, 1, 3, 3))]:
        x = ember.randn(*shape, dtype=ember.float64, requires_grad=True)
        size = [5] * (len(shape) - 2)
        assert ember.autograd.gradcheck(lambda t: F.interpolate(t, size=size, mode=mode), [x])
    x = ember.randn(1, 1, 8, 8, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda t: F.interpolate(t, size=(3, 5), mode="bilinear", antialias=True), [x])
    up = ember.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"  # as PyTorch prints it
    y = ember.rand(1, 3, 4, 4)
    assert up(y).equal(F.interpolate(y, scale_factor=2, mode="bilinear", align_corners=True))
    assert ember.nn.Upsample(size=(2, 3))(y).shape == (1, 3, 2, 3)
    assert copy.deepcopy(up)(y).equal(up(y))


def test_interpolate_refuses_what_pytorch_refuses():
    x = ember.rand(1, 1, 4, 4)
    with pytest.raises(ValueError, match="mode 'trilinear' needs a 5-d input"):
        F.interpolate(x, size=2, mode="trilinear")
    with pytest.raises(ValueError, match="align_corners only applies"):
        F.interpolate(x, size=2, mode="nearest", align_corners=True)
    with pytest.raises(ValueError, match="antialias applies to modes 'bilinear' and 'bicubic'"):
        F.interpolate(x, size=2, mode="area", antialias=True)
    with pytest.raises(ValueError, match="one value or one per spatial dim"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(x)
    with pytest.raises(TypeError, match="needs a floating tensor"):
        F.interpolate(ember.ones(1, 1, 2, 2, dtype=ember.int64), size=3, mode="bicubic")
    with pytest.raises(ValueError, match="unknown mode 'cubic'"):
        F.interpolate(x, size=2, mode="cubic")
    with pytest.raises(ValueError, match="3-d, 4-d or 5-d input"):
        F.interpolate(ember.rand(4, 4), size=2)


# ---- take, unfold, dtype queries and Tensor predicates ----------------------------------------

def test_take_take_along_dim_and_unfold_follow_pytorch():
    x = ember.arange(6).reshape(2, 3)
    assert ember.take(x, ember.tensor([[0, -1], [4, -6]])).tolist() == [[0, 5], [4, 0]]
    assert x.take(ember.tensor([1])).tolist() == [1]
    assert ember.take_along_dim(x, x.argmax(1, keepdim=True), dim=1).tolist() == [[2], [5]]
    assert x.take_along_dim(ember.tensor([5, 0])).tolist() == [5, 0]
    with pytest.raises(IndexError, match=r"\[take\] index 6 is out of range"):
        ember.take(x, ember.tensor([6]))
    w = ember.arange(7.0).unfold(0, 3, 2)
    assert w.tolist() == [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    # Elements that several windows read get the sum of their gradients.
    a = ember.arange(5.0, requires_grad=True)
    a.unfold(0, 2, 1).sum().backward()
    assert a.grad.tolist() == [1, 2, 2, 2, 1]


def test_dtype_queries_and_tensor_predicates_follow_pytorch():
    assert ember.promote_types(ember.int32, ember.float16) is ember.float16
    assert ember.promote_types(ember.bool, ember.int8) is ember.int8
    assert ember.can_cast(ember.int32, ember.float32) and not ember.can_cast(ember.float32, ember.int32)
    assert ember.result_type(ember.tensor(1.0, dtype=ember.float64),
                             ember.tensor([1], dtype=ember.int32)) is ember.float64
    assert ember.result_type(ember.tensor([1], dtype=ember.int8), 1000) is ember.int8
    assert ember.result_type(2, 3.5) is ember.float32
    assert ember.result_type(ember.tensor([1]), 1.0) is ember.float32
    assert [ember.zeros(1, dtype=d).is_signed() for d in (ember.uint8, ember.int8, ember.bool,
                                                          ember.float16)] == [False, True, False, True]
    assert not ember.is_nonzero(ember.tensor([0])) and ember.tensor([1.5]).is_nonzero()
    with pytest.raises(RuntimeError, match=r"ambiguous"):
        ember.is_nonzero(ember.tensor([1, 2]))
    assert ember.zeros(2, 3).is_same_size(ember.ones(2, 3))
    assert not ember.zeros(2, 3).is_same_size(ember.ones(3, 2))


def test_random_sampling_methods_draw_from_the_generator():
    g = ember.Generator().manual_seed(4)
    p = ember.full((20000,), 0.3)
    b = p.bernoulli(generator=g)
    assert b.dtype is ember.float32 and abs(b.mean().item() - 0.3) < 0.02
    g.manual_seed(4)
    assert p.bernoulli(generator=g).tolist() == b.tolist()
    x = ember.zeros(20000, dtype=ember.float64)
    assert x.bernoulli_(0.7) is x and x.dtype is ember.float64
    assert abs(x.mean().item() - 0.7) < 0.02 and set(x.unique().tolist()) == {0.0, 1.0}
    assert ember.tensor([0.0, 1.0, 0.0]).multinomial(5, replacement=True).tolist() == [1] * 5


def test_isin_bincount_unravel_index_and_argwhere_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.integers(-10, 10, size=(4, 25)).astype(np.float32) / 2
    t = rng.integers(-10, 10, size=12).astype(np.float32) / 2
    assert ember.isin(ember.tensor(x), ember.tensor(t)).numpy().tolist() == np.isin(x, t).tolist()
    assert (ember.isin(ember.tensor(x), ember.tensor(t), invert=True).numpy() == ~np.isin(x, t)).all()
    assert ember.isin(ember.tensor([1.0, 2.0]), 2).tolist() == [False, True]
    assert ember.isin(3, ember.tensor([1, 3])).item() is True
    assert not ember.isin(ember.tensor([math.nan]), ember.tensor([math.nan])).item()
    ints = rng.integers(0, 9, size=50)
    w = rng.random(50).astype(np.float32)
    assert ember.bincount(ember.tensor(ints)).tolist() == np.bincount(ints).tolist()
    assert ember.tensor(ints).bincount(minlength=12).tolist() == np.bincount(ints, minlength=12).tolist()
    got = ember.bincount(ember.tensor(ints), ember.tensor(w))
    assert got.dtype is ember.float32
    assert_close(got, ember.tensor(np.bincount(ints, w).astype(np.float32)), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="bincount.*non-negative"):
        ember.bincount(ember.tensor([1, -2]))
    flat = rng.integers(-24, 24, size=10)
    got = ember.unravel_index(ember.tensor(flat), (2, 3, 4))
    assert isinstance(got, tuple) and len(got) == 3
    want = np.unravel_index(flat % 24, (2, 3, 4))
    assert all(g.tolist() == w.tolist() for g, w in zip(got, want))
    with pytest.raises(IndexError, match="out of bounds"):
        ember.unravel_index(ember.tensor([24]), (2, 3, 4))
    m = rng.integers(0, 2, size=(3, 4))
    assert ember.argwhere(ember.tensor(m)).tolist() == np.argwhere(m).tolist()
    assert ember.tensor(m).argwhere().tolist() == np.argwhere(m).tolist()


def test_windows_logspace_and_scalar_tensor_match_numpy():
    # NumPy's windows are the symmetric ones (periodic=False).
    for name, ref in (("hann_window", np.hanning), ("hamming_window", np.hamming),
                      ("blackman_window", np.blackman), ("bartlett_window", np.bartlett)):
        got = getattr(ember, name)(9, periodic=False, dtype=ember.float64)
        assert_close(got, ember.tensor(ref(9)), atol=1e-12, rtol=0)
        periodic = getattr(ember, name)(8, dtype=ember.float64)
        assert_close(periodic, ember.tensor(ref(9)[:-1]), atol=1e-12, rtol=0)
    assert_close(ember.kaiser_window(9, periodic=False, beta=5.0, dtype=ember.float64),
                 ember.tensor(np.kaiser(9, 5.0)), atol=1e-12, rtol=0)
    h = ember.hann_window(4, requires_grad=True)
    assert h.dtype is ember.float32 and h.requires_grad
    with pytest.raises(TypeError, match="floating point"):
        ember.hann_window(4, dtype=ember.int64)
    assert_close(ember.logspace(-2, 2, 5, dtype=ember.float64), ember.tensor(np.logspace(-2, 2, 5)))
    assert_close(ember.logspace(0, 4, 5, base=2), ember.tensor([1.0, 2, 4, 8, 16]))
    s = ember.scalar_tensor(7, dtype=ember.int64)
    assert s.dim() == 0 and s.item() == 7 and s.dtype is ember.int64


def test_logdet_vdot_sgn_and_positive():
    a = np.array([[4.0, 1.0], [2.0, 3.0]])
    assert abs(ember.logdet(ember.tensor(a)).item() - math.log(np.linalg.det(a))) < 1e-5
    assert math.isnan(ember.tensor([[0.0, 1.0], [1.0, 0.0]]).logdet().item())
    assert ember.vdot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])).item() == 11.0
    x = ember.tensor([-1.5, 0.0, 2.0])
    assert ember.sgn(x).tolist() == [-1.0, 0.0, 1.0] and x.clone().sgn_().tolist() == [-1.0, 0.0, 1.0]
    assert ember.positive(x) is not None and (+x).tolist() == x.tolist()
    with pytest.raises(TypeError, match="positive.*bool"):
        +ember.tensor([True])


def test_trapezoid_cov_and_corrcoef_match_numpy():
    rng = np.random.default_rng(5)
    y = rng.standard_normal((3, 7))
    x = np.sort(rng.standard_normal(7))
    ey, ex = ember.tensor(y), ember.tensor(x)
    np.testing.assert_allclose(ember.trapezoid(ey, ex).numpy(), np.trapezoid(y, x), rtol=1e-12)
    np.testing.assert_allclose(ember.trapz(ey, dx=0.5).numpy(), np.trapezoid(y, dx=0.5), rtol=1e-12)
    np.testing.assert_allclose(ember.trapezoid(ey, dim=0).numpy(), np.trapezoid(y, axis=0), rtol=1e-12)
    running = np.cumsum(np.diff(x) * (y[:, 1:] + y[:, :-1]) / 2, axis=-1)
    np.testing.assert_allclose(ember.cumulative_trapezoid(ey, ex).numpy(), running, rtol=1e-12)
    np.testing.assert_allclose(ember.cumulative_trapezoid(ey, dx=2).numpy(),
                               np.cumsum(y[:, 1:] + y[:, :-1], axis=-1), rtol=1e-12)
    assert ember.trapezoid(ember.tensor([1, 2, 3])).dtype is ember.float32
    with pytest.raises(TypeError):
        ember.trapezoid(ey, ex, dx=1.0)  # PyTorch's overloads take one or the other
    with pytest.raises(ValueError, match=r"\[trapezoid\] a 1-d x needs one point"):
        ember.trapezoid(ey, ember.tensor([0.0, 1.0]))
    f = rng.integers(0, 4, size=7)
    a = rng.random(7)
    for correction in (0, 1, 2):
        np.testing.assert_allclose(ember.cov(ey, correction=correction).numpy(),
                                   np.cov(y, ddof=correction), rtol=1e-12)
    got = ember.cov(ey, fweights=ember.tensor(f), aweights=ember.tensor(a))
    np.testing.assert_allclose(got.numpy(), np.cov(y, fweights=f, aweights=a), rtol=1e-12)
    np.testing.assert_allclose(ey.cov(correction=0, aweights=ember.tensor(a)).numpy(),
                               np.cov(y, ddof=0, aweights=a), rtol=1e-12)
    np.testing.assert_allclose(ey.corrcoef().numpy(), np.corrcoef(y), rtol=1e-12)
    np.testing.assert_allclose(ember.corrcoef(ey[0]).item(), 1.0)
    with pytest.raises(TypeError, match=r"\[cov\] fweights must be integers"):
        ember.cov(ey, fweights=ember.tensor(a))


def test_scatter_into_views_and_combinations_follow_pytorch():
    import itertools

    x = np.arange(20.0).reshape(4, 5)
    ex = ember.tensor(x)
    src = -np.arange(8.0).reshape(4, 2)
    want = x.copy()
    want[:, 1::3] = src
    assert ember.slice_scatter(ex, ember.tensor(src), 1, 1, None, 3).tolist() == want.tolist()
    assert ex.slice_scatter(ember.tensor(src), dim=1, start=1, step=3).tolist() == want.tolist()
    want = x.copy()
    want[2] = 7
    assert ember.select_scatter(ex, ember.full((5,), 7.0, dtype=ember.float64), 0, 2).tolist() == want.tolist()
    want = x.copy()
    np.fill_diagonal(want[1:], [-1, -2, -3])
    assert ex.diagonal_scatter(ember.tensor([-1.0, -2.0, -3.0]), -1).tolist() == want.tolist()
    with pytest.raises(ValueError, match=r"\[slice_scatter\] src must have the shape"):
        ember.slice_scatter(ex, ember.tensor(src), 1, 0)
    leaf = ember.tensor(x, requires_grad=True)
    part = ember.tensor(src, requires_grad=True)
    (ember.slice_scatter(leaf, part, 1, 1, None, 3) * ember.tensor(x)).sum().backward()
    grad = x.copy()
    grad[:, 1::3] = 0
    assert leaf.grad.tolist() == grad.tolist()
    assert part.grad.tolist() == x[:, 1::3].tolist()
    v = [3, 1, 4, 1, 5]
    ev = ember.tensor(v)
    for r in (1, 2, 3):
        assert ember.combinations(ev, r).tolist() == [list(c) for c in itertools.combinations(v, r)]
        assert ember.combinations(ev, r, with_replacement=True).tolist() == [
            list(c) for c in itertools.combinations_with_replacement(v, r)]
    assert ember.combinations(ev, 0).shape == (0,)


def test_rsub_ldexp_adjoint_and_renorm_follow_pytorch():
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 3))
    ea = ember.tensor(a)
    np.testing.assert_allclose(ember.rsub(ea, 5, alpha=2).numpy(), 5 - 2 * a)
    np.testing.assert_allclose(ember.rsub(ea, ember.tensor(a * 3)).numpy(), 2 * a)
    e = np.array([3, -2, 0, 10])
    np.testing.assert_array_equal(ember.ldexp(ember.tensor([1.5, 1.5, 1.5, 1.5]), ember.tensor(e)).numpy(),
                                  np.ldexp(np.float32(1.5), e).astype(np.float32))
    ints = ember.tensor([1, 2])
    with pytest.raises(TypeError):
        ints.ldexp_(ember.tensor([1, 1]))  # the float result cannot go back into int64
    m = ember.tensor([1.0, 2.0])
    m.ldexp_(ember.tensor([2, 3]))
    assert m.tolist() == [4.0, 16.0]
    b = rng.standard_normal((2, 3, 4))
    assert ember.adjoint(ember.tensor(b)).tolist() == np.swapaxes(b, -1, -2).tolist()
    assert ember.tensor(b).adjoint().shape == (2, 4, 3)
    w = rng.standard_normal((4, 3)) * 3
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    want = np.where(norms > 1.5, w * 1.5 / (norms + 1e-7), w)
    np.testing.assert_allclose(ember.renorm(ember.tensor(w), 2, 0, 1.5).numpy(), want, rtol=1e-12)
    ew = ember.tensor(w)
    ew.renorm_(2, 0, 1.5)
    np.testing.assert_allclose(ew.numpy(), want, rtol=1e-12)


def test_frexp_histogram_put_and_index_put_match_numpy():
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.standard_normal(20) * 1e3, [0.0, -0.0, np.inf, 5e-324, 1.0, -0.5]])
    m, e = ember.frexp(ember.tensor(x))
    want_m, want_e = np.frexp(x)
    np.testing.assert_array_equal(m.numpy(), want_m)
    np.testing.assert_array_equal(e.numpy(), np.where(np.isfinite(x), want_e, 0))
    assert e.dtype is ember.int32 and ember.tensor(x).frexp().mantissa.dtype is ember.float64

    data = rng.standard_normal(300)
    w = rng.random(300)
    for kwargs in ({}, {"range": (-1.0, 2.0)}, {"density": True}):
        hist, edges = ember.histogram(ember.tensor(data), 9, **kwargs)
        want_h, want_edges = np.histogram(data, 9, **kwargs)
        np.testing.assert_allclose(hist.numpy(), want_h, rtol=1e-12)
        np.testing.assert_allclose(edges.numpy(), want_edges, rtol=1e-12)
    bins = np.array([-3.0, -1.0, 0.0, 0.5, 3.0])
    got = ember.tensor(data).histogram(ember.tensor(bins), weight=ember.tensor(w))
    np.testing.assert_allclose(got.hist.numpy(), np.histogram(data, bins, weights=w)[0], rtol=1e-12)
    np.testing.assert_array_equal(got.bin_edges.numpy(), bins)

    base = rng.standard_normal((3, 4))
    index = np.array([0, -1, 5, 5])
    src = rng.standard_normal(4)
    added = base.copy().ravel()
    np.add.at(added, index % base.size, src)
    np.testing.assert_allclose(
        ember.tensor(base).put(ember.tensor(index), ember.tensor(src), accumulate=True).numpy(),
        added.reshape(3, 4), rtol=1e-12)
    t = ember.tensor(base)
    t.put_(ember.tensor(index[:2]), ember.tensor(src[:2]))
    want = base.copy()
    np.put(want, index[:2], src[:2])
    np.testing.assert_array_equal(t.numpy(), want)

    rows, cols = np.array([0, 2, 0, 0]), np.array([1, 3, 1, 1])
    vals = rng.standard_normal(4)
    acc = base.copy()
    np.add.at(acc, (rows, cols), vals)
    got = ember.index_put(ember.tensor(base), (ember.tensor(rows), ember.tensor(cols)),
                          ember.tensor(vals), accumulate=True)
    np.testing.assert_allclose(got.numpy(), acc, rtol=1e-12)
    # None is a full slice: x[:, cols] += v.
    acc = base.copy()
    np.add.at(acc, (slice(None), cols), 1.0)
    t = ember.tensor(base)
    t.index_put_((None, ember.tensor(cols)), ember.tensor(1.0), True)
    np.testing.assert_allclose(t.numpy(), acc, rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[histogram\] bins must be > 0"):
        ember.histogram(ember.tensor(data), 0)
    with pytest.raises(IndexError, match=r"\[put\] index 12 is out of range"):
        ember.tensor(base).put(ember.tensor([12]), ember.tensor([1.0]))


def test_triangular_and_cholesky_solves_match_numpy():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((4, 3))
    for upper in (False, True):
        tri = np.triu(a) if upper else np.tril(a)
        got = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=upper)
        np.testing.assert_allclose(got.numpy(), np.linalg.solve(tri, b), rtol=1e-10)
        right = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b.T), upper=upper,
                                              left=False)
        np.testing.assert_allclose(right.numpy(), b.T @ np.linalg.inv(tri), rtol=1e-10)
        unit = tri - np.diag(np.diag(tri)) + np.eye(4)
        got = ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=upper,
                                            unitriangular=True)
        np.testing.assert_allclose(got.numpy(), np.linalg.solve(unit, b), rtol=1e-10)
    solution, coefficient = ember.triangular_solve(ember.tensor(b), ember.tensor(a), transpose=True)
    np.testing.assert_allclose(solution.numpy(), np.linalg.solve(np.triu(a).T, b), rtol=1e-10)
    np.testing.assert_array_equal(coefficient.numpy(), a)
    spd = a @ a.T + np.eye(4)
    factor = np.linalg.cholesky(spd)
    np.testing.assert_allclose(ember.cholesky_solve(ember.tensor(b), ember.tensor(factor)).numpy(),
                               np.linalg.solve(spd, b), rtol=1e-9)
    np.testing.assert_allclose(ember.tensor(factor.T).cholesky_inverse(upper=True).numpy(),
                               np.linalg.inv(spd), rtol=1e-9)


def test_gradient_vander_angle_and_fill_diagonal_match_numpy():
    rng = np.random.default_rng(10)
    y = rng.standard_normal((5, 6))
    x = np.sort(rng.random(6)) * 4
    for edge_order in (1, 2):
        got = ember.gradient(ember.tensor(y), spacing=(0.5, 2.0), edge_order=edge_order)
        want = np.gradient(y, 0.5, 2.0, edge_order=edge_order)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12)
        (at_x,) = ember.gradient(ember.tensor(y), spacing=[ember.tensor(x)], dim=1,
                                 edge_order=edge_order)
        np.testing.assert_allclose(at_x.numpy(), np.gradient(y, x, axis=1, edge_order=edge_order),
                                   rtol=1e-10)
    (one,) = ember.gradient(ember.tensor(y), spacing=3.0, dim=0)
    np.testing.assert_allclose(one.numpy(), np.gradient(y, 3.0, axis=0), rtol=1e-12)
    v = np.array([2, 3, -1, 5])
    np.testing.assert_array_equal(ember.vander(ember.tensor(v)).numpy(), np.vander(v))
    np.testing.assert_array_equal(ember.vander(ember.tensor(v), N=3, increasing=True).numpy(),
                                  np.vander(v, 3, increasing=True))
    a = np.array([-2.0, 0.0, 1.5])
    np.testing.assert_array_equal(ember.tensor(a).angle().numpy(), np.angle(a))
    t = ember.tensor(a)
    assert ember.equal(t.real, t) and ember.equal(ember.conj(t), t)
    assert not t.is_conj() and not ember.is_neg(t)
    with pytest.raises(NotImplementedError, match=r"\[imag\]"):
        t.imag
    m = np.zeros((7, 3))
    np.fill_diagonal(m, 4.0, wrap=True)
    e = ember.zeros(7, 3, dtype=ember.float64)
    e.fill_diagonal_(4.0, wrap=True)
    np.testing.assert_array_equal(e.numpy(), m)


def test_linalg_extras_and_old_names_follow_numpy():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 6)) + 4 * np.eye(6)
    np.testing.assert_allclose(ember.linalg.tensorinv(ember.tensor(a.reshape(2, 3, 6)), ind=2).numpy(),
                               np.linalg.tensorinv(a.reshape(2, 3, 6), ind=2), rtol=1e-10)
    b = rng.standard_normal((2, 3))
    np.testing.assert_allclose(
        ember.linalg.tensorsolve(ember.tensor(a.reshape(2, 3, 2, 3)), ember.tensor(b)).numpy(),
        np.linalg.tensorsolve(a.reshape(2, 3, 2, 3), b), rtol=1e-10)
    m = rng.standard_normal((5, 3))
    u, s, v = ember.svd(ember.tensor(m))
    assert u.shape == (5, 3) and v.shape == (3, 3)
    np.testing.assert_allclose((u.numpy() * s.numpy()) @ v.numpy().T, m, rtol=1e-10, atol=1e-12)
    full = ember.tensor(m).svd(some=False)
    assert full.U.shape == (5, 5)
    q, r = ember.qr(ember.tensor(m))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), m, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ember.pinverse(ember.tensor(m)).numpy(), np.linalg.pinv(m),
                               rtol=1e-10, atol=1e-12)
    spd = a @ a.T
    np.testing.assert_allclose(ember.cholesky(ember.tensor(spd)).numpy(), np.linalg.cholesky(spd),
                               rtol=1e-10)
    mats = [rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal((2, 5))]
    np.testing.assert_allclose(ember.chain_matmul(*map(ember.tensor, mats)).numpy(),
                               mats[0] @ mats[1] @ mats[2], rtol=1e-12)
    x = ember.arange(24.0).view(2, 3, 4)
    np.testing.assert_array_equal(x.sum_to_size(3, 1).numpy(),
                                  np.arange(24.0).reshape(2, 3, 4).sum((0, 2)).reshape(3, 1))
    assert [p.shape for p in x.split_with_sizes([1, 2], 1)] == [(2, 1, 4), (2, 2, 4)]
    assert len(ember.unsafe_chunk(x, 2, 2)) == 2
    assert ember.get_float32_matmul_precision() == "highest"
    try:
        ember.set_float32_matmul_precision("high")
        assert ember.get_float32_matmul_precision() == "high"
        assert ember.backends.cuda.matmul.allow_tf32
    finally:
        ember.set_float32_matmul_precision("highest")
    assert not ember.backends.cuda.matmul.allow_tf32
    with pytest.raises(ValueError, match="set_float32_matmul_precision"):
        ember.set_float32_matmul_precision("low")


def test_in_place_draws_and_random_():
    g = ember.Generator()
    g.manual_seed(1)
    e = ember.empty(20000, dtype=ember.float64).exponential_(4.0, generator=g)
    assert abs(e.mean().item() - 0.25) < 0.01
    r = ember.empty(1000, dtype=ember.int64).random_(10)
    assert r.min().item() >= 0 and r.max().item() == 9
    r.random_(5, 8)
    assert set(r.tolist()) == {5, 6, 7}
    assert ember.empty(100).geometric_(0.5).min().item() >= 1
    assert ember.empty(100).cauchy_().isfinite().all()
    assert (ember.empty(100).log_normal_() > 0).all()


def test_multilabel_margin_loss_as_pytorch_documents_it():
    x = ember.tensor([[0.1, 0.2, 0.4, 0.8]])
    y = ember.tensor([[3, 0, -1, 1]])
    assert abs(ember.nn.functional.multilabel_margin_loss(x, y).item() - 0.85) < 1e-6
    assert abs(ember.nn.MultiLabelMarginLoss(reduction="sum")(x, y).item() - 0.85) < 1e-6


def test_index_reduce_and_mvlgamma():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    src = ember.tensor([[5.0, 1.0], [2.0, 8.0], [0.5, 3.0]])
    idx = ember.tensor([1, 0, 1])
    np.testing.assert_array_equal(x.index_reduce(0, idx, src, "amax").numpy(),
                                  [[2.0, 8.0], [5.0, 4.0]])
    np.testing.assert_array_equal(x.index_reduce(0, idx, src, "prod", include_self=False).numpy(),
                                  [[2.0, 8.0], [2.5, 3.0]])
    y = x.clone()
    y.index_reduce_(0, idx, src, "mean")
    np.testing.assert_allclose(y.numpy(), [[(1.0 + 2.0) / 2, (2.0 + 8.0) / 2],
                                           [(3.0 + 5.0 + 0.5) / 3, (4.0 + 1.0 + 3.0) / 3]])
    v = [1.5, 2.0, 7.25]
    want = [sum(math.lgamma(t - j / 2) for j in range(3)) + 3 * 2 / 4 * math.log(math.pi) for t in v]
    np.testing.assert_allclose(ember.mvlgamma(ember.tensor(v, dtype=ember.float64), 3).numpy(), want,
                               rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[mvlgamma\] all elements must be greater"):
        ember.tensor(v).mvlgamma(5)
