"""Reference models (torchvision's names where it has them): lenet5, fashion_cnn, mlp,
resnet18, resnet50, vit, gpt. Each returns an ember.nn.Module."""

from ember._C.models import (  # noqa: F401
    GPT,
    BasicBlock,
    Bottleneck,
    VisionTransformer,
    by_name,
    fashion_cnn,
    gpt,
    lenet5,
    mlp,
    resnet18,
    resnet50,
    vit,
)
