"""ember.nn from Python: Module subclassed in Python (registration by attribute, parameters,
buffers, state dicts, modes, devices, hooks), Python and C++ modules nested both ways, the
layers against float64 references and PyTorch, containers and nn.init."""

import copy
import gc
import math
import pathlib
import pickle
import weakref

import numpy as np
import pytest

import ember
from ember import nn

F = nn.functional
from ember.nn import functional as F
from helpers import assert_close


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 2)
        self.scale = nn.Parameter(ember.ones(2))
        self.register_buffer("calls", ember.zeros((), dtype=ember.int64))
        self.register_buffer("scratch", ember.zeros(3), persistent=False)
        self.note = "plain attributes stay Python attributes"

    def forward(self, x):
        self.calls += 1
        return self.fc2(self.act(self.fc1(x))) * self.scale


def test_attributes_register_parameters_buffers_and_submodules():
    m = TwoLayer()
    assert [n for n, _ in m.named_parameters()] == [
        "scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())
    assert [n for n, _ in m.named_buffers()] == ["calls", "scratch"]
    assert [n for n, _ in m.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert list(m.state_dict()) == ["scale", "calls", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert m.note.startswith("plain") and "note" in m.__dict__
    assert "fc1" not in m.__dict__ and m.fc1 is m.fc1
    assert "fc1" in dir(m) and "scale" in dir(m)
    assert sum(p.numel() for p in m.parameters()) == 4 * 8 + 8 + 8 * 2 + 2 + 2
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        m.missing


def test_forward_and_backward_through_a_python_module():
    m = TwoLayer()
    x = ember.randn(5, 4)
    y = m(x)
    assert y.shape == (5, 2) and m.calls.item() == 1
    y.sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_replacing_and_deleting_attributes():
    m = TwoLayer()
    old = m.fc1.weight
    m.fc1 = nn.Linear(4, 8, bias=False)
    assert m.fc1.bias is None and m.fc1.weight is not old
    assert "fc1.bias" not in dict(m.named_parameters())
    p = nn.Parameter(ember.zeros(2))
    m.scale = p
    assert m.scale is p
    m.calls = ember.tensor(5)
    assert m.calls.item() == 5
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        m.scale = ember.zeros(2)
    with pytest.raises(TypeError, match="as child module 'fc2'"):
        m.fc2 = 3
    m.scale = None
    assert m.scale is None and "scale" not in dict(m.named_parameters())
    del m.fc2
    assert "fc2" not in dict(m.named_children())
    with pytest.raises(AttributeError):
        m.fc2
    m.register_parameter("extra", nn.Parameter(ember.ones(1)))
    m.add_module("head", nn.Linear(2, 1))
    assert m.get_submodule("head") is m.head and m.get_parameter("head.bias").shape == (1,)


def test_parameters_shared_by_a_module_and_the_user_are_one_tensor():
    w = nn.Parameter(ember.ones(3))
    m = nn.Module()
    m.w = w
    (m.w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    opt_state = {w: "found"}
    assert opt_state[next(m.parameters())] == "found"


def test_state_dict_round_trip_and_strictness():
    a, b = TwoLayer(), TwoLayer()
    x = ember.randn(3, 4)
    assert not ember.equal(a(x), b(x))
    sd = a.state_dict()
    assert all(not t.requires_grad for t in sd.values())
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert ember.equal(a(x), b(x))
    partial = {k: v for k, v in sd.items() if not k.startswith("fc2")}
    partial["stray"] = ember.zeros(1)
    with pytest.raises(ValueError, match="missing keys.*fc2.weight.*unexpected keys.*stray"):
        b.load_state_dict(partial)
    r = b.load_state_dict(partial, strict=False)
    assert r.missing_keys == ["fc2.weight", "fc2.bias"] and r.unexpected_keys == ["stray"]
    bad = dict(sd)
    bad["fc1.weight"] = ember.zeros(2, 2)
    before = b.fc1.weight.clone()
    with pytest.raises(ValueError, match="size mismatch"):
        b.load_state_dict(bad)
    assert ember.equal(b.fc1.weight, before)  # nothing changed


def test_train_eval_to_apply_requires_grad():
    m = nn.Sequential(TwoLayer(), nn.Dropout(0.5), nn.BatchNorm1d(2))
    assert m.training and m[0].training and m[2].training
    assert m.eval() is m and not m.training and not m[0].training and not m[0].fc1.training
    m.train()
    assert m[2].training
    m[0].training = False  # this module alone
    assert not m[0].training and m[0].fc1.training
    assert m.to(ember.float64) is m and m[0].fc1.weight.dtype is ember.float64
    assert m[2].running_mean.dtype is ember.float64 and m[0].calls.dtype is ember.int64
    assert m.float()[0].scale.dtype is ember.float32
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "TwoLayer", "Dropout", "BatchNorm1d", "Sequential"]
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    assert m.to("cpu") is m and m.cpu() is m


def test_python_modules_inside_cpp_containers_inside_python_modules():
    class Scale(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = nn.Parameter(ember.tensor([float(k)]))

        def forward(self, x):
            return x * self.k

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(3, 3), Scale(2), nn.ReLU(), nn.ModuleList([Scale(5)])[0])

        def forward(self, x):
            return self.body(x) + 1

    m = Outer()
    x = ember.randn(4, 3)
    lin = m.body[0]
    expected = (ember.relu(lin(x) * 2) * 5) + 1
    assert_close(m(x), expected, rtol=1e-6)
    assert type(m.body[1]) is Scale and m.body[1].k.item() == 2.0
    assert [n for n, _ in m.named_parameters()] == ["body.0.weight", "body.0.bias", "body.1.k", "body.3.k"]
    m(x).sum().backward()
    assert m.body[1].k.grad is not None
    assert "Scale()" in repr(m) and "Linear(in_features=3, out_features=3, bias=True)" in repr(m)


def test_subclassing_a_cpp_layer_overrides_forward_for_cpp_callers():
    class Doubled(nn.Linear):
        def forward(self, x):
            return super().forward(x) * 2

        def extra_repr(self):
            return "doubled"

    d = Doubled(2, 2)
    x = ember.randn(1, 2)
    plain = ember.nn.functional.linear(x, d.weight, d.bias)
    assert_close(d(x), plain * 2)
    seq = nn.Sequential(d)  # the C++ container calls the Python override
    assert_close(seq(x), plain * 2)
    assert repr(d) == "Doubled(doubled)" and d.in_features == 2


def test_forward_hooks_run_on_both_call_paths():
    calls = []
    lin = nn.Linear(2, 2)
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append(("pre", args[0].shape)))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(("post", out.shape)))
    x = ember.randn(3, 2)
    lin(x)
    nn.Sequential(lin)(x)  # called by C++
    assert calls == [("pre", (3, 2)), ("post", (3, 2))] * 2
    h1.remove()
    h2.remove()
    lin(x)
    assert len(calls) == 4
    lin.register_forward_hook(lambda m, args, out: out * 0)
    assert lin(x).abs().sum().item() == 0  # a returned value replaces the output
    lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    assert lin(ember.ones(1, 2)).abs().sum().item() == 0


def test_forward_hook_results_replace_values_when_a_cpp_container_calls():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.ReLU())  # runs lin through the C++ call path
    x = ember.ones(1, 2)
    lin.register_forward_hook(lambda m, args, out: out * 0 - 1)
    assert seq(x).tolist() == [[0.0, 0.0]] and lin(x).tolist() == [[-1.0, -1.0]]
    pre = nn.Linear(2, 2)
    pre.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    assert_close(nn.Sequential(pre)(x), pre.bias.detach().numpy()[None, :])
    bad = nn.Linear(2, 2)
    bad.register_forward_hook(lambda m, args, out: "not a tensor")
    with pytest.raises(TypeError, match="forward hook returned str"):
        nn.Sequential(bad)(x)


def _regression(dtype):
    ember.manual_seed(3)
    x = ember.randn(64, 3, dtype=dtype)
    y = x @ ember.tensor([[1.0], [-2.0], [0.5]], dtype=dtype)
    return x, y


@pytest.mark.parametrize("convert", ["double", "to_dtype", "half_then_double"])
@pytest.mark.parametrize("make_opt", ["SGD", "Adam", "python"])
def test_an_optimizer_made_before_a_conversion_still_trains_the_model(convert, make_opt):
    class PySGD(ember.optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, dict(lr=lr))

        @ember.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])

    model = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
    params = list(model.parameters())
    opt = {"SGD": lambda: ember.optim.SGD(params, lr=0.05, momentum=0.9),
           "Adam": lambda: ember.optim.Adam(params, lr=0.01),
           "python": lambda: PySGD(params, lr=0.05)}[make_opt]()
    x32, y32 = _regression(ember.float32)
    ember.nn.functional.mse_loss(model(x32), y32).backward()
    opt.step()  # optimizer state (momentum, moments) made in float32
    if convert == "double":
        assert model.double() is model
    elif convert == "to_dtype":
        model.to(ember.float64)
    else:
        model.half()
        assert all(p.dtype == ember.float16 for p in params)
        model.to(dtype=ember.float64)
    assert list(model.parameters()) == params and all(a is b for a, b in zip(model.parameters(), params))
    assert all(p.dtype == ember.float64 and p.is_leaf and p.requires_grad for p in params)
    assert all(p.grad is None or p.grad.dtype == ember.float64 for p in params)
    assert model[1].running_mean.dtype == ember.float64 and model[1].num_batches_tracked.dtype == ember.int64
    x, y = _regression(ember.float64)
    before = [p.detach().clone() for p in params]
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ember.nn.functional.mse_loss(model(x), y)
        assert loss.dtype == ember.float64
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    # Every parameter but the first layer's bias, whose gradient the batch norm cancels, moved.
    changed = [not ember.equal(p.detach(), b) for p, b in zip(params, before)]
    assert changed[0] and all(changed[2:])


def test_assigning_data_keeps_the_tensor_and_takes_the_new_data():
    p = nn.Parameter(ember.ones(2))
    q = ember.arange(6, dtype=ember.float64).reshape(2, 3)
    p.data = q
    assert isinstance(p, nn.Parameter) and p.requires_grad and p.is_leaf
    assert p.dtype == ember.float64 and p.shape == (2, 3) and p.tolist() == q.tolist()
    q[0, 0] = 7.0  # PyTorch's .data assignment shares the assigned tensor's memory
    assert p[0, 0].item() == 7.0
    (p * 2).sum().backward()
    assert p.grad.dtype == ember.float64 and p.grad.shape == (2, 3)


def test_modules_are_freed_with_their_python_objects():
    m = TwoLayer()
    seq = nn.Sequential(m)
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is not None  # the container keeps it
    del seq
    gc.collect()
    assert ref() is None


def test_uninitialised_module_is_a_clear_error():
    class NoInit(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="before Module.__init__"):
        NoInit()


def test_containers():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    seq.append(nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[-1], nn.Linear) and isinstance(seq[0:2], nn.Sequential)
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    from collections import OrderedDict
    named = nn.Sequential(OrderedDict([("a", nn.Linear(1, 2)), ("b", nn.Tanh())]))
    assert [n for n, _ in named.named_children()] == ["a", "b"] and isinstance(named.a, nn.Linear)
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml[0] = nn.Identity()
    assert len(ml) == 4 and isinstance(ml[0], nn.Identity) and len(list(ml.parameters())) == 4
    md = nn.ModuleDict({"enc": nn.Linear(2, 2), "dec": nn.Linear(2, 2)})
    assert md.keys() == ["enc", "dec"] and "enc" in md and len(md) == 2
    assert [n for n, _ in md.named_parameters()][:2] == ["enc.weight", "enc.bias"]
    pl = nn.ParameterList([ember.ones(2), ember.zeros(3)])
    assert len(pl) == 2 and pl[1].shape == (3,) and len(list(pl.parameters())) == 2
    pd = nn.ParameterDict({"a": ember.ones(1)})
    assert pd["a"].requires_grad and list(pd.keys()) == ["a"]


def test_linear_conv_norm_layers_against_references(rng):
    lin = nn.Linear(4, 3, dtype=ember.float64)
    x = rng.standard_normal((2, 4))
    assert_close(lin(ember.tensor(x)), x @ lin.weight.detach().numpy().T + lin.bias.detach().numpy())
    bound = 1 / math.sqrt(4)
    assert lin.weight.abs().max().item() <= bound  # PyTorch's default init range
    conv = nn.Conv2d(2, 3, 3, padding=1, bias=False)
    assert conv.kernel_size == (3, 3) and conv.padding == (1, 1) and conv.bias is None
    assert conv(ember.randn(1, 2, 5, 5)).shape == (1, 3, 5, 5)
    assert nn.Conv2d(2, 3, (3, 5), stride=(1, 2), padding="valid")(ember.randn(1, 2, 7, 9)).shape == (1, 3, 5, 3)
    bn = nn.BatchNorm2d(2, momentum=0.5)
    data = rng.standard_normal((4, 2, 3, 3))
    y = bn(ember.tensor(data, dtype=ember.float32))
    mean = data.mean(axis=(0, 2, 3))
    assert_close(bn.running_mean, 0.5 * mean, rtol=1e-5, atol=1e-6)
    assert_close(bn.running_var, 0.5 + 0.5 * data.var(axis=(0, 2, 3), ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    z = bn(ember.tensor(data, dtype=ember.float32))
    assert not ember.equal(y, z)
    ln = nn.LayerNorm(3, bias=False)
    assert ln.bias is None and ln(ember.randn(2, 3)).shape == (2, 3)
    emb = nn.Embedding(10, 4, padding_idx=0)
    assert emb.weight[0].abs().sum().item() == 0
    assert emb(ember.tensor([[1, 0]])).shape == (1, 2, 4)
    frozen = nn.Embedding(3, 2, _weight=ember.ones(3, 2), _freeze=True)
    assert not frozen.weight.requires_grad


def test_layer_constructor_errors():
    with pytest.raises(ValueError):
        nn.Linear(-1, 2)
    with pytest.raises(ValueError, match="padding_mode must be"):
        nn.Conv2d(1, 1, 3, padding_mode="constant")
    with pytest.raises(ValueError, match="padding_mode must be"):
        nn.Conv1d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="same"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(TypeError):
        nn.Linear("4", 2)


def test_losses_as_modules(rng):
    logits = ember.tensor(rng.standard_normal((4, 3)))
    target = ember.tensor([0, 2, 1, 2])
    assert_close(nn.CrossEntropyLoss()(logits, target), ember.nn.functional.cross_entropy(logits, target))
    assert nn.CrossEntropyLoss(reduction="sum").reduction == "sum"
    assert nn.MSELoss()(ember.ones(2), ember.zeros(2)).item() == 1.0
    assert nn.L1Loss(reduction="none")(ember.ones(2), ember.zeros(2)).tolist() == [1.0, 1.0]
    w = ember.tensor([1.0, 2.0, 3.0])
    ce = nn.CrossEntropyLoss(weight=w)
    assert ce.weight is w and "weight" in dict(ce.named_buffers())


def test_init_functions_follow_pytorchs_formulas():
    w = ember.empty(400, 300)
    nn.init.xavier_uniform_(w)
    bound = math.sqrt(6 / 700)
    assert w.abs().max().item() <= bound and w.abs().max().item() > 0.9 * bound
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert abs(w.std().item() - math.sqrt(2 / 400)) < 0.01 * math.sqrt(2 / 400) * 5
    nn.init.constant_(w, 0.25)
    assert w.mean().item() == 0.25
    assert nn.init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert nn.init._calculate_fan_in_and_fan_out(ember.empty(8, 4, 3, 3)) == (36, 72)
    t = nn.init.trunc_normal_(ember.empty(10000), std=1.0, a=-0.5, b=0.5)
    assert t.min().item() >= -0.5 and t.max().item() <= 0.5


def test_recurrent_and_attention_layers_match_pytorch(torch, rng):
    for cls in ("LSTM", "GRU"):
        ours = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        theirs = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
        theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
        x = rng.standard_normal((2, 5, 3)).astype(np.float32)
        out, state = ours(ember.tensor(x))
        ref, ref_state = theirs(torch.tensor(x))
        assert_close(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
        if cls == "LSTM":
            assert_close(state[0], ref_state[0].detach().numpy(), rtol=1e-4, atol=1e-5)
            assert_close(state[1], ref_state[1].detach().numpy(), rtol=1e-4, atol=1e-5)
        else:
            assert_close(state, ref_state.detach().numpy(), rtol=1e-4, atol=1e-5)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    tmha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    tmha.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in mha.state_dict().items()})
    q = rng.standard_normal((2, 3, 8)).astype(np.float32)
    out, weights = mha(ember.tensor(q), ember.tensor(q), ember.tensor(q))
    ref, ref_w = tmha(torch.tensor(q), torch.tensor(q), torch.tensor(q))
    assert_close(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert_close(weights, ref_w.detach().numpy(), rtol=1e-4, atol=1e-5)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    tlayer.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in layer.state_dict().items()})
    assert_close(layer(ember.tensor(q)), tlayer(torch.tensor(q)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_recurrent_layers_from_zero_and_given_states():
    lstm = nn.LSTM(2, 3)
    x = ember.randn(4, 1, 2)
    out, (h, c) = lstm(x)
    assert out.shape == (4, 1, 3) and h.shape == c.shape == (1, 1, 3)
    out2, _ = lstm(x, (ember.zeros(1, 1, 3), ember.zeros(1, 1, 3)))
    assert ember.equal(out, out2)
    gru = nn.GRU(2, 3)
    out, h = gru(x)
    assert out.shape == (4, 1, 3) and h.shape == (1, 1, 3)


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _cell_ref(kind, p, x, h, c=None):
    """PyTorch's cell equations in float64 NumPy: (h', c') from x [N, I], h, c [N, H]."""
    w_ih, w_hh = p["weight_ih"], p["weight_hh"]
    gi = x @ w_ih.T + p.get("bias_ih", 0.0)
    gh = h @ w_hh.T + p.get("bias_hh", 0.0)
    if kind in ("tanh", "relu"):
        pre = gi + gh
        return (np.tanh(pre) if kind == "tanh" else np.maximum(pre, 0.0)), None
    if kind == "lstm":
        i, f, g, o = np.split(gi + gh, 4, axis=-1)
        c1 = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c1), c1
    (ri, zi, ni), (rh, zh, nh) = np.split(gi, 3, axis=-1), np.split(gh, 3, axis=-1)
    r, z = _sigmoid(ri + rh), _sigmoid(zi + zh)
    n = np.tanh(ni + r * nh)
    return (1 - z) * n + z * h, None


def _make_cell(kind, i, h, bias=True):
    if kind == "lstm":
        return nn.LSTMCell(i, h, bias=bias, dtype=ember.float64)
    if kind == "gru":
        return nn.GRUCell(i, h, bias=bias, dtype=ember.float64)
    return nn.RNNCell(i, h, bias, kind, dtype=ember.float64)


@pytest.mark.parametrize("kind", ["tanh", "relu", "lstm", "gru"])
@pytest.mark.parametrize("bias", [True, False])
def test_recurrent_cells_match_numpy(kind, bias, rng):
    cell = _make_cell(kind, 3, 4, bias)
    gates = {"tanh": 1, "relu": 1, "lstm": 4, "gru": 3}[kind]
    sd = cell.state_dict()
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
    assert list(sd.keys()) == names  # PyTorch's names, in its order
    assert tuple(sd["weight_ih"].shape) == (gates * 4, 3)
    assert tuple(sd["weight_hh"].shape) == (gates * 4, 4)
    if bias:
        assert tuple(sd["bias_ih"].shape) == tuple(sd["bias_hh"].shape) == (gates * 4,)
    else:
        assert cell.bias_ih is None and cell.bias_hh is None
    bound = 1 / math.sqrt(4)
    assert all(np.abs(v.numpy()).max() <= bound for v in sd.values())
    p = {k: v.numpy() for k, v in sd.items()}
    x, h, c = rng.standard_normal((5, 3)), rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    want_h, want_c = _cell_ref(kind, p, x, h, c)
    if kind == "lstm":
        got_h, got_c = cell(ember.tensor(x), (ember.tensor(h), ember.tensor(c)))
        assert_close(got_c, want_c, rtol=1e-12, atol=1e-12)
        # Unbatched: [I] in, ([H], [H]) out.
        uh, uc = cell(ember.tensor(x[2]), (ember.tensor(h[2]), ember.tensor(c[2])))
        assert_close(uh, want_h[2], rtol=1e-12, atol=1e-12)
        assert_close(uc, want_c[2], rtol=1e-12, atol=1e-12)
        zh, zc = cell(ember.tensor(x))
        ref_h, ref_c = _cell_ref(kind, p, x, np.zeros((5, 4)), np.zeros((5, 4)))
        assert_close(zc, ref_c, rtol=1e-12, atol=1e-12)
    else:
        got_h = cell(ember.tensor(x), ember.tensor(h))
        assert_close(cell(ember.tensor(x[2]), ember.tensor(h[2])), want_h[2], rtol=1e-12, atol=1e-12)
        zh = cell(ember.tensor(x))
        ref_h, _ = _cell_ref(kind, p, x, np.zeros((5, 4)))
    assert_close(got_h, want_h, rtol=1e-12, atol=1e-12)
    assert_close(zh, ref_h, rtol=1e-12, atol=1e-12)


def test_recurrent_cells_backward_reaches_every_parameter():
    cell = nn.LSTMCell(3, 4)
    x = ember.randn(2, 3, requires_grad=True)
    h, c = cell(x)
    (h.sum() + c.sum()).backward()
    assert x.grad is not None
    assert all(p.grad is not None for p in cell.parameters())


def _rnn_ref(kind, sd, x, h0, num_layers, bidirectional):
    """nn.RNN's layers and directions as NumPy loops over steps; x [L, N, I], h0 [layers * D, N, H]."""
    dirs = 2 if bidirectional else 1
    seq, h_n = x, []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            p = {k[: -len(sfx)]: v for k, v in sd.items() if k.endswith(sfx)}
            h = h0[layer * dirs + d]
            ys = [None] * len(seq)
            for t in (reversed(range(len(seq))) if d else range(len(seq))):
                h, _ = _cell_ref(kind, p, seq[t], h)
                ys[t] = h
            outs.append(np.stack(ys))
            h_n.append(h)
        seq = np.concatenate(outs, axis=-1)
    return seq, np.stack(h_n)


@pytest.mark.parametrize("kind", ["tanh", "relu"])
def test_rnn_matches_numpy_and_pytorchs_names(kind, rng):
    rnn = nn.RNN(3, 4, 2, kind, batch_first=True, bidirectional=True, dtype=ember.float64)
    assert rnn.nonlinearity == kind and rnn.num_layers == 2
    sd = {k: v.numpy() for k, v in rnn.state_dict().items()}
    names = [f"{w}_{b}_l{layer}{s}" for layer in range(2) for s in ("", "_reverse")
             for w, b in (("weight", "ih"), ("weight", "hh"), ("bias", "ih"), ("bias", "hh"))]
    assert list(sd.keys()) == names  # PyTorch's state_dict order
    assert sd["weight_ih_l0"].shape == (4, 3) and sd["weight_ih_l1_reverse"].shape == (4, 8)
    assert sd["weight_hh_l1"].shape == (4, 4) and sd["bias_ih_l0_reverse"].shape == (4,)
    x, h0 = rng.standard_normal((2, 5, 3)), rng.standard_normal((4, 2, 4))
    out, h_n = rnn(ember.tensor(x), ember.tensor(h0))
    want, want_h = _rnn_ref(kind, sd, x.transpose(1, 0, 2), h0, 2, True)
    assert_close(out, want.transpose(1, 0, 2), rtol=1e-12, atol=1e-12)
    assert_close(h_n, want_h, rtol=1e-12, atol=1e-12)
    # Unbatched [L, I] with h0 [layers * D, H].
    out, h_n = rnn(ember.tensor(x[1]), ember.tensor(h0[:, 1]))
    assert_close(out, want[:, 1], rtol=1e-12, atol=1e-12)
    assert_close(h_n, want_h[:, 1], rtol=1e-12, atol=1e-12)
    # A word language model's use: default arguments, zero state, no bias.
    plain = nn.RNN(3, 4, bias=False, dtype=ember.float64)
    assert list(plain.state_dict().keys()) == ["weight_ih_l0", "weight_hh_l0"]
    out, h_n = plain(ember.tensor(x[0][:, None]))
    psd = {k: v.numpy() for k, v in plain.state_dict().items()}
    want, want_h = _rnn_ref("tanh", psd, x[0][:, None], np.zeros((1, 1, 4)), 1, False)
    assert_close(out, want, rtol=1e-12, atol=1e-12)
    assert_close(h_n, want_h, rtol=1e-12, atol=1e-12)


def test_recurrent_cells_and_rnn_errors():
    with pytest.raises(ValueError, match=r"\[nn.RNNCell\] unknown nonlinearity: got 'gelu'"):
        nn.RNNCell(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError, match=r"\[nn.RNN\] unknown nonlinearity: got 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    cell = nn.GRUCell(3, 4)
    with pytest.raises(ValueError, match=r"\[nn.GRUCell\] expected 3 input features.*\[2, 5\]"):
        cell(ember.randn(2, 5))
    with pytest.raises(ValueError, match=r"\[nn.GRUCell\] expected a 1-d \(unbatched\) or 2-d input"):
        cell(ember.randn(1, 2, 3))
    with pytest.raises(ValueError, match=r"\[nn.GRUCell\] expected hx of shape \[2, 4\]: got \[2, 3\]"):
        cell(ember.randn(2, 3), ember.randn(2, 3))
    lstm = nn.LSTMCell(3, 4)
    with pytest.raises(ValueError, match=r"\[nn.LSTMCell\] expected hx\[1\] of shape \[2, 4\]"):
        lstm(ember.randn(2, 3), (ember.randn(2, 4), ember.randn(1, 4)))
    rnn = nn.RNN(3, 4)
    with pytest.raises(ValueError, match=r"\[nn.RNN\] expected 3 input features"):
        rnn(ember.randn(5, 2, 4))
    with pytest.raises(ValueError, match=r"\[nn.RNN\] expected h0 of shape \[1, 2, 4\]"):
        rnn(ember.randn(5, 2, 3), ember.randn(2, 2, 4))


def test_rnn_and_cells_match_pytorch(torch, rng):
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    for kind in ("tanh", "relu"):
        ours = nn.RNN(3, 4, num_layers=2, nonlinearity=kind, bidirectional=True)
        theirs = torch.nn.RNN(3, 4, num_layers=2, nonlinearity=kind, bidirectional=True)
        assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
        theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
        out, h = ours(ember.tensor(x))
        ref, ref_h = theirs(torch.tensor(x))
        assert_close(out, ref.detach().numpy(), rtol=1e-4, atol=1e-5)
        assert_close(h, ref_h.detach().numpy(), rtol=1e-4, atol=1e-5)
    for ours, theirs in ((nn.RNNCell(3, 4, nonlinearity="relu"), torch.nn.RNNCell(3, 4, nonlinearity="relu")),
                         (nn.LSTMCell(3, 4), torch.nn.LSTMCell(3, 4)), (nn.GRUCell(3, 4), torch.nn.GRUCell(3, 4))):
        assert list(ours.state_dict().keys()) == list(theirs.state_dict().keys())
        theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
        got, ref = ours(ember.tensor(x[0])), theirs(torch.tensor(x[0]))
        for g, r in zip(got if isinstance(got, tuple) else (got,), ref if isinstance(ref, tuple) else (ref,)):
            assert_close(g, r.detach().numpy(), rtol=1e-4, atol=1e-5)


FIXTURES = pathlib.Path(__file__).with_name("fixtures") / "layers.safetensors"


def _fixture(prefix):
    data = ember.load(str(FIXTURES))

    def group(kind):
        items = {k[len(prefix) + len(kind) + 2:]: v for k, v in data.items() if k.startswith(f"{prefix}.{kind}.")}
        return items if kind == "state" else [items[str(i)] for i in range(len(items))]

    return group("state"), group("input"), group("output")


@pytest.mark.parametrize("make,prefix", [
    (lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), "lstm"),
    (lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), "gru"),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), "mha"),
    (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), "encoder"),
])
def test_layers_match_pytorchs_committed_outputs(make, prefix):
    """PyTorch's outputs for these layers, weights and inputs, made once by
    fixtures/make_layers.py (torch 2.15) and committed."""
    state, inputs, outputs = _fixture(prefix)
    module = make()
    module.load_state_dict(state)
    if prefix == "mha":
        got = module(inputs[0], inputs[0], inputs[0])
    else:
        got = module(inputs[0])
    flat = []
    for item in (got if isinstance(got, tuple) else (got,)):
        flat.extend(item if isinstance(item, tuple) else (item,))
    assert len(flat) == len(outputs)
    for g, e in zip(flat, outputs):
        assert_close(g, e, rtol=1e-4, atol=1e-5)


class _ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.head = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))

    def forward(self, x):
        y = ember.relu(self.bn(self.conv(x)))
        return self.head(y.mean(dim=(2, 3)))


def test_fuse_for_inference_on_a_python_module():
    ember.manual_seed(0)
    m = _ConvBlock()
    with ember.no_grad():
        for bn in (m.bn, m.head[1]):
            bn.running_mean.copy_(ember.randn(bn.running_mean.shape) * 0.3)
            bn.running_var.copy_(ember.rand(bn.running_var.shape) + 0.5)
            bn.weight.copy_(ember.randn(bn.weight.shape) * 0.2 + 1)
    m.eval()
    x, other = ember.randn(2, 2, 6, 6), ember.randn(3, 2, 6, 6)
    with ember.no_grad():
        expected = m(other)
    folded = nn.fuse_for_inference(m, x)
    assert folded == [("conv", "bn"), ("head.0", "head.1")]
    assert m.conv.bias is not None and not m.training
    with ember.no_grad():
        assert_close(m(other), expected, atol=1e-5, rtol=1e-5)
    m.train()
    with pytest.raises(ValueError, match="folded into the layer before it"):
        m(x)


def test_fuse_for_inference_merges_a_relu_module_into_its_convolution():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 4, 1), nn.ReLU())
    with ember.no_grad():
        m[1].running_mean.copy_(ember.randn(8) * 0.3)
        m[1].running_var.copy_(ember.rand(8) + 0.5)
    m.eval()
    x, other = ember.randn(2, 3, 7, 7), ember.randn(3, 3, 7, 7)
    with ember.no_grad():
        expected = m(other)
    assert nn.fuse_for_inference(m, x) == [("0", "1"), ("0", "2"), ("3", "4")]
    with ember.inference_mode():
        got = m(other)
    assert (got >= 0).all()
    assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_fuse_for_inference_merges_activations_into_linear_layers():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.GELU(approximate="tanh"),
                      nn.Linear(16, 5), nn.GELU())
    m.eval()
    x, other = ember.randn(4, 6), ember.randn(9, 6)
    with ember.no_grad():
        expected = m(other)
    assert nn.fuse_for_inference(m, x) == [("0", "1"), ("2", "3"), ("4", "5")]
    with ember.inference_mode():
        assert_close(m(other), expected, atol=1e-5, rtol=1e-5)
    # Recorded for autograd, the merged layers run the composite and give its gradients.
    m.train()
    y = m(other.requires_grad_())
    y.sum().backward()
    assert other.grad is not None and other.grad.shape == (9, 6)


def test_a_module_cannot_contain_itself():
    outer = nn.Sequential(nn.Linear(2, 2))
    outer.inner = nn.Sequential(nn.ReLU())
    for add in (lambda: setattr(outer.inner, "outer", outer), lambda: outer.inner.append(outer),
                lambda: outer.add_module("me", outer), lambda: outer.inner.add_module("o", outer)):
        with pytest.raises(ValueError, match="a module cannot contain itself"):
            add()
    # Nothing was added, and every walk over the tree still ends.
    assert len(list(outer.modules())) == 4 and len(list(outer.parameters())) == 2
    assert "Sequential" in repr(outer) and outer.float() is outer


# --- Modules whose Module.__init__ has not run (Note [Modules before Module.__init__]) --------

class _Forgetful(nn.Module):
    def __init__(self):
        self.scale = 2  # a plain attribute is fine, as in PyTorch

    def helper(self):
        return self.scale


class _ForgetfulSequential(nn.Sequential):
    def __init__(self):
        pass


@pytest.mark.parametrize("use", [
    lambda m: m.float(), lambda m: m.double(), lambda m: m.half(), lambda m: m.bfloat16(),
    lambda m: m.cpu(), lambda m: m.cuda(), lambda m: m.to("cpu"), lambda m: m.train(),
    lambda m: m.eval(), lambda m: list(m.parameters()), lambda m: m.state_dict(),
    lambda m: m.zero_grad(), lambda m: m.training, lambda m: m.apply(print),
    lambda m: m.register_forward_hook(print), lambda m: m.named_modules(),
    lambda m: m.forward(ember.ones(1)), lambda m: m(ember.ones(1)), lambda m: repr(m),
    lambda m: dir(m), lambda m: m.missing, lambda m: m.load_state_dict({}),
    lambda m: m.register_buffer("b", ember.ones(1)), lambda m: m.requires_grad_(),
    lambda m: nn.Module.forward(m, ember.ones(1)), lambda m: m.__reduce_ex__(4),
])
def test_every_method_of_a_module_without_module_init_is_a_clear_attribute_error(use):
    m = _Forgetful()
    with pytest.raises(AttributeError, match=r"'_Forgetful' object has no attribute .*"
                                             r"call super\(\)\.__init__\(\)"):
        use(m)
    assert m.helper() == 2 and m.scale == 2  # its own attributes work


@pytest.mark.parametrize("use", [lambda s: len(s), lambda s: s[0], lambda s: list(s),
                                 lambda s: s.append(nn.ReLU()), lambda s: s(ember.ones(1))])
def test_container_methods_without_module_init_are_clear_errors(use):
    with pytest.raises(AttributeError, match="Module.__init__"):
        use(_ForgetfulSequential())


def test_module_init_called_late_makes_the_module_usable():
    class Late(nn.Module):
        def __init__(self):
            with pytest.raises(AttributeError, match="Module.__init__"):
                self.train()
            super().__init__()
            self.fc = nn.Linear(2, 2)

    m = Late()
    assert m.train() is m and len(list(m.parameters())) == 2


# --- Errors from Python modules run by C++ containers ----------------------------------------

class _ReturnsTuple(nn.Module):
    def forward(self, x):
        return x, x


class _ReturnsNone(nn.Module):
    def forward(self, x):
        return None


@pytest.mark.parametrize("inner,returned", [(_ReturnsTuple, "tuple"), (_ReturnsNone, "None")])
def test_a_python_module_returning_a_non_tensor_inside_a_cpp_container_is_a_type_error(inner, returned):
    seq = nn.Sequential(nn.Linear(2, 2), inner(), nn.ReLU())
    with pytest.raises(TypeError, match=rf"\[nn\.{inner.__name__}\] forward\(\) returned {returned} "
                                        "where a tensor was expected"):
        seq(ember.ones(1, 2))
    # Called from Python, the same module may return anything.
    assert isinstance(inner()(ember.ones(1)), (tuple, type(None)))


def test_a_forward_pre_hook_returning_a_non_tensor_inside_a_cpp_container_is_a_type_error():
    inner = nn.Linear(2, 2)
    inner.register_forward_pre_hook(lambda m, args: "nope")
    seq = nn.Sequential(inner, nn.ReLU())
    with pytest.raises(TypeError, match=r"\[nn\.Linear\] a forward pre-hook returned str"):
        seq(ember.ones(1, 2))


@pytest.mark.parametrize("make,text", [
    (lambda: nn.Sequential(nn.ReLU(), 3), r"\[nn.Sequential\] int is not a Module subclass"),
    (lambda: nn.ModuleList([nn.ReLU(), "x"]), r"\[nn.ModuleList\] str is not a Module subclass"),
    (lambda: nn.Sequential().extend([None]), r"\[nn.Sequential\] NoneType is not a Module subclass"),
    (lambda: nn.Sequential(nn.ReLU())["a"], r"\[nn.Sequential\] indices must be integers or slices"),
])
def test_containers_given_what_they_cannot_hold_raise_type_errors(make, text):
    with pytest.raises(TypeError, match=text):
        make()


# --- Registering names (PyTorch's KeyError) --------------------------------------------------

@pytest.mark.parametrize("register,text", [
    (lambda m: m.register_buffer("weight", ember.ones(2)), "attribute 'weight' already exists"),
    (lambda m: m.register_parameter("running", nn.Parameter(ember.ones(2))),
     "attribute 'running' already exists"),
    (lambda m: m.add_module("bias", nn.ReLU()), "attribute 'bias' already exists"),
    (lambda m: m.register_module("weight", nn.ReLU()), "attribute 'weight' already exists"),
    (lambda m: m.add_module("inner", nn.ReLU()) or m.register_buffer("inner", ember.ones(1)),
     "attribute 'inner' already exists"),
    (lambda m: m.register_buffer("a.b", ember.ones(2)), "can't contain '.'"),
    (lambda m: m.register_parameter("", nn.Parameter(ember.ones(2))), "can't be empty"),
    (lambda m: m.add_module("x.y", nn.ReLU()), "can't contain '.'"),
    (lambda m: m.register_buffer("forward", ember.ones(2)), "attribute 'forward' already exists"),
    (lambda m: m.register_parameter("train", nn.Parameter(ember.ones(2))),
     "attribute 'train' already exists"),
])
def test_registering_a_taken_or_invalid_name_is_a_key_error(register, text):
    m = nn.Linear(2, 2)
    m.register_buffer("running", ember.zeros(2))
    with pytest.raises(KeyError) as info:
        register(m)
    assert isinstance(info.value, ember.KeyError) and text in str(info.value), str(info.value)


def test_registering_again_under_the_same_kind_replaces():
    m = nn.Linear(2, 2)
    m.register_buffer("running", ember.zeros(2))
    m.register_buffer("running", ember.ones(3))
    m.register_parameter("weight", nn.Parameter(ember.ones(2, 2)))
    m.add_module("inner", nn.ReLU())
    m.add_module("inner", nn.Tanh())
    assert m.running.tolist() == [1, 1, 1] and m.weight.tolist() == [[1, 1], [1, 1]]
    assert isinstance(m.inner, nn.Tanh)
    # Attribute assignment moves a name between kinds, as PyTorch's __setattr__ does.
    m.running = nn.Parameter(ember.ones(1))
    assert "running" in dict(m.named_parameters()) and "running" not in dict(m.named_buffers())


# --- copy.deepcopy and pickle (Note [Copying and pickling modules]) -------------------------

class _Net(nn.Module):
    """A Python module with Python attributes, a Python-registered buffer and a shared layer."""

    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden
        self.body = nn.Sequential(nn.Linear(3, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.head = nn.Linear(2, 2)
        self.tied = self.head  # the same module twice
        self.register_buffer("steps", ember.zeros(1))
        self.register_buffer("scratch", ember.ones(2), persistent=False)
        self.scale = nn.Parameter(ember.full((1,), 3.0))

    def forward(self, x):
        return self.tied(self.body(x)) * self.scale


class _Wide(nn.Linear):
    """A Python subclass of a C++ layer, with extra state."""

    def __init__(self, tag):
        super().__init__(4, 3, bias=False)
        self.tag = tag

    def forward(self, x):
        return super().forward(x) * 2


def _copies():
    import copy
    import pickle

    return [("deepcopy", copy.deepcopy), ("pickle", lambda m: pickle.loads(pickle.dumps(m)))]


def _assert_same_values_independent(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        assert_close(sb[k], sa[k], rtol=0, atol=0)
    for (na, pa), (nb_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert na == nb_ and pa is not pb and type(pa) is type(pb) and pa.requires_grad == pb.requires_grad
    with ember.no_grad():
        for p in b.parameters():
            p.add_(1.0)
    for k, v in a.state_dict().items():
        assert_close(v, sa[k], rtol=0, atol=0)  # the original did not change


@pytest.mark.parametrize("how,copy_fn", _copies())
@pytest.mark.parametrize("make", [
    lambda: nn.Linear(3, 2), lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False),
    lambda: nn.BatchNorm2d(4), lambda: nn.LayerNorm([5]), lambda: nn.Embedding(10, 3, padding_idx=0),
    lambda: nn.LSTM(3, 4, num_layers=2), lambda: nn.GRU(3, 4, batch_first=True),
    lambda: nn.MultiheadAttention(8, 2), lambda: nn.Dropout(0.3),
    lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
    lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, nn.LayerNorm(8)),
    lambda: nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Sequential(nn.Linear(2, 1))),
    lambda: nn.ModuleList([nn.Linear(1, 1), nn.ReLU()]),
    lambda: nn.ModuleDict({"a": nn.Linear(1, 2)}), lambda: nn.ParameterList([ember.ones(2)]),
    lambda: _Net(5), lambda: _Wide("w"),
])
def test_modules_deepcopy_and_pickle_to_independent_equal_modules(make, how, copy_fn):
    m = make()
    m.eval() if isinstance(m, nn.Dropout) else None
    c = copy_fn(m)
    assert type(c) is type(m) and c is not m and repr(c) == repr(m)
    assert c.training == m.training
    _assert_same_values_independent(m, c)
    assert [n for n, _ in c.named_buffers()] == [n for n, _ in m.named_buffers()]


@pytest.mark.parametrize("how,copy_fn", _copies())
def test_a_copied_python_module_keeps_its_attributes_sharing_and_behaviour(how, copy_fn):
    m = _Net(5).eval()
    x = ember.randn(4, 3)
    c = copy_fn(m)
    assert c.hidden == 5 and c.tied is c.head and c.tied is not m.head
    assert dict(c.named_buffers()).keys() == {"steps", "scratch"}
    assert "scratch" not in c.state_dict() and not c.training and not c.body[0].training
    assert_close(c(x), m(x), rtol=0, atol=0)
    w = _Wide("tag")
    cw = copy_fn(w)
    assert cw.tag == "tag" and cw.weight.shape == (3, 4) and cw.bias is None
    assert_close(cw(ember.ones(1, 4)), w(ember.ones(1, 4)), rtol=0, atol=0)


def test_deepcopy_keeps_hooks_and_tied_parameters():
    import copy

    m = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    m[1].weight = m[0].weight
    calls = []
    m.register_forward_hook(lambda mod, args, out: calls.append(type(mod).__name__))
    c = copy.deepcopy(m)
    assert c[1].weight is c[0].weight and c[0].weight is not m[0].weight
    c(ember.ones(1, 2))
    assert calls == ["Sequential"]


def test_optimizer_state_dicts_deepcopy_and_pickle():
    import copy
    import pickle

    model = nn.Linear(2, 2)
    opt = ember.optim.Adam(model.parameters(), lr=0.1)
    model(ember.ones(1, 2)).sum().backward()
    opt.step()
    state = opt.state_dict()
    for c in (copy.deepcopy(state), pickle.loads(pickle.dumps(state))):
        assert c["param_groups"][0]["lr"] == 0.1
        assert_close(c["state"][0]["exp_avg"], state["state"][0]["exp_avg"], rtol=0, atol=0)


@pytest.mark.parametrize("cls,spatial", [(nn.Dropout1d, 1), (nn.Dropout2d, 2), (nn.Dropout3d, 3)])
def test_channel_dropout_zeroes_whole_channels(cls, spatial):
    m = cls(0.5)
    assert repr(m) == f"{cls.__name__}(p=0.5)"
    x = ember.rand(*([6, 10] + [3] * spatial)) + 1.0
    y = m(x).numpy().reshape(60, -1)
    xs = x.numpy().reshape(60, -1)
    zero = (y == 0).all(axis=1)
    assert ((y == 0).any(axis=1) == zero).all(), "a channel is dropped whole or not at all"
    np.testing.assert_allclose(y[~zero], 2 * xs[~zero], rtol=1e-6)
    assert 0 < zero.sum() < 60
    unbatched = ember.ones(*([4] + [2] * spatial))
    assert m(unbatched).shape == unbatched.shape
    m.eval()
    assert m(x) is x or (m(x) == x).all().item()
    fn = getattr(F, f"dropout{spatial}d")
    assert fn(x, 0.5, training=False).equal(x)
    with pytest.raises(ValueError, match=rf"\[dropout{spatial}d\] expected a"):
        m.train()(ember.ones(2))
    with pytest.raises(ValueError, match="probability p must be in"):
        cls(1.5)


def test_nn_modules_and_flatten_parameters_are_there_for_scripts():
    assert nn.modules.Linear is nn.Linear and nn.modules.Module is nn.Module
    # PyTorch's files, as allow-lists and isinstance checks name them.
    assert nn.modules.dropout.Dropout is nn.Dropout and nn.modules.rnn.LSTM is nn.LSTM
    assert nn.modules.transformer.TransformerEncoderLayer is nn.TransformerEncoderLayer
    assert nn.modules.activation.MultiheadAttention is nn.MultiheadAttention
    assert nn.modules.loss.CrossEntropyLoss is nn.CrossEntropyLoss
    from ember.nn.modules.linear import NonDynamicallyQuantizableLinear
    assert isinstance(NonDynamicallyQuantizableLinear(2, 3), nn.Linear)
    with pytest.raises(AttributeError):
        nn.modules.conv.ConvTranspose9d
    lstm = nn.LSTM(2, 3)
    before = {k: v.clone() for k, v in lstm.state_dict().items()}
    assert lstm.flatten_parameters() is None
    assert all(v.equal(before[k]) for k, v in lstm.state_dict().items())


@pytest.mark.parametrize("make,fn", [
    (lambda: nn.ReLU(inplace=True), lambda x: np.maximum(x, 0)),
    (lambda: nn.LeakyReLU(0.2, inplace=True), lambda x: np.where(x > 0, x, 0.2 * x)),
    (lambda: nn.Hardtanh(-0.5, 0.5, inplace=True), lambda x: np.clip(x, -0.5, 0.5)),
    (lambda: nn.ReLU6(True), lambda x: np.clip(x, 0, 6)),
])
def test_inplace_activations_write_into_their_input(make, fn):
    m = make()
    assert m.inplace and "inplace=True" in repr(m)
    x = ember.tensor([-1.5, -0.25, 0.5, 7.0])
    want = fn(x.numpy().astype(np.float64))
    assert m(x) is x
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    assert repr(nn.LeakyReLU(0.2, inplace=True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.ReLU()) == "ReLU()" and not nn.ReLU().inplace


ATTENTION_FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "attention"


def test_transformer_loads_pytorchs_state_dict_and_matches_its_output():
    # tests/fixtures/attention/make_fixtures.py: nn.Transformer(16, 2, 2, 2, 20, dropout=0),
    # sequence first, a causal target mask and a source padding mask.
    t = ember.load(str(ATTENTION_FIXTURES / "transformer.safetensors"))
    model = nn.Transformer(16, 2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=20,
                           dropout=0.0)
    model.load_state_dict({k[5:]: v for k, v in t.items() if k.startswith("full.")})
    model.eval()
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(causal, t["in.causal"])
    out = model(t["in.x"].transpose(0, 1), t["in.tgt"].transpose(0, 1), tgt_mask=causal,
                src_key_padding_mask=t["in.padding"][:, :5], tgt_is_causal=True)
    assert_close(out, t["out.full"], rtol=2e-5, atol=2e-5)
    assert [n for n, _ in model.named_children()] == ["encoder", "decoder"]
    assert isinstance(model.decoder, nn.TransformerDecoder) and model.decoder.num_layers == 2


def test_a_subclass_of_transformer_replaces_its_decoder_as_word_language_model_does():
    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid,
                             num_encoder_layers=nlayers)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.decoder = nn.Linear(ninp, ntoken)

        def forward(self, src):
            mask = ember.log(ember.tril(ember.ones(len(src), len(src))))
            return F.log_softmax(self.decoder(self.encoder(self.input_emb(src), mask=mask)), -1)

    model = TransformerModel(11, 8, 2, 16, 2)
    assert isinstance(model.decoder, nn.Linear)
    assert not any(n.startswith("decoder.layers") for n, _ in model.named_parameters())
    out = model(ember.randint(0, 11, (5, 3)))
    assert out.shape == (5, 3, 11)
    out.sum().backward()
    assert model.encoder.layers[0].linear1.weight.grad is not None


def test_transformer_bad_arguments_are_clear_errors():
    with pytest.raises(NotImplementedError, match="custom_encoder"):
        nn.Transformer(8, 2, custom_encoder=nn.Linear(2, 2))
    model = nn.Transformer(8, 2, 1, 1, 8)
    with pytest.raises(ValueError, match="the batch number of src and tgt must be equal"):
        model(ember.zeros(3, 2, 8), ember.zeros(4, 5, 8))
    with pytest.raises(ValueError, match="feature number"):
        model(ember.zeros(3, 2, 8), ember.zeros(4, 2, 6))


def test_pixel_shuffle_matches_numpy_and_round_trips(rng):
    x = rng.standard_normal((2, 18, 3, 4)).astype(np.float32)
    r = 3
    want = x.reshape(2, 2, r, r, 3, 4).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 9, 12)
    t = ember.tensor(x, requires_grad=True)
    layer = nn.PixelShuffle(r)
    y = layer(t)
    assert_close(y, want, rtol=0, atol=0)
    assert_close(ember.pixel_shuffle(t, r), want, rtol=0, atol=0)
    assert repr(layer) == "PixelShuffle(upscale_factor=3)"
    assert_close(nn.PixelUnshuffle(r)(y), x, rtol=0, atol=0)
    assert_close(F.pixel_unshuffle(y, downscale_factor=r), x, rtol=0, atol=0)
    (y * ember.arange(y.numel()).reshape(y.shape)).sum().backward()
    assert_close(t.grad, np.arange(y.numel()).reshape(want.shape).reshape(2, 2, 3, r, 4, r)
                 .transpose(0, 1, 3, 5, 2, 4).reshape(x.shape), rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"input.size\(-3\)=18 is not divisible by 4"):
        F.pixel_shuffle(t, 2)


def test_orthogonal_init_as_super_resolution_uses_it():
    conv = nn.Conv2d(64, 32, 3)
    nn.init.orthogonal_(conv.weight, nn.init.calculate_gain("relu"))
    m = conv.weight.detach().reshape(32, -1).double().numpy()
    np.testing.assert_allclose(m @ m.T, 2.0 * np.eye(32), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.orthogonal_(ember.zeros(3))


def test_resnet_has_torchvisions_children_and_copies():
    m = ember.models.resnet18(num_classes=10, in_channels=1, width=8, weights=None)
    assert type(m) is ember.models.ResNet and isinstance(m, nn.Sequential)
    assert [n for n, _ in m.named_children()] == ["conv1", "bn1", "relu", "maxpool", "layer1",
                                                  "layer2", "layer3", "layer4", "avgpool", "fc"]
    x = ember.randn(2, 1, 28, 28)
    m.eval()
    assert m(x).shape == (2, 10)
    features = nn.Sequential(*list(m.children())[:-1])  # the feature extractor scripts cut out
    assert features(x).shape == (2, 64, 1, 1)
    assert m.fc(features(x).flatten(1)).allclose(m(x), atol=1e-6)
    for copied in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(copied) is ember.models.ResNet and copied(x).equal(m(x))
    # torchvision's parameter counts.
    assert sum(p.numel() for p in ember.models.resnet34().parameters()) == 21797672
    assert sum(p.numel() for p in ember.models.resnet50().parameters()) == 25557032
    with pytest.raises(ValueError, match="no pretrained weights"):
        ember.models.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(TypeError, match="BasicBlock or models.Bottleneck"):
        ember.models.ResNet(nn.Linear, [2, 2, 2, 2])
    with pytest.raises(ValueError, match="four positive block counts"):
        ember.models.ResNet(ember.models.BasicBlock, [2, 2, 2])


def test_pad_sequence_matches_pytorchs_layout_and_gradients():
    from ember.nn.utils.rnn import pad_sequence, unpad_sequence

    a = ember.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], requires_grad=True)
    b = ember.tensor([[4.0, 4.0]], requires_grad=True)
    p = pad_sequence([a, b], padding_value=-1.0)
    assert p.shape == (3, 2, 2)  # [max L, B, *]
    assert p[:, 1, 0].tolist() == [4.0, -1.0, -1.0]
    q = pad_sequence([a, b], batch_first=True, padding_side="left")
    assert q.shape == (2, 3, 2) and q[1, :, 0].tolist() == [0.0, 0.0, 4.0]
    (q * ember.arange(3.0).view(1, 3, 1)).sum().backward()
    assert a.grad.tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert b.grad.tolist() == [[2.0, 2.0]]
    back = unpad_sequence(p, ember.tensor([3, 1]))
    assert back[0].equal(a) and back[1].equal(b)
    with pytest.raises(ValueError, match="share their trailing shape"):
        pad_sequence([ember.ones(2, 3), ember.ones(2, 4)])
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right'"):
        pad_sequence([a], padding_side="middle")


def test_embedding_scale_grad_by_freq_and_from_pretrained():
    table = ember.arange(8.0).view(4, 2)
    e = nn.Embedding.from_pretrained(table, freeze=False, scale_grad_by_freq=True)
    assert e.weight.requires_grad and e.weight.equal(table) and e.scale_grad_by_freq
    assert repr(e) == "Embedding(4, 2, scale_grad_by_freq=True)"
    e(ember.tensor([1, 1, 2])).sum().backward()
    assert e.weight.grad[:, 0].tolist() == [0.0, 1.0, 1.0, 0.0]  # row 1: two halves
    w = ember.ones(3, 2, requires_grad=True)
    F.embedding(ember.tensor([0, 0, 0]), w, scale_grad_by_freq=True).sum().backward()
    assert w.grad[0].tolist() == [1.0, 1.0]
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen(ember.tensor([3])).tolist() == [[6.0, 7.0]]
    bag = nn.EmbeddingBag.from_pretrained(table, mode="sum")
    assert bag(ember.tensor([[0, 1]])).tolist() == [[2.0, 4.0]]
    assert not bag.weight.requires_grad
    with pytest.raises(ValueError, match="2-d tensor"):
        nn.Embedding.from_pretrained(ember.ones(3))


# NumPy's pad() names for the convolution layers' padding modes.
NP_PAD_MODES = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def np_conv_nd(x, w, b, dilation):
    """Unpadded stride-1 cross-correlation over the spatial dims of x [N, C, *S], float64 loops."""
    dims = x.ndim - 2
    k = w.shape[2:]
    out_sizes = [x.shape[2 + i] - dilation * (k[i] - 1) for i in range(dims)]
    y = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    for taps in np.ndindex(*k):
        window = tuple(slice(t * dilation, t * dilation + o) for t, o in zip(taps, out_sizes))
        xs = x[(slice(None), slice(None)) + window]  # [N, C, *out]
        y += np.einsum("nc...,oc->no...", xs, w[(slice(None), slice(None)) + taps])
    return y + b.reshape(1, -1, *([1] * dims))


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv_padding_modes_and_same_match_numpy(rng, dims, mode):
    # Every padding_mode, with numbers and with 'same' over odd and even kernel spans: 'same' puts
    # the extra zero of an odd span after (PyTorch's split; checked against PyTorch 2.15 over
    # 1-3 dims, kernels 1-4, dilations 1-2 and every mode: largest difference 3e-15).
    layer = getattr(nn, f"Conv{dims}d")
    x = rng.standard_normal((2, 3) + (6,) * dims)
    for kernel, dilation, padding in [(3, 1, 1), (2, 1, "same"), (3, 2, "same"), (4, 1, "same"),
                                      (2, 2, 2), (3, 1, "valid")]:
        m = layer(3, 4, kernel, padding=padding, dilation=dilation, padding_mode=mode,
                  dtype=ember.float64)
        w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
        span = dilation * (kernel - 1)
        if padding == "same":
            sides = (span // 2, span - span // 2)
        else:
            sides = (0, 0) if padding == "valid" else (padding, padding)
        xp = np.pad(x, [(0, 0), (0, 0)] + [sides] * dims, mode=NP_PAD_MODES[mode])
        want = np_conv_nd(xp, w, b, dilation)
        got = m(ember.tensor(x)).detach().numpy()
        assert got.shape == want.shape, (kernel, dilation, padding)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        if padding == "same":
            assert got.shape[2:] == x.shape[2:]
        assert m.padding == (padding if isinstance(padding, str) else (padding,) * dims)
        assert m.padding_mode == mode
        assert ("padding_mode=" + mode in repr(m)) == (mode != "zeros")
        if mode == "zeros":  # the functional form takes the same names
            f = getattr(F, f"conv{dims}d")
            got_f = f(ember.tensor(x), m.weight, m.bias, padding=padding, dilation=dilation)
            np.testing.assert_allclose(got_f.detach().numpy(), want, rtol=1e-12, atol=1e-12)


def test_conv_same_padding_gradients_and_errors(rng):
    x = ember.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((3, 2, 2, 3)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, c: F.conv2d(a, c, padding="same", dilation=(2, 1)),
                                    (x, w))
    m = nn.Conv2d(2, 3, (2, 3), padding="same", padding_mode="circular", dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda a: m(a), (x,))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, w, stride=2, padding="same")
    with pytest.raises(ValueError, match="'valid' or 'same'"):
        F.conv1d(ember.ones(1, 1, 4), ember.ones(1, 1, 2), padding="full")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_packed_sequences_through_recurrent_layers(rng, kind):
    # Each sequence of a packed batch gets what it gets alone: its outputs over its own steps
    # (zeros after), its own last states, in both directions. (Checked against PyTorch 2.15 over
    # LSTM/GRU/RNN, 1-2 directions, batch_first, sorted or not, with h0 and input gradients:
    # largest difference 7e-16.)
    from ember.nn.utils import rnn
    layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True,
                              dtype=ember.float64)
    lengths = [2, 5, 1, 5]
    x = ember.tensor(rng.standard_normal((4, 5, 3)), requires_grad=True)
    h0 = ember.tensor(rng.standard_normal((4, 4, 4)))
    hx = (h0, h0 * 0.5) if kind == "LSTM" else h0
    packed = rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    assert isinstance(packed, rnn.PackedSequence)
    assert packed.batch_sizes.tolist() == [4, 3, 2, 2, 2]
    assert packed.sorted_indices.tolist() == [1, 3, 0, 2]
    out, state = layer(packed, hx)
    assert isinstance(out, rnn.PackedSequence)
    padded, got_lengths = rnn.pad_packed_sequence(out, batch_first=True)
    assert got_lengths.tolist() == lengths and padded.shape == (4, 5, 8)
    h = state[0] if kind == "LSTM" else state
    for n, length in enumerate(lengths):
        alone_hx = (h0[:, n:n + 1], h0[:, n:n + 1] * 0.5) if kind == "LSTM" else h0[:, n:n + 1]
        y, s = layer(x[n:n + 1, :length], alone_hx)
        np.testing.assert_allclose(padded[n, :length].detach().numpy(), y[0].detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
        assert padded[n, length:].abs().sum().item() == 0
        alone_h = s[0] if kind == "LSTM" else s
        np.testing.assert_allclose(h[:, n].detach().numpy(), alone_h[:, 0].detach().numpy(),
                                   rtol=1e-12, atol=1e-12)
    (padded.sum() + h.sum()).backward()
    assert x.grad[2, 1:].abs().sum().item() == 0  # past the end of a sequence of length 1
    assert x.grad[1].abs().sum().item() > 0


def test_packed_sequence_api_and_errors():
    from ember.nn.utils import rnn
    seqs = [ember.ones(3, 2), ember.ones(1, 2) * 2, ember.ones(2, 2) * 3]
    packed = rnn.pack_sequence(seqs, enforce_sorted=False)
    data, batch_sizes, sorted_indices, unsorted_indices = packed  # unpacks as PyTorch's tuple
    assert data.shape == (6, 2) and batch_sizes.tolist() == [3, 2, 1]
    assert sorted_indices.tolist() == [0, 2, 1] and unsorted_indices.tolist() == [0, 2, 1]
    assert [s.shape[0] for s in rnn.unpack_sequence(packed)] == [3, 1, 2]
    assert rnn.pack_sequence(seqs[:1]).sorted_indices is None
    moved = packed.to(ember.float64)
    assert moved.data.dtype == ember.float64 and moved.batch_sizes.dtype == ember.int64
    padded, _ = rnn.pad_packed_sequence(packed, padding_value=-1.0, total_length=4)
    assert padded.shape == (4, 3, 2) and padded[3].eq(-1).all()
    with pytest.raises(ValueError, match="enforce_sorted"):
        rnn.pack_padded_sequence(ember.zeros(3, 2, 1), [1, 3])
    with pytest.raises(ValueError, match=r"\[1, 3\]"):
        rnn.pack_padded_sequence(ember.zeros(3, 2, 1), [4, 1])
    with pytest.raises(ValueError, match="total_length"):
        rnn.pad_packed_sequence(packed, total_length=2)


def np_projected_lstm(x, params, layers, directions, h0, c0):
    """PyTorch's LSTM with projections, written out in float64 NumPy: x [L, N, I]."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    inp, hs, cs = x, [], []
    for layer in range(layers):
        outs = []
        for d in range(directions):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh, w_hr = (params["weight_ih" + sfx], params["weight_hh" + sfx],
                                params["weight_hr" + sfx])
            b = params["bias_ih" + sfx] + params["bias_hh" + sfx]
            h, c = h0[layer * directions + d], c0[layer * directions + d]
            out = [None] * len(inp)
            for t in (reversed(range(len(inp))) if d else range(len(inp))):
                i, f, g, o = np.split(inp[t] @ w_ih.T + h @ w_hh.T + b, 4, axis=1)
                c = sig(f) * c + sig(i) * np.tanh(g)
                h = (sig(o) * np.tanh(c)) @ w_hr.T
                out[t] = h
            outs.append(np.stack(out))
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, axis=2)
    return inp, np.stack(hs), np.stack(cs)


def test_lstm_with_projections_matches_its_equations(rng):
    # (Checked against PyTorch 2.15 as well, one and two directions, with and without bias,
    # batch_first and packed: largest difference 2e-16, gradients included.)
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2, dtype=ember.float64)
    assert m.proj_size == 2 and "proj_size=2" in repr(m)
    params = {k: v.detach().numpy() for k, v in m.named_parameters()}
    assert params["weight_hr_l1_reverse"].shape == (2, 5)
    assert params["weight_hh_l0"].shape == (20, 2) and params["weight_ih_l1"].shape == (20, 4)
    x, h0, c0 = (rng.standard_normal(s) for s in [(6, 4, 3), (4, 4, 2), (4, 4, 5)])
    y, (h, c) = m(ember.tensor(x), (ember.tensor(h0), ember.tensor(c0)))
    want = np_projected_lstm(x, params, 2, 2, h0, c0)
    for got, ref in zip((y, h, c), want):
        np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    xg = ember.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: m(a)[0], (xg,))
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 5, proj_size=5)
    with pytest.raises(ValueError, match="h0 of shape"):
        m(ember.tensor(x), (ember.tensor(c0), ember.tensor(c0)))


def np_mha(q, k, v, params, heads, bias_kv, zero_attn, attn_mask=None):
    """PyTorch's MultiheadAttention with separate projections, in float64 NumPy: [L, N, E]."""
    e = q.shape[-1]
    b = params["in_proj_bias"]
    qp = q @ params["q_proj_weight"].T + b[:e]
    kp = k @ params["k_proj_weight"].T + b[e:2 * e]
    vp = v @ params["v_proj_weight"].T + b[2 * e:]
    n = q.shape[1]
    if bias_kv:
        kp = np.concatenate([kp, np.broadcast_to(params["bias_k"], (1, n, e))])
        vp = np.concatenate([vp, np.broadcast_to(params["bias_v"], (1, n, e))])
    split = lambda t: t.reshape(t.shape[0], n * heads, e // heads).transpose(1, 0, 2)  # noqa: E731
    qh, kh, vh = split(qp), split(kp), split(vp)
    if zero_attn:
        kh = np.concatenate([kh, np.zeros_like(kh[:, :1])], axis=1)
        vh = np.concatenate([vh, np.zeros_like(vh[:, :1])], axis=1)
    scores = qh @ kh.transpose(0, 2, 1) / np.sqrt(e // heads)
    if attn_mask is not None:
        scores = scores + np.pad(attn_mask, [(0, 0), (0, scores.shape[-1] - attn_mask.shape[1])])
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    out = (w @ vh).transpose(1, 0, 2).reshape(q.shape[0], n, e)
    return out @ params["out_proj.weight"].T + params["out_proj.bias"], w


@pytest.mark.parametrize("bias_kv,zero_attn", [(False, False), (True, False), (False, True),
                                               (True, True)])
def test_multihead_attention_kdim_vdim_bias_kv_and_zero_attn(rng, bias_kv, zero_attn):
    # (Checked against PyTorch 2.15 as well, with and without masks and weights, state_dict keys
    # included: largest difference 4e-16.)
    m = nn.MultiheadAttention(6, 2, kdim=3, vdim=5, add_bias_kv=bias_kv, add_zero_attn=zero_attn,
                              dtype=ember.float64)
    params = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    assert m.in_proj_weight is None and not m._qkv_same_embed_dim
    assert params["k_proj_weight"].shape == (6, 3) and params["v_proj_weight"].shape == (6, 5)
    assert ("bias_k" in params) == bias_kv and (m.kdim, m.vdim) == (3, 5)
    q, k, v = (rng.standard_normal(s) for s in [(4, 2, 6), (5, 2, 3), (5, 2, 5)])
    mask = rng.standard_normal((4, 5))
    out, weights = m(ember.tensor(q), ember.tensor(k), ember.tensor(v),
                     attn_mask=ember.tensor(mask), average_attn_weights=False)
    want, want_w = np_mha(q, k, v, params, 2, bias_kv, zero_attn, mask)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy().reshape(want_w.shape), want_w,
                               rtol=1e-12, atol=1e-12)
    assert weights.shape[-1] == 5 + bias_kv + zero_attn
    with pytest.raises(ValueError, match="kdim=3"):
        m(ember.tensor(q), ember.tensor(q), ember.tensor(v))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_pool_layers_return_indices(rng, dims):
    layer = getattr(nn, f"MaxPool{dims}d")
    x = ember.tensor(rng.standard_normal((2, 3) + (6,) * dims))
    out, idx = layer(2, stride=2, return_indices=True)(x)
    assert idx.dtype == ember.int64 and idx.shape == out.shape == (2, 3) + (3,) * dims
    # Each index is the flat position of the maximum in its input plane.
    flat = x.numpy().reshape(2, 3, -1)
    np.testing.assert_array_equal(
        np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), axis=2), out.numpy().reshape(2, 3, -1))
    want_out, want_idx = getattr(F, f"max_pool{dims}d")(x, 2, return_indices=True)
    assert (idx.numpy() == want_idx.numpy()).all() and (out.numpy() == want_out.numpy()).all()
    plain = layer(2)
    assert isinstance(plain(x), ember.Tensor) and not plain.return_indices

    class Sub(layer):  # a subclass's super().forward keeps the tuple
        def forward(self, t):
            return super().forward(t)

    assert isinstance(Sub(2, return_indices=True)(x), tuple)


def test_hardsigmoid_hardswish_layers_flip_and_roll_are_the_cores(rng):
    x = rng.standard_normal((3, 4)) * 4
    hs = np.clip(x + 3, 0, 6) / 6
    np.testing.assert_allclose(nn.Hardsigmoid()(ember.tensor(x)).numpy(), hs, rtol=1e-15)
    y = ember.tensor(x)
    out = nn.Hardswish(inplace=True)(y)
    assert out is y and repr(nn.Hardswish(inplace=True)) == "Hardswish(inplace=True)"
    np.testing.assert_allclose(y.numpy(), x * hs, rtol=1e-15)
    t = ember.tensor(x)
    np.testing.assert_array_equal(t.flip(0, 1).numpy(), x[::-1, ::-1])  # Tensor.flip(*dims)
    np.testing.assert_array_equal(ember.flip(t, [1]).numpy(), x[:, ::-1])
    np.testing.assert_array_equal(ember.roll(t, (1, -2), (0, 1)).numpy(), np.roll(x, (1, -2), (0, 1)))
    np.testing.assert_array_equal(t.roll(5).numpy(), np.roll(x, 5))
    np.testing.assert_array_equal(t.repeat(2, 1, 3).numpy(), np.tile(x, (2, 1, 3)))
    with pytest.raises(ValueError, match="more than once"):
        t.flip((1, -1))  # PyTorch refuses a dim named twice
