"""Reference models (torchvision's names where it has them): lenet5, fashion_cnn, mlp,
resnet18, resnet34, resnet50, resnet101, resnet152, vit, gpt. Each returns an ember.nn.Module."""

from typing import Any, Callable, List

from ember._C.models import (  # noqa: F401
    GPT,
    BasicBlock,
    Bottleneck,
    ResNet,
    VisionTransformer,
    by_name,
    fashion_cnn,
    gpt,
    lenet5,
    mlp,
    vit,
)


def _untrained(name: str, weights: Any) -> None:
    if weights is not None:
        raise ValueError(f"[models.{name}] Ember ships no pretrained weights: pass weights=None "
                         f"and load a state_dict (torchvision's loads by name) with "
                         f"load_state_dict")


def _resnet(name: str, block: type, layers: List[int]) -> Callable[..., ResNet]:
    def make(num_classes: int = 1000, in_channels: int = 3, width: int = 64, *,
             weights: Any = None, progress: bool = True) -> ResNet:
        _untrained(name, weights)
        return ResNet(block, layers, num_classes, in_channels, width)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"{name} as torchvision builds it: ResNet({block.__name__}, {layers}), its "
                    f"parameter names and its ten children.")
    return make


resnet18 = _resnet("resnet18", BasicBlock, [2, 2, 2, 2])
resnet34 = _resnet("resnet34", BasicBlock, [3, 4, 6, 3])
resnet50 = _resnet("resnet50", Bottleneck, [3, 4, 6, 3])
resnet101 = _resnet("resnet101", Bottleneck, [3, 4, 23, 3])
resnet152 = _resnet("resnet152", Bottleneck, [3, 8, 36, 3])
