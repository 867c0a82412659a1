"""Neural-network modules (torch.nn): nn.Module to subclass, the layers, containers and losses.

Every class here is Ember's C++ module, so Python modules and C++ layers nest either way and a
Python subclass of any of them works inside C++ containers (ARCHITECTURE.md, "Python").
"""

from collections import OrderedDict
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple

from ember._C import Parameter, Tensor
from ember._C import nn as _native
from ember._C.nn import (  # noqa: F401
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Bilinear,
    BCELoss,
    BCEWithLogitsLoss,
    CELU,
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    Conv1d,
    Conv2d,
    Conv3d,
    ConvTranspose1d,
    ConvTranspose2d,
    ConvTranspose3d,
    CosineEmbeddingLoss,
    CosineSimilarity,
    CTCLoss,
    ChannelShuffle,
    CrossEntropyLoss,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    ELU,
    Embedding,
    EmbeddingBag,
    Flatten,
    Fold,
    GaussianNLLLoss,
    GELU,
    GLU,
    GroupNorm,
    GRU,
    GRUCell,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    HingeEmbeddingLoss,
    HuberLoss,
    Identity,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    KLDivLoss,
    L1Loss,
    LayerNorm,
    LeakyReLU,
    LocalResponseNorm,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    Linear,
    LogSigmoid,
    LogSoftmax,
    LSTM,
    LSTMCell,
    MarginRankingLoss,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    Mish,
    Module,
    ModuleList,
    MSELoss,
    MultiheadAttention,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    NLLLoss,
    PairwiseDistance,
    PixelShuffle,
    PixelUnshuffle,
    PoissonNLLLoss,
    PReLU,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReLU,
    ReLU6,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    RNN,
    RNNBase,
    RNNCell,
    RNNCellBase,
    RMSNorm,
    SELU,
    Sequential,
    Sigmoid,
    SiLU,
    SmoothL1Loss,
    SoftMarginLoss,
    Softmax,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanh,
    Tanhshrink,
    Threshold,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    TripletMarginLoss,
    Unfold,
    Upsample,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
    fuse_for_inference,
)
from ember.nn import functional, init, parallel, utils  # noqa: F401
from ember.nn._layers import AlphaDropout, FeatureAlphaDropout, MultiMarginLoss, RReLU  # noqa: F401
from ember.nn._lazy import LazyConv1d, LazyConv2d, LazyConv3d, LazyLinear  # noqa: F401
from ember.nn.parallel import DataParallel, DistributedDataParallel  # noqa: F401


def _pretrained_table(cls_name: str, embeddings: Tensor) -> None:
    if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
        raise ValueError(f"[nn.{cls_name}.from_pretrained] embeddings must be a 2-d tensor "
                         f"[num_embeddings, embedding_dim]")


def _embedding_from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                               norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """An Embedding whose table is `embeddings` (frozen unless freeze=False)."""
    _pretrained_table("Embedding", embeddings)
    rows, cols = embeddings.shape
    return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
               _weight=embeddings, _freeze=freeze)


def _embedding_bag_from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0,
                                   scale_grad_by_freq=False, mode="mean", sparse=False,
                                   include_last_offset=False, padding_idx=None):
    """An EmbeddingBag whose table is `embeddings` (frozen unless freeze=False)."""
    _pretrained_table("EmbeddingBag", embeddings)
    rows, cols = embeddings.shape
    bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
              _weight=embeddings, include_last_offset=include_last_offset,
              padding_idx=padding_idx)
    bag.weight.requires_grad_(not freeze)
    return bag


Embedding.from_pretrained = classmethod(_embedding_from_pretrained)
EmbeddingBag.from_pretrained = classmethod(_embedding_bag_from_pretrained)


class ModuleDict(Module):
    """Holds submodules by name, like a dict (torch.nn.ModuleDict)."""

    def __init__(self, modules: Optional[Mapping[str, Module]] = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self.get_submodule(key)

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        delattr(self, key)

    def __len__(self) -> int:
        return len(list(self.named_children()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __contains__(self, key: str) -> bool:
        return key in self.keys()

    def keys(self) -> list:
        """The names, in insertion order."""
        return [n for n, _ in self.named_children()]

    def values(self) -> list:
        """The modules, in insertion order."""
        return [m for _, m in self.named_children()]

    def items(self) -> list:
        """(name, module) pairs, in insertion order."""
        return list(self.named_children())

    def update(self, modules) -> None:
        """Adds (or replaces) modules from a mapping or (name, module) pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self.add_module(key, module)

    def pop(self, key: str) -> Module:
        """Removes a module and returns it."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Removes every module."""
        for key in self.keys():
            del self[key]


class ParameterList(Module):
    """Holds parameters in a list, each registered under its index (torch.nn.ParameterList)."""

    def __init__(self, values: Optional[Iterable[Any]] = None):
        super().__init__()
        self._size = 0
        if values is not None:
            for v in values:
                self.append(v)

    def _as_param(self, value) -> Parameter:
        return value if isinstance(value, Parameter) else Parameter(value)

    def append(self, value) -> "ParameterList":
        """Appends a parameter (a tensor becomes one)."""
        self.register_parameter(str(self._size), self._as_param(value))
        self._size += 1
        return self

    def extend(self, values: Iterable[Any]) -> "ParameterList":
        """Appends every value."""
        for v in values:
            self.append(v)
        return self

    def __getitem__(self, idx: int) -> Parameter:
        if idx < 0:
            idx += self._size
        if not 0 <= idx < self._size:
            raise IndexError(f"index {idx} is out of range for {self._size} parameters")
        return getattr(self, str(idx))

    def __setitem__(self, idx: int, value) -> None:
        if idx < 0:
            idx += self._size
        self.register_parameter(str(idx), self._as_param(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Parameter]:
        return (self[i] for i in range(self._size))


class ParameterDict(Module):
    """Holds parameters by name, like a dict (torch.nn.ParameterDict)."""

    def __init__(self, parameters: Optional[Mapping[str, Any]] = None):
        super().__init__()
        self._keys: Dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, value if isinstance(value, Parameter) else Parameter(value))
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        delattr(self, key)
        del self._keys[key]

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def keys(self) -> list:
        """The names."""
        return list(self._keys)

    def values(self) -> list:
        """The parameters."""
        return [self[k] for k in self._keys]

    def items(self) -> list:
        """(name, parameter) pairs."""
        return [(k, self[k]) for k in self._keys]

    def update(self, parameters) -> None:
        """Adds (or replaces) parameters from a mapping or pairs."""
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in pairs:
            self[k] = v


class UpsamplingNearest2d(Upsample):
    """Upsample in 'nearest' mode (PyTorch's older layer)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Upsample in 'bilinear' mode with align_corners=True (PyTorch's older layer)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Unflatten(Module):
    """Splits dim into unflattened_size (torch.nn.Unflatten)."""

    def __init__(self, dim: int, unflattened_size: Tuple[int, ...]):
        super().__init__()
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("OrderedDict", "Any", "Dict", "Iterable", "Iterator", "Mapping", "Optional", "Tuple")]

from ember.nn import modules  # noqa: E402  (it re-exports the names above)
