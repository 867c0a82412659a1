"""Optimizers (torch.optim): SGD, Adam, AdamW, RMSprop, Adadelta, Adagrad, Adamax, NAdam, RAdam,
Rprop and LBFGS, and Optimizer to subclass.

The built-in optimizers are Ember's C++ ones (``ember._C.optim``): step() runs in C++ with
the GIL released, and their ``param_groups`` and ``state`` are views of the C++ groups and state,
so ``group['lr'] = 0.1`` changes the group the next step uses. ``Optimizer`` is PyTorch's base
class in Python: subclass it, call ``super().__init__(params, defaults)`` and write step() over
``self.param_groups`` and ``self.state``. The learning-rate schedulers (``lr_scheduler``) and
``ember.amp.GradScaler`` work with both kinds.
"""

from collections import defaultdict
from collections.abc import Mapping, MutableMapping
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import ember
from ember import _errors
from ember._C import Tensor
from ember._C import optim as _native
from ember.autograd import enable_grad, no_grad

__all__ = ["Optimizer", "ASGD", "SGD", "Adam", "AdamW", "RMSprop", "Adadelta", "Adagrad", "Adamax", "NAdam",
           "RAdam", "Rprop", "LBFGS", "lr_scheduler"]


def _param_groups(params: Any, who: str) -> List[dict]:
    """The param groups given to a constructor (an iterable of tensors or of dicts), as dicts."""
    if isinstance(params, Tensor) or isinstance(params, (set, frozenset)):
        raise _errors.TypeError(
            f"[{who}] params must be an iterable of tensors or of dicts (param groups), in a "
            f"stable order: got {type(params).__name__}")
    groups = list(params)
    if not groups:
        raise _errors.ValueError(f"[{who}] got an empty parameter list")
    if not isinstance(groups[0], Mapping):
        return [{"params": groups}]
    return [dict(g) for g in groups]


def _group_params(group: Mapping, who: str) -> List[Tensor]:
    """The parameters of a group dict, checked to be tensors."""
    if not isinstance(group, Mapping) or "params" not in group:
        raise _errors.TypeError(f"[{who}] a param group must be a dict with a 'params' key: got {group!r}")
    params = group["params"]
    if isinstance(params, (set, frozenset)):
        raise _errors.TypeError(f"[{who}] the parameters of a group must be an ordered sequence, not a set")
    params = [params] if isinstance(params, Tensor) else list(params)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise _errors.TypeError(f"[{who}] parameter {i} of a param group is a {type(p).__name__}, not a tensor")
    return params


class Optimizer:
    """Base of the optimizers (torch.optim.Optimizer). A subclass calls
    ``super().__init__(params, defaults)`` and defines ``step(closure=None)`` over
    ``self.param_groups`` (dicts with 'params' and the hyperparameters) and ``self.state``
    (a dict from parameter to that parameter's state dict)."""

    def __init__(self, params: Any, defaults: Dict[str, Any]):
        self.defaults = dict(defaults)
        self.state: Dict[Tensor, Dict[str, Any]] = defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        for group in _param_groups(params, type(self).__name__):
            self.add_param_group(group)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters, filling in the defaults for the keys it does not set."""
        who = type(self).__name__
        params = _group_params(param_group, who)
        for p in params:
            if not p.is_leaf:
                raise _errors.ValueError(f"[{who}] cannot optimize a non-leaf tensor (optimize the leaf it "
                                         "was computed from, or detach() it)")
        group = dict(param_group)
        group["params"] = params
        for name, default in self.defaults.items():
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or any(id(p) in seen for p in params):
            raise _errors.ValueError(f"[{who}] some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients: to None, or (set_to_none=False) to zeros."""
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if set_to_none:
                        p.grad = None
                    else:
                        if grad.grad_fn is not None:
                            grad = grad.detach()
                            p.grad = grad
                        grad.zero_()

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Applies one update; subclasses define it (closure re-evaluates and returns the loss)."""
        raise NotImplementedError(f"{type(self).__name__} does not define step()")

    def state_dict(self) -> Dict[str, Any]:
        """{'state': {index: state}, 'param_groups': [group with 'params' as indices]}, the
        parameters numbered over all groups in order, as PyTorch does."""
        index: Dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                packed["params"].append(index[id(p)])
            groups.append(packed)
        state = {index[id(p)]: s for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state_dict(): hyperparameters per group, and each parameter's state (tensors
        copied to the parameter's device, floating ones to its dtype, except 'step')."""
        who = type(self).__name__
        saved_groups = _check_saved_groups(state_dict, len(self.param_groups), who)
        by_id: Dict[Any, Tensor] = {}
        for group, saved in zip(self.param_groups, saved_groups):
            if len(saved["params"]) != len(group["params"]):
                raise _errors.ValueError(
                    f"[{who}] load_state_dict: a saved param group has {len(saved['params'])} parameters, "
                    f"the optimizer's {len(group['params'])}")
            by_id.update(zip(saved["params"], group["params"]))
        state: Dict[Any, Dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in by_id:
                param = by_id[key]
                state[param] = {k: _to_param(v, param, k) for k, v in value.items()}
            else:
                state[key] = value
        groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            new = dict(saved)
            new["params"] = group["params"]
            groups.append(new)
        self.state = state
        self.param_groups = groups

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for key in sorted(k for k in group.keys() if k != "params"):
                lines.append(f"    {key}: {group[key]}")
        lines.append(")")
        return "\n".join(lines)


def _check_saved_groups(state_dict: Any, count: int, who: str) -> list:
    if not isinstance(state_dict, Mapping) or "state" not in state_dict or "param_groups" not in state_dict:
        raise _errors.ValueError(f"[{who}] load_state_dict: expected a dict with 'state' and 'param_groups'")
    saved = list(state_dict["param_groups"])
    if len(saved) != count:
        raise _errors.ValueError(
            f"[{who}] load_state_dict: the state has {len(saved)} param groups but the optimizer has {count}")
    return saved


def _to_param(value: Any, param: Tensor, key: str) -> Any:
    """A loaded state value for `param`: a tensor copied to its device (and dtype if floating,
    except 'step'), containers converted element by element."""
    if isinstance(value, Tensor):
        if key != "step" and value.is_floating_point():
            return value.detach().to(dtype=param.dtype, device=param.device).clone()
        return value.detach().to(device=param.device).clone()
    if isinstance(value, dict):
        return {k: _to_param(v, param, key) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_param(v, param, key) for v in value)
    return value


# Note [Python views of C++ optimizers]
# A built-in optimizer keeps its groups and state in C++; Python sees them through views, so
# there is one copy and a scheduler or a user writing group['lr'] changes what the next step
# uses. A group's hyperparameters are C++ floats under C++ names; each class's _hyper table maps
# PyTorch's keys to them ('betas' is Adam's beta1 and beta2; flags such as 'nesterov' are 0 or 1
# in C++ and bools in Python). Keys C++ does not know ('initial_lr' that schedulers add, your
# own) are kept in Python beside the group. The state dict is PyTorch's nested layout, made from
# and turned back into the C++ flat one (Note [Optimizer state dict layout] in
# api/optim/optimizer.cpp).


class _ParamGroup(MutableMapping):
    """One param group of a C++ optimizer as a dict: hyperparameters read and written in C++,
    other keys kept beside it (Note [Python views of C++ optimizers]). 'params' is a new list at
    each read; add parameters with add_param_group."""

    __slots__ = ("_opt", "_index")

    def __init__(self, opt: "_NativeOptimizer", index: int):
        self._opt = opt
        self._index = index

    def __getitem__(self, key: str) -> Any:
        opt = self._opt
        if key == "params":
            return opt._native.group_params(self._index)
        if key in opt._hyper:
            return opt._from_native(key, opt._native.group_options(self._index))
        return opt._extras[self._index][key]

    def __setitem__(self, key: str, value: Any) -> None:
        opt = self._opt
        if key == "params":
            raise _errors.ValueError(f"[{opt._name}] the parameters of a group cannot be replaced "
                                     "(add a group with add_param_group)")
        if key in opt._hyper:
            for name, v in opt._to_native(key, value):
                opt._native.set_group_option(self._index, name, v)
        else:
            opt._extras[self._index][key] = value

    def __delitem__(self, key: str) -> None:
        if key == "params" or key in self._opt._hyper:
            raise _errors.ValueError(f"[{self._opt._name}] '{key}' cannot be removed from a param group")
        del self._opt._extras[self._index][key]

    def __iter__(self) -> Iterator[str]:
        yield "params"
        yield from self._opt._hyper
        yield from list(self._opt._extras[self._index])

    def __len__(self) -> int:
        return 1 + len(self._opt._hyper) + len(self._opt._extras[self._index])

    def __repr__(self) -> str:
        return repr(dict(self))


class _State(Mapping):
    """The state of a C++ optimizer by parameter: state[p] is a dict of p's buffers (the live
    tensors) and its 'step'; {} for a parameter without state, as PyTorch's defaultdict."""

    __slots__ = ("_native",)

    def __init__(self, native: Any):
        self._native = native

    def __getitem__(self, param: Tensor) -> Dict[str, Tensor]:
        if not isinstance(param, Tensor):
            raise KeyError(param)
        return self._native.param_state(param)

    def __contains__(self, param: object) -> bool:
        return isinstance(param, Tensor) and len(self._native.param_state(param)) > 0

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self._native.params_with_state())

    def __len__(self) -> int:
        return len(self._native.params_with_state())

    def __repr__(self) -> str:
        return repr(dict(self))


class _NativeOptimizer(Optimizer):
    """An optimizer run by C++ (Note [Python views of C++ optimizers]); subclasses name the C++
    class and the table of their hyperparameters."""

    _Native: Any = None
    # PyTorch's key -> the C++ hyperparameters holding it, in PyTorch's order.
    _hyper: Dict[str, Tuple[str, ...]] = {}
    # Keys that are bools in Python (0 or 1 in C++).
    _flags: Tuple[str, ...] = ()

    def __init__(self, params: Any, defaults: Dict[str, Any]):  # noqa: D107 (Optimizer's)
        self._name = f"optim.{type(self).__name__}"
        self.defaults = dict(defaults)
        native_defaults = dict(kv for key, value in defaults.items() for kv in self._to_native(key, value))
        groups = [self._split(g) for g in _param_groups(params, self._name)]
        self._native = self._Native([(p, o) for p, o, _ in groups], native_defaults)
        self._extras = [extra for _, _, extra in groups]
        # The parameters' Python objects, held as PyTorch's optimizer holds them: reading a group
        # returns these objects (ember.nn.Parameter ones stay Parameters), not new tensors.
        self._objects = [p for p, _, _ in groups]

    def _to_native(self, key: str, value: Any) -> List[Tuple[str, float]]:
        names = self._hyper[key]
        if len(names) == 1:
            return [(names[0], float(value))]
        values = tuple(value)
        if len(values) != len(names):
            raise _errors.ValueError(f"[{self._name}] {key} must hold {len(names)} numbers: got {value!r}")
        return [(n, float(v)) for n, v in zip(names, values)]

    def _from_native(self, key: str, options: Dict[str, float]) -> Any:
        names = self._hyper[key]
        if key in self._flags:
            return options[names[0]] != 0
        if len(names) == 1:
            return options[names[0]]
        return tuple(options[n] for n in names)

    def _split(self, group: Mapping) -> Tuple[List[Tensor], Dict[str, float], Dict[str, Any]]:
        """A group dict as (parameters, C++ hyperparameters, other keys)."""
        return (_group_params(group, self._name),) + self._split_options(group)

    def _split_options(self, group: Mapping) -> Tuple[Dict[str, float], Dict[str, Any]]:
        """The keys of a group dict but 'params' as (C++ hyperparameters, other keys)."""
        native: Dict[str, float] = {}
        extra = {}
        for key, value in group.items():
            if key == "params":
                continue
            if key in self._hyper:
                native.update(self._to_native(key, value))
            elif key in ("maximize", "differentiable") and value:
                raise _errors.NotImplementedError(f"[{self._name}] {key}=True is not supported")
            else:
                extra[key] = value
        return native, extra

    # Note [Copying and pickling optimizers]
    # A C++ optimizer is rebuilt, not copied: the state is its parameters' Python objects per
    # group and its state_dict() (hyperparameters, other keys, per-parameter state). copy.deepcopy
    # and pickle copy that (so parameters shared with a model copied in the same call stay shared,
    # through the memo), and __setstate__ makes a new C++ optimizer over the copied parameters and
    # loads the state into it, as PyTorch's optimizers are copied and pickled.
    def __getstate__(self) -> Dict[str, Any]:
        return {"defaults": self.defaults, "params": [list(ps) for ps in self._objects],
                "state_dict": self.state_dict()}

    def __setstate__(self, saved: Dict[str, Any]) -> None:
        groups = []
        for params, group in zip(saved["params"], saved["state_dict"]["param_groups"]):
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": params})
        _NativeOptimizer.__init__(self, groups, saved["defaults"])
        self.load_state_dict(saved["state_dict"])

    @property
    def param_groups(self) -> List[_ParamGroup]:  # type: ignore[override]
        """The groups, as dicts whose hyperparameters are the C++ group's."""
        return [_ParamGroup(self, i) for i in range(self._native.num_param_groups)]

    @property
    def state(self) -> _State:  # type: ignore[override]
        """The state of each parameter (its buffers and step), read from C++."""
        return _State(self._native)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Adds a group of parameters, filling in the defaults for the keys it does not set."""
        params, native, extra = self._split(param_group)
        self._native.add_param_group(params, native)
        self._extras.append(extra)
        self._objects.append(params)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients: to None, or (set_to_none=False) to zeros."""
        self._native.zero_grad(set_to_none)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Applies one update (in C++, GIL released); calls closure first (with gradients
        enabled) and returns what it returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._native.step()
        return loss

    def state_dict(self) -> Dict[str, Any]:
        """PyTorch's layout, {'state': {index: {name: tensor}}, 'param_groups': [...]}, with
        copies of the C++ state."""
        flat = self._native.state_dict()
        state: Dict[int, Dict[str, Tensor]] = {}
        options: List[Dict[str, float]] = [{} for _ in range(self._native.num_param_groups)]
        ids: List[List[int]] = [[] for _ in options]
        for key, value in flat.items():
            kind, index, name = key.split(".", 2)
            if kind == "state":
                state.setdefault(int(index), {})[name] = value
            elif name == "params":
                ids[int(index)] = value.tolist()
            else:
                options[int(index)][name] = value.item()
        groups = []
        for g, extra in enumerate(self._extras):
            group = {key: self._from_native(key, options[g]) for key in self._hyper}
            group.update(extra)
            group["params"] = ids[g]
            groups.append(group)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Loads a state_dict() (this layout, also PyTorch's): hyperparameters and state, the
        parameters matched by position within each group."""
        saved_groups = _check_saved_groups(state_dict, self._native.num_param_groups, self._name)
        flat: Dict[str, Tensor] = {}
        extras = []
        position: Dict[Any, int] = {}
        for g, saved in enumerate(saved_groups):
            native, extra = self._split_options(saved)
            count = len(self._native.group_params(g))
            if len(saved["params"]) != count:
                raise _errors.ValueError(
                    f"[{self._name}] load_state_dict: saved param group {g} has {len(saved['params'])} "
                    f"parameters, the optimizer's {count}")
            first = len(position)
            position.update((saved_id, first + i) for i, saved_id in enumerate(saved["params"]))
            flat[f"param_groups.{g}.params"] = ember.arange(first, first + count, dtype=ember.int64)
            for name, value in native.items():
                flat[f"param_groups.{g}.{name}"] = ember.tensor(value, dtype=ember.float64)
            extras.append(extra)
        for saved_id, values in state_dict["state"].items():
            if saved_id not in position:
                raise _errors.ValueError(f"[{self._name}] load_state_dict: state {saved_id!r} names no parameter")
            for name, saved_value in values.items():
                if saved_value is None:  # PyTorch's SGD without momentum
                    continue
                if not isinstance(saved_value, Tensor):
                    saved_value = ember.tensor(float(saved_value), dtype=ember.float64)
                flat[f"state.{position[saved_id]}.{name}"] = saved_value
        self._native.load_state_dict(flat)
        self._extras = extras


class SGD(_NativeOptimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay
    (torch.optim.SGD), run by Ember's C++ optimizer."""

    _Native = _native.SGD
    _hyper = {"lr": ("lr",), "momentum": ("momentum",), "dampening": ("dampening",),
              "weight_decay": ("weight_decay",), "nesterov": ("nesterov",)}
    _flags = ("nesterov",)

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov))


class Adam(_NativeOptimizer):
    """Adam with L2 weight decay and AMSGrad (torch.optim.Adam), run by Ember's C++ optimizer."""

    _Native = _native.Adam
    _hyper = {"lr": ("lr",), "betas": ("beta1", "beta2"), "eps": ("eps",),
              "weight_decay": ("weight_decay",), "amsgrad": ("amsgrad",)}
    _flags = ("amsgrad",)

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad))


class AdamW(_NativeOptimizer):
    """Adam with decoupled weight decay (torch.optim.AdamW), run by Ember's C++ optimizer."""

    _Native = _native.AdamW
    _hyper = Adam._hyper
    _flags = Adam._flags

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad))


class RMSprop(_NativeOptimizer):
    """RMSprop, centered or not, with momentum and weight decay (torch.optim.RMSprop), run by
    Ember's C++ optimizer."""

    _Native = _native.RMSprop
    _hyper = {"lr": ("lr",), "alpha": ("alpha",), "eps": ("eps",), "weight_decay": ("weight_decay",),
              "momentum": ("momentum",), "centered": ("centered",)}
    _flags = ("centered",)

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False):
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered))


class Adadelta(_NativeOptimizer):
    """Adadelta with weight decay (torch.optim.Adadelta), run by Ember's C++ optimizer."""

    _Native = _native.Adadelta
    _hyper = {"lr": ("lr",), "rho": ("rho",), "eps": ("eps",), "weight_decay": ("weight_decay",)}

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))


class Adagrad(_NativeOptimizer):
    """Adagrad with lr decay and weight decay (torch.optim.Adagrad), run by Ember's C++
    optimizer."""

    _Native = _native.Adagrad
    _hyper = {"lr": ("lr",), "lr_decay": ("lr_decay",), "weight_decay": ("weight_decay",),
              "initial_accumulator_value": ("initial_accumulator_value",), "eps": ("eps",)}

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10):
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, eps=eps))


class Adamax(_NativeOptimizer):
    """Adamax, Adam with the infinity norm (torch.optim.Adamax), run by Ember's C++ optimizer."""

    _Native = _native.Adamax
    _hyper = {"lr": ("lr",), "betas": ("beta1", "beta2"), "eps": ("eps",),
              "weight_decay": ("weight_decay",)}

    def __init__(self, params: Any, lr: float = 2e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))


class NAdam(_NativeOptimizer):
    """NAdam, Adam with Nesterov momentum (torch.optim.NAdam), run by Ember's C++ optimizer."""

    _Native = _native.NAdam
    _hyper = {"lr": ("lr",), "betas": ("beta1", "beta2"), "eps": ("eps",),
              "weight_decay": ("weight_decay",), "momentum_decay": ("momentum_decay",),
              "decoupled_weight_decay": ("decoupled_weight_decay",)}
    _flags = ("decoupled_weight_decay",)

    def __init__(self, params: Any, lr: float = 2e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay))


class RAdam(_NativeOptimizer):
    """RAdam, Adam with its adaptive rate's variance rectified (torch.optim.RAdam), run by Ember's
    C++ optimizer."""

    _Native = _native.RAdam
    _hyper = {"lr": ("lr",), "betas": ("beta1", "beta2"), "eps": ("eps",),
              "weight_decay": ("weight_decay",), "decoupled_weight_decay": ("decoupled_weight_decay",)}
    _flags = ("decoupled_weight_decay",)

    def __init__(self, params: Any, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay))


class Rprop(_NativeOptimizer):
    """Rprop, steps from the gradients' signs (torch.optim.Rprop), run by Ember's C++ optimizer."""

    _Native = _native.Rprop
    _hyper = {"lr": ("lr",), "etas": ("etaminus", "etaplus"),
              "step_sizes": ("step_size_min", "step_size_max")}

    def __init__(self, params: Any, lr: float = 1e-2, etas: Tuple[float, float] = (0.5, 1.2),
                 step_sizes: Tuple[float, float] = (1e-6, 50)):
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes))


class LBFGS(_NativeOptimizer):
    """L-BFGS with an optional strong-Wolfe line search (torch.optim.LBFGS), run by Ember's C++
    optimizer; step() calls the closure as often as its iterations need."""

    _Native = _native.LBFGS
    _hyper = {"lr": ("lr",), "max_iter": ("max_iter",), "max_eval": ("max_eval",),
              "tolerance_grad": ("tolerance_grad",), "tolerance_change": ("tolerance_change",),
              "history_size": ("history_size",), "line_search_fn": ("line_search_fn",)}
    _counts = ("max_iter", "max_eval", "history_size")

    def __init__(self, params: Any, lr: float = 1, max_iter: int = 20,
                 max_eval: Optional[int] = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: Optional[str] = None):
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))

    def _to_native(self, key: str, value: Any) -> List[Tuple[str, float]]:
        if key == "line_search_fn":
            if value not in (None, "strong_wolfe"):
                raise _errors.ValueError(
                    f"[optim.LBFGS] line_search_fn must be None or 'strong_wolfe': got {value!r}")
            return [("line_search_fn", 1.0 if value else 0.0)]
        return super()._to_native(key, value)

    def _from_native(self, key: str, options: Dict[str, float]) -> Any:
        if key == "line_search_fn":
            return "strong_wolfe" if options["line_search_fn"] else None
        if key in self._counts:
            return int(options[key])
        return super()._from_native(key, options)

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Up to max_iter iterations, each evaluating closure (with gradients enabled); returns
        the loss closure first returned."""
        return self._native.step(closure)


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (Polyak and Juditsky, 1992), PyTorch's formulas: each
    step decays the parameter by 1 - lambd * eta, moves it by -eta * grad, averages it into
    state['ax'] (plainly copied until step t0), then sets eta = lr / (1 + lambd lr step)^alpha
    and mu = 1 / max(1, step - t0). Written in Python over this base class."""

    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: Optional[bool] = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if not 0.0 <= lr:
            raise _errors.ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise _errors.ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Applies one update; closure (with gradients enabled) re-evaluates the loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    grad = -p.grad if group["maximize"] else p.grad
                    state = self.state[p]
                    if not state:  # scalars in the default dtype, as PyTorch keeps them
                        scalar = ember.get_default_dtype()
                        state["step"] = ember.zeros((), dtype=scalar)
                        state["eta"] = ember.tensor(float(lr), dtype=scalar)
                        state["mu"] = ember.ones((), dtype=scalar)
                        state["ax"] = ember.zeros_like(p)
                    state["step"].add_(1)
                    step = state["step"].item()
                    if group["weight_decay"] != 0:
                        grad = grad.add(p, alpha=group["weight_decay"])
                    eta, mu = state["eta"].item(), state["mu"].item()
                    p.mul_(1 - lambd * eta)
                    p.add_(grad, alpha=-eta)
                    if mu != 1:
                        state["ax"].add_(p.sub(state["ax"]).mul_(mu))
                    else:
                        state["ax"].copy_(p)
                    state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                    state["mu"].fill_(1 / max(1, step - t0))
        return loss


from ember.optim import lr_scheduler  # noqa: E402  (it uses the classes above)
