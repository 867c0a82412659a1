"""ember.optim from Python: the built-in optimizers against float64 NumPy references of their
update rules, param groups as dicts, zero_grad, closures, state and state_dict round trips, an
Optimizer subclassed in Python, every learning-rate scheduler against its closed form, and the
gradient clipping of ember.nn.utils."""

import gc
import math
import sys
import threading
import time
import weakref
from bisect import bisect_right

import numpy as np
import pytest

import ember
from ember import nn, optim
from ember.optim import lr_scheduler
from helpers import assert_close


# ---------------------------------------------------------------------------------------------
# References of the update rules (PyTorch's documented algorithms), in float64 NumPy.

def sgd_ref(p, g, s, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    g = g + weight_decay * p
    if momentum != 0:
        s["buf"] = g.copy() if "buf" not in s else momentum * s["buf"] + (1 - dampening) * g
        g = g + momentum * s["buf"] if nesterov else s["buf"]
    return p - lr * g


def adam_ref(p, g, s, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False):
    b1, b2 = betas
    if decoupled:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    s["t"] = s.get("t", 0) + 1
    s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
    s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
    v = s["v"]
    if amsgrad:
        s["vmax"] = np.maximum(s.get("vmax", 0.0), s["v"])
        v = s["vmax"]
    denom = np.sqrt(v) / math.sqrt(1 - b2 ** s["t"]) + eps
    return p - lr / (1 - b1 ** s["t"]) * s["m"] / denom


def rmsprop_ref(p, g, s, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    g = g + weight_decay * p
    s["sq"] = alpha * s.get("sq", 0.0) + (1 - alpha) * g * g
    if centered:
        s["avg"] = alpha * s.get("avg", 0.0) + (1 - alpha) * g
        denom = np.sqrt(s["sq"] - s["avg"] ** 2) + eps
    else:
        denom = np.sqrt(s["sq"]) + eps
    if momentum > 0:
        s["buf"] = momentum * s.get("buf", 0.0) + g / denom
        return p - lr * s["buf"]
    return p - lr * g / denom


def adadelta_ref(p, g, s, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
    g = g + weight_decay * p
    s["sq"] = rho * s.get("sq", 0.0) + (1 - rho) * g * g
    delta = np.sqrt(s.get("acc", 0.0) + eps) / np.sqrt(s["sq"] + eps) * g
    s["acc"] = rho * s.get("acc", 0.0) + (1 - rho) * delta * delta
    return p - lr * delta


def adagrad_ref(p, g, s, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
                eps=1e-10):
    s["t"] = s.get("t", 0) + 1
    g = g + weight_decay * p
    s["sum"] = s.get("sum", initial_accumulator_value) + g * g
    return p - lr / (1 + (s["t"] - 1) * lr_decay) * g / (np.sqrt(s["sum"]) + eps)


def adamax_ref(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
    s["t"] = s.get("t", 0) + 1
    g = g + weight_decay * p
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["u"] = np.maximum(betas[1] * s.get("u", 0), np.abs(g) + eps)
    return p - lr / (1 - betas[0] ** s["t"]) * s["m"] / s["u"]


def nadam_ref(p, g, s, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, momentum_decay=4e-3,
              decoupled_weight_decay=False):
    t = s["t"] = s.get("t", 0) + 1
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    mu = betas[0] * (1 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = betas[0] * (1 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    s["prod"] = s.get("prod", 1.0) * mu
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["v"] = betas[1] * s.get("v", 0) + (1 - betas[1]) * g * g
    denom = np.sqrt(s["v"] / (1 - betas[1] ** t)) + eps
    return (p - lr * (1 - mu) / (1 - s["prod"]) * g / denom
            - lr * mu_next / (1 - s["prod"] * mu_next) * s["m"] / denom)


def radam_ref(p, g, s, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled_weight_decay=False):
    t = s["t"] = s.get("t", 0) + 1
    if decoupled_weight_decay:
        p = p * (1 - lr * weight_decay)
    else:
        g = g + weight_decay * p
    s["m"] = betas[0] * s.get("m", 0) + (1 - betas[0]) * g
    s["v"] = betas[1] * s.get("v", 0) + (1 - betas[1]) * g * g
    m_hat = s["m"] / (1 - betas[0] ** t)
    rho_inf = 2 / (1 - betas[1]) - 1
    rho_t = rho_inf - 2 * t * betas[1] ** t / (1 - betas[1] ** t)
    if rho_t <= 5:
        return p - lr * m_hat
    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    return p - lr * m_hat * math.sqrt(1 - betas[1] ** t) / (np.sqrt(s["v"]) + eps) * rect


def rprop_ref(p, g, s, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50)):
    prev = s.get("prev", np.zeros_like(p))
    step = s.get("step", np.full_like(p, lr))
    agree = np.sign(g * prev)
    step = np.clip(step * np.where(agree > 0, etas[1], np.where(agree < 0, etas[0], 1.0)), *step_sizes)
    g = np.where(agree < 0, 0.0, g)
    s["prev"], s["step"] = g, step
    return p - np.sign(g) * step


CASES = [
    (optim.SGD, sgd_ref, dict(lr=0.1)),
    (optim.SGD, sgd_ref, dict(lr=0.05, momentum=0.9)),
    (optim.SGD, sgd_ref, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (optim.SGD, sgd_ref, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (optim.Adam, adam_ref, dict(lr=0.01)),
    (optim.Adam, adam_ref, dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (optim.Adam, adam_ref, dict(lr=0.02, amsgrad=True)),
    (optim.AdamW, adam_ref, dict(lr=0.01)),
    (optim.AdamW, adam_ref, dict(lr=0.05, weight_decay=0.2, amsgrad=True)),
    (optim.RMSprop, rmsprop_ref, dict(lr=0.01)),
    (optim.RMSprop, rmsprop_ref, dict(lr=0.01, centered=True)),
    (optim.RMSprop, rmsprop_ref, dict(lr=0.01, momentum=0.9, weight_decay=0.05)),
    (optim.RMSprop, rmsprop_ref, dict(lr=0.005, alpha=0.9, momentum=0.5, centered=True)),
    (optim.Adadelta, adadelta_ref, dict()),
    (optim.Adadelta, adadelta_ref, dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
    (optim.Adagrad, adagrad_ref, dict()),
    (optim.Adagrad, adagrad_ref, dict(lr=0.1, lr_decay=0.05, weight_decay=0.1,
                                      initial_accumulator_value=0.3)),
    (optim.Adamax, adamax_ref, dict()),
    (optim.Adamax, adamax_ref, dict(lr=0.05, betas=(0.8, 0.9), eps=1e-3, weight_decay=0.1)),
    (optim.NAdam, nadam_ref, dict()),
    (optim.NAdam, nadam_ref, dict(lr=0.05, momentum_decay=0.1, weight_decay=0.1)),
    (optim.NAdam, nadam_ref, dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.RAdam, radam_ref, dict()),
    (optim.RAdam, radam_ref, dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1)),  # rectified from step 6
    (optim.RAdam, radam_ref, dict(lr=0.05, betas=(0.8, 0.8), weight_decay=0.1, decoupled_weight_decay=True)),
    (optim.Rprop, rprop_ref, dict()),
    (optim.Rprop, rprop_ref, dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-2, 0.2))),
]


def ref_kwargs(cls, kwargs):
    """The reference's keywords: AdamW decouples its weight decay (default 1e-2)."""
    if cls is optim.AdamW:
        return dict(dict(weight_decay=1e-2), **kwargs, decoupled=True)
    return kwargs


class Problem:
    """loss = sum(0.5 * a * p^2 + b * p) over two parameters, so grad = a * p + b."""

    def __init__(self, rng, dtype=ember.float64):
        self.start = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
        self.a = [rng.uniform(0.5, 2.0, x.shape) for x in self.start]
        self.b = [rng.standard_normal(x.shape) for x in self.start]
        self.dtype = dtype

    def params(self):
        return [ember.tensor(x, dtype=self.dtype, requires_grad=True) for x in self.start]

    def loss(self, params):
        total = 0
        for p, a, b in zip(params, self.a, self.b):
            a_t, b_t = ember.tensor(a, dtype=self.dtype), ember.tensor(b, dtype=self.dtype)
            total = total + (0.5 * a_t * p * p + b_t * p).sum()
        return total

    def grads(self, values):
        return [a * x + b for x, a, b in zip(values, self.a, self.b)]


def tol(dtype):
    return dict(rtol=1e-10, atol=1e-12) if dtype == ember.float64 else dict(rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("cls,ref,kwargs", CASES, ids=[f"{c.__name__}-{i}" for i, (c, _, _) in enumerate(CASES)])
def test_update_rules_match_numpy_references(rng, cls, ref, kwargs, dtype):
    problem = Problem(rng, dtype)
    params = problem.params()
    opt = cls(params, **kwargs)
    expected = [x.copy() for x in problem.start]
    states = [{} for _ in params]
    for _ in range(6):
        opt.zero_grad()
        problem.loss(params).backward()
        grads = problem.grads(expected)
        expected = [ref(x, g, s, **ref_kwargs(cls, kwargs)) for x, g, s in zip(expected, grads, states)]
        opt.step()
        for p, e in zip(params, expected):
            assert_close(p, e, **tol(dtype))
    assert all(p.dtype == dtype for p in params)


def test_python_state_matches_the_reference_buffers(rng):
    problem = Problem(rng)
    p, q = problem.params()
    adam = optim.Adam([p, q], lr=0.01, amsgrad=True)
    assert p not in adam.state and len(adam.state) == 0 and adam.state[p] == {}
    states = [{}, {}]
    values = [x.copy() for x in problem.start]
    for _ in range(3):
        adam.zero_grad()
        problem.loss([p, q]).backward()
        values = [adam_ref(x, g, s, lr=0.01, amsgrad=True) for x, g, s in zip(values, problem.grads(values), states)]
        adam.step()
    assert p in adam.state and list(adam.state) == [p, q]
    st = adam.state[p]
    assert sorted(st) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert st["step"].item() == 3
    assert_close(st["exp_avg"], states[0]["m"], rtol=1e-10)
    assert_close(st["exp_avg_sq"], states[0]["v"], rtol=1e-10)
    assert_close(st["max_exp_avg_sq"], states[0]["vmax"], rtol=1e-10)
    # The buffers are the live ones: changing them changes the next step.
    st["exp_avg"].zero_()
    assert adam.state[p]["exp_avg"].abs().sum().item() == 0

    sgd = optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ember.ones_like(p)
    sgd.step()
    assert sorted(sgd.state[p]) == ["momentum_buffer"]  # SGD counts no steps
    assert_close(sgd.state[p]["momentum_buffer"], np.ones(p.shape))

    rms = optim.RMSprop([q], centered=True)
    q.grad = ember.ones_like(q)
    rms.step()
    assert sorted(rms.state[q]) == ["grad_avg", "square_avg", "step"]


def test_param_groups_are_dicts_backed_by_the_optimizer(rng):
    problem = Problem(rng)
    p, q = problem.params()
    opt = optim.SGD([{"params": [p]}, {"params": q, "lr": 0.01, "name": "head"}], lr=0.1, momentum=0.5)
    g0, g1 = opt.param_groups
    assert g0["params"][0] is p and g1["params"][0] is q
    assert dict(g0, params=None) == dict(params=None, lr=0.1, momentum=0.5, dampening=0.0, weight_decay=0.0,
                                         nesterov=False)
    assert g1["lr"] == 0.01 and g1["momentum"] == 0.5 and g1["name"] == "head"
    assert list(g1) == ["params", "lr", "momentum", "dampening", "weight_decay", "nesterov", "name"]
    assert opt.defaults == dict(lr=0.1, momentum=0.5, dampening=0, weight_decay=0, nesterov=False)

    states = [{}, {}]
    values = [x.copy() for x in problem.start]
    lrs = [0.1, 0.01]
    for step in range(4):
        if step == 2:  # a scheduler's way of changing the lr
            opt.param_groups[1]["lr"] = 0.2
            lrs[1] = 0.2
            opt.param_groups[0]["momentum"] = 0.0
        opt.zero_grad()
        problem.loss([p, q]).backward()
        grads = problem.grads(values)
        momenta = [0.0 if step >= 2 else 0.5, 0.5]
        new = []
        for i in range(2):
            s = states[i] if momenta[i] else {}
            new.append(sgd_ref(values[i], grads[i], s, lr=lrs[i], momentum=momenta[i]))
        values = new
        opt.step()
        assert_close(p, values[0], rtol=1e-10)
        assert_close(q, values[1], rtol=1e-10)
    assert opt.param_groups[1]["lr"] == 0.2

    adam = optim.Adam([p], betas=(0.5, 0.6))
    group = adam.param_groups[0]
    assert group["betas"] == (0.5, 0.6) and group["amsgrad"] is False
    group["betas"] = (0.7, 0.8)
    group["amsgrad"] = True
    assert adam.param_groups[0]["betas"] == (0.7, 0.8) and adam.param_groups[0]["amsgrad"] is True
    with pytest.raises(ValueError, match="betas must hold 2 numbers"):
        group["betas"] = (0.1,)


def test_add_param_group_and_generators(rng):
    problem = Problem(rng)
    p, q = problem.params()
    model = nn.Linear(3, 2)
    opt = optim.SGD(model.parameters(), lr=0.5)  # a generator
    group_params = opt.param_groups[0]["params"]
    assert all(isinstance(x, nn.Parameter) for x in group_params)  # the objects it was given
    assert [x is y for x, y in zip(group_params, [model.weight, model.bias])] == [True, True]
    opt.add_param_group({"params": [p], "lr": 0.25})
    opt.add_param_group({"params": (t for t in [q])})
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.25, 0.5]
    p.grad = ember.ones_like(p)
    q.grad = ember.ones_like(q)
    opt.step()
    assert_close(p, problem.start[0] - 0.25)
    assert_close(q, problem.start[1] - 0.5)
    with pytest.raises(ValueError, match="more than one param group"):
        opt.add_param_group({"params": [p]})


def test_zero_grad(rng):
    p = ember.tensor(rng.standard_normal(4), requires_grad=True)
    opt = optim.Adam([p])
    (p * p).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert p.grad is not None and p.grad.abs().sum().item() == 0
    (p * p).sum().backward()
    assert_close(p.grad, 2 * p.detach().numpy())
    opt.zero_grad()
    assert p.grad is None


def test_step_with_a_closure(rng):
    problem = Problem(rng)
    params = problem.params()
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    calls = []

    def closure():
        opt.zero_grad()
        loss = problem.loss(params)
        loss.backward()
        calls.append(loss)
        return loss

    with ember.no_grad():  # the closure runs with gradients enabled anyway
        returned = opt.step(closure)
    assert len(calls) == 1 and returned is calls[0]
    assert_close(returned, sum((0.5 * a * x * x + b * x).sum() for x, a, b in zip(problem.start, problem.a, problem.b)))
    expected = [x - 0.1 * g for x, g in zip(problem.start, problem.grads(problem.start))]
    for p, e in zip(params, expected):
        assert_close(p, e, rtol=1e-10)
    assert opt.step() is None


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}], lr=0.01, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.01),
    lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True),
    lambda ps: optim.Adadelta(ps, weight_decay=0.01),
    lambda ps: optim.Adagrad(ps, lr=0.1, lr_decay=0.01),
], ids=["SGD", "Adam", "AdamW", "RMSprop", "Adadelta", "Adagrad"])
def test_state_dict_round_trip_continues_identically(rng, make):
    problem = Problem(rng)
    a_params, b_params = problem.params(), problem.params()
    a, b = make(a_params), make(b_params)
    for _ in range(3):
        a.zero_grad()
        problem.loss(a_params).backward()
        a.step()
    a.param_groups[0]["lr"] = 0.03
    a.param_groups[0]["tag"] = "kept"
    saved = a.state_dict()
    assert set(saved) == {"state", "param_groups"}
    assert [g["params"] for g in saved["param_groups"]] in ([[0, 1]], [[0], [1]])
    assert saved["param_groups"][0]["lr"] == 0.03 and saved["param_groups"][0]["tag"] == "kept"
    assert set(saved["state"]) == {0, 1}
    # The saved tensors are copies: later steps of `a` do not change them.
    snapshot = {k: {n: t.clone() for n, t in v.items()} for k, v in saved["state"].items()}
    with ember.no_grad():
        for p, q in zip(b_params, a_params):
            p.copy_(q)
    b.load_state_dict(saved)
    assert b.param_groups[0]["lr"] == 0.03 and b.param_groups[0]["tag"] == "kept"
    for _ in range(4):
        for opt, params in ((a, a_params), (b, b_params)):
            opt.zero_grad()
            problem.loss(params).backward()
            opt.step()
    for p, q in zip(a_params, b_params):
        assert_close(p, q, rtol=0, atol=0)
    for k, v in saved["state"].items():
        for n, t in v.items():
            assert_close(t, snapshot[k][n], rtol=0, atol=0)


def test_load_state_dict_errors(rng):
    p, q = Problem(rng).params()
    opt = optim.SGD([p, q], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="2 param groups but the optimizer has 1"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0]}, {"params": [1]}]})
    with pytest.raises(ValueError, match="has 1 parameters, the optimizer's 2"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0], "lr": 0.1}]})
    with pytest.raises(ValueError, match="shape"):
        opt.load_state_dict({"state": {0: {"momentum_buffer": ember.zeros(7, dtype=ember.float64)}},
                             "param_groups": [{"params": [0, 1], "lr": 0.1}]})
    with pytest.raises(ValueError, match="expected a dict with 'state' and 'param_groups'"):
        opt.load_state_dict({"param_groups": []})
    assert opt.param_groups[0]["lr"] == 0.1  # nothing was loaded


def test_bad_arguments_raise_clear_errors():
    p = ember.zeros(3, requires_grad=True)
    for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adadelta, optim.Adagrad):
        with pytest.raises(ValueError, match=r"invalid learning rate: -1"):
            cls([p], lr=-1)
        with pytest.raises(ValueError, match="empty parameter list"):
            cls([])
        with pytest.raises(TypeError, match="iterable of tensors or of dicts"):
            cls(p)
        with pytest.raises(TypeError, match="parameter 1 of a param group is a int"):
            cls([p, 3])
    with pytest.raises(ValueError, match="nesterov momentum requires momentum > 0"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="invalid beta2: 1"):
        optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="invalid weight_decay"):
        optim.AdamW([p], weight_decay=-0.1)
    with pytest.raises(ValueError, match="invalid alpha"):
        optim.RMSprop([p], alpha=-1)
    with pytest.raises(ValueError, match="appears twice"):
        optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="not a leaf"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(NotImplementedError, match="maximize=True is not supported"):
        optim.SGD([{"params": [p], "maximize": True}], lr=0.1)
    with pytest.raises(TypeError, match="ordered sequence, not a set"):
        optim.SGD([{"params": {p}}], lr=0.1)
    for err in (ValueError, TypeError):
        assert issubclass(getattr(ember, err.__name__), ember.Error)


def test_step_releases_the_gil():
    # One Adam step on 8M elements on one thread: had step() kept the GIL, the main thread's
    # loop would not run while it ran. The loop stamps its iterations with the clock, and those
    # stamped within the step are counted. A long switch interval keeps Python from handing the
    # GIL over between bytecodes, so only a release inside step() lets the loop run then.
    def loop_rate():
        count, end = 0, time.perf_counter() + 0.1
        while time.perf_counter() < end:
            count += 1
        return count / 0.1

    previous, interval = ember.get_num_threads(), sys.getswitchinterval()
    ember.set_num_threads(1)
    try:
        p = ember.zeros(1 << 23, requires_grad=True)
        p.grad = ember.ones_like(p)
        opt = optim.Adam([p])
        opt.step()  # the state is allocated on the first step
        rate = loop_rate()
        done, span, stamps = threading.Event(), [], []

        def work():
            span.append(time.perf_counter())
            opt.step()
            span.append(time.perf_counter())
            done.set()

        thread = threading.Thread(target=work)
        sys.setswitchinterval(0.25)  # far longer than the step
        thread.start()
        while not done.is_set():
            stamps.append(time.perf_counter())
        thread.join()
    finally:
        sys.setswitchinterval(interval)
        ember.set_num_threads(previous)
    seconds = span[1] - span[0]
    during = sum(span[0] <= t <= span[1] for t in stamps)
    assert seconds > 0.01, "the step must take long enough to observe"
    assert during > 0.1 * rate * seconds, (during, rate, seconds)


def test_update_rules_match_pytorch(torch, rng):
    problem = Problem(rng)
    for name, kwargs in [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
                         ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
                         ("AdamW", dict(lr=0.01)),
                         ("RMSprop", dict(lr=0.01, momentum=0.5, centered=True)),
                         ("Adadelta", dict(lr=0.5, weight_decay=0.01)),
                         ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1))]:
        e_params = problem.params()
        t_params = [torch.tensor(x, requires_grad=True) for x in problem.start]
        e_opt, t_opt = getattr(optim, name)(e_params, **kwargs), getattr(torch.optim, name)(t_params, **kwargs)
        for _ in range(5):
            for opt, params, lib in ((e_opt, e_params, ember), (t_opt, t_params, torch)):
                opt.zero_grad()
                sum((0.5 * lib.tensor(a) * p * p + lib.tensor(b) * p).sum()
                    for p, a, b in zip(params, problem.a, problem.b)).backward()
                opt.step()
        for e, t in zip(e_params, t_params):
            assert_close(e, t.detach().numpy(), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# An optimizer written in Python.

class PythonSGD(optim.Optimizer):
    """SGD with momentum, PyTorch style: state in self.state, hyperparameters in the groups."""

    def __init__(self, params, lr=0.1, momentum=0.0):
        if lr < 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @ember.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if group["momentum"]:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = d.clone()
                    else:
                        state["momentum_buffer"].mul_(group["momentum"]).add_(d)
                    d = state["momentum_buffer"]
                p.add_(d, alpha=-group["lr"])
        return loss


def test_optimizer_subclassed_in_python(rng):
    problem = Problem(rng)
    p, q = problem.params()
    opt = PythonSGD([{"params": [p]}, {"params": [q], "lr": 0.05}], momentum=0.9)
    assert isinstance(opt, optim.Optimizer) and isinstance(optim.SGD([p]), optim.Optimizer)
    assert opt.param_groups[1] == {"params": [q], "lr": 0.05, "momentum": 0.9}
    states = [{}, {}]
    values = [x.copy() for x in problem.start]

    def closure():
        opt.zero_grad()
        loss = problem.loss([p, q])
        loss.backward()
        return loss

    for _ in range(3):
        grads = problem.grads(values)
        values = [sgd_ref(x, g, s, lr=lr, momentum=0.9) for x, g, s, lr in zip(values, grads, states, (0.1, 0.05))]
        assert opt.step(closure) is not None
    assert_close(p, values[0], rtol=1e-10)
    assert_close(q, values[1], rtol=1e-10)
    assert_close(opt.state[p]["momentum_buffer"], states[0]["buf"], rtol=1e-10)

    saved = opt.state_dict()
    assert saved["param_groups"] == [{"lr": 0.1, "momentum": 0.9, "params": [0]},
                                     {"lr": 0.05, "momentum": 0.9, "params": [1]}]
    assert set(saved["state"]) == {0, 1}
    p2, q2 = problem.params()
    clone = PythonSGD([{"params": [p2]}, {"params": [q2], "lr": 0.05}], momentum=0.9)
    clone.load_state_dict(saved)
    assert_close(clone.state[p2]["momentum_buffer"], states[0]["buf"], rtol=1e-10)
    assert clone.state[p2]["momentum_buffer"] is not opt.state[p]["momentum_buffer"]

    opt.zero_grad(set_to_none=False)
    assert p.grad.abs().sum().item() == 0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(NotImplementedError):
        optim.Optimizer([p], {}).step()


# ---------------------------------------------------------------------------------------------
# Learning-rate schedulers against their closed forms.

def lrs_of(scheduler, optimizer, steps):
    """The lr after construction and after each of `steps` steps (checked to be what the
    optimizer's groups hold)."""
    out = []
    for i in range(steps + 1):
        if i:
            scheduler.step()
        last = scheduler.get_last_lr()
        assert last == pytest.approx([g["lr"] for g in optimizer.param_groups], rel=1e-12)
        out.append(last)
    return out


def one_cycle(step, max_lr, total, pct=0.3, strategy="cos", div=25.0, final_div=1e4):
    initial, low = max_lr / div, max_lr / div / final_div
    end1, end2 = pct * total - 1, total - 1

    def anneal(start, end, t):
        if strategy == "linear":
            return start + (end - start) * t
        return end + (start - end) / 2 * (math.cos(math.pi * t) + 1)

    if step <= end1:
        return anneal(initial, max_lr, step / end1)
    return anneal(max_lr, low, (step - end1) / (end2 - end1))


def cosine(epoch, base, t_max, eta_min):
    return eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / t_max)) / 2


SCHEDULES = {
    "StepLR": (lambda o: lr_scheduler.StepLR(o, step_size=3, gamma=0.5), lambda e, b: b * 0.5 ** (e // 3)),
    "CosineAnnealingLR": (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
                          lambda e, b: cosine(e, b, 10, 0.001)),
    "OneCycleLR-cos": (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=12),
                       lambda e, b: one_cycle(e, 1.0, 12)),
    "OneCycleLR-linear": (lambda o: lr_scheduler.OneCycleLR(o, max_lr=[2.0, 1.0], epochs=3, steps_per_epoch=4,
                                                            pct_start=0.25, anneal_strategy="linear",
                                                            div_factor=10, final_div_factor=100),
                          lambda e, b: one_cycle(e, 2.0 * b / 0.1, 12, 0.25, "linear", 10, 100)),
    "LambdaLR": (lambda o: lr_scheduler.LambdaLR(o, lambda e: 1 / (1 + e)), lambda e, b: b / (1 + e)),
    "MultiplicativeLR": (lambda o: lr_scheduler.MultiplicativeLR(o, lambda e: 0.9), lambda e, b: b * 0.9 ** e),
    "MultiStepLR": (lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 5, 5], gamma=0.1),
                    lambda e, b: b * 0.1 ** bisect_right([2, 5, 5], e)),
    "ExponentialLR": (lambda o: lr_scheduler.ExponentialLR(o, gamma=0.8), lambda e, b: b * 0.8 ** e),
    "LinearLR": (lambda o: lr_scheduler.LinearLR(o, start_factor=0.25, end_factor=0.75, total_iters=4),
                 lambda e, b: b * (0.25 + 0.5 * min(e, 4) / 4)),
    "ConstantLR": (lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3),
                   lambda e, b: b * (0.5 if e < 3 else 1.0)),
    "SequentialLR": (lambda o: lr_scheduler.SequentialLR(
        o, [lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3),
            lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.0),
            lr_scheduler.ExponentialLR(o, gamma=0.5)], milestones=[3, 8]),
        lambda e, b: b * (0.1 + 0.9 * e / 3) if e < 3 else (cosine(e - 3, b, 5, 0.0) if e < 8 else b * 0.5 ** (e - 8))),
}


def make_optimizer(kind, params, lrs):
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, lrs)]
    return optim.SGD(groups, momentum=0.9) if kind == "native" else PythonSGD(groups)


@pytest.mark.parametrize("kind", ["native", "python"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_schedulers_follow_their_closed_forms(name, kind):
    make, formula = SCHEDULES[name]
    base = [0.1, 0.05]
    params = [ember.zeros(2, requires_grad=True), ember.zeros(3, requires_grad=True)]
    opt = make_optimizer(kind, params, base)
    scheduler = make(opt)
    steps = 11 if name.startswith("OneCycle") else 14
    got = lrs_of(scheduler, opt, steps)
    expected = [[formula(e, b) for b in base] for e in range(steps + 1)]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-15)
    assert scheduler.last_epoch == steps
    # The optimizer steps with the scheduled lr.
    for p in params:
        p.grad = ember.ones_like(p)
    before = [p.detach().clone() for p in params]
    opt.step()
    for p, b, lr in zip(params, before, got[-1]):
        assert_close(p, b.numpy() - lr)


def test_schedulers_set_the_lr_of_python_optimizers_changed_by_hand():
    p = ember.zeros(2, requires_grad=True)
    opt = PythonSGD([p], lr=1.0)
    scheduler = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    scheduler.step()
    opt.param_groups[0]["lr"] = 0.3  # StepLR multiplies the current lr, as PyTorch's does
    scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.15) and scheduler.get_last_lr() == pytest.approx([0.15])
    assert opt.param_groups[0]["initial_lr"] == 1.0 and scheduler.base_lrs == [1.0]


@pytest.mark.parametrize("kind", ["native", "python"])
def test_cosine_annealing_follows_an_lr_changed_by_hand(kind):
    # PyTorch's CosineAnnealingLR.get_lr is recursive: the lr set by hand moves along the cosine.
    opt = make_optimizer(kind, [ember.zeros(1, requires_grad=True)], [1.0])
    scheduler = lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.1)
    for _ in range(3):
        scheduler.step()
    opt.param_groups[0]["lr"] = 0.5
    scheduler.step()
    ratio = (1 + math.cos(math.pi * 4 / 10)) / (1 + math.cos(math.pi * 3 / 10))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 + ratio * 0.4, rel=1e-14)
    assert scheduler.get_last_lr() == pytest.approx([0.1 + ratio * 0.4], rel=1e-14)


def test_chained_warmup_and_cosine_multiply_as_in_pytorch():
    # Two recursive schedulers stepping one optimizer compose: ExponentialLR's factor applies on
    # top of the cosine's (worked from PyTorch's get_lr formulas).
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    exp = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    got = [opt.param_groups[0]["lr"]]
    for _ in range(3):
        cos.step()
        exp.step()
        got.append(opt.param_groups[0]["lr"])
    want, lr = [1.0], 1.0
    for e in range(1, 4):
        lr = (1 + math.cos(math.pi * e / 4)) / (1 + math.cos(math.pi * (e - 1) / 4)) * lr * 0.5
        want.append(lr)
    assert got == pytest.approx(want, rel=1e-12)


class PythonAdam(optim.Optimizer):
    """Only the hyperparameters of Adam (betas), for the schedulers."""

    def __init__(self, params, lr=0.1, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))

    def step(self, closure=None):
        pass


@pytest.mark.parametrize("kind", ["SGD", "Adam", "PythonSGD", "PythonAdam"])
def test_one_cycle_cycles_momentum_by_default(kind):
    p = ember.zeros(1, requires_grad=True)
    opt = {"SGD": lambda: optim.SGD([p], lr=0.1, momentum=0.9), "Adam": lambda: optim.Adam([p]),
           "PythonSGD": lambda: PythonSGD([p], momentum=0.9), "PythonAdam": lambda: PythonAdam([p])}[kind]()

    def momentum():
        g = opt.param_groups[0]
        return g["betas"][0] if "betas" in g else g["momentum"]

    scheduler = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    got = [momentum()]
    for _ in range(9):
        scheduler.step()
        got.append(momentum())
    # Phase one ends at step 2: 0.95 down to 0.85; then cosine back up to 0.95 at step 9.
    want = [0.95, 0.90, 0.85] + [0.95 + (0.85 - 0.95) / 2 * (math.cos(math.pi * (s - 2) / 7) + 1)
                                 for s in range(3, 10)]
    assert got == pytest.approx(want, rel=1e-12)
    if "betas" in opt.param_groups[0]:
        assert opt.param_groups[0]["betas"][1] == 0.999


def test_one_cycle_momentum_options_and_three_phases():
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1, momentum=0.3)
    lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, cycle_momentum=False).step()
    assert opt.param_groups[0]["momentum"] == 0.3
    scheduler = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="linear",
                                        three_phase=True, base_momentum=0.8, max_momentum=0.9)
    lrs, ms = [], []
    for i in range(10):
        if i:
            scheduler.step()
        lrs.append(opt.param_groups[0]["lr"])
        ms.append(opt.param_groups[0]["momentum"])
    assert lrs[:5] == pytest.approx([0.04, 0.52, 1.0, 0.52, 0.04], rel=1e-12)
    assert lrs[9] == pytest.approx(0.04 / 1e4, rel=1e-12)
    assert ms[:5] == pytest.approx([0.9, 0.85, 0.8, 0.85, 0.9], rel=1e-12)
    assert ms[5:] == pytest.approx([0.9] * 5, rel=1e-12)

    class NoMomentum(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, dict(lr=0.1))

        def step(self, closure=None):
            pass

    with pytest.raises(ValueError, match="no momentum or beta1 to cycle"):
        lr_scheduler.OneCycleLR(NoMomentum([ember.zeros(1, requires_grad=True)]), max_lr=1.0, total_steps=5)
    assert lr_scheduler.OneCycleLR(NoMomentum([ember.zeros(1, requires_grad=True)]), max_lr=1.0, total_steps=5,
                                   cycle_momentum=False).get_last_lr() == pytest.approx([0.04])


def test_one_cycle_past_total_steps_is_an_error():
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    scheduler = lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3)
    assert opt.param_groups[0]["initial_lr"] == pytest.approx(0.1 / 25)
    scheduler.step()
    scheduler.step()
    scheduler.step()
    with pytest.raises(ValueError, match="total_steps = 3"):
        scheduler.step()


@pytest.mark.parametrize("kind", ["native", "python"])
def test_reduce_lr_on_plateau(kind):
    opt = make_optimizer(kind, [ember.zeros(1, requires_grad=True)], [1.0])
    plateau = lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=2)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85]
    expected = [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25]  # worked by hand, patience 2
    got = []
    for m in metrics:
        plateau.step(ember.tensor(m))
        got.append(opt.param_groups[0]["lr"])
        assert plateau.get_last_lr() == [got[-1]]
    assert got == pytest.approx(expected)
    assert plateau.best == pytest.approx(0.8) and plateau.num_bad_epochs == 1 and plateau.last_epoch == 10

    # max mode, absolute threshold, cooldown and min_lr
    opt = make_optimizer(kind, [ember.zeros(1, requires_grad=True)], [1.0])
    plateau = lr_scheduler.ReduceLROnPlateau(opt, mode="max", factor=0.1, patience=0, threshold=0.5,
                                             threshold_mode="abs", cooldown=1, min_lr=0.005)
    got = []
    for m in [1.0, 1.4, 1.4, 1.4, 2.0, 1.0, 1.0]:
        plateau.step(m)
        got.append(opt.param_groups[0]["lr"])
    # 1.0 best; 1.4 < 1.0 + 0.5: bad -> 0.1 (cooldown 1); 1.4: cooldown; 1.4: bad -> 0.01;
    # 2.0 (cooldown, but best); 1.0: bad -> max(0.001, 0.005)
    assert got == pytest.approx([1.0, 0.1, 0.1, 0.01, 0.01, 0.005, 0.005])


def test_scheduler_state_dict_round_trips():
    def run(make, steps, metric=None):
        opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
        s = make(opt)
        for i in range(steps):
            s.step(*([metric(i)] if metric else []))
        return opt, s

    for make, metric in [(lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=7), None),
                         (lambda o: lr_scheduler.StepLR(o, 2, 0.5), None),
                         (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10), None),
                         (lambda o: lr_scheduler.ExponentialLR(o, 0.7), None),
                         (lambda o: lr_scheduler.LambdaLR(o, lambda e: 0.5 ** e), None),
                         (lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=1), lambda i: 1.0)]:
        opt_a, a = run(make, 4, metric)
        opt_b, b = run(make, 0, metric)
        saved = a.state_dict()
        assert saved["last_epoch"] == 4 and "optimizer" not in saved
        b.load_state_dict(saved)
        opt_b.load_state_dict(opt_a.state_dict())
        assert b.get_last_lr() == a.get_last_lr() and b.last_epoch == 4
        for i in range(4, 8):
            a.step(*([metric(i)] if metric else []))
            b.step(*([metric(i)] if metric else []))
            assert opt_b.param_groups[0]["lr"] == opt_a.param_groups[0]["lr"]


def test_scheduler_errors():
    opt = optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(TypeError, match="is not an ember.optim.Optimizer"):
        lr_scheduler.StepLR(object(), 2)
    with pytest.raises(ValueError, match="invalid step_size: 0"):
        lr_scheduler.StepLR(opt, 0)
    with pytest.raises(ValueError, match="invalid T_max: 0"):
        lr_scheduler.CosineAnnealingLR(opt, 0)
    with pytest.raises(ValueError, match="pass total_steps, or epochs and steps_per_epoch"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be 'cos' or 'linear'"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=5, anneal_strategy="exp")
    with pytest.raises(ValueError, match="expected 1 max_lrs"):
        lr_scheduler.OneCycleLR(opt, max_lr=[1.0, 2.0], total_steps=5)
    with pytest.raises(ValueError, match="invalid factor: 1"):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="lowest")
    with pytest.raises(ValueError, match="expected 1 min_lrs"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1, 0.2])
    with pytest.raises(ValueError, match="start_factor must be in"):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="expects 1 milestones for 2 schedulers"):
        lr_scheduler.SequentialLR(opt, [lr_scheduler.ConstantLR(opt), lr_scheduler.ConstantLR(opt)], milestones=[])
    with pytest.raises(ValueError, match="needs 'initial_lr'"):
        lr_scheduler.ExponentialLR(optim.SGD([ember.zeros(1, requires_grad=True)]), 0.5, last_epoch=3)


def test_optimizers_and_schedulers_are_freed():
    model = nn.Linear(3, 2)
    opt = optim.Adam(model.parameters())
    scheduler = lr_scheduler.CosineAnnealingLR(opt, T_max=3)
    python_opt = PythonSGD(model.parameters())
    python_scheduler = lr_scheduler.StepLR(python_opt, 2)
    plateau = lr_scheduler.ReduceLROnPlateau(python_opt)
    objects = (opt, scheduler, python_opt, python_scheduler, plateau, opt._native, scheduler._native,
               python_scheduler._native, python_scheduler._groups, plateau._native)
    refs = [weakref.ref(o) for o in objects]
    del opt, scheduler, python_opt, python_scheduler, plateau, objects
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_native_schedulers_keep_their_optimizer_alive():
    p = ember.zeros(1, requires_grad=True)
    native = ember._C.optim.SGD([([p], {})], dict(lr=1.0, momentum=0, dampening=0, weight_decay=0, nesterov=0))
    scheduler = ember._C.optim.StepLR(native, 1, 0.5)
    del native
    gc.collect()
    scheduler.step()
    assert scheduler.get_last_lr() == [0.5]


def test_schedulers_against_pytorch(torch):
    base = [0.1, 0.02]
    e_opt = optim.SGD([{"params": [ember.zeros(1, requires_grad=True)], "lr": lr} for lr in base])
    t_opt = torch.optim.SGD([{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in base])
    e_s = lr_scheduler.OneCycleLR(e_opt, max_lr=[0.5, 0.2], total_steps=17, pct_start=0.4)
    t_s = torch.optim.lr_scheduler.OneCycleLR(t_opt, max_lr=[0.5, 0.2], total_steps=17, pct_start=0.4,
                                              cycle_momentum=False)
    for _ in range(16):
        np.testing.assert_allclose(e_s.get_last_lr(), t_s.get_last_lr(), rtol=1e-12)
        e_s.step()
        t_s.step()


# ---------------------------------------------------------------------------------------------
# Gradient clipping (ember.nn.utils over ember._C.optim).

def test_clip_grad_norm_and_value(rng):
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(6)]
    flat = np.concatenate([g.ravel() for g in grads])

    def params():
        ps = [ember.zeros(g.shape, dtype=ember.float64, requires_grad=True) for g in grads]
        for p, g in zip(ps, grads):
            p.grad = ember.tensor(g, dtype=ember.float64)
        return ps + [ember.zeros(2, requires_grad=True)]  # one without a gradient

    for norm_type, total in [(2.0, np.linalg.norm(flat)), (1.0, np.abs(flat).sum()),
                             (float("inf"), np.abs(flat).max()), (3.0, (np.abs(flat) ** 3).sum() ** (1 / 3))]:
        ps = params()
        norm = nn.utils.clip_grad_norm_(ps, max_norm=0.5, norm_type=norm_type)
        assert norm.item() == pytest.approx(total, rel=1e-6)  # returned as a float32 tensor
        for p, g in zip(ps, grads):
            assert_close(p.grad, g * 0.5 / (total + 1e-6), rtol=1e-10)
        ps = params()
        nn.utils.clip_grad_norm_(ps, max_norm=total * 2, norm_type=norm_type)  # below: unchanged
        for p, g in zip(ps, grads):
            assert_close(p.grad, g, rtol=0, atol=0)

    ps = params()
    nn.utils.clip_grad_value_(ps, clip_value=0.3)
    for p, g in zip(ps, grads):
        assert_close(p.grad, np.clip(g, -0.3, 0.3))
    single = params()[0]
    nn.utils.clip_grad_value_(single, 0.1)
    assert single.grad.abs().max().item() == pytest.approx(0.1)

    ps = params()
    ps[0].grad = ember.full((3, 4), float("nan"), dtype=ember.float64)
    with pytest.raises(ValueError, match="total norm of order 2 of the gradients is nan"):
        nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="invalid max_norm"):
        nn.utils.clip_grad_norm_(params(), -1.0)
    with pytest.raises(ValueError, match="invalid clip_value"):
        nn.utils.clip_grad_value_(params(), -1.0)


def _rosenbrock_problem():
    a = ember.tensor([-1.5, 0.5], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([[2.0], [-0.5]], dtype=ember.float64, requires_grad=True)

    def loss():
        x = ember.cat([a, b.reshape(-1)])
        return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))
    return a, b, loss


@pytest.mark.parametrize("line_search_fn, max_iter, expected", [
    # PyTorch 2.15's torch.optim.LBFGS on the same problem (tests/api/optim/lbfgs_test.cpp).
    (None, 5, [(2645.0, [-0.9308259858262647, 0.8272346676559362, 0.546310517764528, 0.1746496538097969]),
               (7.554818587607735, [-0.8417055518218578, 0.7194058543822065, 0.5229877109413812,
                                    0.2739732080830977])]),
    ("strong_wolfe", 10, [(2645.0, [-0.8417055518218578, 0.7194058543822065, 0.5229877109413812,
                                    0.2739732080830977]),
                          (3.7130997244407045, [-0.790093614538243, 0.6355543295319436,
                                                0.40964752044523717, 0.16798080929817014])]),
])
def test_lbfgs_matches_pytorchs_iterates(line_search_fn, max_iter, expected):
    a, b, loss_of = _rosenbrock_problem()
    opt = optim.LBFGS([a, b], max_iter=max_iter, line_search_fn=line_search_fn)
    calls = []

    def closure():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        calls.append(ember.is_grad_enabled())
        return loss

    for want_loss, want_x in expected:
        with ember.no_grad():  # step enables gradients for the closure itself
            loss = opt.step(closure)
        assert isinstance(loss, ember.Tensor) and loss.item() == pytest.approx(want_loss, rel=1e-9)
        got = a.tolist() + b.reshape(-1).tolist()
        np.testing.assert_allclose(got, want_x, rtol=0, atol=1e-9)
    assert all(calls) and len(calls) > max_iter
    group = opt.param_groups[0]
    assert group["line_search_fn"] == line_search_fn and group["max_eval"] == max_iter * 5 // 4
    assert group["max_iter"] == max_iter and isinstance(group["history_size"], int)
    state = opt.state[a]
    assert state["step"].item() == opt.state_dict()["state"][0]["step"].item() > 0
    assert "old_dirs" in state and state["d"].shape == (4,)


def test_lbfgs_needs_a_closure_and_one_group():
    w = ember.zeros(3, requires_grad=True)
    with pytest.raises(ValueError, match="line_search_fn must be None or 'strong_wolfe'"):
        optim.LBFGS([w], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [w]}, {"params": [ember.zeros(2, requires_grad=True)]}])
    opt = optim.LBFGS([w])
    with pytest.raises(TypeError):
        opt.step()
    with pytest.raises(TypeError, match="the closure must return the loss"):
        opt.step(lambda: "loss")


# ---- PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, ChainedScheduler -----------------------

def _lrs(make, steps, opt=None, **okw):
    p = ember.zeros(2, requires_grad=True)
    o = (opt or optim.SGD)([p], lr=0.1, **okw)
    s = make(o)
    got = [o.param_groups[0]["lr"]]
    for _ in range(steps):
        o.step()
        s.step()
        got.append(o.param_groups[0]["lr"])
    return got, o, s


def test_polynomial_and_warm_restarts_follow_their_closed_forms():
    got, _, _ = _lrs(lambda o: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 6)
    assert_close(np.array(got), np.array([0.1 * (1 - min(t, 4) / 4) ** 2 for t in range(7)]), rtol=1e-12, atol=1e-15)
    got, _, s = _lrs(lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=2, eta_min=0.01), 8)
    # Cycles of 2, 4, 8 epochs: epoch t sits at T_cur of its cycle.
    cur = [(0, 2), (1, 2), (0, 4), (1, 4), (2, 4), (3, 4), (0, 8), (1, 8), (2, 8)]
    want = [0.01 + 0.09 * (1 + math.cos(math.pi * c / t)) / 2 for c, t in cur]
    assert_close(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)
    s.step(5.5)  # an epoch given: T_cur = 5.5 - 2 within the 4-epoch cycle
    assert s.get_last_lr()[0] == pytest.approx(0.01 + 0.09 * (1 + math.cos(math.pi * 3.5 / 4)) / 2)
    with pytest.raises(ValueError, match="T_0"):
        lr_scheduler.CosineAnnealingWarmRestarts(optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1), T_0=0)


def test_cyclic_lr_cycles_lr_and_momentum_and_chained_composes():
    got, o, _ = _lrs(lambda o: lr_scheduler.CyclicLR(o, 0.01, 0.05, step_size_up=2, step_size_down=4), 8,
                     momentum=0.9)
    # Up over 2 iterations, down over 4, then again.
    want = [0.01, 0.03, 0.05, 0.04, 0.03, 0.02, 0.01, 0.03, 0.05]
    assert_close(np.array(got), np.array(want), rtol=1e-12, atol=1e-15)
    assert o.param_groups[0]["momentum"] == pytest.approx(0.8)  # at the top of the lr, the bottom
    got, _, _ = _lrs(lambda o: lr_scheduler.CyclicLR(o, 0.01, 0.05, step_size_up=1, mode="triangular2",
                                                     cycle_momentum=False), 6)
    assert_close(np.array(got), np.array([0.01, 0.05, 0.01, 0.03, 0.01, 0.02, 0.01]), rtol=1e-12, atol=1e-15)
    _, o, _ = _lrs(lambda o: lr_scheduler.CyclicLR(o, 0.01, 0.05, step_size_up=2), 1, opt=optim.Adam)
    assert o.param_groups[0]["betas"][0] == pytest.approx(0.85)  # beta1 cycles for Adam
    with pytest.raises(ValueError, match="momentum"):
        lr_scheduler.CyclicLR(optim.Adagrad([ember.zeros(1, requires_grad=True)]), 0.01, 0.1)

    def chained(o):
        return lr_scheduler.ChainedScheduler([lr_scheduler.ExponentialLR(o, 0.5),
                                              lr_scheduler.PolynomialLR(o, total_iters=2)])

    got, _, s = _lrs(chained, 3)
    assert_close(np.array(got), np.array([0.1, 0.1 * 0.5 * 0.5, 0.0, 0.0]), rtol=1e-12, atol=1e-15)
    state = s.state_dict()
    assert len(state["_schedulers"]) == 2
    s.load_state_dict(state)


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: optim.Adam([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.01, "tag": "head"}],
                          lr=0.05),
    lambda ps: optim.ASGD(ps, lr=0.1),
])
def test_deepcopy_and_pickle_of_an_optimizer_continue_identically(make):
    import copy
    import pickle

    def train(model, opt, steps):
        for i in range(steps):
            opt.zero_grad()
            loss = (model(ember.full((4, 3), float(i + 1))) ** 2).mean()
            loss.backward()
            opt.step()
        return [p.detach().clone() for p in model.parameters()]

    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = make(list(model.parameters()))
    train(model, opt, 2)
    model2, opt2 = copy.deepcopy((model, opt))  # one memo: the copy steps the copied parameters
    model3, opt3 = pickle.loads(pickle.dumps((model, opt)))
    assert opt3.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    want = train(model, opt, 2)
    for m, o in ((model2, opt2), (model3, opt3)):
        for got, w in zip(train(m, o, 2), want):
            np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=1e-6)
