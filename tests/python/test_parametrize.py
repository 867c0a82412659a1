"""torch.nn.utils.parametrize, parametrizations (weight_norm, spectral_norm, orthogonal) and
stateless.functional_call: PyTorch's state-dict keys and reprs, values against NumPy float64
and PyTorch's orthogonal maps (fixtures/parametrizations.npz), gradients to the originals, and
C++ layers reading the parametrized value on every call path."""

import copy
import pathlib
import pickle

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.utils import parametrizations, parametrize, stateless
from helpers import assert_close

FIXTURES = pathlib.Path(__file__).with_name("fixtures")


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.s

    def right_inverse(self, y):
        return y / self.s


def sym(a):
    return np.triu(a) + np.triu(a, 1).T


def test_register_parametrization_makes_a_c_plus_plus_layer_compute_with_the_parametrized_value():
    ember.manual_seed(0)
    layer = nn.Linear(3, 3, dtype=ember.float64)
    w0 = layer.weight.detach().numpy().copy()
    original = layer.weight
    assert parametrize.register_parametrization(layer, "weight", Symmetric()) is layer
    assert parametrize.is_parametrized(layer) and parametrize.is_parametrized(layer, "weight")
    assert not parametrize.is_parametrized(layer, "bias")
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, nn.Linear)
    assert parametrize.type_before_parametrizations(layer) is nn.Linear
    assert layer.parametrizations.weight.original is original  # the same tensor, now the original
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in layer.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert repr(layer) == ("ParametrizedLinear(\n"
                           "  in_features=3, out_features=3, bias=True\n"
                           "  (parametrizations): ModuleDict(\n"
                           "    (weight): ParametrizationList(\n"
                           "      (0): Symmetric()\n"
                           "    )\n"
                           "  )\n"
                           ")")
    assert_close(layer.weight, sym(np.triu(w0)), rtol=1e-12)
    x = ember.randn(2, 3, dtype=ember.float64)
    b = layer.bias.detach().numpy()
    model = nn.Sequential(layer)  # a C++ container: the C++ forward reads the slot
    for y in (layer(x), model(x)):
        assert_close(y, x.numpy() @ sym(np.triu(w0)).T + b, rtol=1e-12)
    with ember.no_grad():
        original.add_(1.0)  # the value follows the original on the next call
    assert_close(model(x), x.numpy() @ sym(np.triu(w0) + 1).T + b, rtol=1e-12)
    g = ember.randn(2, 3, dtype=ember.float64)
    (layer(x) * g).sum().backward()
    full = g.numpy().T @ x.numpy()  # dL/dW of x @ W^T
    assert_close(original.grad, np.triu(full) + np.tril(full, -1).T, rtol=1e-12)


def test_chained_parametrizations_assignment_cached_and_removal():
    layer = nn.Linear(3, 3, dtype=ember.float64)
    original = layer.weight
    w0 = layer.weight.detach().numpy().copy()
    parametrize.register_parametrization(layer, "weight", Symmetric())
    scale = Scale(2.0)
    parametrize.register_parametrization(layer, "weight", scale)
    assert len(layer.parametrizations.weight) == 2
    assert_close(layer.weight, 2 * sym(np.triu(w0)), rtol=1e-12)
    target = sym(np.arange(9.0).reshape(3, 3))
    layer.weight = ember.tensor(target)  # right_inverse, last parametrization first
    assert_close(layer.weight, target, rtol=1e-12)
    assert_close(layer.parametrizations.weight.original, np.triu(target) / 2, rtol=1e-12)
    scale.calls = 0
    with parametrize.cached():
        layer.weight
        layer.weight
    assert scale.calls == 1
    layer.weight
    assert scale.calls == 2
    parametrize.remove_parametrizations(layer, "weight")
    assert type(layer) is nn.Linear and repr(layer).startswith("Linear(")
    assert layer.weight is original and isinstance(layer.weight, nn.Parameter)
    assert_close(layer.weight, target, rtol=1e-12)
    assert list(layer.state_dict()) == ["bias", "weight"]  # re-registered last, as in PyTorch
    x = ember.randn(4, 3, dtype=ember.float64)
    assert_close(layer(x), x.numpy() @ target.T + layer.bias.detach().numpy(), rtol=1e-12)
    parametrize.register_parametrization(layer, "weight", Scale(3.0))
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    assert_close(layer.weight, target / 3, rtol=1e-12)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(layer, "weight")


def test_parametrize_errors_and_a_python_module():
    layer = nn.Linear(2, 3)
    with pytest.raises(ValueError, match="may not change the shape"):
        parametrize.register_parametrization(layer, "weight", Transposing())
    parametrize.register_parametrization(layer, "weight", Transposing(), unsafe=True)
    assert layer.weight.shape == (2, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nothing", Symmetric())

    class Affine(nn.Module):  # forward reads self.weight: the property, evaluated once per call
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(ember.ones(2, 2))

        def forward(self, x):
            return x @ self.weight

    m = Affine()
    scale = Scale(5.0)
    parametrize.register_parametrization(m, "weight", scale)
    scale.calls = 0
    assert_close(m(ember.ones(1, 2)), [[2.0, 2.0]])  # right_inverse made the original ones / 5
    assert scale.calls == 1


class Transposing(nn.Module):
    def forward(self, x):
        return x.t()


def test_parametrized_modules_deepcopy_but_do_not_pickle():
    layer = nn.Linear(3, 3, dtype=ember.float64)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    twin = copy.deepcopy(layer)
    assert type(twin) is type(layer) and twin.parametrizations.weight.original is not \
        layer.parametrizations.weight.original
    x = ember.randn(2, 3, dtype=ember.float64)
    assert_close(twin(x), layer(x).detach().numpy(), rtol=1e-12)
    with ember.no_grad():
        twin.parametrizations.weight.original.mul_(2)
    assert not np.allclose(twin(x).detach().numpy(), layer(x).detach().numpy())
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(layer)
    fresh = nn.Linear(3, 3, dtype=ember.float64)
    parametrize.register_parametrization(fresh, "weight", Symmetric())
    fresh.load_state_dict(layer.state_dict())
    assert_close(fresh(x), layer(x).detach().numpy(), rtol=1e-12)


def test_weight_norm_parametrization_has_pytorchs_keys_and_values():
    ember.manual_seed(1)
    layer = nn.Linear(3, 4, dtype=ember.float64)
    w = layer.weight.detach().numpy().copy()
    parametrizations.weight_norm(layer)
    sd = layer.state_dict()
    assert list(sd) == ["bias", "parametrizations.weight.original0",
                        "parametrizations.weight.original1"]
    assert_close(sd["parametrizations.weight.original0"],
                 np.linalg.norm(w, axis=1, keepdims=True), rtol=1e-12)
    assert_close(sd["parametrizations.weight.original1"], w, rtol=1e-12)
    assert_close(layer.weight, w, rtol=1e-12)
    with ember.no_grad():
        layer.parametrizations.weight.original0.mul_(3)
    x = ember.randn(2, 3, dtype=ember.float64)
    assert_close(layer(x), x.numpy() @ (3 * w).T + layer.bias.detach().numpy(), rtol=1e-12)
    g_v = lambda g, v: F.linear(x, v * (g / v.norm(dim=1, keepdim=True)))  # noqa: E731
    assert ember.autograd.gradcheck(g_v, (layer.parametrizations.weight.original0.detach()
                                          .requires_grad_(), layer.parametrizations.weight
                                          .original1.detach().requires_grad_()))
    whole = nn.Conv2d(2, 3, 3)
    parametrizations.weight_norm(whole, dim=None)
    assert whole.parametrizations.weight.original0.shape == ()
    conv = nn.Conv2d(2, 3, 3)
    parametrizations.weight_norm(conv, dim=1)
    assert conv.parametrizations.weight.original0.shape == (1, 2, 1, 1)


def test_spectral_norm_parametrization_divides_by_the_largest_singular_value():
    ember.manual_seed(2)
    layer = nn.Linear(5, 4, dtype=ember.float64)
    w = layer.weight.detach().numpy().copy()
    parametrizations.spectral_norm(layer)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original",
                                        "parametrizations.weight.0._u",
                                        "parametrizations.weight.0._v"]
    sigma = np.linalg.svd(w, compute_uv=False)[0]
    layer.eval()
    assert_close(layer.weight, w / sigma, rtol=1e-4)
    u = layer.parametrizations.weight[0]._u.numpy().copy()
    layer(ember.randn(2, 5, dtype=ember.float64))
    assert np.array_equal(layer.parametrizations.weight[0]._u.numpy(), u)  # eval: no iteration
    layer.train()
    for _ in range(20):
        layer(ember.randn(2, 5, dtype=ember.float64))
    assert_close(np.linalg.svd(layer.weight.detach().numpy(), compute_uv=False)[0], 1.0,
                 rtol=1e-6)
    deconv = nn.ConvTranspose2d(3, 2, 2)
    parametrizations.spectral_norm(deconv)
    assert deconv.parametrizations.weight[0]._u.shape == (2,)  # dim 1: output channels
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        parametrizations.spectral_norm(nn.Linear(2, 2), "nope")


@pytest.mark.parametrize("shape", ["square", "wide", "tall"])
@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_maps_match_pytorchs(shape, orthogonal_map):
    want = np.load(FIXTURES / "parametrizations.npz")
    x = want[f"{shape}_original"]
    layer = nn.Linear(x.shape[1], x.shape[0], bias=False, dtype=ember.float64)
    parametrizations.orthogonal(layer, orthogonal_map=orthogonal_map, use_trivialization=False)
    with ember.no_grad():
        layer.parametrizations.weight.original.copy_(ember.tensor(x))
    assert_close(layer.weight, want[f"{shape}_{orthogonal_map}"], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("out_features, in_features", [(4, 4), (3, 5), (5, 3)])
def test_orthogonal_keeps_the_weight_orthogonal_while_training(out_features, in_features):
    ember.manual_seed(3)
    layer = nn.Linear(in_features, out_features, dtype=ember.float64)
    parametrizations.orthogonal(layer)
    assert list(layer.state_dict()) == ["bias", "parametrizations.weight.original",
                                        "parametrizations.weight.0.base"]
    opt = ember.optim.SGD(layer.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        layer(ember.randn(8, in_features, dtype=ember.float64)).pow(2).sum().backward()
        opt.step()
    w = layer.weight.detach().numpy()
    gram = w @ w.T if out_features <= in_features else w.T @ w
    assert_close(gram, np.eye(min(w.shape)), atol=1e-10)
    a = np.random.default_rng(5).normal(size=(out_features, in_features))
    q = np.linalg.qr(a.T)[0].T if out_features <= in_features else np.linalg.qr(a)[0]
    layer.weight = ember.tensor(q)  # assigning an orthogonal matrix sets the weight to it
    assert_close(layer.weight, q, atol=1e-10)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        parametrizations.orthogonal(nn.Linear(2, 2), orthogonal_map="qr")
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        parametrizations.orthogonal(nn.Linear(2, 2), "bias")


def test_functional_call_swaps_parameters_and_buffers_for_one_call():
    ember.manual_seed(4)
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model.eval()
    weight = model[0].weight
    x = ember.randn(5, 3)
    w = ember.randn(2, 3, requires_grad=True)
    mean = ember.tensor([1.0, -1.0])
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        y = stateless.functional_call(model, {"0.weight": w, "1.running_mean": mean}, (x,))
    bn = model[1]
    lin = x.numpy() @ w.detach().numpy().T + model[0].bias.detach().numpy()
    want = (lin - mean.numpy()) / np.sqrt(bn.running_var.numpy() + bn.eps) * \
        bn.weight.detach().numpy() + bn.bias.detach().numpy()
    assert_close(y, want, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert w.grad is not None and weight.grad is None  # the gradient went to the given tensor
    assert model[0].weight is weight and np.allclose(bn.running_mean.numpy(), 0)
    assert [n for n, _ in model.named_parameters()][0] == "0.weight"
    with pytest.raises(KeyError, match="missing key"):
        with pytest.warns(FutureWarning):
            stateless.functional_call(model, {"0.weight": w}, x, strict=True)
