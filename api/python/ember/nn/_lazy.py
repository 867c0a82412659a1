"""PyTorch's lazy layers: LazyLinear and LazyConv1d/2d/3d, whose input size comes from their
first input. Each is Ember's C++ layer made with its input size left open (Note [Lazy layers] in
api/nn/layers.cpp): the first forward sizes and initialises its weight, then the module becomes
its `cls_to_become` (Linear, Conv2d...), as PyTorch's does."""

from typing import Any

from ember._C.nn import Conv1d, Conv2d, Conv3d, Linear


def _become(module: Any, input: Any, in_attr: str) -> None:
    """Gives a lazy module its input size from `input` and makes it its cls_to_become; its
    recorded constructor arguments then name that size, so a copy is made sized."""
    if getattr(module, in_attr) != 0:
        return
    module.initialize_parameters(input)
    init = list(module.__dict__["_ember_init"])
    init[0] = getattr(module, in_attr)
    module.__dict__["_ember_init"] = tuple(init)
    module.__class__ = module.cls_to_become


class _LazyMixin:
    """has_uninitialized_params() and the forward that makes the module what it becomes."""

    cls_to_become: type
    _in_attr = "in_channels"

    def has_uninitialized_params(self) -> bool:
        """True until the first input has given the module its input size."""
        return getattr(self, self._in_attr) == 0

    def forward(self, input):
        become = self.cls_to_become
        _become(self, input, self._in_attr)
        return become.forward(self, input)


class LazyLinear(_LazyMixin, Linear):
    """Linear whose in_features is the first input's last dim."""

    cls_to_become = Linear
    _in_attr = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Linear.__init__(self, None, out_features, bias, device, dtype)


class LazyConv1d(_LazyMixin, Conv1d):
    """Conv1d whose in_channels is the first input's channel dim."""

    cls_to_become = Conv1d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        Conv1d.__init__(self, None, out_channels, kernel_size, stride, padding, dilation, groups,
                        bias, padding_mode, device, dtype)


class LazyConv2d(_LazyMixin, Conv2d):
    """Conv2d whose in_channels is the first input's channel dim."""

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        Conv2d.__init__(self, None, out_channels, kernel_size, stride, padding, dilation, groups,
                        bias, padding_mode, device, dtype)


class LazyConv3d(_LazyMixin, Conv3d):
    """Conv3d whose in_channels is the first input's channel dim."""

    cls_to_become = Conv3d

    def __init__(self, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:
        Conv3d.__init__(self, None, out_channels, kernel_size, stride, padding, dilation, groups,
                        bias, padding_mode, device, dtype)
