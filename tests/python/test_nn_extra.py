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


