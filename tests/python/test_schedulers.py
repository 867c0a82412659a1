"""Every learning-rate scheduler against PyTorch's (fixtures/schedulers.json, made by
fixtures/make_schedulers.py with PyTorch): the lrs of both groups and group 0's momentum at each
step, with an lr changed by hand mid-run, on a built-in optimizer and on one written in Python;
a schedule resumed from its state_dict continues as the uninterrupted one; a scheduler written
in Python (get_lr) runs through the same base. One C++ implementation serves them all (Note [One
owner of a learning rate])."""

import json
import pathlib

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
DATA = json.loads((FIXTURES / "schedulers.json").read_text())


class PythonSGD(optim.Optimizer):
    """SGD with momentum written in Python: its groups are plain dicts."""

    def __init__(self, params, lr=1e-3, momentum=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad, alpha=-group["lr"])


class PythonAdam(optim.Optimizer):
    """An optimizer with Adam's 'betas' written in Python (its update is not the point)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))

    def step(self, closure=None):
        pass


def trajectory(code, kind, python_optimizers, bump=True):
    """As fixtures/make_schedulers.py's: the lrs and group 0's momentum, and get_last_lr(), per step."""
    classes = (PythonSGD, PythonAdam) if python_optimizers else (optim.SGD, optim.Adam)
    groups = [{"params": [ember.zeros(1, requires_grad=True)], "lr": 0.1},
              {"params": [ember.zeros(1, requires_grad=True)], "lr": 0.02}]
    o = classes[0](groups, momentum=0.9) if kind == "sgd" else classes[1](groups)
    s = eval(code, {"S": lr_scheduler, "o": o})
    lrs, last = [], []
    for step in range(DATA["steps"] + 1):
        g = o.param_groups
        lrs.append([x["lr"] for x in g] + [g[0]["betas"][0] if "betas" in g[0] else g[0]["momentum"]])
        last.append(list(s.get_last_lr()))
        if bump and step == DATA["bump"]:
            g[0]["lr"] *= 2
        o.step()
        s.step()
    return lrs, last, o, s


@pytest.mark.parametrize("python_optimizer", [False, True], ids=["builtin", "python"])
@pytest.mark.parametrize("name", sorted(DATA["cases"]))
def test_schedulers_match_pytorch(name, python_optimizer):
    case = DATA["cases"][name]
    lrs, last, _, _ = trajectory(case["code"], case["optimizer"], python_optimizer)
    np.testing.assert_allclose(lrs, case["lrs"], rtol=1e-12, atol=1e-15, err_msg=name)
    np.testing.assert_allclose(last, case["last_lr"], rtol=1e-12, atol=1e-15, err_msg=name)


@pytest.mark.parametrize("name", sorted(n for n in DATA["cases"] if not n.startswith(("Sequential", "Chained"))))
def test_a_resumed_schedule_continues_as_the_uninterrupted_one(name):
    case = DATA["cases"][name]
    code, kind = case["code"], case["optimizer"]
    full, _, _, _ = trajectory(code, kind, False, bump=False)

    def make():
        groups = [{"params": [ember.zeros(1, requires_grad=True)], "lr": 0.1},
                  {"params": [ember.zeros(1, requires_grad=True)], "lr": 0.02}]
        o = optim.SGD(groups, momentum=0.9) if kind == "sgd" else optim.Adam(groups)
        return o, eval(code, {"S": lr_scheduler, "o": o})

    o, s = make()
    for _ in range(6):
        o.step()
        s.step()
    saved_o, saved_s = o.state_dict(), s.state_dict()
    o2, s2 = make()
    o2.load_state_dict(saved_o)
    s2.load_state_dict(saved_s)
    assert s2.last_epoch == 6 and s2.get_last_lr() == s.get_last_lr()
    for step in range(7, DATA["steps"] + 1):
        o2.step()
        s2.step()
        assert [g["lr"] for g in o2.param_groups] == pytest.approx(full[step][:2], rel=1e-12), step


def test_a_scheduler_written_in_python_runs_on_the_same_base():
    class Halving(lr_scheduler.LRScheduler):
        """Halves the base lr every `every` epochs (a closed form written in Python)."""

        def __init__(self, optimizer, every, last_epoch=-1):
            self.every = every
            super().__init__(optimizer, last_epoch)

        def get_lr(self):
            return [base * 0.5 ** (self.last_epoch // self.every) for base in self.base_lrs]

    o = optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.8)
    s = Halving(o, 2)
    got = [o.param_groups[0]["lr"]]
    for _ in range(5):
        s.step()
        got.append(o.param_groups[0]["lr"])
    assert got == [0.8, 0.8, 0.4, 0.4, 0.2, 0.2]
    assert s.last_epoch == 5 and s.base_lrs == [0.8]
    state = s.state_dict()
    assert state["every"] == 2 and state["last_epoch"] == 5 and state["_last_lr"] == [0.2]
    # Inside a SequentialLR, after a built-in one: both are C++ schedulers of the same groups.
    o = optim.SGD([ember.zeros(1, requires_grad=True)], lr=1.0)
    seq = lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2), Halving(o, 1)],
                                    milestones=[2])
    got = [o.param_groups[0]["lr"]]
    for _ in range(4):
        seq.step()
        got.append(o.param_groups[0]["lr"])
    assert got == pytest.approx([0.1, 0.1, 1.0, 0.5, 0.25])

    class Forgot(lr_scheduler.LRScheduler):
        pass

    with pytest.raises(NotImplementedError, match="does not define get_lr"):
        Forgot(o)


def test_schedulers_keep_no_copy_of_a_python_optimizers_groups():
    o = PythonSGD([ember.zeros(1, requires_grad=True)], lr=1.0, momentum=0.9)
    s = lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10)
    # The groups are the optimizer's own dicts; the scheduler wrote 'initial_lr' and the momentum.
    assert o.param_groups[0]["initial_lr"] == pytest.approx(0.04)
    assert o.param_groups[0]["momentum"] == pytest.approx(0.95)
    o.param_groups.append({"params": [], "lr": 9.0, "momentum": 0.0})  # a group added behind its back
    with pytest.raises(ValueError, match="param group 1 has no 'initial_lr'|param groups"):
        s.step()
