"""ember.amp from Python: autocast as a context manager and a decorator (what runs in bfloat16
and what in float32 on the CPU, nesting, threads) and GradScaler (scaling, unscaling, skipped
steps, the scale's backoff and growth against a hand-worked sequence, state dicts) with the
built-in optimizers and with one written in Python."""

import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import amp, nn, optim
from helpers import assert_close


def as_f64(t):
    return t.detach().to(ember.float64).numpy()


# ---------------------------------------------------------------------------------------------
# autocast

def test_autocast_runs_matmul_and_linear_in_bfloat16_and_softmax_in_float32(rng):
    x_np, w_np, b_np = rng.standard_normal((4, 8)), rng.standard_normal((3, 8)), rng.standard_normal(3)
    x, w, b = (ember.tensor(a, dtype=ember.float32) for a in (x_np, w_np, b_np))
    layer = nn.Linear(8, 3)
    assert not amp.is_autocast_enabled("cpu")
    with ember.autocast(device_type="cpu"):
        assert amp.is_autocast_enabled("cpu") and amp.get_autocast_dtype("cpu") == ember.bfloat16
        mm = ember.matmul(x, w.t())
        lin = F.linear(x, w, b)
        out = layer(x)
        soft = ember.softmax(mm, dim=1)
        summed = mm + 1.0  # not covered: runs in what it gets
    assert mm.dtype == lin.dtype == out.dtype == ember.bfloat16
    assert soft.dtype == ember.float32 and summed.dtype == ember.bfloat16
    # The values are the float64 results to bfloat16's precision (8 bits of mantissa).
    assert_close(as_f64(mm), x_np @ w_np.T, rtol=2e-2, atol=5e-2)
    assert_close(as_f64(lin), x_np @ w_np.T + b_np, rtol=2e-2, atol=5e-2)
    e = np.exp(as_f64(mm) - as_f64(mm).max(1, keepdims=True))
    assert_close(soft, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    # Outside the scope, float32 again.
    assert not amp.is_autocast_enabled()
    assert ember.matmul(x, w.t()).dtype == ember.float32 and layer(x).dtype == ember.float32


def test_gradients_of_float32_parameters_stay_float32(rng):
    layer = nn.Linear(5, 2)
    with ember.autocast():
        loss = layer(ember.randn(3, 5)).float().sum()
    loss.backward()
    assert layer.weight.grad.dtype == ember.float32 and layer.bias.grad.dtype == ember.float32


def test_autocast_as_a_decorator():
    w = ember.randn(4, 4)

    @ember.autocast()
    def forward(x, depth=0):
        assert amp.is_autocast_enabled()
        y = x @ w
        return forward(y, depth + 1) if depth < 2 else y  # recursion nests fresh scopes

    assert forward.__name__ == "forward"
    assert forward(ember.randn(2, 4)).dtype == ember.bfloat16
    assert not amp.is_autocast_enabled()

    @ember.amp.autocast(dtype=ember.float16)
    def fails():
        assert amp.get_autocast_dtype() == ember.float16
        raise KeyError("inside")

    with pytest.raises(KeyError):
        fails()
    assert not amp.is_autocast_enabled() and amp.get_autocast_dtype() == ember.bfloat16


def test_nested_scopes_restore_the_outer_state():
    x = ember.randn(2, 3)
    w = ember.randn(3, 3)
    outer = ember.autocast()
    with outer:
        with ember.autocast(enabled=False):
            assert not amp.is_autocast_enabled()
            assert (x @ w).dtype == ember.float32
            with ember.autocast(dtype=ember.float16):
                assert amp.get_autocast_dtype() == ember.float16 and amp.is_autocast_enabled()
            assert not amp.is_autocast_enabled()
        assert amp.is_autocast_enabled() and amp.get_autocast_dtype() == ember.bfloat16
        assert (x @ w).dtype == ember.bfloat16
        with outer:  # the same object entered twice
            assert amp.is_autocast_enabled()
        assert amp.is_autocast_enabled()
    assert not amp.is_autocast_enabled()


def test_autocast_is_per_thread():
    seen = []
    with ember.autocast():
        t = threading.Thread(target=lambda: seen.append(amp.is_autocast_enabled()))
        t.start()
        t.join()
        assert amp.is_autocast_enabled()
    assert seen == [False]


def test_autocast_errors():
    assert ember.autocast is amp.autocast
    with pytest.raises(TypeError, match="the autocast dtype must be float16 or bfloat16: got float32"):
        with ember.autocast(dtype=ember.float32):
            pass
    with pytest.raises(ValueError, match="unknown device type 'tpu'"):
        with ember.autocast("tpu"):
            pass
    with pytest.raises(TypeError, match="device_type must be a str"):
        ember.autocast(ember.device("cpu"))
    assert not amp.is_autocast_enabled()


# ---------------------------------------------------------------------------------------------
# GradScaler

class PythonSGD(optim.Optimizer):
    """Plain SGD written in Python; step() returns what it is given (to see it passed through)."""

    def __init__(self, params, lr):
        super().__init__(params, dict(lr=lr))

    @ember.no_grad()
    def step(self, tag=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-group["lr"])
        return tag


def make(kind, params, lr):
    return optim.SGD(params, lr=lr) if kind == "native" else PythonSGD(params, lr=lr)


@pytest.mark.parametrize("kind", ["native", "python"])
def test_scale_step_and_update(kind):
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = make(kind, [w], lr=0.5)
    scaler = amp.GradScaler("cpu", init_scale=1024.0)
    assert scaler.is_enabled() and scaler.get_scale() == 1024.0
    loss = (w * w).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == 1024.0 * 5.0
    scaled.backward()
    assert_close(w.grad, [2048.0, 4096.0])
    scaler.step(opt)  # unscales (by a power of two: exactly), then steps
    assert_close(w, [0.0, 0.0], rtol=0, atol=0)
    scaler.update()
    assert scaler.get_scale() == 1024.0


@pytest.mark.parametrize("kind", ["native", "python"])
def test_inf_or_nan_gradients_skip_the_step_and_back_off(kind):
    for bad in (float("inf"), float("nan")):
        w = ember.tensor([1.0, 2.0], requires_grad=True)
        opt = make(kind, [w], lr=0.5)
        scaler = amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
        w.grad = ember.tensor([1.0, bad])
        assert scaler.step(opt) is None
        assert_close(w, [1.0, 2.0], rtol=0, atol=0)  # untouched
        scaler.update()
        assert scaler.get_scale() == 4.0
        for _ in range(2):  # two clean steps grow it back
            w.grad = ember.tensor([4.0, 4.0])
            scaler.step(opt)
            scaler.update()
        assert scaler.get_scale() == 8.0
        assert_close(w, [0.0, 1.0], rtol=0, atol=0)  # two steps of 0.5 * (4 / 4)


@pytest.mark.parametrize("kind", ["native", "python"])
def test_scale_sequence_matches_a_hand_worked_one(kind):
    w = ember.zeros(3, requires_grad=True)
    opt = make(kind, [w], lr=0.1)
    scaler = amp.GradScaler("cpu", init_scale=16.0, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    events = ["ok", "inf", "ok", "ok", "ok", "ok", "nan", "ok", "ok", "ok", "ok"]
    # Worked by hand: backoff x0.25 on inf/nan (tracker reset), x4 after 3 clean steps in a row.
    expected = [16, 4, 4, 4, 16, 16, 4, 4, 4, 16, 16]
    scales = []
    for event in events:
        value = {"ok": 1.0, "inf": float("inf"), "nan": float("nan")}[event]
        w.grad = ember.full((3,), value) * scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    assert scales == expected
    assert_close(w, np.full(3, -0.1 * events.count("ok")), rtol=1e-6)


@pytest.mark.parametrize("kind", ["native", "python"])
def test_unscale_before_clipping_and_once_per_step(kind):
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    opt = make(kind, [w], lr=1.0)
    scaler = amp.GradScaler("cpu", init_scale=256.0)
    scaler.scale((w * w).sum()).backward()
    scaler.unscale_(opt)
    assert_close(w.grad, [6.0, 8.0], rtol=0, atol=0)
    nn.utils.clip_grad_norm_([w], max_norm=5.0)
    with pytest.raises(ValueError, match="unscale_ was already called for this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)  # does not unscale again
    assert_close(w, [3.0 - 3.0 / (1 + 1e-7), 4.0 - 4.0 / (1 + 1e-7)], rtol=1e-5, atol=1e-5)
    scaler.update()
    scaler.unscale_(opt)  # a new step


def test_step_passes_arguments_and_returns_the_result():
    w = ember.zeros(1, requires_grad=True)
    opt = PythonSGD([w], lr=1.0)
    scaler = amp.GradScaler("cpu")
    w.grad = ember.ones(1)
    assert scaler.step(opt, tag="stepped") == "stepped"
    scaler.update()
    native = optim.SGD([w], lr=1.0)
    with pytest.raises(NotImplementedError, match="closure"):
        scaler.step(native, closure=lambda: 0.0)
    with pytest.raises(TypeError, match="is not an ember.optim.Optimizer"):
        scaler.step(object())


def test_training_with_a_power_of_two_scale_matches_unscaled_training(rng):
    x = ember.tensor(rng.standard_normal((16, 4)), dtype=ember.float32)
    y = ember.tensor(rng.standard_normal((16, 2)), dtype=ember.float32)

    def train(scaler):
        ember.manual_seed(3)
        model = nn.Linear(4, 2)
        opt = optim.Adam(model.parameters(), lr=0.01)
        for _ in range(5):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            if scaler is None:
                loss.backward()
                opt.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        return [p.detach().clone() for p in model.parameters()]

    for a, b in zip(train(None), train(amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2))):
        assert_close(a, b.numpy(), rtol=1e-6, atol=1e-7)


def test_update_with_a_new_scale_and_state_dict_round_trip():
    w = ember.zeros(1, requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    scaler = amp.GradScaler("cpu", init_scale=4.0, growth_interval=3)
    for _ in range(2):
        w.grad = ember.ones(1)
        scaler.step(opt)
        scaler.update()
    scaler.update(new_scale=64.0)
    assert scaler.get_scale() == 64.0
    state = scaler.state_dict()
    assert state == {"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
                     "_growth_tracker": 2}
    other = amp.GradScaler("cpu", growth_interval=100)
    other.load_state_dict(state)
    assert other.get_growth_interval() == 3 and other.get_scale() == 64.0
    for s in (scaler, other):  # one more clean step: the third in a row, so both grow
        w.grad = ember.ones(1)
        s.step(opt)
        s.update()
    assert scaler.get_scale() == other.get_scale() == 128.0
    with pytest.raises(ValueError, match="new_scale must be positive"):
        scaler.update(new_scale=0.0)
    with pytest.raises(ValueError, match="the state is empty"):
        scaler.load_state_dict({})


def test_disabled_scaler_passes_everything_through():
    w = ember.zeros(2, requires_grad=True)
    opt = PythonSGD([w], lr=1.0)
    scaler = amp.GradScaler("cpu", enabled=False)
    loss = (w + 1).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    w.grad = ember.full((2,), float("inf"))
    assert scaler.step(opt, tag=1) == 1  # steps even with inf: nothing is checked
    scaler.update()
    assert scaler.state_dict() == {}


def test_scale_keeps_the_structure_of_the_outputs():
    scaler = amp.GradScaler("cpu", init_scale=2.0)
    a, b, c = ember.ones(1), ember.full((2,), 3.0), ember.tensor(0.5)
    out = scaler.scale([a, (b, [c])])
    assert isinstance(out, list) and isinstance(out[1], tuple) and isinstance(out[1][1], list)
    assert_close(out[0], [2.0])
    assert_close(out[1][0], [6.0, 6.0])
    assert_close(out[1][1][0], 1.0)
    with pytest.raises(TypeError, match="takes a tensor or lists and tuples of tensors"):
        scaler.scale({"loss": a})


def test_grad_scaler_settings_are_checked():
    with pytest.raises(ValueError, match="growth_factor must be > 1"):
        amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(ValueError, match=r"backoff_factor must be in \(0, 1\)"):
        amp.GradScaler("cpu", backoff_factor=1.5)
    with pytest.raises(ValueError, match="init_scale must be positive"):
        amp.GradScaler("cpu", init_scale=-1.0)
    with pytest.raises(ValueError, match="growth_interval must be >= 1"):
        amp.GradScaler("cpu", growth_interval=0)


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the behaviour without CUDA")
def test_cuda_scaler_without_cuda_disables_itself_with_a_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaler = amp.GradScaler()
    assert not scaler.is_enabled()
    assert any("CUDA is not available" in str(w.message) for w in caught)
