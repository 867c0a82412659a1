"""Learning-rate schedulers (torch.optim.lr_scheduler).

StepLR, CosineAnnealingLR, OneCycleLR and ReduceLROnPlateau are Ember's C++ schedulers; LambdaLR,
MultiplicativeLR, MultiStepLR, ExponentialLR, LinearLR, ConstantLR and SequentialLR are written
here with PyTorch's formulas. Every one works with the built-in optimizers and with optimizers
written in Python (Note [Schedulers of Python optimizers] in api/python/src/optim.cpp).
"""

import types
from bisect import bisect_right
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import ember
from ember import _errors
from ember._C import optim as _native
from ember.optim import Optimizer, _NativeOptimizer

__all__ = [
    "LRScheduler", "StepLR", "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau", "LambdaLR",
    "MultiplicativeLR", "MultiStepLR", "ExponentialLR", "LinearLR", "ConstantLR", "SequentialLR",
]


def _check_optimizer(optimizer: Any, who: str) -> None:
    if not isinstance(optimizer, Optimizer):
        raise _errors.TypeError(f"[optim.{who}] {type(optimizer).__name__} is not an ember.optim.Optimizer")


class LRScheduler:
    """Base of the schedulers (torch.optim.lr_scheduler.LRScheduler): a subclass defines get_lr(),
    the learning rates for self.last_epoch, from self.base_lrs and the groups' current lrs."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        who = type(self).__name__
        _check_optimizer(optimizer, who)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise _errors.ValueError(f"[optim.{who}] resuming at last_epoch={last_epoch} needs "
                                             f"'initial_lr' in param group {i}")
        self.base_lrs: List[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> List[float]:
        """The learning rates for self.last_epoch (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def get_last_lr(self) -> List[float]:
        """The learning rates the last step set, one per param group."""
        return self._last_lr

    def step(self) -> None:
        """Advances one epoch (or batch) and sets the new learning rates."""
        self.last_epoch += 1
        self._apply(self.get_lr())

    def _apply(self, lrs: Sequence[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, lrs):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _restart(self) -> None:
        """Starts the schedule again at epoch 0 (SequentialLR at a milestone)."""
        self.last_epoch = 0
        closed_form = getattr(self, "_closed_form_lr", None)
        self._apply(closed_form() if closed_form else self.get_lr())

    def state_dict(self) -> Dict[str, Any]:
        """The scheduler's attributes but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict()."""
        self.__dict__.update(state_dict)


_LRScheduler = LRScheduler  # PyTorch's older name


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(epoch), one function for all groups or one per group."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Union[Callable[[int], float], Sequence[Callable[[int], float]]],
                 last_epoch: int = -1):
        self.lr_lambdas = _per_group(optimizer, lr_lambda, "LambdaLR", "lr_lambda")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> Dict[str, Any]:
        """The attributes; of the lambdas, only the attributes of callable objects (functions are
        not saved), as PyTorch does."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict() (the lambdas' saved attributes back into them)."""
        state = dict(state_dict)
        saved = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class MultiplicativeLR(LambdaLR):
    """lr = previous lr * lr_lambda(epoch) (from epoch 1)."""

    def get_lr(self) -> List[float]:  # noqa: D102
        if self.last_epoch > 0:
            return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]
        return [g["lr"] for g in self.optimizer.param_groups]


def _momentum_key(optimizer: Optimizer) -> str:
    """The C++ name of a Python optimizer's momentum: 'momentum', 'beta1' (from 'betas') or ''."""
    defaults = getattr(optimizer, "defaults", {})
    if "momentum" in defaults:
        return "momentum"
    if "betas" in defaults:
        return "beta1"
    return ""


def _per_group(optimizer: Optimizer, fn: Any, who: str, name: str) -> list:
    _check_optimizer(optimizer, who)
    count = len(optimizer.param_groups)
    if isinstance(fn, (list, tuple)):
        if len(fn) != count:
            raise _errors.ValueError(f"[optim.{who}] expected {count} {name}s (one per param group), got {len(fn)}")
        return list(fn)
    return [fn] * count


class MultiStepLR(LRScheduler):
    """Multiplies the lr by gamma at each milestone epoch."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        factor = self.gamma ** self.milestones.get(self.last_epoch, 0)
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _closed_form_lr(self) -> List[float]:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by gamma every epoch: base_lr * gamma^epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        factor = 1.0 if self.last_epoch == 0 else self.gamma
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def _closed_form_lr(self) -> List[float]:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scales the lr by a factor going linearly from start_factor to end_factor over total_iters
    epochs, then constant."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if not 0 < start_factor <= 1:
            raise _errors.ValueError(f"[optim.LinearLR] start_factor must be in (0, 1]: got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise _errors.ValueError(f"[optim.LinearLR] end_factor must be in [0, 1]: got {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        lrs = [g["lr"] for g in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in lrs]
        if self.last_epoch > self.total_iters:
            return lrs
        delta = self.end_factor - self.start_factor
        factor = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [lr * factor for lr in lrs]

    def _closed_form_lr(self) -> List[float]:
        t = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * t) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scales the lr by factor for the first total_iters epochs."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        if not 0 <= factor <= 1:
            raise _errors.ValueError(f"[optim.ConstantLR] factor must be in [0, 1]: got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        lrs = [g["lr"] for g in self.optimizer.param_groups]
        if self.last_epoch == 0:
            return [lr * self.factor for lr in lrs]
        if self.last_epoch != self.total_iters:
            return lrs
        return [lr / self.factor for lr in lrs]

    def _closed_form_lr(self) -> List[float]:
        scale = self.factor if self.last_epoch < self.total_iters else 1.0
        return [base * scale for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Runs schedulers one after the other, switching at the milestone epochs; each starts at its
    epoch 0 when its turn comes."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1):
        _check_optimizer(optimizer, "SequentialLR")
        if len(schedulers) < 1:
            raise _errors.ValueError("[optim.SequentialLR] expects at least one scheduler")
        if len(milestones) != len(schedulers) - 1:
            raise _errors.ValueError(f"[optim.SequentialLR] expects {len(schedulers) - 1} milestones for "
                                     f"{len(schedulers)} schedulers, got {len(milestones)}")
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise _errors.ValueError(f"[optim.SequentialLR] scheduler {i} schedules another optimizer")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self._schedulers[0]._restart()
        self._last_lr = self._schedulers[0].get_last_lr()

    def step(self) -> None:
        """Steps the scheduler whose turn it is (restarting it at its first epoch)."""
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._restart()
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> Dict[str, Any]:
        """The attributes, with each scheduler's state_dict()."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict(), each scheduler's too."""
        state = dict(state_dict)
        for s, saved in zip(self._schedulers, state.pop("_schedulers")):
            s.load_state_dict(saved)
        self.__dict__.update(state)


class _NativeScheduler(LRScheduler):
    """A scheduler computed in C++: on a built-in optimizer it sets the lrs itself; on a Python
    optimizer it runs on an LrGroups whose lrs are copied in before and out after each step
    (Note [Schedulers of Python optimizers]). Its base_lrs are the groups' 'initial_lr', as in
    PyTorch, also when another scheduler changed the lrs first."""

    def _start(self, optimizer: Optimizer, make: Callable[[Any], Any]) -> None:
        """Builds the C++ scheduler with make(C++ optimizer), which takes the epoch-0 step."""
        _check_optimizer(optimizer, type(self).__name__)
        self.optimizer = optimizer
        self._make = make
        for group in optimizer.param_groups:
            group.setdefault("initial_lr", group["lr"])
        self._target(optimizer)
        self._build()

    def _target(self, optimizer: Optimizer) -> None:
        """Picks the C++ optimizer to drive: the built-in's own, or an LrGroups for the lrs (and
        momenta) of a Python one."""
        self._groups: Optional[Any] = None
        if isinstance(optimizer, _NativeOptimizer):
            self._driven = optimizer._native
        else:
            self._momentum_key = _momentum_key(optimizer)
            self._groups = self._driven = _native.LrGroups(
                [g["lr"] for g in optimizer.param_groups], self._momentum_key, self._momenta())

    def _build(self) -> None:
        self._copy_in()
        self._native = self._make(self._driven)
        self._copy_out()
        initial = [g["initial_lr"] for g in self.optimizer.param_groups]
        if initial != self.base_lrs:
            self.load_state_dict(dict(self.state_dict(), base_lrs=initial))

    def _momenta(self) -> List[float]:
        groups = self.optimizer.param_groups
        if self._momentum_key == "momentum":
            return [float(g["momentum"]) for g in groups]
        if self._momentum_key == "beta1":
            return [float(g["betas"][0]) for g in groups]
        return []

    def _copy_in(self) -> None:
        if self._groups is not None:
            self._groups.lrs = [g["lr"] for g in self.optimizer.param_groups]
            if self._momentum_key:
                self._groups.momenta = self._momenta()

    def _copy_out(self) -> None:
        if self._groups is not None:
            for group, lr in zip(self.optimizer.param_groups, self._groups.lrs):
                group["lr"] = lr
            for group, m in zip(self.optimizer.param_groups, self._groups.momenta):
                if self._momentum_key == "momentum":
                    group["momentum"] = m
                else:
                    group["betas"] = (m, *tuple(group["betas"])[1:])

    def step(self) -> None:
        """Advances one epoch (or batch) and sets the new learning rates."""
        self._copy_in()
        self._native.step()
        self._copy_out()

    def _restart(self) -> None:
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = base
        self._build()

    def get_last_lr(self) -> List[float]:
        """The learning rates the last step set, one per param group."""
        return list(self._native.get_last_lr())

    @property
    def last_epoch(self) -> int:  # type: ignore[override]
        """Steps taken (0 right after construction)."""
        return self._native.last_epoch

    @property
    def base_lrs(self) -> List[float]:  # type: ignore[override]
        """The learning rates the schedule starts from."""
        return list(self._native.base_lrs)

    def state_dict(self) -> Dict[str, Any]:
        """{'last_epoch', 'base_lrs', '_last_lr'}: where the schedule stands."""
        s = self._native.state_dict()
        return {"last_epoch": int(s["last_epoch"].item()), "base_lrs": s["base_lrs"].tolist(),
                "_last_lr": s["last_lr"].tolist()}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continues from a state_dict() of a scheduler made with the same arguments."""
        self._native.load_state_dict({
            "last_epoch": ember.tensor(int(state_dict["last_epoch"]), dtype=ember.int64),
            "base_lrs": ember.tensor([float(v) for v in state_dict["base_lrs"]], dtype=ember.float64),
            "last_lr": ember.tensor([float(v) for v in state_dict["_last_lr"]], dtype=ember.float64),
        })


class StepLR(_NativeScheduler):
    """Multiplies the lr by gamma every step_size epochs: base_lr * gamma^(epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1):
        self.step_size, self.gamma = step_size, gamma
        self._start(optimizer, lambda o: _native.StepLR(o, step_size, gamma))


class CosineAnnealingLR(_NativeScheduler):
    """Cosine annealing from base_lr down to eta_min over T_max epochs:
    eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0):
        self.T_max, self.eta_min = T_max, eta_min
        self._start(optimizer, lambda o: _native.CosineAnnealingLR(o, T_max, eta_min))


class OneCycleLR(_NativeScheduler):
    """The 1cycle policy: the lr rises from max_lr / div_factor to max_lr over pct_start of the
    steps, then anneals to max_lr / (div_factor * final_div_factor) (with three_phase, back to
    the initial lr first); with cycle_momentum the momentum (or Adam's beta1) goes the other way,
    from max_momentum down to base_momentum and back (api/optim/lr_scheduler.cpp)."""

    def __init__(self, optimizer: Optimizer, max_lr: Union[float, Sequence[float]], total_steps: Optional[int] = None,
                 epochs: Optional[int] = None, steps_per_epoch: Optional[int] = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: Union[float, Sequence[float]] = 0.85,
                 max_momentum: Union[float, Sequence[float]] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise _errors.ValueError("[optim.OneCycleLR] pass total_steps, or epochs and steps_per_epoch")
            if epochs <= 0 or steps_per_epoch <= 0:
                raise _errors.ValueError(f"[optim.OneCycleLR] epochs and steps_per_epoch must be positive: got "
                                         f"{epochs} and {steps_per_epoch}")
            total_steps = epochs * steps_per_epoch
        _check_optimizer(optimizer, "OneCycleLR")
        max_lrs = _per_group(optimizer, list(max_lr) if isinstance(max_lr, (list, tuple)) else max_lr,
                             "OneCycleLR", "max_lr")
        self.total_steps = total_steps

        def floats(v: Union[float, Sequence[float]]) -> List[float]:
            return [float(x) for x in v] if isinstance(v, (list, tuple)) else [float(v)]

        self._start(optimizer, lambda o: _native.OneCycleLR(
            o, [float(m) for m in max_lrs], total_steps, pct_start, anneal_strategy, cycle_momentum,
            floats(base_momentum), floats(max_momentum), div_factor, final_div_factor, three_phase))

    def _build(self) -> None:
        # The schedule starts at max_lr / div_factor whatever the groups held (PyTorch sets
        # 'initial_lr' to it).
        self._copy_in()
        self._native = self._make(self._driven)
        self._copy_out()
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["initial_lr"] = base


class ReduceLROnPlateau(_NativeScheduler):
    """Multiplies the lr by factor when the metric passed to step() has not improved for
    patience epochs (then waits cooldown epochs); never below min_lr."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: Union[float, Sequence[float]] = 0.0, eps: float = 1e-8):
        floors = _per_group(optimizer, list(min_lr) if isinstance(min_lr, (list, tuple)) else min_lr,
                            "ReduceLROnPlateau", "min_lr")
        if len(set(floors)) > 1:
            raise _errors.NotImplementedError("[optim.ReduceLROnPlateau] min_lr must be the same for every group")
        floor = float(floors[0])
        self.mode, self.factor, self.patience = mode, factor, patience
        self.optimizer = optimizer
        self._target(optimizer)
        self._native = _native.ReduceLROnPlateau(self._driven, mode, factor, patience, threshold, threshold_mode,
                                                 cooldown, floor, eps)

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Records this epoch's metric and reduces the lrs if it has plateaued."""
        self._copy_in()
        self._native.step(float(metrics))
        self._copy_out()

    @property
    def last_epoch(self) -> int:  # type: ignore[override]
        """Epochs recorded by step()."""
        return int(self._native.state_dict()["last_epoch"].item())

    @property
    def best(self) -> float:
        """The best metric seen so far."""
        return self._native.best

    @property
    def num_bad_epochs(self) -> int:
        """Consecutive epochs without improvement."""
        return self._native.num_bad_epochs

    @property
    def cooldown_counter(self) -> int:
        """Epochs of cooldown left."""
        return int(self._native.state_dict()["cooldown_counter"].item())

    def state_dict(self) -> Dict[str, Any]:
        """{'best', 'num_bad_epochs', 'cooldown_counter', 'last_epoch', '_last_lr'}."""
        s = self._native.state_dict()
        return {"best": s["best"].item(), "num_bad_epochs": int(s["num_bad_epochs"].item()),
                "cooldown_counter": int(s["cooldown_counter"].item()),
                "last_epoch": int(s["last_epoch"].item()), "_last_lr": s["last_lr"].tolist()}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continues from a state_dict() of a scheduler made with the same arguments."""
        self._native.load_state_dict({
            "best": ember.tensor(float(state_dict["best"]), dtype=ember.float64),
            "num_bad_epochs": ember.tensor(int(state_dict["num_bad_epochs"]), dtype=ember.int64),
            "cooldown_counter": ember.tensor(int(state_dict["cooldown_counter"]), dtype=ember.int64),
            "last_epoch": ember.tensor(int(state_dict["last_epoch"]), dtype=ember.int64),
            "last_lr": ember.tensor([float(v) for v in state_dict["_last_lr"]], dtype=ember.float64),
        })

    def _restart(self) -> None:
        raise _errors.NotImplementedError("[optim.SequentialLR] ReduceLROnPlateau cannot be part of a sequence")
