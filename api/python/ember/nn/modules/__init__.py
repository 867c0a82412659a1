"""torch.nn.modules: the classes of ember.nn under the names scripts also reach them by
(``nn.modules.Module``, ``nn.modules.Linear``, ``nn.modules.dropout.Dropout``,
``nn.modules.transformer.TransformerEncoderLayer``), PyTorch's submodules included."""

import sys
import types

import ember.nn as _nn
from ember.nn import *  # noqa: F401,F403
from ember.nn import Module  # noqa: F401

# Note [PyTorch's module files]: scripts name layers by the file PyTorch defines them in — a
# weights_only load's allow-list (``torch.nn.modules.dropout.Dropout``), isinstance checks
# against ``nn.modules.conv._ConvNd``-style paths. Ember's classes live in one extension module,
# so each of PyTorch's files is a namespace here holding the same class objects: pickles still
# name the one class, and an allow-list written either way allows it.
_FILES = {
    "module": ["Module"],
    "linear": ["Identity", "Linear", "Bilinear", "LazyLinear"],
    "conv": ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
             "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d"],
    "activation": ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish",
                   "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish",
                   "MultiheadAttention", "PReLU", "ReLU", "ReLU6", "RReLU", "SELU", "SiLU",
                   "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink",
                   "Softsign", "Tanh", "Tanhshrink", "Threshold"],
    "container": ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"],
    "dropout": ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                "FeatureAlphaDropout"],
    "normalization": ["LayerNorm", "GroupNorm", "LocalResponseNorm", "RMSNorm"],
    "batchnorm": ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"],
    "instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"],
    "sparse": ["Embedding", "EmbeddingBag"],
    "rnn": ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"],
    "transformer": ["Transformer", "TransformerEncoder", "TransformerDecoder",
                    "TransformerEncoderLayer", "TransformerDecoderLayer"],
    "pooling": ["AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
                "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
                "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"],
    "padding": [n for n in dir(_nn) if n.endswith(("Pad1d", "Pad2d", "Pad3d"))],
    "flatten": ["Flatten", "Unflatten"],
    "fold": ["Fold", "Unfold"],
    "pixelshuffle": ["PixelShuffle", "PixelUnshuffle"],
    "upsampling": ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"],
    "distance": ["PairwiseDistance", "CosineSimilarity"],
    "loss": [n for n in dir(_nn) if n.endswith("Loss")],
}


def _namespace(file: str, names) -> types.ModuleType:
    mod = types.ModuleType(f"{__name__}.{file}", f"torch.nn.modules.{file}'s classes.")
    for name in names:
        if hasattr(_nn, name):  # a layer Ember does not have stays missing, as an AttributeError
            setattr(mod, name, getattr(_nn, name))
    return mod


for _file, _names in _FILES.items():
    _mod = _namespace(_file, _names)
    sys.modules[_mod.__name__] = _mod
    globals()[_file] = _mod

if hasattr(_nn, "Linear"):

    class NonDynamicallyQuantizableLinear(_nn.Linear):
        """PyTorch's name for the output projection of MultiheadAttention: a Linear."""

    NonDynamicallyQuantizableLinear.__module__ = linear.__name__  # noqa: F821
    linear.NonDynamicallyQuantizableLinear = NonDynamicallyQuantizableLinear  # noqa: F821

del _file, _names, _mod
