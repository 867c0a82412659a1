"""torch.nn names Ember writes in Python or newly binds: RReLU and rrelu, AlphaDropout and
FeatureAlphaDropout, MultiMarginLoss, pdist, gumbel_softmax, the lazy layers, adaptive poolings
keeping an input size, the initialisers dirac_ and sparse_, and nn.utils' fusion helpers; against
NumPy float64 references, gradcheck, statistics of the random ones, and PyTorch's reprs."""

import copy
import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import assert_close


def f64(a, grad=False):
    t = ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64)
    return t.requires_grad_(True) if grad else t


# ---- rrelu ----------------------------------------------------------------------------------

def test_rrelu_in_eval_is_leaky_relu_with_the_mean_slope_and_its_module_repr():
    x = np.random.default_rng(0).normal(size=(4, 5))
    want = np.where(x > 0, x, x * (0.1 + 0.3) / 2)
    assert_close(F.rrelu(f64(x), 0.1, 0.3), want, rtol=1e-12)
    assert_close(ember.rrelu(f64(x), 0.1, 0.3), want, rtol=1e-12)
    m = nn.RReLU(0.1, 0.3).eval()
    assert_close(m(f64(x)), want, rtol=1e-12)
    assert repr(nn.RReLU()) == "RReLU(lower=0.125, upper=0.3333333333333333)"
    assert repr(nn.RReLU(0.1, 0.3, True)) == "RReLU(lower=0.1, upper=0.3, inplace=True)"
    t = f64(x)
    assert F.rrelu_(t, 0.1, 0.3) is t
    assert_close(t, want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[rrelu\] lower bound"):
        F.rrelu(f64(x), 0.5, 0.1)


def test_rrelu_in_training_draws_each_negative_slope_from_its_range_and_backpropagates_it():
    ember.manual_seed(0)
    x = f64(-np.linspace(0.5, 2.0, 20000), grad=True)
    y = nn.RReLU(0.1, 0.3)(x)  # a new module trains
    slopes = (y / x).detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 0.003 and abs(slopes.std() - 0.2 / math.sqrt(12)) < 0.003
    assert len(np.unique(slopes.round(12))) > 1000  # one draw per element
    y.sum().backward()
    assert_close(x.grad, slopes, rtol=1e-12)  # the drawn slope is the gradient
    pos = f64([1.0, 2.0])
    assert_close(F.rrelu(pos, training=True), [1.0, 2.0])


# ---- alpha dropout --------------------------------------------------------------------------

ALPHA = 1.7580993408473766


def test_alpha_dropout_keeps_a_standard_normal_input_standard_and_sets_dropped_units():
    ember.manual_seed(1)
    p = 0.3
    a = 1 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    x = ember.randn(200000, dtype=ember.float64)
    y = F.alpha_dropout(x, p, training=True).numpy()
    xn = x.numpy()
    kept = np.isclose(y, a * xn + ALPHA * a * p, rtol=0, atol=1e-12)
    dropped = np.isclose(y, -ALPHA * a + ALPHA * a * p, rtol=0, atol=1e-12)
    assert np.all(kept | dropped)
    assert abs(dropped.mean() - p) < 0.005
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01
    assert F.alpha_dropout(x, p, training=False) is x
    assert_close(F.alpha_dropout(x, 1.0, training=True), np.zeros(200000))
    z = x.clone()
    assert ember.alpha_dropout_(z, 0.5, True) is z and not np.allclose(z.numpy(), xn)
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.alpha_dropout(x, 1.5, True)


def test_feature_alpha_dropout_drops_whole_channels_and_the_modules_follow_train_and_eval():
    ember.manual_seed(2)
    x = ember.randn(64, 8, 5, 5, dtype=ember.float64)
    m = nn.FeatureAlphaDropout(0.5)
    assert repr(m) == "FeatureAlphaDropout(p=0.5, inplace=False)"
    assert repr(nn.AlphaDropout()) == "AlphaDropout(p=0.5, inplace=False)"
    y = m(x).numpy()
    a = 1 / math.sqrt((ALPHA ** 2 * 0.5 + 1) * 0.5)
    dropped_value = -ALPHA * a + ALPHA * a * 0.5
    per_channel = np.isclose(y, dropped_value, atol=1e-12).reshape(64, 8, 25)
    whole = per_channel.all(-1)
    assert np.all(per_channel.any(-1) == whole)  # a channel is dropped entirely or not at all
    assert 0.4 < whole.mean() < 0.6
    assert m.eval()(x) is x
    assert_close(ember.feature_alpha_dropout(x, 0.5, False), x.numpy())
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.AlphaDropout(-0.1)
    with pytest.raises(ValueError, match="at least 2 dims"):
        F.feature_alpha_dropout(ember.randn(5), 0.5, True)


# ---- multi_margin_loss ------------------------------------------------------------------------

def np_multi_margin(x, y, p, margin, w, reduction):
    x = np.atleast_2d(x)
    n, c = x.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j == y[i]:
                continue
            z = max(0.0, margin - x[i, y[i]] + x[i, j]) ** p
            out[i] += z * (w[y[i]] if w is not None else 1.0)
        out[i] /= c
    return {"mean": out.mean(), "sum": out.sum(), "none": out}[reduction]


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multi_margin_loss_matches_a_float64_loop_and_gradcheck(p, reduction, weighted):
    rng = np.random.default_rng(p * 10 + weighted)
    x = rng.normal(size=(5, 4))
    y = np.array([0, 3, 1, 1, 2])
    w = rng.uniform(0.5, 2.0, size=4) if weighted else None
    weight = f64(w) if weighted else None
    got = F.multi_margin_loss(f64(x), ember.tensor(y), p=p, margin=0.7, weight=weight,
                              reduction=reduction)
    assert_close(got, np_multi_margin(x, y, p, 0.7, w, reduction), rtol=1e-12, atol=1e-12)
    module = nn.MultiMarginLoss(p=p, margin=0.7, weight=weight, reduction=reduction)
    assert_close(module(f64(x), ember.tensor(y)), np_multi_margin(x, y, p, 0.7, w, reduction),
                 rtol=1e-12, atol=1e-12)
    fn = lambda t: F.multi_margin_loss(t, ember.tensor(y), p=p, margin=0.7, weight=weight,  # noqa: E731
                                       reduction=reduction)
    assert ember.autograd.gradcheck(fn, (f64(x, grad=True),))


def test_multi_margin_loss_shapes_legacy_arguments_and_errors():
    x, y = f64([0.1, 0.9, -0.3]), ember.tensor(1)
    assert F.multi_margin_loss(x, y, reduction="none").shape == ()
    assert F.multi_margin_loss(x, ember.tensor([1]), reduction="none").shape == (1,)
    assert_close(F.multi_margin_loss(x, y), np_multi_margin([0.1, 0.9, -0.3], [1], 1, 1.0, None,
                                                            "mean"), rtol=1e-12)
    x2, y2 = f64(np.ones((2, 3))), ember.tensor([0, 2])
    assert F.multi_margin_loss(x2, y2, reduce=False).shape == (2,)
    assert_close(F.multi_margin_loss(x2, y2, size_average=False), 2 * 2 / 3, rtol=1e-12)
    assert repr(nn.MultiMarginLoss(p=2, weight=ember.ones(3))) == "MultiMarginLoss()"
    assert nn.MultiMarginLoss(weight=ember.ones(3)).weight.shape == (3,)
    with pytest.raises(IndexError, match="target out of range"):
        F.multi_margin_loss(x2, ember.tensor([0, 3]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x2, y2, p=3)
    with pytest.raises(ValueError, match="inconsistent target size"):
        F.multi_margin_loss(x2, ember.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        nn.MultiMarginLoss(weight=ember.ones(3, 1))


# ---- pdist ---------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.5, math.inf])
def test_pdist_is_the_upper_triangle_of_the_pairwise_distances(p):
    x = np.random.default_rng(4).normal(size=(6, 3))
    want = []
    for i in range(6):
        for j in range(i + 1, 6):
            d = np.abs(x[i] - x[j])
            want.append(np.count_nonzero(d) if p == 0 else d.max() if p == math.inf
                        else (d ** p).sum() ** (1 / p))
    assert_close(F.pdist(f64(x), p), want, rtol=1e-12)
    assert_close(ember.pdist(f64(x), p), want, rtol=1e-12)
    if p >= 1 and p != math.inf:
        assert ember.autograd.gradcheck(lambda t: F.pdist(t, p), (f64(x, grad=True),))


def test_pdist_of_few_rows_and_errors():
    assert F.pdist(ember.zeros(1, 3)).shape == (0,)
    assert F.pdist(ember.zeros(0, 3)).shape == (0,)
    with pytest.raises(ValueError, match=r"\[pdist\] only supports 2-d"):
        F.pdist(ember.zeros(3))
    with pytest.raises(ValueError, match="non-negative p"):
        F.pdist(ember.zeros(2, 2), -1)


# ---- gumbel_softmax ---------------------------------------------------------------------------

def test_gumbel_softmax_samples_the_softmax_of_its_logits():
    ember.manual_seed(3)
    logits = ember.tensor([1.0, 0.0, -1.0, 2.0]).log_softmax(0)
    draws = logits.expand(40000, 4).contiguous()
    hard = F.gumbel_softmax(draws, tau=0.5, hard=True)
    assert set(np.unique(hard.numpy())) == {0.0, 1.0} and np.all(hard.numpy().sum(1) == 1)
    freq = hard.numpy().mean(0)
    want = np.exp(logits.numpy())  # Gumbel-max: argmax is distributed as the softmax
    assert np.all(np.abs(freq - want) < 4 * np.sqrt(want * (1 - want) / 40000)), (freq, want)
    soft = F.gumbel_softmax(draws, tau=0.5)
    assert_close(soft.sum(1), np.ones(40000), rtol=1e-5)
    assert np.all(soft.numpy() > 0)


def test_gumbel_softmax_hard_passes_the_soft_gradient_and_follows_dim():
    ember.manual_seed(4)
    logits = ember.randn(3, 5, requires_grad=True)
    ember.manual_seed(5)
    soft = F.gumbel_softmax(logits, tau=2.0, dim=0)
    ember.manual_seed(5)
    hard = F.gumbel_softmax(logits, tau=2.0, hard=True, dim=0)
    assert_close(hard.sum(0), np.ones(5))
    assert np.all(hard.argmax(0).numpy() == soft.argmax(0).numpy())
    w = ember.randn(3, 5)
    (g_soft,) = ember.autograd.grad((soft * w).sum(), [logits])
    (g_hard,) = ember.autograd.grad((hard * w).sum(), [logits])
    assert_close(g_hard, g_soft.numpy(), rtol=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.gumbel_softmax(logits, eps=1e-5)
    assert any("eps" in str(w.message) for w in caught)


# ---- lazy layers ------------------------------------------------------------------------------

def test_lazy_linear_becomes_a_linear_with_in_features_from_its_first_input():
    ember.manual_seed(0)
    m = nn.LazyLinear(4)
    assert isinstance(m, nn.Linear) and m.has_uninitialized_params()
    assert repr(m) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    weight = m.weight
    model = nn.Sequential(m, nn.ReLU())  # a C++ container calls it
    x = ember.randn(2, 3)
    y = model(x)
    assert type(m) is nn.Linear and m.in_features == 3 and m.weight is weight
    assert repr(m) == "Linear(in_features=3, out_features=4, bias=True)"
    assert m.weight.shape == (4, 3) and float(m.weight.abs().max()) <= 1 / math.sqrt(3)
    assert_close(y, np.maximum(x.numpy() @ m.weight.detach().numpy().T + m.bias.detach().numpy(),
                               0), rtol=1e-6)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)  # trains as a Linear
    model(x).sum().backward()
    opt.step()
    assert m.weight is weight and m.weight.grad.shape == (4, 3)


def test_lazy_layers_copy_pickle_and_become_their_class_from_python_calls():
    m = nn.LazyLinear(2, bias=False, dtype=ember.float64)
    c = copy.deepcopy(m)
    assert type(c) is nn.LazyLinear and c.has_uninitialized_params()
    m(ember.randn(5, 7, dtype=ember.float64))  # Module.__call__
    assert type(m) is nn.Linear and m.weight.dtype == ember.float64 and m.bias is None
    back = pickle.loads(pickle.dumps(m))
    assert type(back) is nn.Linear and back.in_features == 7
    assert_close(back.weight, m.weight.detach().numpy())
    x = ember.randn(3, 7, dtype=ember.float64)
    assert_close(back(x), m(x).detach().numpy())


@pytest.mark.parametrize("cls, shape, out_shape, become", [
    (nn.LazyConv1d, (2, 4, 9), (2, 6, 7), nn.Conv1d),
    (nn.LazyConv2d, (2, 4, 6, 6), (2, 6, 4, 4), nn.Conv2d),
    (nn.LazyConv3d, (1, 2, 4, 4, 4), (1, 6, 2, 2, 2), nn.Conv3d),
])
def test_lazy_convolutions_read_in_channels_from_their_first_input(cls, shape, out_shape, become):
    m = cls(6, 3, groups=2)
    assert repr(m).startswith(f"{cls.__name__}(0, 6, kernel_size=")
    x = ember.randn(*shape)
    y = m(x)
    assert type(m) is become and m.in_channels == shape[1] and y.shape == out_shape
    assert m.weight.shape[:2] == (6, shape[1] // 2)
    assert repr(m).startswith(f"{become.__name__}({shape[1]}, 6, kernel_size=")
    want = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}[become](
        x, m.weight, m.bias, groups=2)
    assert_close(y, want.detach().numpy())
    with pytest.raises(ValueError, match="divisible by groups=2"):
        cls(6, 3, groups=2)(ember.randn(*(shape[0], 3) + shape[2:]))


def test_lazy_names_are_in_pytorchs_module_files():
    assert nn.modules.linear.LazyLinear is nn.LazyLinear
    assert nn.modules.conv.LazyConv2d is nn.LazyConv2d
    assert nn.modules.dropout.FeatureAlphaDropout is nn.FeatureAlphaDropout
    assert nn.modules.activation.RReLU is nn.RReLU
    assert nn.modules.loss.MultiMarginLoss is nn.MultiMarginLoss


# ---- adaptive poolings keeping a size -------------------------------------------------------------

def test_adaptive_pooling_layers_keep_the_input_size_where_output_size_is_none():
    x = ember.randn(2, 3, 6, 10)
    m = nn.AdaptiveAvgPool2d((3, None))
    assert repr(m) == "AdaptiveAvgPool2d(output_size=(3, None))" and m.output_size == (3, None)
    assert_close(m(x), F.adaptive_avg_pool2d(x, (3, 10)).numpy())
    # A NumPy reference: mean over rows 2i, 2i+1 (6 rows to 3), columns kept.
    assert_close(m(x), x.numpy().reshape(2, 3, 3, 2, 10).mean(3), rtol=1e-5)
    mx = nn.AdaptiveMaxPool2d((None, 5), return_indices=True)
    values, indices = mx(x)
    want_v, want_i = F.adaptive_max_pool2d(x, (6, 5), return_indices=True)
    assert_close(values, want_v.numpy())
    assert_close(indices, want_i.numpy())
    assert_close(values, x.numpy().reshape(2, 3, 6, 5, 2).max(4))
    v = ember.randn(1, 2, 4, 6, 8)
    m3 = nn.AdaptiveAvgPool3d((None, 3, None))
    assert repr(m3) == "AdaptiveAvgPool3d(output_size=(None, 3, None))"
    assert_close(m3(v), v.numpy().reshape(1, 2, 4, 3, 2, 8).mean(4), rtol=1e-5)
    assert_close(nn.AdaptiveMaxPool3d((2, None, None))(v), v.numpy().reshape(1, 2, 2, 2, 6, 8).max(3))
    assert copy.deepcopy(m).output_size == (3, None)
    with pytest.raises(TypeError, match="output_size must be an int: got None"):
        nn.AdaptiveAvgPool1d(None)
    with pytest.raises(ValueError, match="sequence of 2 ints or Nones"):
        nn.AdaptiveAvgPool2d((1, 2, 3))


# ---- init.dirac_, init.sparse_, the deprecated names ------------------------------------------

@pytest.mark.parametrize("groups", [1, 2])
def test_dirac_init_makes_a_convolution_that_passes_channels_through(groups):
    w = nn.init.dirac_(ember.empty(4, 4 // groups, 3, 3), groups=groups)
    x = ember.randn(1, 4, 5, 5)
    assert_close(F.conv2d(x, w, padding=1, groups=groups), x.numpy())
    w1 = nn.init.dirac_(ember.empty(3, 5, 3))  # more inputs than outputs: the first three pass
    want = np.zeros((3, 5, 3))
    want[[0, 1, 2], [0, 1, 2], 1] = 1
    assert_close(w1, want)
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(ember.empty(3, 3))
    with pytest.raises(ValueError, match="divisible by groups=2"):
        nn.init.dirac_(ember.empty(3, 3, 3), groups=2)


def test_sparse_init_zeroes_the_asked_fraction_of_each_column():
    ember.manual_seed(0)
    w = nn.init.sparse_(ember.empty(10, 200), 0.25, std=0.5)
    zeros = (w.numpy() == 0).sum(0)
    assert np.all(zeros == 3)  # ceil(0.25 * 10)
    kept = w.numpy()[w.numpy() != 0]
    assert abs(kept.std() - 0.5) < 0.05
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(ember.empty(3), 0.1)


def test_deprecated_init_names_warn_and_initialise():
    t = ember.empty(3, 3)
    with pytest.warns(FutureWarning, match="nn.init.constant_"):
        assert nn.init.constant(t, 2.0) is t
    assert_close(t, np.full((3, 3), 2.0))
    with pytest.warns(FutureWarning):
        nn.init.orthogonal(t)
    assert_close(t.numpy() @ t.numpy().T, np.eye(3), atol=1e-5)
    for name in ("uniform", "normal", "eye", "dirac", "xavier_uniform", "xavier_normal",
                 "kaiming_uniform", "kaiming_normal", "sparse"):
        assert callable(getattr(nn.init, name))


# ---- nn.utils: fusion, norms, memory formats -----------------------------------------------------

def _trained_bn(features, dims):
    bn = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d}[dims](features)
    with ember.no_grad():
        bn.running_mean.copy_(ember.randn(features))
        bn.running_var.copy_(ember.rand(features) + 0.5)
        bn.weight.copy_(ember.randn(features))
        bn.bias.copy_(ember.randn(features))
    return bn.eval()


@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval_computes_the_convolution_then_the_batch_norm(bias):
    ember.manual_seed(1)
    conv = nn.Conv2d(3, 4, 3, bias=bias).eval()
    bn = _trained_bn(4, 2)
    x = ember.randn(2, 3, 6, 6)
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and type(fused) is nn.Conv2d and fused.bias is not None
    assert_close(fused(x), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    # The formula in float64 NumPy.
    scale = bn.weight.detach().numpy() / np.sqrt(bn.running_var.numpy() + bn.eps)
    w, b = nn.utils.fuse_conv_bn_weights(conv.weight, conv.bias, bn.running_mean, bn.running_var,
                                         bn.eps, bn.weight, bn.bias)
    assert isinstance(w, nn.Parameter) and w.requires_grad
    assert_close(w, conv.weight.detach().numpy() * scale[:, None, None, None], rtol=1e-5)
    conv_b = conv.bias.detach().numpy() if bias else 0
    assert_close(b, (conv_b - bn.running_mean.numpy()) * scale + bn.bias.detach().numpy(),
                 rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="only for eval"):
        nn.utils.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_conv_transpose_and_linear_with_batch_norm():
    ember.manual_seed(2)
    deconv = nn.ConvTranspose2d(3, 4, 2).eval()
    bn = _trained_bn(4, 2)
    x = ember.randn(1, 3, 4, 4)
    fused = nn.utils.fuse_conv_bn_eval(deconv, bn, transpose=True)
    assert_close(fused(x), bn(deconv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    linear = nn.Linear(5, 4).eval()
    bn1 = _trained_bn(4, 1)
    x = ember.randn(6, 5)
    fused = nn.utils.fuse_linear_bn_eval(linear, bn1)
    assert_close(fused(x), bn1(linear(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    w, b = nn.utils.fuse_linear_bn_weights(linear.weight, None, bn1.running_mean,
                                           bn1.running_var, bn1.eps, bn1.weight, bn1.bias)
    scale = bn1.weight.detach().numpy() / np.sqrt(bn1.running_var.numpy() + bn1.eps)
    assert_close(b, -bn1.running_mean.numpy() * scale + bn1.bias.detach().numpy(), rtol=1e-5)
    with pytest.raises(ValueError, match="linear.out_features == bn.num_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(5, 3).eval(), bn1)


def test_total_norm_clipping_with_a_norm_and_the_deprecated_clip_grad_norm():
    a, b = ember.tensor([3.0, 0.0]), ember.tensor([[4.0]])
    assert_close(nn.utils.get_total_norm([a, b]), 5.0)
    assert_close(nn.utils.get_total_norm([a, b], 1.0), 7.0)
    assert_close(nn.utils.get_total_norm([a, b], math.inf), 4.0)
    p = nn.Parameter(ember.zeros(2))
    p.grad = ember.tensor([3.0, 4.0])
    nn.utils.clip_grads_with_norm_([p], 1.0, ember.tensor(5.0))
    assert_close(p.grad, [0.6, 0.8], rtol=1e-5)
    p.grad = ember.tensor([3.0, 4.0])
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        norm = nn.utils.clip_grad_norm([p], 10.0)
    assert_close(norm, 5.0)
    assert_close(p.grad, [3.0, 4.0])


def test_conv_weight_memory_formats_and_skip_init():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.Conv2d(4, 4, 1)), nn.Linear(2, 2))
    weight = model[0].weight
    assert nn.utils.convert_conv2d_weight_memory_format(model, ember.channels_last) is model
    assert model[0].weight is weight
    assert model[0].weight.is_contiguous(memory_format=ember.channels_last)
    assert model[1][0].weight.is_contiguous(memory_format=ember.channels_last)
    m = nn.utils.skip_init(nn.Linear, 3, 4)
    assert type(m) is nn.Linear and m.weight.shape == (4, 3)


# ---- torch's function forms --------------------------------------------------------------------

def test_torch_function_forms_of_methods_and_constants():
    x = ember.tensor([-1.5, 2.0])
    assert ember.abs_(x) is x and x.tolist() == [1.5, 2.0]
    assert ember.clamp_(x, max=1.75) is x and x.tolist() == [1.5, 1.75]
    assert ember.is_floating_point(x) and not ember.is_complex(x)
    assert ember.zero_(x).tolist() == [0.0, 0.0]
    assert (ember.e, ember.pi, ember.inf, ember.newaxis) == (math.e, math.pi, math.inf, None)
    assert math.isnan(ember.nan)
    assert ember.zeros(2, 3)[ember.newaxis].shape == (1, 2, 3)


def test_torch_functional_forms_take_torchs_argument_order_and_integer_reductions():
    ember.manual_seed(0)
    x = ember.randn(4, 3, 5, dtype=ember.float64)
    w, b = ember.randn(3, dtype=ember.float64), ember.randn(3, dtype=ember.float64)
    mean, var = ember.randn(3, dtype=ember.float64), ember.rand(3, dtype=ember.float64) + 0.5
    assert_close(ember.batch_norm(x, w, b, mean, var, False, 0.1, 1e-5, True),
                 F.batch_norm(x, mean, var, w, b, False, 0.1, 1e-5).numpy(), rtol=1e-12)
    assert_close(ember.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
                 F.instance_norm(x, None, None, w, b, True, 0.1, 1e-5).numpy(), rtol=1e-12)
    assert_close(ember.layer_norm(x, [5]), F.layer_norm(x, [5]).numpy(), rtol=1e-12)
    assert_close(ember.group_norm(x, 3, w, b), F.group_norm(x, 3, w, b).numpy(), rtol=1e-12)
    table = ember.randn(10, 4)
    idx = ember.tensor([[1, 0, 9]])
    assert_close(ember.embedding(table, idx), table.numpy()[[[1, 0, 9]]])
    a, t = ember.randn(6, 3).log_softmax(1), ember.randn(6, 3).softmax(1)
    for code, name in enumerate(("none", "mean", "sum")):
        assert_close(ember.kl_div(a, t, code), F.kl_div(a, t, reduction=name).numpy())
        y = ember.tensor([1.0, -1.0, 1.0, 1.0, -1.0, 1.0])
        assert_close(ember.hinge_embedding_loss(a[:, 0], y, 1.0, code),
                     F.hinge_embedding_loss(a[:, 0], y, 1.0, reduction=name).numpy())
    with pytest.raises(ValueError, match="reduction must be 0"):
        ember.kl_div(a, t, "mean")
    assert ember.conv2d is F.conv2d and ember.selu_ is F.selu_
    ember.manual_seed(1)
    dropped = ember.dropout(ember.ones(1000), 0.5, True)
    assert set(np.unique(dropped.numpy())) == {0.0, 2.0}
    assert ember.dropout(x, 0.5, False) is x or np.array_equal(ember.dropout(x, 0.5, False), x)


def test_deprecated_autocast_getters_and_tensor_resize():
    with pytest.warns(DeprecationWarning, match=r"get_autocast_dtype\('cuda'\)"):
        assert ember.get_autocast_gpu_dtype() == ember.get_autocast_dtype("cuda")
    with pytest.warns(DeprecationWarning):
        assert ember.get_autocast_cpu_dtype() == ember.get_autocast_dtype("cpu")
    with pytest.warns(DeprecationWarning):
        assert ember.is_autocast_cpu_enabled() is False
    x = ember.arange(6.0, requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(2, 3)
    assert y.shape == (2, 3) and y.tolist() == [[0, 1, 2], [3, 4, 5]]
    (y * ember.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.tolist() == [0, 1, 2, 3, 4, 5]
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="preserving the number"):
        x.resize(4, 2)


# ---- DataParallel, StackDataset, invert_permutation, ASGD -------------------------------------

def test_data_parallel_wraps_its_module_as_pytorch_names_it():
    inner = nn.Linear(3, 2)
    dp = nn.DataParallel(inner)
    assert dp.module is inner
    assert list(dp.state_dict()) == ["module.weight", "module.bias"]
    x = ember.randn(4, 3)
    assert_close(dp(x), inner(x).detach().numpy())
    if not ember.cuda.is_available():
        assert dp.device_ids == []


def test_stack_dataset_and_invert_permutation():
    from ember.utils.data import DataLoader, StackDataset, TensorDataset
    a = TensorDataset(ember.arange(5.0))
    b = [f"s{i}" for i in range(5)]
    pairs = StackDataset(a, b)
    assert len(pairs) == 5 and pairs[2] == (a[2], "s2")
    named = StackDataset(x=a, name=b)
    assert named[4]["name"] == "s4"
    batch = next(iter(DataLoader(named, batch_size=3)))
    assert batch["name"] == ["s0", "s1", "s2"] and batch["x"][0].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, b[:3])
    perm = ember.tensor([2, 0, 3, 1])
    inv = nn.utils.rnn.invert_permutation(perm)
    assert inv.tolist() == [1, 3, 0, 2] and perm[inv].tolist() == [0, 1, 2, 3]
    assert nn.utils.rnn.invert_permutation(None) is None


def test_asgd_matches_pytorch():
    w = nn.Parameter(ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64))
    opt = ember.optim.ASGD([w], lr=0.1, lambd=0.01, alpha=0.75, t0=2, weight_decay=0.05)
    for _ in range(5):
        opt.zero_grad()
        ((w ** 2).sum() + w.sum()).backward()
        opt.step()
    # PyTorch 2.15, same arguments and steps.
    assert_close(w, [-0.015759851442778614, -0.9643232887250098, -0.17385375765648386],
                 rtol=1e-12)
    state = opt.state[w]
    assert_close(state["ax"], [0.044938801849344436, -1.0262121116895273, -0.13358635040713426],
                 rtol=1e-12)
    assert_close(state["eta"], 0.09962663054466248, rtol=1e-7)
    assert_close(state["mu"], 0.3333333432674408, rtol=1e-7)
    assert set(opt.state_dict()["state"][0]) == {"step", "eta", "mu", "ax"}
    with pytest.raises(ValueError, match="Invalid learning rate"):
        ember.optim.ASGD([w], lr=-1)
