"""Learning-rate schedulers (torch.optim.lr_scheduler).

StepLR, CosineAnnealingLR, OneCycleLR and ReduceLROnPlateau are Ember's C++ schedulers; LambdaLR,
MultiplicativeLR, MultiStepLR, ExponentialLR, LinearLR, ConstantLR, PolynomialLR,
CosineAnnealingWarmRestarts, CyclicLR, SequentialLR and ChainedScheduler are written here with
PyTorch's formulas. Every one works with the built-in optimizers and with optimizers
written in Python (Note [Schedulers of Python optimizers] in api/python/src/optim.cpp).
"""

import math
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
    "PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ChainedScheduler",
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


class _SchedulerList(LRScheduler):
    """A scheduler made of others (SequentialLR, ChainedScheduler): its state holds theirs."""

    _schedulers: List[LRScheduler]

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


class SequentialLR(_SchedulerList):
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


class PolynomialLR(LRScheduler):
    """Decays the lr by (1 - epoch / total_iters)^power over total_iters epochs, then constant."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        lrs = [g["lr"] for g in self.optimizer.param_groups]
        if self.last_epoch == 0 or self.last_epoch > self.total_iters:
            return lrs
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [lr * factor for lr in lrs]

    def _closed_form_lr(self) -> List[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left ** self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base lr to eta_min over T_i epochs, restarting at the base lr;
    T_i starts at T_0 and is multiplied by T_mult at each restart (SGDR)."""

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise _errors.ValueError(f"[optim.CosineAnnealingWarmRestarts] expected a positive integer T_0: got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise _errors.ValueError(f"[optim.CosineAnnealingWarmRestarts] expected an integer T_mult >= 1: "
                                     f"got {T_mult}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, float(eta_min)
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> List[float]:  # noqa: D102
        return [self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch: Optional[float] = None) -> None:
        """Advances one epoch, or jumps to `epoch` (fractional epochs anneal within a cycle)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise _errors.ValueError(f"[optim.CosineAnnealingWarmRestarts] expected a non-negative epoch: "
                                         f"got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._apply(self.get_lr())


def _per_group_value(optimizer: Optimizer, value: Any, who: str, name: str) -> List[float]:
    """One value per param group: a list or tuple of them, or one for all."""
    groups = optimizer.param_groups
    if isinstance(value, (list, tuple)):
        if len(value) != len(groups):
            raise _errors.ValueError(f"[optim.{who}] expected {len(groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(groups)


class CyclicLR(LRScheduler):
    """Cycles the lr between base_lr and max_lr (and the momentum or beta1 the other way), each
    cycle step_size_up iterations up and step_size_down down; modes 'triangular', 'triangular2'
    (the amplitude halves every cycle) and 'exp_range' (scaled by gamma^iteration), or scale_fn."""

    def __init__(self, optimizer: Optimizer, base_lr: Union[float, Sequence[float]],
                 max_lr: Union[float, Sequence[float]], step_size_up: int = 2000,
                 step_size_down: Optional[int] = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Optional[Callable[[float], float]] = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: Union[float, Sequence[float]] = 0.8,
                 max_momentum: Union[float, Sequence[float]] = 0.9, last_epoch: int = -1):
        _check_optimizer(optimizer, "CyclicLR")
        base_lrs = _per_group_value(optimizer, base_lr, "CyclicLR", "base_lr")
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group_value(optimizer, max_lr, "CyclicLR", "max_lr")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise _errors.ValueError(f"[optim.CyclicLR] mode must be 'triangular', 'triangular2' or 'exp_range' "
                                     f"when scale_fn is None: got {mode!r}")
        self.mode, self.gamma = mode, gamma
        if scale_fn is None:
            self._scale_fn = {"triangular": lambda x: 1.0, "triangular2": lambda x: 1 / (2.0 ** (x - 1)),
                              "exp_range": lambda x: gamma ** x}[mode]
            self.scale_mode = "iterations" if mode == "exp_range" else "cycle"
        else:
            self._scale_fn, self.scale_mode = scale_fn, scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            defaults = optimizer.defaults
            if "momentum" not in defaults and "betas" not in defaults:
                raise _errors.ValueError("[optim.CyclicLR] the optimizer must have momentum or betas when "
                                         "cycle_momentum is True")
            self.use_beta1 = "betas" in defaults
            self.base_momentums = _per_group_value(optimizer, base_momentum, "CyclicLR", "base_momentum")
            self.max_momentums = _per_group_value(optimizer, max_momentum, "CyclicLR", "max_momentum")
            if last_epoch == -1:
                for top, bottom, group in zip(self.max_momentums, self.base_momentums, optimizer.param_groups):
                    self._set_momentum(group, top)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _set_momentum(self, group: Dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) x."""
        return self._scale_fn(x)

    def get_lr(self) -> List[float]:  # noqa: D102
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + (top - base) * factor * scale for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bottom, top in zip(self.optimizer.param_groups, self.base_momentums, self.max_momentums):
                self._set_momentum(group, top - (top - bottom) * factor * scale)
        return lrs

    def state_dict(self) -> Dict[str, Any]:
        """The attributes but the optimizer and the scale function (a lambda is not saved)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_scale_fn")}


class ChainedScheduler(_SchedulerList):
    """Steps every scheduler in the list at each step, so their factors compose."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optional[Optimizer] = None):
        if len(schedulers) < 1:
            raise _errors.ValueError("[optim.ChainedScheduler] expects at least one scheduler")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if getattr(s, "optimizer", None) is not optimizer:
                raise _errors.ValueError(f"[optim.ChainedScheduler] scheduler {i} schedules another optimizer")
        self.optimizer = optimizer
        self._schedulers = list(schedulers)
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self) -> None:
        """Steps each scheduler in turn."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


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
