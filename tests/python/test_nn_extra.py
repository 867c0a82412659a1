"""torch.nn's functional forms and modules beyond the 2-d layers of test_nn.py, against NumPy
float64 loops, gradcheck, and the errors PyTorch raises."""

import itertools

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import assert_close


def f64(a, grad=False):
    t = ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64)
    return t.requires_grad_(True) if grad else t


def gradcheck(fn, *inputs):
    assert ember.autograd.gradcheck(fn, tuple(inputs))


# ---- unfold and fold ----------------------------------------------------------------------------

def np_unfold(x, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, c, h, w = x.shape
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for b, ch, a, e, i, j in itertools.product(range(n), range(c), range(k[0]), range(k[1]),
                                               range(oh), range(ow)):
        y, xx = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + e * d[1]
        if 0 <= y < h and 0 <= xx < w:
            out[b, (ch * k[0] + a) * k[1] + e, i * ow + j] = x[b, ch, y, xx]
    return out


def np_fold(cols, size, k, d=(1, 1), p=(0, 0), s=(1, 1)):
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    h, w = size
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, h, w))
    for b, ch, a, e, i, j in itertools.product(range(n), range(c), range(k[0]), range(k[1]),
                                               range(oh), range(ow)):
        y, xx = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + e * d[1]
        if 0 <= y < h and 0 <= xx < w:
            out[b, ch, y, xx] += cols[b, (ch * k[0] + a) * k[1] + e, i * ow + j]
    return out


@pytest.mark.parametrize("k,d,p,s", [((2, 2), (1, 1), (0, 0), (1, 1)),
                                     ((3, 2), (2, 1), (1, 2), (2, 1)),
                                     ((1, 3), (1, 2), (0, 1), (3, 2))])
def test_unfold_and_fold_match_numpy_loops(rng, k, d, p, s):
    x = rng.standard_normal((2, 3, 7, 6))
    cols = F.unfold(f64(x), k, dilation=d, padding=p, stride=s)
    want = np_unfold(x, k, d, p, s)
    assert_close(cols, want, rtol=0, atol=0)
    c = rng.standard_normal(want.shape)
    assert_close(F.fold(f64(c), (7, 6), k, dilation=d, padding=p, stride=s), np_fold(c, (7, 6), k, d, p, s),
                 rtol=1e-12, atol=1e-12)
    # The modules are the functional forms with fixed sizes.
    assert_close(nn.Unfold(k, dilation=d, padding=p, stride=s)(f64(x)), want, rtol=0, atol=0)
    assert_close(nn.Fold((7, 6), k, d, p, s)(f64(c)), np_fold(c, (7, 6), k, d, p, s), rtol=1e-12, atol=1e-12)


def test_unfold_and_fold_gradcheck_and_unbatched(rng):
    x = f64(rng.standard_normal((2, 2, 5, 4)), grad=True)
    gradcheck(lambda t: F.unfold(t, (2, 3), dilation=(2, 1), padding=1, stride=(2, 1)), x)
    c = f64(rng.standard_normal((2, 8, 10)), grad=True)  # 5 x 2 blocks
    gradcheck(lambda t: F.fold(t, (4, 5), 2, padding=(1, 0), stride=(1, 2)), c)
    assert F.unfold(f64(np.ones((3, 4, 4))), 2).shape == (12, 9)
    assert F.fold(f64(np.ones((12, 9))), 4, 2).shape == (3, 4, 4)


def test_unfold_fold_module_attributes_and_repr():
    u = nn.Unfold(kernel_size=(2, 3), stride=2)
    assert u.kernel_size == (2, 3) and u.stride == (2, 2) and u.padding == (0, 0)
    assert "kernel_size=(2, 3), dilation=1, padding=0, stride=2" in repr(u)
    f = nn.Fold(output_size=4, kernel_size=2)
    assert f.output_size == (4, 4)
    assert "output_size=4, kernel_size=2" in repr(f)


def test_unfold_fold_errors():
    x = f64(np.ones((1, 2, 4, 4)))
    with pytest.raises(ValueError, match=r"\[unfold\]"):
        F.unfold(f64(np.ones((4, 4))), 2)
    with pytest.raises(ValueError, match="kernel_size"):
        F.unfold(x, 0)
    with pytest.raises(ValueError, match="stride"):
        F.unfold(x, 2, stride=0)
    with pytest.raises(ValueError, match="no sliding block fits"):
        F.unfold(x, 5)
    with pytest.raises(RuntimeError):  # PyTorch's error type is RuntimeError, which these also are
        F.unfold(x, 2, dilation=0)
    with pytest.raises(ValueError, match="multiple of the product of kernel_size"):
        F.fold(f64(np.ones((1, 7, 9))), 4, 2)
    with pytest.raises(ValueError, match="number of sliding blocks"):
        F.fold(f64(np.ones((1, 8, 8))), 4, 2)
    with pytest.raises(TypeError):
        F.unfold(ember.ones(1, 1, 3, 3, dtype=ember.int64), 2)


# ---- conv3d ---------------------------------------------------------------------------------------

def np_conv3d(x, w, b, s, p, d, groups):
    n, c, D, H, W = x.shape
    o, cg, kd, kh, kw = w.shape
    out = [(size + 2 * p[i] - d[i] * (k - 1) - 1) // s[i] + 1
           for i, (size, k) in enumerate(zip((D, H, W), (kd, kh, kw)))]
    xp = np.zeros((n, c, D + 2 * p[0], H + 2 * p[1], W + 2 * p[2]))
    xp[:, :, p[0]:p[0] + D, p[1]:p[1] + H, p[2]:p[2] + W] = x
    y = np.zeros((n, o, *out))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for i, j, l in itertools.product(*(range(v) for v in out)):
            patch = xp[:, g * cg:(g + 1) * cg,
                       i * s[0]:i * s[0] + d[0] * (kd - 1) + 1:d[0],
                       j * s[1]:j * s[1] + d[1] * (kh - 1) + 1:d[1],
                       l * s[2]:l * s[2] + d[2] * (kw - 1) + 1:d[2]]
            y[:, oc, i, j, l] = (patch * w[oc]).sum(axis=(1, 2, 3, 4)) + (b[oc] if b is not None else 0)
    return y


def test_conv3d_matches_numpy_and_gradcheck(rng):
    x = rng.standard_normal((2, 4, 5, 4, 6))
    w = rng.standard_normal((6, 2, 3, 2, 2))
    b = rng.standard_normal(6)
    got = F.conv3d(f64(x), f64(w), f64(b), stride=(2, 1, 2), padding=(1, 1, 0), dilation=(1, 2, 1), groups=2)
    assert_close(got, np_conv3d(x, w, b, (2, 1, 2), (1, 1, 0), (1, 2, 1), 2), rtol=1e-12, atol=1e-12)
    # padding='same' keeps the size (stride 1); 'valid' is no padding.
    w3 = rng.standard_normal((3, 4, 3, 3, 1))
    assert F.conv3d(f64(x), f64(w3), padding="same").shape == (2, 3, 5, 4, 6)
    assert F.conv3d(f64(x), f64(w3), padding="valid").shape == (2, 3, 3, 2, 6)
    gradcheck(lambda a, c, e: F.conv3d(a, c, e, stride=2, padding=1),
              f64(rng.standard_normal((1, 2, 3, 4, 3)), True), f64(rng.standard_normal((2, 2, 2, 2, 2)), True),
              f64(rng.standard_normal(2), True))


def test_conv3d_module():
    m = nn.Conv3d(4, 6, (3, 2, 2), stride=(2, 1, 2), padding=1, groups=2, dtype=ember.float64)
    assert m.weight.shape == (6, 2, 3, 2, 2) and m.bias.shape == (6,)
    assert m.kernel_size == (3, 2, 2) and m.stride == (2, 1, 2) and m.padding == (1, 1, 1)
    # PyTorch's default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 2 * 3 * 2 * 2.
    bound = 1 / np.sqrt(24)
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    x = np.random.default_rng(3).standard_normal((2, 4, 5, 4, 6))
    want = np_conv3d(x, m.weight.detach().numpy(), m.bias.detach().numpy(), (2, 1, 2), (1, 1, 1), (1, 1, 1), 2)
    assert_close(m(f64(x)), want, rtol=1e-12, atol=1e-12)
    assert nn.Conv3d(2, 2, 3, padding="same")(ember.ones(1, 2, 4, 4, 4)).shape == (1, 2, 4, 4, 4)
    assert "kernel_size=(3, 2, 2), stride=(2, 1, 2)" in repr(m)


def test_conv3d_errors():
    x, w = ember.ones(1, 2, 4, 4, 4), ember.ones(3, 2, 2, 2, 2)
    with pytest.raises(ValueError, match=r"\[conv3d\].*5-d"):
        F.conv3d(ember.ones(4, 4, 4), w)
    with pytest.raises(ValueError, match="channels"):
        F.conv3d(x, ember.ones(3, 1, 2, 2, 2))
    with pytest.raises(ValueError, match="too small"):
        F.conv3d(x, ember.ones(3, 2, 5, 2, 2))
    with pytest.raises(ValueError, match="strided"):
        F.conv3d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="padding_mode must be"):
        nn.Conv3d(2, 2, 3, padding_mode="constant")


# ---- 3-d pooling ----------------------------------------------------------------------------------

def np_pool3d(x, k, s, p, ceil_mode=False, count_include_pad=True, divisor_override=None, dilation=(1, 1, 1)):
    """max (with PyTorch's flat indices) and average over 3-d windows, as float64 loops."""
    n, c = x.shape[:2]
    ins = x.shape[2:]

    def out_size(size, kk, ss, pp, dd):
        num = size + 2 * pp - dd * (kk - 1) - 1 + (ss - 1 if ceil_mode else 0)
        o = num // ss + 1
        if ceil_mode and (o - 1) * ss >= size + pp:
            o -= 1
        return o

    outs = [out_size(ins[i], k[i], s[i], p[i], dilation[i]) for i in range(3)]
    mx, idx, avg = (np.zeros((n, c, *outs)) for _ in range(3))
    for b, ch, *o in itertools.product(range(n), range(c), *(range(v) for v in outs)):
        taps = [[o[i] * s[i] - p[i] + t * dilation[i] for t in range(k[i])] for i in range(3)]
        best, at, total = -np.inf, -1, 0.0
        for dd, hh, ww in itertools.product(*taps):
            if 0 <= dd < ins[0] and 0 <= hh < ins[1] and 0 <= ww < ins[2]:
                v = x[b, ch, dd, hh, ww]
                total += v
                if v > best:
                    best, at = v, (dd * ins[1] + hh) * ins[2] + ww
        pool, real = 1, 1
        for i in range(3):
            start = o[i] * s[i] - p[i]
            end = min(start + k[i], ins[i] + p[i])
            pool *= end - start
            real *= min(end, ins[i]) - max(start, 0)
        mx[(b, ch, *o)], idx[(b, ch, *o)] = best, at
        avg[(b, ch, *o)] = total / (divisor_override or (pool if count_include_pad else real))
    return mx, idx, avg


@pytest.mark.parametrize("k,s,p,ceil", [((2, 2, 2), (2, 2, 2), (0, 0, 0), False),
                                        ((3, 2, 3), (2, 1, 2), (1, 1, 1), True),
                                        ((2, 3, 2), (1, 2, 3), (1, 0, 1), False)])
def test_pool3d_match_numpy_loops(rng, k, s, p, ceil):
    x = rng.standard_normal((2, 3, 5, 6, 7))
    mx, idx, avg = np_pool3d(x, k, s, p, ceil_mode=ceil)
    y, i = F.max_pool3d(f64(x), k, s, p, ceil_mode=ceil, return_indices=True)
    assert_close(y, mx, rtol=0, atol=0)
    assert_close(i.to(ember.float64), idx, rtol=0, atol=0)
    assert i.dtype == ember.int64
    assert_close(F.avg_pool3d(f64(x), k, s, p, ceil_mode=ceil), avg, rtol=1e-12, atol=1e-12)
    _, _, avg_ex = np_pool3d(x, k, s, p, ceil_mode=ceil, count_include_pad=False)
    assert_close(F.avg_pool3d(f64(x), k, s, p, ceil_mode=ceil, count_include_pad=False), avg_ex,
                 rtol=1e-12, atol=1e-12)
    _, _, avg_div = np_pool3d(x, k, s, p, ceil_mode=ceil, divisor_override=7)
    assert_close(F.avg_pool3d(f64(x), k, s, p, ceil_mode=ceil, divisor_override=7), avg_div, rtol=1e-12, atol=1e-12)
    # The modules are the functional forms.
    assert_close(nn.MaxPool3d(k, s, p, ceil_mode=ceil)(f64(x)), mx, rtol=0, atol=0)
    assert_close(nn.AvgPool3d(k, s, p, ceil_mode=ceil, count_include_pad=False)(f64(x)), avg_ex,
                 rtol=1e-12, atol=1e-12)


def test_max_pool3d_dilation_and_unbatched(rng):
    x = rng.standard_normal((2, 5, 6, 5))
    mx, idx, _ = np_pool3d(x[None], (2, 2, 2), (1, 2, 1), (1, 0, 1), dilation=(2, 1, 2))
    y, i = F.max_pool3d(f64(x), 2, (1, 2, 1), (1, 0, 1), dilation=(2, 1, 2), return_indices=True)
    assert_close(y, mx[0], rtol=0, atol=0)
    assert_close(i.to(ember.float64), idx[0], rtol=0, atol=0)


def np_adaptive(x, out, reduce):
    ins = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for o in itertools.product(*(range(v) for v in out)):
        sl = tuple(slice(o[i] * ins[i] // out[i], -(-(o[i] + 1) * ins[i] // out[i])) for i in range(3))
        y[(..., *o)] = reduce(x[(..., *sl)], axis=(-3, -2, -1))
    return y


def test_adaptive_pool3d_match_numpy(rng):
    x = rng.standard_normal((2, 3, 5, 7, 4))
    assert_close(F.adaptive_avg_pool3d(f64(x), (2, 3, 3)), np_adaptive(x, (2, 3, 3), np.mean), rtol=1e-12, atol=1e-12)
    assert_close(F.adaptive_max_pool3d(f64(x), (3, 2, 4)), np_adaptive(x, (3, 2, 4), np.max), rtol=0, atol=0)
    assert_close(nn.AdaptiveAvgPool3d(2)(f64(x)), np_adaptive(x, (2, 2, 2), np.mean), rtol=1e-12, atol=1e-12)
    assert_close(nn.AdaptiveMaxPool3d((1, 7, 2))(f64(x)),
                 np_adaptive(x, (1, 7, 2), np.max), rtol=0, atol=0)
    # None keeps that dim's size.
    assert F.adaptive_avg_pool3d(f64(x), (None, 2, None)).shape == (2, 3, 5, 2, 4)


def np_adaptive_argmax(x, out):
    """Adaptive max pooling over x's trailing len(out) dims with the flat index of each window's
    first maximum in row-major order (PyTorch's return_indices)."""
    k = len(out)
    ins = x.shape[-k:]
    y = np.zeros(x.shape[:-k] + tuple(out))
    idx = np.zeros(x.shape[:-k] + tuple(out), dtype=np.int64)
    for o in itertools.product(*(range(v) for v in out)):
        lo = [o[i] * ins[i] // out[i] for i in range(k)]
        hi = [-(-(o[i] + 1) * ins[i] // out[i]) for i in range(k)]
        win = x[(..., *(slice(a, b) for a, b in zip(lo, hi)))]
        flat = win.reshape(win.shape[:-k] + (-1,))
        at = np.argmax(flat, axis=-1)  # the first maximum, row-major
        pos = np.unravel_index(at, tuple(b - a for a, b in zip(lo, hi)))
        y[(..., *o)] = np.max(flat, axis=-1)
        idx[(..., *o)] = np.ravel_multi_index(tuple(p + a for p, a in zip(pos, lo)), ins)
    return y, idx


@pytest.mark.parametrize("dims,shape,out", [
    (1, (2, 3, 9), (4,)),
    (2, (2, 3, 7, 5), (3, 2)),
    (2, (3, 6, 6), (4, 4)),
    (3, (1, 2, 5, 4, 6), (2, 3, 4)),
])
def test_adaptive_max_pool_return_indices_match_numpy(rng, dims, shape, out):
    # Small integers make ties common, so the first-maximum rule is exercised.
    x = rng.integers(0, 4, size=shape).astype(np.float64)
    want_y, want_i = np_adaptive_argmax(x, out)
    fn = getattr(F, f"adaptive_max_pool{dims}d")
    size = out[0] if dims == 1 else out
    y, i = fn(f64(x), size, return_indices=True)
    assert i.dtype == ember.int64
    assert_close(y, want_y, rtol=0, atol=0)
    np.testing.assert_array_equal(i.numpy(), want_i)
    layer = getattr(nn, f"AdaptiveMaxPool{dims}d")(size, return_indices=True)
    ly, li = layer(f64(x))
    assert_close(ly, want_y, rtol=0, atol=0)
    np.testing.assert_array_equal(li.numpy(), want_i)
    # Without return_indices the layer returns the tensor alone.
    assert isinstance(getattr(nn, f"AdaptiveMaxPool{dims}d")(size)(f64(x)), ember.Tensor)
    # The indices feed max_unpool-style scatters: every value sits at its index.
    flat = x.reshape(x.shape[:len(x.shape) - dims] + (-1,))
    np.testing.assert_array_equal(np.take_along_axis(flat, want_i.reshape(want_i.shape[:len(x.shape) - dims] + (-1,)), -1),
                                  y.numpy().reshape(flat.shape[:-1] + (-1,)))


def test_pool3d_gradcheck(rng):
    x = f64(rng.standard_normal((1, 2, 4, 5, 3)), True)
    gradcheck(lambda t: F.max_pool3d(t, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0), ceil_mode=True), x)
    gradcheck(lambda t: F.avg_pool3d(t, 2, stride=1, padding=1, count_include_pad=False), x)
    gradcheck(lambda t: F.adaptive_avg_pool3d(t, (3, 2, 2)), x)
    gradcheck(lambda t: F.adaptive_max_pool3d(t, (3, 2, 2)), x)


def test_pool3d_errors():
    x = ember.ones(1, 1, 4, 4, 4)
    with pytest.raises(ValueError, match=r"\[max_pool3d\]"):
        F.max_pool3d(ember.ones(4, 4, 4), 2)
    with pytest.raises(ValueError, match="padding should be at least 0 and at most half"):
        F.avg_pool3d(x, 2, padding=2)
    with pytest.raises(ValueError, match="too small"):
        F.max_pool3d(x, 5)
    with pytest.raises(ValueError, match="kernel_size must be positive"):
        F.max_pool3d(x, (2, 0, 2))
    with pytest.raises(ValueError, match="divisor_override"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(TypeError):
        F.max_pool3d(ember.ones(1, 1, 4, 4, 4, dtype=ember.int64), 2)


# ---- embedding_bag --------------------------------------------------------------------------------

def np_embedding_bag(w, bags, mode, psw=None, padding_idx=None):
    """bags: lists of positions into the flat (index, weight) pairs given as [(idx, weight)]."""
    out = np.zeros((len(bags), w.shape[1]))
    for b, entries in enumerate(bags):
        rows = [(w[i] * (1.0 if s is None else s)) for i, s in entries if i != padding_idx]
        if not rows:
            continue
        out[b] = {"sum": np.sum, "mean": np.mean, "max": np.max}[mode](np.stack(rows), axis=0)
    return out


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_1d_with_offsets_matches_numpy(rng, mode):
    w = rng.standard_normal((6, 3))
    idx = [1, 4, 4, 0, 5, 2, 3, 1]
    offsets = [0, 3, 3, 6]  # an empty bag
    bags = [[(i, None) for i in idx[a:b]] for a, b in zip(offsets, offsets[1:] + [len(idx)])]
    got = F.embedding_bag(ember.tensor(idx), f64(w), ember.tensor(offsets), mode=mode)
    assert_close(got, np_embedding_bag(w, bags, mode), rtol=1e-12, atol=1e-12)
    # include_last_offset: the last offset closes the last bag.
    got = F.embedding_bag(ember.tensor(idx), f64(w), ember.tensor(offsets + [8]), mode=mode,
                          include_last_offset=True)
    assert_close(got, np_embedding_bag(w, bags, mode), rtol=1e-12, atol=1e-12)
    # padding_idx 4 is left out of every bag (the mean counts only what is kept).
    bags_pad = [[(i, None) for i in idx[a:b]] for a, b in zip(offsets, offsets[1:] + [len(idx)])]
    got = F.embedding_bag(ember.tensor(idx, dtype=ember.int32), f64(w), ember.tensor(offsets, dtype=ember.int32),
                          mode=mode, padding_idx=4)
    assert_close(got, np_embedding_bag(w, bags_pad, mode, padding_idx=4), rtol=1e-12, atol=1e-12)
    # The module.
    m = nn.EmbeddingBag(6, 3, mode=mode, dtype=ember.float64)
    with ember.no_grad():
        m.weight.copy_(f64(w))
    assert_close(m(ember.tensor(idx), ember.tensor(offsets)), np_embedding_bag(w, bags, mode), rtol=1e-12, atol=1e-12)


def test_embedding_bag_2d_per_sample_weights_and_gradients(rng):
    w = rng.standard_normal((5, 4))
    idx = np.array([[0, 2, 2], [4, 1, 3]])
    psw = rng.standard_normal(idx.shape)
    bags = [[(i, s) for i, s in zip(r, sr)] for r, sr in zip(idx, psw)]
    got = F.embedding_bag(ember.tensor(idx.tolist()), f64(w), mode="sum", per_sample_weights=f64(psw))
    assert_close(got, np_embedding_bag(w, bags, "sum"), rtol=1e-12, atol=1e-12)
    # The weight's gradient: each looked-up row gets the sum of its bags' output gradients.
    wt = f64(w, True)
    F.embedding_bag(ember.tensor(idx.tolist()), wt, mode="mean").sum().backward()
    want = np.zeros_like(w)
    for r in idx:
        for i in r:
            want[i] += 1 / 3
    assert_close(wt.grad, want, rtol=1e-12, atol=1e-12)
    for mode in ("sum", "mean", "max"):
        gradcheck(lambda t: F.embedding_bag(ember.tensor([3, 1, 0, 3, 2]), t, ember.tensor([0, 2]), mode=mode),
                  f64(w, True))
    gradcheck(lambda t, s: F.embedding_bag(ember.tensor([3, 1, 0, 3, 2]), t, ember.tensor([0, 2]), mode="sum",
                                           per_sample_weights=s), f64(w, True), f64(rng.standard_normal(5), True))


def test_embedding_bag_module_and_errors():
    m = nn.EmbeddingBag(10, 3, mode="max", padding_idx=2)
    assert m.weight.shape == (10, 3) and m.mode == "max" and m.padding_idx == 2
    assert np.all(m.weight.detach().numpy()[2] == 0)
    assert "10, 3, mode='max', padding_idx=2" in repr(m)
    assert m(ember.tensor([[1, 2], [3, 4]])).shape == (2, 3)
    w = ember.ones(4, 2)
    with pytest.raises(IndexError, match="out of range"):
        F.embedding_bag(ember.tensor([1, 4]), w, ember.tensor([0]))
    with pytest.raises(IndexError):
        F.embedding_bag(ember.tensor([1, -1]), w, ember.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be None"):
        F.embedding_bag(ember.tensor([[1, 2]]), w, ember.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1-d tensor"):
        F.embedding_bag(ember.tensor([1, 2]), w)
    with pytest.raises(ValueError, match=r"offsets\[0\] has to be 0"):
        F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([1]))
    with pytest.raises(ValueError, match="mode has to be one of"):
        F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), mode="min")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(ember.tensor([1, 2]), w, ember.tensor([0]), per_sample_weights=ember.ones(2))
    with pytest.raises(ValueError, match="mode has to be one of"):
        nn.EmbeddingBag(4, 2, mode="min")
    with pytest.raises(NotImplementedError):
        nn.EmbeddingBag(4, 2, sparse=True)


# ---- gaussian_nll_loss ----------------------------------------------------------------------------

def np_gaussian_nll(x, t, v, full=False, eps=1e-6, reduction="mean"):
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x - t) ** 2 / v)
    if full:
        loss += 0.5 * np.log(2 * np.pi)
    return {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction](loss)


@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_nll_loss_matches_numpy(rng, var_shape, reduction):
    x, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    v = rng.uniform(0.1, 2.0, var_shape)
    vb = v[:, None] if len(var_shape) == 1 else v
    for full in (False, True):
        got = F.gaussian_nll_loss(f64(x), f64(t), f64(v), full=full, reduction=reduction)
        assert_close(got, np_gaussian_nll(x, t, vb, full, reduction=reduction), rtol=1e-12, atol=1e-12)
        m = nn.GaussianNLLLoss(full=full, reduction=reduction)
        assert_close(m(f64(x), f64(t), f64(v)), np_gaussian_nll(x, t, vb, full, reduction=reduction),
                     rtol=1e-12, atol=1e-12)
    gradcheck(lambda a, b, c: F.gaussian_nll_loss(a, b, c, reduction=reduction),
              f64(x, True), f64(t, True), f64(v, True))


def test_gaussian_nll_loss_takes_a_number_and_a_size_one_dim_anywhere(rng):
    x, t = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 3, 5))
    assert_close(F.gaussian_nll_loss(f64(x), f64(t), 0.7), np_gaussian_nll(x, t, np.full(x.shape, 0.7)),
                 rtol=1e-12, atol=1e-12)
    assert_close(nn.GaussianNLLLoss(reduction="sum")(f64(x), f64(t), 0.7),
                 np_gaussian_nll(x, t, np.full(x.shape, 0.7), reduction="sum"), rtol=1e-12, atol=1e-12)
    v = rng.uniform(0.5, 2.0, (4, 1, 5))  # one mismatched dim of size 1, not the last
    assert_close(F.gaussian_nll_loss(f64(x), f64(t), f64(v), reduction="none"),
                 np_gaussian_nll(x, t, v, reduction="none"), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(f64(x), f64(t), f64(np.ones((4, 1, 1))))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(f64(x), f64(t), -1.0)


def test_gaussian_nll_loss_eps_and_errors():
    v = f64([0.0, 1.0], True)
    loss = F.gaussian_nll_loss(f64([1.0, 1.0]), f64([0.0, 0.0]), v, eps=0.5, reduction="sum")
    assert_close(loss, np_gaussian_nll(np.ones(2), np.zeros(2), np.array([0.0, 1.0]), eps=0.5, reduction="sum"))
    loss.backward()  # d/dv of the clamped value, as if unclamped: 0.5 / 0.5 - 0.5 / 0.25
    assert_close(v.grad, [0.5 / 0.5 - 0.5 * 1 / 0.25, 0.5 - 0.5], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(ember.ones(4, 3), ember.ones(4, 3), ember.ones(3))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(ember.ones(2), ember.ones(2), ember.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="reduction"):
        F.gaussian_nll_loss(ember.ones(2), ember.ones(2), ember.ones(2), reduction="avg")
    with pytest.raises(TypeError):
        nn.GaussianNLLLoss(True)  # keyword-only, as PyTorch's


# ---- local_response_norm --------------------------------------------------------------------------

def np_lrn(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = x ** 2
    div = np.zeros_like(x)
    for ch in range(c):
        lo, hi = max(ch - size // 2, 0), min(ch + (size - 1) // 2, c - 1)
        div[:, ch] = sq[:, lo:hi + 1].sum(axis=1) / size
    return x / (k + alpha * div) ** beta


@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 6, 3, 4), (1, 4, 2, 3, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm_matches_numpy(rng, shape, size):
    x = rng.standard_normal(shape)
    got = F.local_response_norm(f64(x), size, alpha=0.2, beta=0.6, k=1.5)
    assert_close(got, np_lrn(x, size, 0.2, 0.6, 1.5), rtol=1e-12, atol=1e-12)
    assert_close(nn.LocalResponseNorm(size, 0.2, 0.6, 1.5)(f64(x)), np_lrn(x, size, 0.2, 0.6, 1.5),
                 rtol=1e-12, atol=1e-12)


def test_local_response_norm_gradcheck_and_errors(rng):
    gradcheck(lambda t: F.local_response_norm(t, 3, alpha=0.5, k=2.0), f64(rng.standard_normal((2, 4, 3)), True))
    with pytest.raises(ValueError, match="3-d or higher"):
        F.local_response_norm(ember.ones(2, 3), 2)
    assert "2, alpha=0.0001, beta=0.75, k=1" in repr(nn.LocalResponseNorm(2))


# ---- weight_norm and spectral_norm (torch.nn.utils) ----------------------------------------------

def _linear64(rng, i, o):
    m = nn.Linear(i, o).double()
    with ember.no_grad():
        m.weight.copy_(f64(rng.standard_normal((o, i))))
        m.bias.copy_(f64(rng.standard_normal(o)))
    return m


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_its_formula_and_pytorchs_names(rng, dim):
    m = _linear64(rng, 3, 4)
    w = m.weight.detach().numpy().copy()
    assert nn.utils.weight_norm(m, dim=dim) is m
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_g", "weight_v"]
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    axes = None if dim is None else tuple(d for d in range(2) if d != dim)
    g = np.sqrt((w * w).sum(axis=axes, keepdims=dim is not None))
    assert_close(m.weight_g, g, rtol=1e-14, atol=0)
    assert not isinstance(m.weight, nn.Parameter)
    # A new g and v: the next forward uses g * v / ||v||.
    with ember.no_grad():
        m.weight_g.mul_(3.0)
        m.weight_v.copy_(f64(rng.standard_normal((4, 3))))
    v = m.weight_v.detach().numpy()
    want_w = 3 * g * v / np.sqrt((v * v).sum(axis=axes, keepdims=dim is not None))
    x = rng.standard_normal((2, 3))
    y = m(f64(x))
    assert_close(y, x @ want_w.T + m.bias.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert_close(m.weight, want_w, rtol=1e-13, atol=1e-13)
    y.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    nn.utils.remove_weight_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert isinstance(m.weight, nn.Parameter)
    assert_close(m.weight, want_w, rtol=1e-13, atol=1e-13)


def test_weight_norm_gradcheck_through_g_and_v(rng):
    m = _linear64(rng, 3, 2)
    nn.utils.weight_norm(m)
    x = f64(rng.standard_normal((4, 3)))

    def run(g, v):
        with ember.no_grad():
            m.weight_g.copy_(g)
            m.weight_v.copy_(v)
        # The layer's computation written out: the reparametrization is what is checked.
        w = v * (g / v.norm(dim=1, keepdim=True))
        return F.linear(x, w, m.bias)

    gradcheck(run, f64(m.weight_g.detach().numpy(), True), f64(m.weight_v.detach().numpy(), True))
    out = m(x).sum()
    out.backward()
    # d/dg of sum(x w^T): per output row, (x_sum . v) / ||v||.
    v = m.weight_v.detach().numpy()
    want = (x.numpy().sum(0) @ v.T) / np.linalg.norm(v, axis=1)
    assert_close(m.weight_g.grad.reshape(-1), want, rtol=1e-12, atol=1e-12)


def test_weight_norm_on_a_python_module_and_errors(rng):
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(f64(np.array([3.0, 4.0])))

        def forward(self, x):
            return x * self.weight

    s = nn.utils.weight_norm(Scale(), dim=None)
    assert_close(s.weight_g, np.array(5.0), rtol=0, atol=0)
    with ember.no_grad():
        s.weight_g.fill_(10.0)
    assert_close(s(f64(np.ones(2))), np.array([6.0, 8.0]), rtol=1e-14, atol=0)
    with pytest.raises(KeyError, match="no parameter 'nope'"):
        nn.utils.weight_norm(nn.Linear(2, 2), name="nope")
    with pytest.raises(ValueError, match="remove_weight_norm"):
        nn.utils.remove_weight_norm(nn.Linear(2, 2))
    with pytest.raises(IndexError, match="out of range"):
        nn.utils.weight_norm(nn.Linear(2, 2), dim=3)


def test_spectral_norm_power_iteration_and_eval(rng):
    ember.manual_seed(0)
    m = _linear64(rng, 5, 4)
    w = m.weight.detach().numpy().copy()
    assert nn.utils.spectral_norm(m) is m
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    x = f64(rng.standard_normal((3, 5)))
    for _ in range(60):
        m(x)
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    assert_close(m.weight, w / sigma, rtol=1e-9, atol=1e-9)
    m.eval()
    u = m.weight_u.detach().numpy().copy()
    m(x)
    np.testing.assert_array_equal(m.weight_u.detach().numpy(), u)
    m.train()
    m.zero_grad()
    m(x).sum().backward()
    assert m.weight_orig.grad is not None
    nn.utils.remove_spectral_norm(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight"]
    assert list(dict(m.named_buffers())) == []
    assert_close(m.weight, w / sigma, rtol=1e-9, atol=1e-9)
    up = nn.utils.spectral_norm(nn.ConvTranspose2d(4, 2, 3))
    assert up.weight_u.shape == (2,) and up.weight_v.shape == (36,)


# ---- instance norm, RMSNorm, Bilinear, BatchNorm3d -----------------------------------------------

def np_instance_norm(x, w=None, b=None, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    m = x.mean(axis=axes, keepdims=True)
    v = x.var(axis=axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return y


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_instance_norm_layers_match_numpy(rng, dims):
    shape = (2, 3) + (4, 3, 2)[:dims]
    x = rng.standard_normal(shape)
    m = getattr(nn, f"InstanceNorm{dims}d")(3, affine=True, track_running_stats=True).double()
    assert repr(m) == (f"InstanceNorm{dims}d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                       "track_running_stats=True)")
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    with ember.no_grad():
        m.weight.copy_(f64(rng.standard_normal(3)))
        m.bias.copy_(f64(rng.standard_normal(3)))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert_close(m(f64(x)), np_instance_norm(x, w, b), rtol=1e-12, atol=1e-12)
    axes = tuple(range(2, x.ndim))
    assert_close(m.running_mean, 0.1 * x.mean(axis=axes).mean(0), rtol=1e-12, atol=1e-14)
    assert_close(m.running_var, 0.9 + 0.1 * x.var(axis=axes, ddof=1).mean(0), rtol=1e-12, atol=0)
    # Unbatched input, and eval with the running statistics.
    assert_close(m(f64(x[0])), np_instance_norm(x[:1], w, b)[0], rtol=1e-12, atol=1e-12)
    m.eval()
    rm, rv = m.running_mean.numpy(), m.running_var.numpy()
    sh = (1, -1) + (1,) * dims
    want = (x - rm.reshape(sh)) / np.sqrt(rv.reshape(sh) + 1e-5) * w.reshape(sh) + b.reshape(sh)
    assert_close(m(f64(x)), want, rtol=1e-12, atol=1e-12)
    # The defaults: no affine parameters, no running statistics, input statistics in eval.
    plain = getattr(nn, f"InstanceNorm{dims}d")(3).eval()
    assert list(plain.state_dict()) == []
    assert_close(plain(f64(x)), np_instance_norm(x), rtol=1e-12, atol=1e-12)
    assert_close(F.instance_norm(f64(x)), np_instance_norm(x), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"InstanceNorm"):
        m(f64(rng.standard_normal((2, 3))))


def test_rms_norm_bilinear_and_norm_bias_keyword(rng):
    x = rng.standard_normal((2, 3, 4))
    m = nn.RMSNorm([3, 4]).double()
    assert repr(m) == "RMSNorm((3, 4), eps=None, elementwise_affine=True)"
    with ember.no_grad():
        m.weight.copy_(f64(rng.standard_normal((3, 4))))
    w = m.weight.detach().numpy()
    eps = np.finfo(np.float64).eps
    want = x / np.sqrt((x * x).mean(axis=(1, 2), keepdims=True) + eps) * w
    assert_close(m(f64(x)), want, rtol=1e-12, atol=1e-12)
    assert_close(F.rms_norm(f64(x), (4,), eps=0.5), x / np.sqrt((x * x).mean(-1, keepdims=True) + 0.5),
                 rtol=1e-12, atol=1e-12)
    gradcheck(lambda t: F.rms_norm(t, (4,), eps=1e-3), f64(x, True))
    bl = nn.Bilinear(3, 2, 5).double()
    assert repr(bl) == "Bilinear(in1_features=3, in2_features=2, out_features=5, bias=True)"
    a, c = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    wt, bt = bl.weight.detach().numpy(), bl.bias.detach().numpy()
    assert_close(bl(f64(a), f64(c)), np.einsum("ni,oij,nj->no", a, wt, c) + bt, rtol=1e-12, atol=1e-12)
    assert np.abs(wt).max() <= 1 / np.sqrt(3)
    gradcheck(lambda p, q: F.bilinear(p, q, f64(wt)), f64(a, True), f64(c, True))
    # bias=False (keyword-only, as PyTorch 2.x): affine keeps the weight alone.
    assert list(nn.BatchNorm2d(3, bias=False).state_dict())[:2] == ["weight", "running_mean"]
    assert "bias=False" in repr(nn.GroupNorm(1, 4, bias=False))
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert repr(nn.BatchNorm3d(2)) == ("BatchNorm3d(2, eps=1e-05, momentum=0.1, affine=True, bias=True, "
                                       "track_running_stats=True)")
    with pytest.raises(ValueError, match="5-d"):
        nn.BatchNorm3d(2)(ember.ones(2, 2, 3, 3))


# ---- ConvTranspose1d and output_size -------------------------------------------------------------

def np_conv_transpose1d(x, w, b, stride, padding, output_padding, dilation):
    n, c, length = x.shape
    o, k = w.shape[1], w.shape[2]
    out = (length - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1
    y = np.zeros((n, o, out))
    for j in range(length):
        for t in range(k):
            at = stride * j - padding + dilation * t
            if 0 <= at < out:
                y[:, :, at] += np.einsum("nc,co->no", x[:, :, j], w[:, :, t])
    return y + (0 if b is None else b[None, :, None])


def test_conv_transpose1d_matches_numpy_and_output_size(rng):
    m = nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1, dilation=2).double()
    assert repr(m) == ("ConvTranspose1d(3, 4, kernel_size=(3,), stride=(2,), padding=(1,), "
                       "dilation=(2,), output_padding=(1,))")  # PyTorch's order
    x = rng.standard_normal((2, 3, 5))
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert_close(m(f64(x)), np_conv_transpose1d(x, w, b, 2, 1, 1, 2), rtol=1e-12, atol=1e-12)
    assert_close(m(f64(x[0])), np_conv_transpose1d(x[:1], w, b, 2, 1, 1, 2)[0], rtol=1e-12, atol=1e-12)
    # output_size picks the output padding: lengths 11 and 12 for this input.
    assert m(f64(x), output_size=[11]).shape == (2, 4, 11)
    assert_close(m(f64(x), output_size=(2, 4, 12)), np_conv_transpose1d(x, w, b, 2, 1, 1, 2),
                 rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="valid sizes range from"):
        m(f64(x), output_size=[13])
    assert_close(F.conv_transpose1d(f64(x), f64(w), stride=3), np_conv_transpose1d(x, w, None, 3, 0, 0, 1),
                 rtol=1e-12, atol=1e-12)
    gradcheck(lambda t: F.conv_transpose1d(t, f64(w), stride=2, padding=1), f64(x[:1, :, :3], True))
    up = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1).double()
    assert up(f64(rng.standard_normal((1, 2, 4, 5))), output_size=(8, 10)).shape == (1, 2, 8, 10)
    assert up(f64(rng.standard_normal((1, 2, 4, 5)))).shape == (1, 2, 7, 9)


# ---- MaxUnpool, LPPool, ChannelShuffle, Softmax2d, the older upsampling names ---------------------

@pytest.mark.parametrize("dims,shape", [(1, (2, 3, 8)), (2, (2, 3, 6, 4)), (3, (1, 2, 4, 2, 6))])
def test_max_unpool_inverts_max_pool_at_its_indices(rng, dims, shape):
    x = rng.standard_normal(shape)
    pool = getattr(nn, f"MaxPool{dims}d")(2, return_indices=True)
    unpool = getattr(nn, f"MaxUnpool{dims}d")(2)
    assert repr(unpool) == (f"MaxUnpool{dims}d(kernel_size={(2,) * dims}, stride={(2,) * dims}, "
                            f"padding={(0,) * dims})")
    y, idx = pool(f64(x))
    back = unpool(y, idx)
    assert back.shape == x.shape
    # Every pooled value sits at its index, zeros elsewhere.
    flat = np.zeros(shape[:2] + (int(np.prod(shape[2:])),))
    np.put_along_axis(flat, idx.numpy().reshape(shape[:2] + (-1,)), y.numpy().reshape(shape[:2] + (-1,)), -1)
    assert_close(back, flat.reshape(shape), rtol=0, atol=0)
    assert_close(getattr(F, f"max_unpool{dims}d")(y, idx, 2, output_size=shape), flat.reshape(shape), rtol=0, atol=0)
    v = f64(y.numpy(), True)
    gradcheck(lambda t: getattr(F, f"max_unpool{dims}d")(t, idx, 2), v)
    with pytest.raises(IndexError, match="invalid max index"):
        unpool(y, idx + 10_000)


def test_lp_pool_channel_shuffle_softmax2d_and_upsampling_names(rng):
    x = rng.standard_normal((2, 4, 6, 6))
    m = nn.LPPool2d(3, (2, 3), stride=2)
    assert repr(m) == "LPPool2d(norm_type=3, kernel_size=(2, 3), stride=2, ceil_mode=False)"
    a = np.abs(x)
    want = np.zeros((2, 4, 3, 2))
    for i in range(3):
        for j in range(2):
            want[:, :, i, j] = ((a[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 3] ** 3).sum(axis=(2, 3))) ** (1 / 3)
    assert_close(m(f64(a)), want, rtol=1e-12, atol=1e-12)
    assert_close(F.lp_pool1d(f64(a[:, :, 0]), 2, 3), np.sqrt((a[:, :, 0, :6].reshape(2, 4, 2, 3) ** 2).sum(-1)),
                 rtol=1e-12, atol=1e-12)
    s = nn.ChannelShuffle(2)
    assert repr(s) == "ChannelShuffle(groups=2)"
    assert_close(s(f64(x)), x.reshape(2, 2, 2, 6, 6).transpose(0, 2, 1, 3, 4).reshape(x.shape), rtol=0, atol=0)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    assert_close(nn.Softmax2d()(f64(x)), e / e.sum(axis=1, keepdims=True), rtol=1e-12, atol=1e-14)
    up = nn.UpsamplingBilinear2d(scale_factor=2)
    assert repr(up) == "UpsamplingBilinear2d(scale_factor=2.0, mode='bilinear')"
    assert_close(up(f64(x)), F.interpolate(f64(x), scale_factor=2, mode="bilinear", align_corners=True),
                 rtol=0, atol=0)
    assert_close(F.upsample_nearest(f64(x), size=(12, 12)), F.interpolate(f64(x), size=(12, 12)), rtol=0, atol=0)
    # The in-place activations write into their input, as F.*_ do.
    for name, args in [("relu_", ()), ("elu_", (0.5,)), ("celu_", (0.7,)), ("hardtanh_", (-0.5, 0.5)),
                       ("leaky_relu_", (0.2,)), ("selu_", ()), ("threshold_", (0.1, 2.0))]:
        t = f64(x.copy())
        out = getattr(F, name)(t, *args)
        assert out is t
        assert_close(t, getattr(F, name[:-1])(f64(x), *args), rtol=0, atol=0)


def test_conv_transpose3d_matches_conv_transpose1d_along_each_dim_and_gradcheck(rng):
    # A kernel of extent 1 in two dims reduces the 3-d transposed convolution to a 1-d one along
    # the third, which the NumPy loop above checks; strides and paddings act per dim.
    x = rng.standard_normal((2, 3, 4, 2, 3))
    for dim in range(3):
        k = [1, 1, 1]
        k[dim] = 3
        m = nn.ConvTranspose3d(3, 2, tuple(k), stride=2, padding=tuple(1 if i == dim else 0 for i in range(3)),
                               output_padding=tuple(1 if i == dim else 0 for i in range(3)), bias=False).double()
        w = m.weight.detach().numpy().reshape(3, 2, 3)
        moved = np.moveaxis(x, 2 + dim, -1)
        lead = moved.shape[:-1]
        flat = moved.reshape(2, 3, -1, moved.shape[-1]).transpose(0, 2, 1, 3).reshape(-1, 3, moved.shape[-1])
        want = np_conv_transpose1d(flat, w, None, 2, 1, 1, 1)
        want = want.reshape(2, -1, 2, want.shape[-1]).transpose(0, 2, 1, 3)
        other = [lead[2 + i] * 2 - 1 for i in range(2)]  # stride 2, kernel 1: every other place
        got = np.moveaxis(m(f64(x)).detach().numpy(), 2 + dim, -1)
        picked = got[:, :, ::2, ::2, :]
        assert got.shape[2:4] == tuple(other)
        assert_close(f64(picked.reshape(2, 2, -1, got.shape[-1])), want.reshape(2, 2, -1, got.shape[-1]),
                     rtol=1e-12, atol=1e-12)
    t = nn.ConvTranspose3d(2, 2, 2, stride=2).double()
    assert repr(t) == "ConvTranspose3d(2, 2, kernel_size=(2, 2, 2), stride=(2, 2, 2))"
    assert t(f64(x[:1, :2]), output_size=(9, 5, 7)).shape == (1, 2, 9, 5, 7)
    gradcheck(lambda v: F.conv_transpose3d(v, t.weight.detach(), stride=(2, 1, 1), padding=(0, 1, 0)),
              f64(x[:1, :2, :2, :2, :2], True))
