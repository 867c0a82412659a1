"""Reference models (torchvision's names where it has them): lenet5, fashion_cnn, mlp,
resnet18, resnet34, resnet50, resnet101, resnet152, vgg11, vgg13, vgg16, vgg19 (and their _bn
forms), vit, gpt. Each returns an ember.nn.Module."""

from typing import Any, Callable, List

from ember import flatten, nn
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


# VGG (Simonyan and Zisserman, 2014) as torchvision builds it: its configurations, parameter names
# ("features.0.weight", "classifier.6.bias") and initialisation, in Python over Ember's layers.
_VGG_CONFIGS = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512,
          512, 512, "M"],
}


def _vgg_features(config: List[Any], batch_norm: bool) -> nn.Sequential:
    layers: List[nn.Module] = []
    channels = 3
    for v in config:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(channels, v, kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(v))
        layers.append(nn.ReLU(inplace=True))
        channels = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    """torchvision's VGG: `features` (3x3 convolutions and max poolings), a 7x7 adaptive average
    pooling and a three-layer classifier with dropout."""

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = flatten(x, 1)
        return self.classifier(x)


def _vgg(name: str, config: str, batch_norm: bool) -> Callable[..., Any]:
    def make(*, weights: Any = None, progress: bool = True, **kwargs: Any) -> Any:
        _untrained(name, weights)
        return VGG(_vgg_features(_VGG_CONFIGS[config], batch_norm), **kwargs)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = (f"{name} as torchvision builds it: configuration {config}"
                    f"{' with batch norm' if batch_norm else ''}; keyword arguments go to VGG "
                    f"(num_classes, init_weights, dropout).")
    return make


vgg11 = _vgg("vgg11", "A", False)
vgg11_bn = _vgg("vgg11_bn", "A", True)
vgg13 = _vgg("vgg13", "B", False)
vgg13_bn = _vgg("vgg13_bn", "B", True)
vgg16 = _vgg("vgg16", "D", False)
vgg16_bn = _vgg("vgg16_bn", "D", True)
vgg19 = _vgg("vgg19", "E", False)
vgg19_bn = _vgg("vgg19_bn", "E", True)
