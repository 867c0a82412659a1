"""Learning-rate schedulers (torch.optim.lr_scheduler).

Every schedule is one of Ember's C++ schedulers (ember/optim/lr_scheduler.h, Note [One owner of
a learning rate]): these classes give them PyTorch's constructors, attributes and state dicts.
The C++ scheduler reads and sets the lrs in the optimizer's own param groups at each step (a
built-in optimizer's or one written in Python), so nothing is copied back and forth, and an lr
changed by hand between steps is seen as PyTorch's chainable schedulers see it. A subclass of
LRScheduler that defines get_lr() runs its formula through the same C++ base.
"""

import types
import weakref
from collections import Counter
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import ember
from ember import _errors
from ember._C import optim as _native
from ember.optim import Optimizer

__all__ = [
    "LRScheduler", "StepLR", "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau", "LambdaLR",
    "MultiplicativeLR", "MultiStepLR", "ExponentialLR", "LinearLR", "ConstantLR", "SequentialLR",
    "PolynomialLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ChainedScheduler",
]


def _check_optimizer(optimizer: Any, who: str) -> None:
    if not isinstance(optimizer, Optimizer):
        raise _errors.TypeError(f"[optim.{who}] {type(optimizer).__name__} is not an ember.optim.Optimizer")


def _per_group(optimizer: Optimizer, value: Any, who: str, name: str) -> list:
    """One value per param group: a list or tuple of them, or one for all."""
    _check_optimizer(optimizer, who)
    count = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise _errors.ValueError(f"[optim.{who}] expected {count} {name}s (one per param group), got "
                                     f"{len(value)}")
        return list(value)
    return [value] * count


def _floats(value: Union[float, Sequence[float]]) -> List[float]:
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]


# The C++ state's entries and their names in PyTorch's state dicts.
_NATIVE_NAMES = {"last_lr": "_last_lr"}


class LRScheduler:
    """Base of the schedulers (torch.optim.lr_scheduler.LRScheduler). A subclass written in
    Python defines get_lr(), the learning rates for self.last_epoch (from self.base_lrs and the
    groups' current lrs), and calls ``super().__init__(optimizer, last_epoch)``."""

    # The C++ state's entries beyond last_epoch, base_lrs and last_lr (Note [Scheduler states]).
    _extra_state: tuple = ()
    # Attributes that are not part of state_dict().
    _not_saved = ("optimizer", "_native", "_groups")

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        ref = weakref.ref(self)

        def get_lr() -> List[float]:
            return list(ref().get_lr())

        self._attach(optimizer, last_epoch, lambda groups: _native.FunctionLR(groups, get_lr, last_epoch))
        self._native.step()

    def _attach(self, optimizer: Optimizer, last_epoch: int, make: Callable[[Any], Any]) -> None:
        """Builds the C++ scheduler over the optimizer's groups (which records their
        'initial_lr', or reads it when resuming, as PyTorch does)."""
        _check_optimizer(optimizer, type(self).__name__)
        self.optimizer = optimizer
        self._groups = _native.PythonGroups(optimizer)
        self._native = make(self._groups)

    def get_lr(self) -> List[float]:
        """The learning rates for self.last_epoch (subclasses define it)."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def get_last_lr(self) -> List[float]:
        """The learning rates the last step set, one per param group."""
        return list(self._native.get_last_lr())

    @property
    def _last_lr(self) -> List[float]:
        return self.get_last_lr()

    @property
    def last_epoch(self) -> int:
        """Steps taken (0 right after construction)."""
        return self._native.last_epoch

    @last_epoch.setter
    def last_epoch(self, value: int) -> None:
        self._native.last_epoch = int(value)

    @property
    def base_lrs(self) -> List[float]:
        """The learning rates the schedule starts from."""
        return list(self._native.base_lrs)

    @base_lrs.setter
    def base_lrs(self, value: Sequence[float]) -> None:
        self._native.base_lrs = [float(v) for v in value]

    def step(self) -> None:
        """Advances one epoch (or batch) and sets the new learning rates."""
        self._native.step()

    def _restart(self) -> None:
        """Starts the schedule again at epoch 0 (SequentialLR at a milestone)."""
        self._native.restart()

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's: the scheduler's attributes but the optimizer, with last_epoch, base_lrs and
        _last_lr."""
        state = {k: v for k, v in self.__dict__.items() if k not in self._not_saved}
        for key, value in self._native.state_dict().items():
            state[_NATIVE_NAMES.get(key, key)] = value.item() if value.dim() == 0 else value.tolist()
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Continues from a state_dict() (also PyTorch's) of a scheduler made with the same
        arguments."""
        state = dict(state_dict)
        native = {}
        for key in ("last_epoch", "base_lrs", "last_lr") + self._extra_state:
            value = state.pop(_NATIVE_NAMES.get(key, key))
            if isinstance(value, (list, tuple)):
                native[key] = ember.tensor([float(v) for v in value], dtype=ember.float64)
            else:
                native[key] = ember.tensor(value, dtype=ember.int64 if isinstance(value, int) else ember.float64)
        self._native.load_state_dict(native)
        self.__dict__.update({k: v for k, v in state.items() if k not in self._not_saved})


_LRScheduler = LRScheduler  # PyTorch's older name


class _Builtin(LRScheduler):
    """A scheduler whose schedule is written in C++ (all of this module's)."""

    def get_lr(self) -> List[float]:
        """The learning rates of the current epoch (those the last step set)."""
        return self.get_last_lr()


class StepLR(_Builtin):
    """Multiplies the lr by gamma every step_size epochs: base_lr * gamma^(epoch // step_size)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = step_size, gamma
        self._attach(optimizer, last_epoch, lambda g: _native.StepLR(g, step_size, gamma, last_epoch))


class CosineAnnealingLR(_Builtin):
    """Cosine annealing from base_lr down to eta_min over T_max epochs:
    eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        self._attach(optimizer, last_epoch, lambda g: _native.CosineAnnealingLR(g, T_max, eta_min, last_epoch))


class OneCycleLR(_Builtin):
    """The 1cycle policy: the lr rises from max_lr / div_factor to max_lr over pct_start of the
    steps, then anneals to max_lr / (div_factor * final_div_factor) (with three_phase, back to
    the initial lr first); with cycle_momentum the momentum (or Adam's beta1) goes the other way,
    from max_momentum down to base_momentum and back."""

    def __init__(self, optimizer: Optimizer, max_lr: Union[float, Sequence[float]], total_steps: Optional[int] = None,
                 epochs: Optional[int] = None, steps_per_epoch: Optional[int] = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: Union[float, Sequence[float]] = 0.85,
                 max_momentum: Union[float, Sequence[float]] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise _errors.ValueError("[optim.OneCycleLR] pass total_steps, or epochs and steps_per_epoch")
            if epochs <= 0 or steps_per_epoch <= 0:
                raise _errors.ValueError(f"[optim.OneCycleLR] epochs and steps_per_epoch must be positive: got "
                                         f"{epochs} and {steps_per_epoch}")
            total_steps = epochs * steps_per_epoch
        max_lrs = [float(m) for m in _per_group(optimizer, max_lr, "OneCycleLR", "max_lr")]
        self.total_steps = total_steps
        self._attach(optimizer, last_epoch, lambda g: _native.OneCycleLR(
            g, max_lrs, total_steps, pct_start, anneal_strategy, cycle_momentum, _floats(base_momentum),
            _floats(max_momentum), div_factor, final_div_factor, three_phase, last_epoch))


class LambdaLR(_Builtin):
    """lr = base_lr * lr_lambda(epoch), one function for all groups or one per group."""

    _Native: Any = _native.LambdaLR
    _not_saved = LRScheduler._not_saved + ("lr_lambdas",)

    def __init__(self, optimizer: Optimizer, lr_lambda: Union[Callable[[int], float], Sequence[Callable[[int], float]]],
                 last_epoch: int = -1):
        self.lr_lambdas = _per_group(optimizer, lr_lambda, type(self).__name__, "lr_lambda")
        fns, native = self.lr_lambdas, self._Native
        self._attach(optimizer, last_epoch, lambda g: native(g, fns, last_epoch))

    def state_dict(self) -> Dict[str, Any]:
        """The attributes; of the lambdas, only the attributes of callable objects (functions are
        not saved), as PyTorch does."""
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) or not hasattr(fn, "__dict__")
                               else fn.__dict__.copy() for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict() (the lambdas' saved attributes back into them)."""
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        super().load_state_dict(state)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(attrs)


class MultiplicativeLR(LambdaLR):
    """lr = previous lr * lr_lambda(epoch) (from epoch 1)."""

    _Native = _native.MultiplicativeLR


class MultiStepLR(_Builtin):
    """Multiplies the lr by gamma at each milestone epoch."""

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        listed = [int(m) for m in milestones]
        self._attach(optimizer, last_epoch, lambda g: _native.MultiStepLR(g, listed, gamma, last_epoch))


class ExponentialLR(_Builtin):
    """Multiplies the lr by gamma every epoch: base_lr * gamma^epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        self._attach(optimizer, last_epoch, lambda g: _native.ExponentialLR(g, gamma, last_epoch))


class LinearLR(_Builtin):
    """Scales the lr by a factor going linearly from start_factor to end_factor over total_iters
    epochs, then constant."""

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        self._attach(optimizer, last_epoch,
                     lambda g: _native.LinearLR(g, start_factor, end_factor, total_iters, last_epoch))


class ConstantLR(_Builtin):
    """Scales the lr by factor for the first total_iters epochs."""

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1):
        self.factor, self.total_iters = factor, total_iters
        self._attach(optimizer, last_epoch, lambda g: _native.ConstantLR(g, factor, total_iters, last_epoch))


class PolynomialLR(_Builtin):
    """Decays the lr by (1 - epoch / total_iters)^power over total_iters epochs, then constant."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1):
        self.total_iters, self.power = total_iters, power
        self._attach(optimizer, last_epoch, lambda g: _native.PolynomialLR(g, total_iters, power, last_epoch))


class CosineAnnealingWarmRestarts(_Builtin):
    """Cosine annealing from the base lr to eta_min over T_i epochs, restarting at the base lr;
    T_i starts at T_0 and is multiplied by T_mult at each restart (SGDR)."""

    _extra_state = ("T_cur", "T_i")

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise _errors.ValueError(f"[optim.CosineAnnealingWarmRestarts] expected a positive integer T_0: got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise _errors.ValueError(f"[optim.CosineAnnealingWarmRestarts] expected an integer T_mult >= 1: "
                                     f"got {T_mult}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, float(eta_min)
        self._attach(optimizer, last_epoch,
                     lambda g: _native.CosineAnnealingWarmRestarts(g, T_0, T_mult, self.eta_min, last_epoch))

    @property
    def T_cur(self) -> float:
        """Epochs since the last restart."""
        return self._native.T_cur

    @property
    def T_i(self) -> int:
        """The length of the current cycle."""
        return self._native.T_i

    def step(self, epoch: Optional[float] = None) -> None:
        """Advances one epoch, or jumps to `epoch` (fractional epochs anneal within a cycle)."""
        if epoch is None:
            self._native.step()
        else:
            self._native.step(float(epoch))


class CyclicLR(_Builtin):
    """Cycles the lr between base_lr and max_lr (and the momentum or beta1 the other way), each
    cycle step_size_up iterations up and step_size_down down; modes 'triangular', 'triangular2'
    (the amplitude halves every cycle) and 'exp_range' (scaled by gamma^iteration), or scale_fn."""

    _not_saved = LRScheduler._not_saved + ("_scale_fn",)

    def __init__(self, optimizer: Optimizer, base_lr: Union[float, Sequence[float]],
                 max_lr: Union[float, Sequence[float]], step_size_up: int = 2000,
                 step_size_down: Optional[int] = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn: Optional[Callable[[float], float]] = None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum: Union[float, Sequence[float]] = 0.8,
                 max_momentum: Union[float, Sequence[float]] = 0.9, last_epoch: int = -1):
        base_lrs = [float(v) for v in _per_group(optimizer, base_lr, "CyclicLR", "base_lr")]
        self.max_lrs = [float(v) for v in _per_group(optimizer, max_lr, "CyclicLR", "max_lr")]
        self.mode, self.gamma, self.scale_mode = mode, gamma, scale_mode
        self._scale_fn = scale_fn
        self.cycle_momentum = cycle_momentum
        down = int(step_size_down) if step_size_down is not None else None
        self._attach(optimizer, last_epoch, lambda g: _native.CyclicLR(
            g, base_lrs, self.max_lrs, int(step_size_up), down, mode, gamma, scale_fn, scale_mode,
            cycle_momentum, _floats(base_momentum), _floats(max_momentum), last_epoch))
        # PyTorch keeps the momenta's range in the groups.
        if cycle_momentum and last_epoch == -1:
            bottoms = _per_group(optimizer, base_momentum, "CyclicLR", "base_momentum")
            tops = _per_group(optimizer, max_momentum, "CyclicLR", "max_momentum")
            for group, bottom, top in zip(optimizer.param_groups, bottoms, tops):
                group["max_momentum"], group["base_momentum"] = top, bottom

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or iteration) x."""
        return self._native.scale(x)


class _SchedulerList(_Builtin):
    """A scheduler made of others (SequentialLR, ChainedScheduler): its state holds theirs."""

    _schedulers: List[LRScheduler]
    _not_saved = LRScheduler._not_saved + ("_schedulers",)

    def _natives(self, schedulers: Sequence[LRScheduler], who: str) -> List[Any]:
        if len(schedulers) < 1:
            raise _errors.ValueError(f"[optim.{who}] expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if isinstance(s, ReduceLROnPlateau) or not isinstance(s, LRScheduler):
                raise _errors.NotImplementedError(
                    f"[optim.{who}] scheduler {i} is a {type(s).__name__}, which cannot be part of {who}")
        self._schedulers = list(schedulers)
        return [s._native for s in schedulers]

    def state_dict(self) -> Dict[str, Any]:
        """The attributes, with each scheduler's state_dict()."""
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restores a state_dict(), each scheduler's too."""
        state = dict(state_dict)
        for s, saved in zip(self._schedulers, state.pop("_schedulers")):
            s.load_state_dict(saved)
        super().load_state_dict(state)


class SequentialLR(_SchedulerList):
    """Runs schedulers one after the other, switching at the milestone epochs; each starts at its
    epoch 0 when its turn comes."""

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler], milestones: Sequence[int],
                 last_epoch: int = -1):
        natives = self._natives(schedulers, "SequentialLR")
        self._milestones = [int(m) for m in milestones]
        self._attach(optimizer, -1, lambda g: _native.SequentialLR(g, natives, self._milestones, last_epoch))


class ChainedScheduler(_SchedulerList):
    """Steps every scheduler in the list at each step, so their factors compose."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optional[Optimizer] = None):
        natives = self._natives(schedulers, "ChainedScheduler")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        self._attach(optimizer, -1, lambda g: _native.ChainedScheduler(g, natives))


class ReduceLROnPlateau(LRScheduler):
    """Multiplies the lr by factor when the metric passed to step() has not improved for
    patience epochs (then waits cooldown epochs); never below min_lr."""

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr: Union[float, Sequence[float]] = 0.0, eps: float = 1e-8):
        floors = _per_group(optimizer, min_lr, "ReduceLROnPlateau", "min_lr")
        if len(set(floors)) > 1:
            raise _errors.NotImplementedError("[optim.ReduceLROnPlateau] min_lr must be the same for every group")
        self.mode, self.factor, self.patience = mode, factor, patience
        self.optimizer = optimizer
        self._groups = _native.PythonGroups(optimizer)
        self._native = _native.ReduceLROnPlateau(self._groups, mode, factor, patience, threshold, threshold_mode,
                                                 cooldown, float(floors[0]), eps)

    def step(self, metrics: Any) -> None:  # type: ignore[override]
        """Records this epoch's metric and reduces the lrs if it has plateaued."""
        self._native.step(float(metrics))

    @property
    def last_epoch(self) -> int:  # type: ignore[override]
        """Epochs recorded by step()."""
        return int(self._native.state_dict()["last_epoch"].item())

    @property
    def base_lrs(self) -> List[float]:  # type: ignore[override]
        """The lrs the optimizer had when the scheduler was made."""
        return [g.get("initial_lr", g["lr"]) for g in self.optimizer.param_groups]

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
