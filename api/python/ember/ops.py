"""Ops that plugins define (torch.ops): ``ember.ops.my_ext.scaled_add(x, y, floats=[2.0])`` runs
the op ``my_ext::scaled_add`` of a loaded plugin (discovered, on EMBER_PLUGIN_PATH, or loaded with
``ember.load_plugin(path)``), recorded by autograd if the plugin names a backward op."""

from typing import Any, Iterable, List, Sequence, Union

from ember import _C
from ember._C import Tensor


def call(name: str, *inputs: Tensor, ints: Iterable[int] = (), floats: Iterable[float] = ()) -> Union[Tensor, tuple]:
    """Runs plugin op `name` ('ns::op'): its one output, or a tuple of them."""
    outputs = _C.call_op(name, list(inputs), list(ints), list(floats))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def list_ops() -> List[dict]:
    """Every op a loaded plugin defined: name, doc, plugin, inputs, outputs, differentiable."""
    return _C.extension_ops()


class _Op:
    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(self, *inputs: Tensor, ints: Sequence[int] = (), floats: Sequence[float] = ()) -> Any:
        return call(self.__name__, *inputs, ints=ints, floats=floats)

    def __repr__(self) -> str:
        return f"<ember op {self.__name__}>"


class _Namespace:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, op: str) -> _Op:
        if op.startswith("__"):
            raise AttributeError(op)
        return _Op(f"{self._name}::{op}")

    def __repr__(self) -> str:
        return f"<ember ops namespace {self._name}>"


def __getattr__(namespace: str) -> _Namespace:
    if namespace.startswith("__"):
        raise AttributeError(namespace)
    return _Namespace(namespace)
