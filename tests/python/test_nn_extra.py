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
    with pytest.raises(NotImplementedError, match="padding_mode"):
        nn.Conv3d(2, 2, 3, padding_mode="reflect")


