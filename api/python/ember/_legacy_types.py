"""PyTorch's legacy tensor types (torch.FloatTensor, torch.LongTensor, ...): constructors that
make a CPU tensor of their dtype, and classes that `isinstance` answers for by dtype and device.

    torch.LongTensor(35 * 20)      # uninitialised, 700 elements (sizes as ints or a Size)
    torch.FloatTensor([[1, 2]])    # from data
    isinstance(x, torch.FloatTensor)  # x is float32 on the CPU
    x.type(torch.DoubleTensor)     # conversion (Tensor.type reads the class's name)
"""

from typing import Any, Tuple

from ember import _C
from ember._size import Size

__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor",
           "FloatTensor", "HalfTensor", "IntTensor", "LongTensor"]


class _LegacyTensorType(type):
    """The metaclass: isinstance(x, FloatTensor) holds for float32 CPU tensors."""

    dtype: Any

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"


def _is_sizes(args: Tuple[Any, ...]) -> bool:
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return all(isinstance(a, int) and not isinstance(a, bool) for a in args)


def _make(cls: Any, *args: Any, device: Any = None) -> _C.Tensor:
    if device is not None and _C.device(device).type != "cpu":
        raise _C.TypeError(f"[{cls.__name__}] a legacy tensor type makes CPU tensors: got "
                           f"device={device!r} (use ember.empty(..., device=...))")
    if _is_sizes(args):
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        return _C.empty(sizes, dtype=cls.dtype) if sizes else _C.empty(0, dtype=cls.dtype)
    if len(args) != 1:
        raise _C.TypeError(f"[{cls.__name__}] expected sizes (ints or a Size) or one sequence "
                           f"of data: got {len(args)} arguments")
    data = args[0]
    if isinstance(data, _C.Tensor):
        if data.dtype != cls.dtype:
            raise _C.TypeError(f"[{cls.__name__}] expected a tensor of dtype {cls.dtype}: got "
                               f"{data.dtype} (use .to({cls.dtype}))")
        return data
    return _C.tensor(data, dtype=cls.dtype)


def _legacy_type(name: str, dtype: Any) -> Any:
    return _LegacyTensorType(name, (), {"dtype": dtype, "__new__": _make, "__module__": "ember",
                                        "__doc__": f"CPU tensors of {dtype} (torch.{name})."})


FloatTensor = _legacy_type("FloatTensor", _C.float32)
DoubleTensor = _legacy_type("DoubleTensor", _C.float64)
HalfTensor = _legacy_type("HalfTensor", _C.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", _C.bfloat16)
LongTensor = _legacy_type("LongTensor", _C.int64)
IntTensor = _legacy_type("IntTensor", _C.int32)
CharTensor = _legacy_type("CharTensor", _C.int8)
ByteTensor = _legacy_type("ByteTensor", _C.uint8)
BoolTensor = _legacy_type("BoolTensor", _C._dtypes["bool"])
