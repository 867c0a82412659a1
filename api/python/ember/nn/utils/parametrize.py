"""torch.nn.utils.parametrize: a module's tensor computed from others by parametrizations.

``register_parametrization(module, "weight", P)`` makes ``module.weight`` the value of
``P(original)``, ``original`` (``module.parametrizations.weight.original``, or ``original0``,
``original1``... when P's ``right_inverse`` returns several tensors) being what is trained and
saved: the state dict holds ``parametrizations.weight.original``, as PyTorch's does.

Note [Parametrizations of C++ layers]: PyTorch's module turns into a subclass
("ParametrizedLinear") with a property in place of the tensor, which its forward reads. An
Ember layer may compute in C++, reading its parameter's slot, not the Python attribute, so the
tensor also becomes a derived tensor (Note [Derived tensors] in api/include/ember/nn/module.h):
no longer a parameter, its slot kept, and for a C++ layer (or a Python subclass of one) a forward
pre-hook writes the parametrized value into the slot before every forward, on every call path
(Module.__call__, a C++ container). Reading the attribute from Python evaluates the
parametrization (inside ``cached()``, once per tensor), as in PyTorch. A copy (copy.deepcopy) is
rebuilt as the module was made, with the tensor derived again before its state is restored;
pickling refuses, as PyTorch's does: save the state dict.
"""

import copy
import weakref
from contextlib import contextmanager
from typing import Dict, Optional, Sequence, Tuple, Union

from ember._C import Parameter, Tensor
from ember._C.nn import Module, ModuleList
from ember.autograd.grad_mode import no_grad

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: Dict[Tuple[int, str], Optional[Tensor]] = {}
_slot_hooks: "weakref.WeakKeyDictionary[Module, object]" = weakref.WeakKeyDictionary()


@contextmanager
def cached():
    """Within it, each parametrized tensor is computed once, at its first use, and reused."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    # PyTorch's dest.set_(src): dest stays the same tensor (an optimizer's parameter) and takes
    # src's data.
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order to ``original`` (``original0``,
    ``original1``...), which holds what the first one's ``right_inverse`` made of the tensor."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        from ember._errors import ValueError
        if len(modules) == 0:
            raise ValueError("[parametrize] ParametrizationList requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, list, tuple)):
            raise ValueError(f"[parametrize] 'right_inverse' must return a Tensor or a Sequence "
                             f"of tensors (list, tuple...): got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(f"[parametrize] when `right_inverse` outputs one tensor, it may "
                                 f"not change the dtype: original.dtype: {original.dtype}, "
                                 f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(f"[parametrize] when `right_inverse` outputs one tensor, it may "
                                 f"not change the device: original.device: {original.device}, "
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(f"[parametrize] 'right_inverse' must return a Tensor or a "
                                     f"Sequence of tensors: element {i} is "
                                     f"{type(originali).__name__}")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"[parametrize] a parametrization must return a tensor: got "
                                 f"{type(z).__name__}")
            if z.dtype != original_dtype:
                raise ValueError(f"[parametrize] registering a parametrization may not change the "
                                 f"dtype of the tensor, unless `unsafe` flag is enabled: "
                                 f"unparametrized dtype: {original_dtype}, parametrized dtype: "
                                 f"{z.dtype}")
            if z.shape != original_shape:
                raise ValueError(f"[parametrize] registering a parametrization may not change the "
                                 f"shape of the tensor, unless `unsafe` flag is enabled: "
                                 f"unparametrized shape: {original_shape}, parametrized shape: "
                                 f"{z.shape}")

    def right_inverse(self, value: Union[Tensor, Sequence[Tensor]]) -> None:
        """Sets the originals so that the parametrizations give `value` (each parametrization's
        right_inverse, last first)."""
        from ember._errors import ValueError
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       f"implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"[parametrize] `right_inverse` should return a tensor: got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"[parametrize] the tensor returned by `right_inverse` has "
                                     f"dtype {value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"[parametrize] 'right_inverse' must return a sequence of "
                                     f"{self.ntensors} tensors")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if tensor.dtype != original_i.dtype:
                        raise ValueError(f"[parametrize] tensor {i} returned by `right_inverse` "
                                         f"has dtype {tensor.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def forward(self) -> Tensor:
        parametrizations = list(self)
        if self.is_tensor:
            x = parametrizations[0](self.original)
        else:
            x = parametrizations[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in parametrizations[1:]:
            x = module(x)
        return x


def _parametrized_value(module: Module, tensor_name: str) -> Tensor:
    parametrization = module.parametrizations[tensor_name]
    if not _cache_enabled:
        return parametrization()
    key = (id(module), tensor_name)
    tensor = _cache.get(key)
    if tensor is None:
        tensor = _cache[key] = parametrization()
    return tensor


def _reads_slots(module: Module) -> bool:
    """Whether the module is (or derives from) a C++ layer, whose forward reads its slots; a
    module written in Python reads the property instead."""
    for cls in type(module).__mro__:
        if cls.__module__ == Module.__module__:
            return cls is not Module
    return False


def _write_parametrized(module: Module, args):
    """The forward pre-hook of a parametrized C++ layer: its slots get the values (Note
    [Parametrizations of C++ layers])."""
    parametrizations = module.__dict__.get("_ember_parametrized")
    if parametrizations:
        for name in parametrizations:
            module._write_slot(name, _parametrized_value(module, name))


def _inject_new_class(module: Module) -> None:
    cls = module.__class__

    def default_deepcopy(self, memo):
        # The module is rebuilt from its constructor's arguments with the parametrized tensors
        # derived again before its state (whose parameters lack them) is restored.
        from ember._utils import _rebuild_module
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        replica = _rebuild_module(type(self), self.__dict__["_ember_init"])
        memo[id(self)] = replica
        for name in self.__dict__["_ember_parametrized"]:
            replica._make_derived(name)
        replica.__setstate__(copy.deepcopy(Module.__getstate__(self), memo))
        return replica

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict(). See:\n"
            "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    def setattr(self, name, value):
        if name in self.__dict__.get("_ember_parametrized", ()):
            object.__setattr__(self, name, value)  # the property's setter: right_inverse
        else:
            cls.__setattr__(self, name, value)

    dct = {"__getstate__": getstate, "__setattr__": setattr}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    param_cls = type(f"Parametrized{cls.__name__}", (cls,), dct)
    module.__class__ = param_cls
    module._set_type_name(param_cls.__name__)
    module.__dict__["_ember_parametrized"] = []
    if _reads_slots(module):
        _slot_hooks[module] = module.register_forward_pre_hook(_write_parametrized)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        return _parametrized_value(self, tensor_name)

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Makes ``module.<tensor_name>`` the value of `parametrization` applied to what it is now
    (or to the last parametrization's value, when it already has some); returns the module.
    Unless `unsafe`, the parametrization must keep the tensor's shape and dtype."""
    from ember._errors import ValueError
    from ember.nn import ModuleDict
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"[parametrize] a parametrization must return a tensor: got "
                                 f"{type(x).__name__}")
            if x.dtype != y.dtype or x.shape != y.shape:
                raise ValueError(f"[parametrize] registering a parametrization may not change "
                                 f"the dtype or shape of the tensor, unless `unsafe` flag is "
                                 f"enabled: {y.dtype} {list(y.shape)} became {x.dtype} "
                                 f"{list(x.shape)}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor) or z.dtype != y.dtype or z.shape != y.shape:
                        raise ValueError("[parametrize] the parametrization's right_inverse must "
                                         "return a tensor of the dtype and shape of its input")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    named = dict(module.named_parameters(recurse=False))
    if tensor_name not in named:
        if tensor_name in dict(module.named_buffers(recurse=False)):
            raise ValueError(f"[parametrize] parametrizing buffer '{tensor_name}' of "
                             f"{type(module).__name__} is not supported: only parameters")
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    original = named[tensor_name]
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    module._make_derived(tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    module.__dict__["_ember_parametrized"].append(tensor_name)
    _inject_property(module, tensor_name)
    return module


def is_parametrized(module: Module, tensor_name: Optional[str] = None) -> bool:
    """Whether `module` has a parametrization (on `tensor_name`, if given)."""
    from ember.nn import ModuleDict
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Removes the parametrizations on `tensor_name`: it becomes a parameter again, holding the
    parametrized value (`leave_parametrized`) or the original; returns the module."""
    from ember._errors import ValueError
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    module.__dict__["_ember_parametrized"].remove(tensor_name)
    module._make_parameter(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        orig_cls = module.__class__.__bases__[0]
        module.__class__ = orig_cls
        module._set_type_name(orig_cls.__name__)
        hook = _slot_hooks.pop(module, None)
        if hook is not None:  # (a copy keeps its hook, which does nothing now)
            hook.remove()
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before it was parametrized."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: Optional[str] = None) -> Module:
    """Gives `to_module` the parametrizations of `from_module` (all, or `tensor_name`'s) and
    copies their originals; returns to_module."""
    from ember._errors import ValueError
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations)
    for name in names:
        if not hasattr(to_module, name):
            raise ValueError(f"[parametrize] {type(to_module).__name__} has no '{name}' to "
                             f"parametrize")
        for parametrization in from_module.parametrizations[name]:
            register_parametrization(to_module, name, parametrization)
        source, target = from_module.parametrizations[name], to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                target.original.copy_(source.original)
            else:
                for i in range(source.ntensors):
                    getattr(target, f"original{i}").copy_(getattr(source, f"original{i}"))
    return to_module
