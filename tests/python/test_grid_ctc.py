"""F.affine_grid, F.grid_sample, F.ctc_loss and nn.CTCLoss against PyTorch's values and
gradients (fixtures/grid_ctc.npz, written by fixtures/make_grid_ctc.py), gradcheck, and the errors
PyTorch raises."""

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

FIXTURES = pathlib.Path(__file__).with_name("fixtures")
CASES = json.loads((FIXTURES / "grid_ctc.json").read_text())
WANT = np.load(FIXTURES / "grid_ctc.npz")


def f64(a, grad=False):
    t = ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64)
    return t.requires_grad_(True) if grad else t


def close(got, want, tol=1e-10, what=""):
    got = got.detach().numpy() if isinstance(got, ember.Tensor) else got
    assert got.shape == np.shape(want), what
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


# ---- grid_sample --------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(len(CASES["grid_sample"])))
def test_grid_sample_matches_pytorch_with_both_gradients(i):
    kw = CASES["grid_sample"][i]
    x, g = f64(WANT[f"gs{i}_x"], grad=True), f64(WANT[f"gs{i}_grid"], grad=True)
    y = F.grid_sample(x, g, mode=kw["mode"], padding_mode=kw["padding_mode"],
                      align_corners=kw["align_corners"])
    close(y, WANT[f"gs{i}_y"], what=str(kw))
    (y * f64(WANT[f"gs{i}_w"])).sum().backward()
    close(x.grad, WANT[f"gs{i}_dx"], what=f"input gradient {kw}")
    close(g.grad, WANT[f"gs{i}_dgrid"], tol=1e-9, what=f"grid gradient {kw}")
    if kw["mode"] == "nearest":
        assert not g.grad.numpy().any()


def test_grid_sample_cases_cover_every_mode_and_padding():
    seen = {(c["mode"], c["padding_mode"], c["align_corners"], len(c["input"]))
            for c in CASES["grid_sample"]}
    for mode in ["bilinear", "nearest", "bicubic"]:
        for padding in ["zeros", "border", "reflection"]:
            for ac in [False, True]:
                assert (mode, padding, ac, 4) in seen
                assert mode == "bicubic" or (mode, padding, ac, 5) in seen


def test_grid_sample_float32_and_gradcheck():
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((1, 2, 4, 5)), rng.uniform(-1.2, 1.2, (1, 3, 2, 2))
    y64 = F.grid_sample(f64(x), f64(g), align_corners=False).numpy()
    y32 = F.grid_sample(ember.tensor(x.astype(np.float32)), ember.tensor(g.astype(np.float32)),
                        align_corners=False)
    assert y32.dtype == ember.float32
    np.testing.assert_allclose(y32.numpy(), y64, rtol=1e-5, atol=1e-5)
    for mode, padding in [("bilinear", "reflection"), ("bicubic", "border")]:
        assert ember.autograd.gradcheck(
            lambda a, b: F.grid_sample(a, b, mode=mode, padding_mode=padding,
                                       align_corners=True),
            (f64(x, grad=True), f64(g, grad=True)))


def test_grid_sample_refuses_what_pytorch_refuses():
    x, g = ember.rand(1, 2, 3, 4), ember.rand(1, 2, 2, 2)
    with pytest.raises(ValueError, match=r"\[grid_sample\] unknown mode 'linear'"):
        F.grid_sample(x, g, mode="linear")
    with pytest.raises(ValueError, match="padding_mode 'mirror'"):
        F.grid_sample(x, g, padding_mode="mirror")
    with pytest.raises(ValueError, match=r"grid must be \[N, H_out, W_out, 2\]"):
        F.grid_sample(x, ember.rand(1, 2, 2, 3))
    with pytest.raises(ValueError, match="same batch size"):
        F.grid_sample(x, ember.rand(2, 2, 2, 2))
    with pytest.raises(ValueError, match="4-d"):
        F.grid_sample(ember.rand(2, 3), ember.rand(2, 2))
    with pytest.raises(NotImplementedError, match="bicubic"):
        F.grid_sample(ember.rand(1, 1, 2, 2, 2), ember.rand(1, 1, 1, 1, 3), mode="bicubic")
    with pytest.raises(TypeError, match="same dtype"):
        F.grid_sample(x, g.double())
    with pytest.raises(TypeError, match="floating"):
        F.grid_sample(ember.ones(1, 1, 2, 2, dtype=ember.int64), ember.ones(1, 1, 1, 2,
                                                                             dtype=ember.int64))


# ---- affine_grid --------------------------------------------------------------------------------

@pytest.mark.parametrize("i", range(len(CASES["affine_grid"])))
def test_affine_grid_matches_pytorch(i):
    kw = CASES["affine_grid"][i]
    theta = f64(WANT[f"ag{i}_theta"], grad=True)
    y = F.affine_grid(theta, kw["size"], align_corners=kw["align_corners"])
    close(y, WANT[f"ag{i}_y"], what=str(kw))
    (y * f64(WANT[f"ag{i}_w"])).sum().backward()
    close(theta.grad, WANT[f"ag{i}_dtheta"], what=str(kw))


def test_affine_grid_identity_samples_the_input_back():
    x = ember.randn(2, 3, 4, 5, dtype=ember.float64)
    theta = f64(np.tile(np.array([[1.0, 0, 0], [0, 1, 0]]), (2, 1, 1)))
    for ac in [False, True]:
        grid = F.affine_grid(theta, list(x.shape), align_corners=ac)
        close(F.grid_sample(x, grid, align_corners=ac), x.numpy(), tol=1e-12)


def test_affine_grid_refuses_what_pytorch_refuses():
    theta = ember.rand(2, 2, 3)
    with pytest.raises(ValueError, match=r"\[affine_grid\] theta must be .* \[N, 3, 4\]"):
        F.affine_grid(theta, [2, 3, 4, 5, 6])
    with pytest.raises(ValueError, match=r"\[N, 2, 3\]"):
        F.affine_grid(ember.rand(2, 3, 3), [2, 3, 4, 5])
    with pytest.raises(NotImplementedError, match="4 .* or 5"):
        F.affine_grid(theta, [2, 3, 4])
    with pytest.raises(ValueError, match="positive"):
        F.affine_grid(theta, [2, 3, 0, 5])
    with pytest.raises(ValueError, match="batch of 3"):
        F.affine_grid(theta, [3, 3, 4, 5])
    with pytest.raises(TypeError, match="floating"):
        F.affine_grid(ember.ones(2, 2, 3, dtype=ember.int64), [2, 3, 4, 5])


# ---- ctc_loss -----------------------------------------------------------------------------------

def ctc_args(kw):
    return (ember.tensor(kw["targets"]), ember.tensor(kw["input_lengths"]),
            ember.tensor(kw["target_lengths"]))


@pytest.mark.parametrize("i", range(len(CASES["ctc_loss"])))
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_matches_pytorch(i, reduction, zero_infinity):
    kw = CASES["ctc_loss"][i]
    key = f"ctc{i}_{reduction}_{int(zero_infinity)}"
    logits = f64(WANT[f"ctc{i}_logits"], grad=True)
    loss = F.ctc_loss(F.log_softmax(logits, -1), *ctc_args(kw), blank=kw["blank"],
                      reduction=reduction, zero_infinity=zero_infinity)
    close(loss, WANT[key], what=key)
    # The lengths as sequences (an int for the unbatched case) give the same.
    lengths = [kw["input_lengths"], kw["target_lengths"]]
    again = F.ctc_loss(F.log_softmax(logits, -1), ember.tensor(kw["targets"]), *lengths,
                       blank=kw["blank"], reduction=reduction, zero_infinity=zero_infinity)
    close(again, WANT[key], what=key)
    if not np.isfinite(WANT[key]).all():
        return  # PyTorch's gradient of an infinite loss is NaN; Ember's is 0 (not compared)
    loss.sum().backward()
    close(logits.grad, WANT[key + "_dlogits"], tol=1e-9, what=key)


def test_ctc_loss_module_and_gradcheck():
    kw = CASES["ctc_loss"][0]
    lp = F.log_softmax(f64(WANT["ctc0_logits"]), -1).detach().requires_grad_(True)
    m = nn.CTCLoss(blank=0, reduction="sum")
    assert m.reduction == "sum" and m.blank == 0 and not m.zero_infinity
    close(m(lp, *ctc_args(kw)), WANT["ctc0_sum_0"])
    close(m(lp, ember.tensor(kw["targets"]), kw["input_lengths"], kw["target_lengths"]),
          WANT["ctc0_sum_0"])
    # The exact derivative in log_probs (not PyTorch's, which adds exp(log_probs)).
    assert ember.autograd.gradcheck(
        lambda t: F.ctc_loss(t, *ctc_args(kw), reduction="none"), (lp,))


def test_ctc_loss_float32():
    kw = CASES["ctc_loss"][0]
    lp = F.log_softmax(ember.tensor(WANT["ctc0_logits"].astype(np.float32)), -1)
    loss = F.ctc_loss(lp, *ctc_args(kw), reduction="none")
    assert loss.dtype == ember.float32
    np.testing.assert_allclose(loss.numpy(), WANT["ctc0_none_0"], rtol=1e-5)


def test_ctc_loss_refuses_what_pytorch_refuses():
    lp = F.log_softmax(ember.randn(6, 2, 4), -1)
    tg = ember.tensor([[1, 2], [3, 1]])
    with pytest.raises(ValueError, match=r"\[ctc_loss\] input_lengths must be in \[0, T\] with "
                                         r"T = 6 .*got 7 for batch entry 1"):
        F.ctc_loss(lp, tg, [6, 7], [2, 2])
    with pytest.raises(ValueError, match="blank must be a class in"):
        F.ctc_loss(lp, tg, [6, 6], [2, 2], blank=4)
    with pytest.raises(ValueError, match="one length per batch entry"):
        F.ctc_loss(lp, tg, [6], [2, 2])
    with pytest.raises(ValueError, match="longest target length 3"):
        F.ctc_loss(lp, tg, [6, 6], [3, 2])
    with pytest.raises(ValueError, match="sum to 5"):
        F.ctc_loss(lp, ember.tensor([1, 2, 3]), [6, 6], [3, 2])
    with pytest.raises(ValueError, match="negative"):
        F.ctc_loss(lp, tg, [6, 6], [-1, 2])
    with pytest.raises(IndexError, match="target label 4"):
        F.ctc_loss(lp, ember.tensor([[1, 4], [3, 1]]), [6, 6], [2, 2])
    with pytest.raises(TypeError, match="integer"):
        F.ctc_loss(lp, tg.double(), [6, 6], [2, 2])
    with pytest.raises(TypeError, match="floating"):
        F.ctc_loss(ember.ones(6, 2, 4, dtype=ember.int64), tg, [6, 6], [2, 2])
    with pytest.raises(ValueError, match=r"\[T, N, C\]"):
        F.ctc_loss(ember.randn(6), tg, [6, 6], [2, 2])
    with pytest.raises(ValueError, match="reduction 'avg'"):
        F.ctc_loss(lp, tg, [6, 6], [2, 2], reduction="avg")
