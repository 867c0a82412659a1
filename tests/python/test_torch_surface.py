"""torch names Ember adds to `import ember as torch` (the add*-products, the distances and their
modules, the default dtype), checked against PyTorch's outputs and gradients committed in
fixtures/torch_surface.json (fixtures/make_torch_surface.py), against NumPy, and for the errors
PyTorch raises."""

import json
import pathlib

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from helpers import assert_close

CASES = json.loads((pathlib.Path(__file__).parent / "fixtures" / "torch_surface.json").read_text())["cases"]


def _tensor(a):
    return ember.tensor(np.asarray(a["data"], dtype=np.float64).reshape(a["shape"]), dtype=ember.float64)


def _call(fn, args, kwargs):
    kind, attr = fn.split(".", 1)
    if kind == "torch":
        return getattr(ember, attr)(*args, **kwargs)
    if kind == "F":
        return getattr(F, attr)(*args, **kwargs)
    return getattr(ember.nn, attr)(**kwargs)(*args)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_matches_pytorch_values_and_gradients(case):
    args = [(_tensor(a) if a.get("const") else _tensor(a).requires_grad_(True)) if isinstance(a, dict) else a
            for a in case["args"]]
    out = _call(case["fn"], args, case["kwargs"])
    want = np.asarray(case["out"]["data"]).reshape(case["out"]["shape"])
    assert_close(out, want, rtol=1e-10, atol=1e-12)
    w = ember.tensor(np.sin(np.arange(want.size, dtype=np.float64)).reshape(want.shape), dtype=ember.float64)
    (out * w).sum().backward()
    for a, g in zip(args, case["grads"]):
        if g is not None:
            assert_close(a.grad, np.asarray(g["data"]).reshape(g["shape"]), rtol=1e-9, atol=1e-12)


# ---- the add*-products ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,shapes", [
    ("addmm", [(2, 4), (2, 3), (3, 4)]),
    ("baddbmm", [(2, 2, 4), (2, 2, 3), (2, 3, 4)]),
    ("addbmm", [(2, 4), (5, 2, 3), (5, 3, 4)]),
    ("addmv", [(2,), (2, 3), (3,)]),
    ("addr", [(2, 4), (2,), (4,)]),
])
def test_add_products_match_numpy_as_functions_and_methods(rng, name, shapes):
    x, a, b = (rng.standard_normal(s) for s in shapes)
    prod = {"addmm": lambda: a @ b, "baddbmm": lambda: a @ b, "addbmm": lambda: (a @ b).sum(0),
            "addmv": lambda: a @ b, "addr": lambda: np.outer(a, b)}[name]()
    tx, ta, tb = (ember.tensor(v, dtype=ember.float64) for v in (x, a, b))
    assert_close(getattr(ember, name)(tx, ta, tb), x + prod, rtol=1e-12, atol=1e-12)
    assert_close(getattr(tx, name)(ta, tb, beta=-2, alpha=0.5), -2 * x + 0.5 * prod, rtol=1e-12, atol=1e-12)
    # beta == 0 never reads input: NaN there does not reach the result; its gradient is zero.
    nan = ember.full(list(x.shape), float("nan"), dtype=ember.float64).requires_grad_(True)
    r = getattr(ember, name)(nan, ta, tb, beta=0, alpha=3)
    assert_close(r, 3 * prod, rtol=1e-12, atol=1e-12)
    r.sum().backward()
    assert_close(nan.grad, np.zeros(x.shape))


def test_add_products_reject_what_pytorch_rejects():
    m, n = ember.zeros(2, 3), ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"\[addmm\].*broadcast"):
        ember.addmm(ember.zeros(5, 4), m, n)
    with pytest.raises(RuntimeError, match=r"\[addmm\]"):
        ember.addmm(ember.zeros(4), ember.zeros(3), n)
    with pytest.raises(RuntimeError, match=r"\[addmm\].*dtype"):
        ember.addmm(ember.zeros(2, 4, dtype=ember.float64), m, n)
    with pytest.raises(RuntimeError, match=r"\[addmv\]"):
        ember.addmv(ember.zeros(2), m, ember.zeros(4))
    with pytest.raises(RuntimeError, match=r"\[addr\]"):
        ember.addr(ember.zeros(2, 3), ember.zeros(2, 1), ember.zeros(3))
    with pytest.raises(RuntimeError, match=r"\[baddbmm\]"):
        ember.baddbmm(ember.zeros(3, 4), ember.zeros(2, 3, 5), ember.zeros(3, 5, 4))
    with pytest.raises(RuntimeError, match=r"\[addbmm\]"):
        ember.addbmm(ember.zeros(2, 3, 4), ember.zeros(2, 3, 5), ember.zeros(2, 5, 4))
    with pytest.raises(TypeError):
        ember.addmm(ember.zeros(2, 4), m, n, 1.0)  # beta and alpha are keyword-only


# ---- the distances ---------------------------------------------------------------------------------

def test_distances_reject_what_pytorch_rejects():
    with pytest.raises(IndexError):
        F.cosine_similarity(ember.zeros(2, 3), ember.zeros(2, 3), dim=2)
    with pytest.raises(RuntimeError, match="floating"):
        F.cosine_similarity(ember.ones(2, 3, dtype=ember.int64), ember.ones(2, 3, dtype=ember.int64))
    with pytest.raises(RuntimeError):
        F.cosine_similarity(ember.zeros(2, 3), ember.zeros(4, 3))
    with pytest.raises(RuntimeError):
        F.pairwise_distance(ember.zeros(2, 3), ember.zeros(4, 3))


def test_distance_modules_keep_their_arguments():
    cs = ember.nn.CosineSimilarity(dim=0, eps=1e-3)
    assert (cs.dim, cs.eps) == (0, 1e-3)
    assert repr(cs) == "CosineSimilarity()"  # as PyTorch's
    pd = ember.nn.PairwiseDistance(p=1.0, keepdim=True)
    assert (pd.norm, pd.eps, pd.keepdim) == (1.0, 1e-6, True)
    assert tuple(pd(ember.zeros(3, 4), ember.ones(3, 4)).shape) == (3, 1)
    assert list(cs.parameters()) == []


# ---- the default dtype --------------------------------------------------------------------------

@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(ember.float32)


def test_default_dtype_is_float32_until_set():
    assert ember.get_default_dtype() is ember.float32
    assert ember.tensor([1.0]).dtype is ember.float32


def test_default_dtype_reaches_factories_promotion_and_modules(float64_default):
    assert ember.get_default_dtype() is ember.float64
    made = {
        "tensor(float)": ember.tensor([1.5]), "tensor(0-d)": ember.tensor(2.5),
        "zeros": ember.zeros(2), "ones": ember.ones(2), "empty": ember.empty(2),
        "full(float)": ember.full((2,), 1.5), "rand": ember.rand(2), "randn": ember.randn(2),
        "arange(float)": ember.arange(0, 1, 0.5), "linspace": ember.linspace(0, 1, 3),
        "eye": ember.eye(2), "int / int": ember.tensor([1]) / 2, "int + 1.5": ember.tensor([1]) + 1.5,
        "Linear.weight": ember.nn.Linear(2, 3).weight, "Linear.bias": ember.nn.Linear(2, 3).bias,
        "Conv2d.weight": ember.nn.Conv2d(1, 2, 3).weight,
        "LayerNorm.weight": ember.nn.LayerNorm(4).weight,
    }
    for name, t in made.items():
        assert t.dtype is ember.float64, name
    assert ember.tensor([1]).dtype is ember.int64
    assert ember.arange(3).dtype is ember.int64
    assert (ember.tensor([1]) / 3).item() == 1 / 3  # computed in float64
    assert "dtype=ember.float32" in repr(ember.tensor([1.0], dtype=ember.float32))
    assert "dtype" not in repr(ember.tensor([1.0]))


def test_default_dtype_accepts_only_floating_dtypes():
    for bad in (ember.int64, ember.bool, ember.uint8):
        with pytest.raises(TypeError, match="floating"):
            ember.set_default_dtype(bad)
    for bad in ("float", float):
        with pytest.raises(TypeError):
            ember.set_default_dtype(bad)
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float16)
    try:
        assert ember.tensor([1.0]).dtype is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)


# ---- 1-d pooling and adaptive max pooling -----------------------------------------------------------

def test_pooling_1d_returns_pytorchs_indices_and_keeps_its_arguments():
    x = ember.tensor([[[1.0, 5.0, 2.0, 4.0, 3.0, 0.0, 6.0]]])
    y, idx = F.max_pool1d(x, 3, stride=2, padding=1, return_indices=True)
    assert y.tolist() == [[[5.0, 5.0, 4.0, 6.0]]]
    assert idx.tolist() == [[[1, 1, 3, 6]]] and idx.dtype is ember.int64
    assert F.max_pool1d(x, (3,), (2,), (1,)).tolist() == y.tolist()  # 1-tuples as PyTorch takes
    assert repr(ember.nn.MaxPool1d(3, 2)) == \
        "MaxPool1d(kernel_size=3, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(ember.nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(ember.nn.AdaptiveAvgPool1d(3)) == "AdaptiveAvgPool1d(output_size=3)"
    assert repr(ember.nn.AdaptiveMaxPool2d((3, 2))) == "AdaptiveMaxPool2d(output_size=(3, 2))"
    assert ember.nn.AvgPool1d(3).kernel_size == (3,) and ember.nn.MaxPool1d(3).stride == 3


def test_pooling_1d_rejects_what_pytorch_rejects():
    with pytest.raises(RuntimeError, match=r"\[max_pool1d\]"):
        F.max_pool1d(ember.zeros(1, 2, 3, 4), 2)  # 4-d
    with pytest.raises(RuntimeError, match=r"\[max_pool1d\].*padding"):
        F.max_pool1d(ember.zeros(1, 4), 2, 1, 2)
    with pytest.raises(RuntimeError, match=r"\[avg_pool1d\]"):
        F.avg_pool1d(ember.zeros(1, 2), 3)  # shorter than the window
    with pytest.raises(RuntimeError, match=r"\[max_pool1d\]"):
        F.max_pool1d(ember.zeros(1, 4), (2, 2))
    with pytest.raises(RuntimeError, match=r"\[adaptive_avg_pool1d\]"):
        F.adaptive_avg_pool1d(ember.zeros(1, 4), 0)
    with pytest.raises(RuntimeError, match=r"\[adaptive_max_pool2d\]"):
        F.adaptive_max_pool2d(ember.zeros(1, 4), 2)


# ---- padding modules ---------------------------------------------------------------------------------

def test_padding_modules_keep_their_arguments_as_pytorch():
    assert repr(ember.nn.ZeroPad2d(1)) == "ZeroPad2d((1, 1, 1, 1))"
    assert repr(ember.nn.ConstantPad2d((1, 2, 3, 4), 3.5)) == "ConstantPad2d(padding=(1, 2, 3, 4), value=3.5)"
    assert repr(ember.nn.ReflectionPad1d(2)) == "ReflectionPad1d((2, 2))"
    assert repr(ember.nn.ReplicationPad3d(1)) == "ReplicationPad3d((1, 1, 1, 1, 1, 1))"
    assert ember.nn.ZeroPad2d(1).padding == (1, 1, 1, 1) and ember.nn.ZeroPad2d(1).value == 0.0
    assert ember.nn.ConstantPad1d(2, 1.5).value == 1.5
    assert tuple(ember.nn.ZeroPad2d((1, 2))(ember.zeros(3, 3)).shape) == (3, 6)  # a pair pads one dim


def test_padding_modules_reject_what_pytorch_rejects():
    with pytest.raises(RuntimeError, match=r"\[pad\].*reflect"):
        ember.nn.ReflectionPad1d(3)(ember.zeros(1, 3))  # as large as the dim
    with pytest.raises(RuntimeError, match=r"\[pad\].*circular"):
        ember.nn.CircularPad1d(4)(ember.zeros(1, 3))
    with pytest.raises(RuntimeError, match=r"\[nn.ConstantPad2d\] padding"):
        ember.nn.ConstantPad2d((1, 2, 3), 0.0)
    with pytest.raises(TypeError):
        ember.nn.ConstantPad2d(1)  # value is required, as in PyTorch


# ---- activations -----------------------------------------------------------------------------------

def test_activation_modules_match_pytorchs_reprs_and_parameters():
    assert repr(ember.nn.Threshold(0.1, 20)) == "Threshold(threshold=0.1, value=20)"
    assert repr(ember.nn.Threshold(0.1, 20, True)) == "Threshold(threshold=0.1, value=20, inplace=True)"
    assert repr(ember.nn.Hardshrink()) == "Hardshrink(0.5)"
    assert repr(ember.nn.Softshrink(0.3)) == "Softshrink(0.3)"
    assert repr(ember.nn.Tanhshrink()) == "Tanhshrink()"
    assert repr(ember.nn.GLU()) == "GLU(dim=-1)"
    assert repr(ember.nn.Softmin(1)) == "Softmin(dim=1)"
    p = ember.nn.PReLU(3, 0.1)
    assert repr(p) == "PReLU(num_parameters=3)"
    assert [n for n, _ in p.named_parameters()] == ["weight"]
    assert_close(p.weight, np.full(3, 0.1, dtype=np.float32))
    # The slope is learnt: gradients reach it.
    x = ember.tensor([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]])
    p(x).sum().backward()
    assert_close(p.weight.grad, [-1.0, -5.0, -3.0])
    t = ember.tensor([-1.0, 0.5, 2.0])
    assert F.threshold(t, 1.0, 0.0, inplace=True) is t and t.tolist() == [0.0, 0.0, 2.0]


def test_activations_reject_what_pytorch_rejects():
    with pytest.raises(RuntimeError, match=r"\[softshrink\]"):
        F.softshrink(ember.zeros(3), -1.0)
    with pytest.raises(RuntimeError, match=r"\[glu\].*even"):
        F.glu(ember.zeros(3, 3))
    with pytest.raises(RuntimeError, match=r"\[glu\]"):
        F.glu(ember.tensor(1.0))
    with pytest.raises(IndexError):
        F.glu(ember.zeros(4, 2), dim=2)
    with pytest.raises(RuntimeError, match=r"\[prelu\].*channels"):
        F.prelu(ember.zeros(2, 3, 4), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"\[prelu\]"):
        F.prelu(ember.zeros(2, 3), ember.zeros(1, 3))


# ---- margin and embedding losses ---------------------------------------------------------------------

def test_margin_losses_keep_their_arguments_and_reduce_as_pytorch():
    m = ember.nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True, reduction="sum")
    assert (m.margin, m.p, m.eps, m.swap, m.reduction) == (0.5, 1.0, 1e-6, True, "sum")
    assert ember.nn.MarginRankingLoss(size_average=False).reduction == "sum"  # the legacy flags
    assert ember.nn.PoissonNLLLoss(log_input=False).log_input is False
    x, y = ember.tensor([0.5, -1.0, 2.0]), ember.tensor([1.0, -1.0, -1.0])
    per = F.hinge_embedding_loss(x, y, reduction="none")
    assert per.tolist() == [0.5, 2.0, 0.0]
    assert F.hinge_embedding_loss(x, y).item() == pytest.approx(2.5 / 3)
    assert F.hinge_embedding_loss(x, y, reduction="sum").item() == pytest.approx(2.5)


def test_margin_losses_reject_what_pytorch_rejects():
    with pytest.raises(RuntimeError, match=r"\[margin_ranking_loss\].*rank"):
        F.margin_ranking_loss(ember.zeros(2), ember.zeros(2, 1), ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"\[cosine_embedding_loss\]"):
        F.cosine_embedding_loss(ember.zeros(2, 2, 2), ember.zeros(2, 2, 2), ember.zeros(2, 2))
    with pytest.raises(RuntimeError, match=r"\[cosine_embedding_loss\]"):
        F.cosine_embedding_loss(ember.zeros(2, 3), ember.zeros(2, 3), ember.zeros(2, 1))
    with pytest.raises(RuntimeError, match=r"\[triplet_margin_loss\].*rank"):
        F.triplet_margin_loss(ember.zeros(2, 3), ember.zeros(3), ember.zeros(2, 3))
    with pytest.raises(ValueError):
        F.soft_margin_loss(ember.zeros(2), ember.zeros(2), reduction="avg")
