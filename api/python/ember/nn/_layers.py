"""Layers Ember writes in Python over its functional forms, as PyTorch writes all of its layers:
RReLU, AlphaDropout, FeatureAlphaDropout and MultiMarginLoss (the lazy layers are _lazy.py)."""

from typing import Optional

from ember._C import Tensor
from ember._C.nn import Module
from ember.nn import functional as F


def _check_probability(p: float, layer: str) -> None:
    if p < 0 or p > 1:
        from ember._errors import ValueError
        raise ValueError(f"[nn.{layer}] dropout probability has to be between 0 and 1, but got {p}")


class RReLU(Module):
    """Randomized leaky ReLU (F.rrelu): in training a slope from U(lower, upper) for each
    non-positive element, in eval their mean."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class AlphaDropout(Module):
    """Dropout that keeps SELU's self-normalisation (F.alpha_dropout), in training only."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        _check_probability(p, type(self).__name__)
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class FeatureAlphaDropout(AlphaDropout):
    """AlphaDropout of whole channels (F.feature_alpha_dropout)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)


class MultiMarginLoss(Module):
    """The multi-class hinge loss (F.multi_margin_loss); `weight` [C] is a buffer."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        from ember._errors import ValueError
        if p not in (1, 2):
            raise ValueError(f"[nn.MultiMarginLoss] only p == 1 and p == 2 are supported: got "
                             f"p={p}")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"[nn.MultiMarginLoss] weight must be one-dimensional: got "
                             f"{list(weight.shape)}")
        self.p = p
        self.margin = margin
        self.reduction = F._reduction(size_average, reduce, reduction, "nn.MultiMarginLoss")
        self.register_buffer("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)
