"""torch.nn.utils.fusion: a convolution or linear layer and the batch norm after it folded into
one layer for inference, by PyTorch's formulas (nn.fuse_for_inference does this to a whole
model in C++)."""

import copy
from typing import Optional, Tuple

import ember
from ember._C import Parameter, Tensor
from ember._C.nn import Module

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _eval_only(what: str, *modules: Module) -> None:
    from ember._errors import ValueError
    if any(m.training for m in modules):
        raise ValueError(f"[nn.utils.{what}] fusion is only for eval: call .eval() on both "
                         f"modules first")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of `conv` computing bn(conv(x)) with bn's running statistics (both in eval mode);
    `transpose` for a transposed convolution (its output channels are weight's dim 1)."""
    from ember._errors import ValueError
    _eval_only("fuse_conv_bn_eval", conv, bn)
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("[nn.utils.fuse_conv_bn_eval] the batch norm must track running stats")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Optional[Tensor], bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Optional[Tensor], bn_b: Optional[Tensor],
                         transpose: bool = False) -> Tuple[Parameter, Parameter]:
    """(weight, bias) of the convolution that computes bn(conv(x)): weight scaled by
    bn_w / sqrt(bn_rv + eps) per output channel, bias (conv_b - bn_rm) times that plus bn_b."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    if conv_b is None:
        conv_b = ember.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ember.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ember.zeros_like(bn_rm)
    bn_var_rsqrt = ember.rsqrt(bn_rv + bn_eps)
    ones = [1] * (conv_w.dim() - 2)
    shape = [1, -1] + ones if transpose else [-1, 1] + ones
    fused_w = (conv_w * (bn_w * bn_var_rsqrt).reshape(shape)).to(weight_dtype)
    fused_b = ((conv_b - bn_rm) * bn_var_rsqrt * bn_w + bn_b).to(bias_dtype)
    return (Parameter(fused_w.detach(), conv_w.requires_grad),
            Parameter(fused_b.detach(), conv_b.requires_grad))


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of `linear` computing bn(linear(x)) with bn's running statistics (both in eval
    mode); bn's features must be linear's outputs (or one, broadcast)."""
    from ember._errors import ValueError
    _eval_only("fuse_linear_bn_eval", linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ValueError(f"[nn.utils.fuse_linear_bn_eval] to fuse, linear.out_features == "
                         f"bn.num_features or bn.num_features == 1: got {linear.out_features} "
                         f"and {bn.num_features}")
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("[nn.utils.fuse_linear_bn_eval] the batch norm must track running stats")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Optional[Tensor], bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor,
                           bn_b: Tensor) -> Tuple[Parameter, Parameter]:
    """(weight, bias) of the linear layer that computes bn(linear(x))."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    if linear_b is None:
        linear_b = ember.zeros_like(bn_rm)
    bn_scale = bn_w * ember.rsqrt(bn_rv + bn_eps)
    fused_w = (linear_w * bn_scale.unsqueeze(-1)).to(weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(bias_dtype)
    return (Parameter(fused_w.detach(), linear_w.requires_grad),
            Parameter(fused_b.detach(), linear_b.requires_grad))
