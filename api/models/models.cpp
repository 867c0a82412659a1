#include "ember/models.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "ember/ops/elementwise.h"
#include "ember/util/error.h"

namespace ember::models {

using nn::Pair;
using std::make_shared;

std::shared_ptr<nn::Sequential> lenet5(int64_t num_classes) {
  // Note [LeNet-5 on 28x28]: LeCun's LeNet-5 takes 32x32 images; padding the first
  // convolution by 2 gives 28x28 inputs the same geometry (6x28x28 -> 16x10x10 -> 400).
  return make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      make_shared<nn::Conv2d>(1, 6, 5, nn::Conv2dOptions{.padding = 2}),
      make_shared<nn::ReLU>(),
      make_shared<nn::MaxPool2d>(2),
      make_shared<nn::Conv2d>(6, 16, 5),
      make_shared<nn::ReLU>(),
      make_shared<nn::MaxPool2d>(2),
      make_shared<nn::Flatten>(),
      make_shared<nn::Linear>(16 * 5 * 5, 120),
      make_shared<nn::ReLU>(),
      make_shared<nn::Linear>(120, 84),
      make_shared<nn::ReLU>(),
      make_shared<nn::Linear>(84, num_classes),
  });
}

std::shared_ptr<nn::Sequential> fashion_cnn(int64_t num_classes) {
  const nn::Conv2dOptions same{.padding = 1, .bias = false};  // batch norm supplies the bias
  return make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      make_shared<nn::Conv2d>(1, 32, 3, same),
      make_shared<nn::BatchNorm2d>(32),
      make_shared<nn::ReLU>(),
      make_shared<nn::MaxPool2d>(2),
      make_shared<nn::Conv2d>(32, 64, 3, same),
      make_shared<nn::BatchNorm2d>(64),
      make_shared<nn::ReLU>(),
      make_shared<nn::MaxPool2d>(2),
      make_shared<nn::Flatten>(),
      make_shared<nn::Linear>(64 * 7 * 7, 128),
      make_shared<nn::ReLU>(),
      make_shared<nn::Dropout>(0.25),
      make_shared<nn::Linear>(128, num_classes),
  });
}

std::shared_ptr<nn::Sequential> mlp(const std::vector<int64_t>& sizes) {
  EMBER_CHECK(sizes.size() >= 2, "[models.mlp] needs at least an input and an output size: got {}",
              sizes.size());
  auto net = make_shared<nn::Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    if (i > 0) net->push_back(make_shared<nn::ReLU>());
    net->push_back(make_shared<nn::Linear>(sizes[i], sizes[i + 1]));
  }
  return net;
}

namespace {

// The shortcut of a residual block that changes the resolution or the channels: a strided 1x1
// convolution and a batch norm.
std::shared_ptr<nn::Sequential> projection(int64_t in, int64_t out, int64_t stride) {
  return make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      make_shared<nn::Conv2d>(in, out, 1, nn::Conv2dOptions{.stride = stride, .bias = false}),
      make_shared<nn::BatchNorm2d>(out)});
}

}  // namespace

BasicBlock::BasicBlock(int64_t in, int64_t out, int64_t stride) : Module("BasicBlock") {
  conv1_ = register_module(
      "conv1", make_shared<nn::Conv2d>(
                   in, out, 3, nn::Conv2dOptions{.stride = stride, .padding = 1, .bias = false}));
  bn1_ = register_module("bn1", make_shared<nn::BatchNorm2d>(out));
  relu1_ = register_module("relu1", make_shared<nn::ReLU>());
  conv2_ = register_module(
      "conv2",
      make_shared<nn::Conv2d>(out, out, 3, nn::Conv2dOptions{.padding = 1, .bias = false}));
  bn2_ = register_module("bn2", make_shared<nn::BatchNorm2d>(out));
  if (stride != 1 || in != out)
    downsample_ = register_module("downsample", projection(in, out, stride));
}

Tensor BasicBlock::forward(const Tensor& x) {
  const Tensor y = (*relu1_)((*bn1_)((*conv1_)(x)));
  const Tensor shortcut = downsample_ ? (*downsample_)(x) : x;
  if (fused_tail_) return conv2_->forward_add_relu(y, shortcut);  // bn2 folded into conv2
  return relu(add((*bn2_)((*conv2_)(y)), shortcut));
}

// Note [Convolution, residual add and ReLU] in core/ops/conv.cpp: only once the batch norm
// between the convolution and the sum is folded into the convolution.
std::string BasicBlock::fuse_residual_tail(bool on) {
  fused_tail_ = on && bn2_->folded() && !conv2_->fused_relu();
  return fused_tail_ ? "conv2" : "";
}

Bottleneck::Bottleneck(int64_t in, int64_t width, int64_t stride) : Module("Bottleneck") {
  const int64_t out = 4 * width;
  conv1_ = register_module("conv1",
                           make_shared<nn::Conv2d>(in, width, 1, nn::Conv2dOptions{.bias = false}));
  bn1_ = register_module("bn1", make_shared<nn::BatchNorm2d>(width));
  relu1_ = register_module("relu1", make_shared<nn::ReLU>());
  conv2_ = register_module(
      "conv2",
      make_shared<nn::Conv2d>(width, width, 3,
                              nn::Conv2dOptions{.stride = stride, .padding = 1, .bias = false}));
  bn2_ = register_module("bn2", make_shared<nn::BatchNorm2d>(width));
  relu2_ = register_module("relu2", make_shared<nn::ReLU>());
  conv3_ = register_module(
      "conv3", make_shared<nn::Conv2d>(width, out, 1, nn::Conv2dOptions{.bias = false}));
  bn3_ = register_module("bn3", make_shared<nn::BatchNorm2d>(out));
  if (stride != 1 || in != out)
    downsample_ = register_module("downsample", projection(in, out, stride));
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor y = (*relu1_)((*bn1_)((*conv1_)(x)));
  y = (*relu2_)((*bn2_)((*conv2_)(y)));
  const Tensor shortcut = downsample_ ? (*downsample_)(x) : x;
  if (fused_tail_) return conv3_->forward_add_relu(y, shortcut);  // bn3 folded into conv3
  return relu(add((*bn3_)((*conv3_)(y)), shortcut));
}

std::string Bottleneck::fuse_residual_tail(bool on) {
  fused_tail_ = on && bn3_->folded() && !conv3_->fused_relu();
  return fused_tail_ ? "conv3" : "";
}

// Note [torchvision's ResNet layout]
// torchvision's ResNet names its children conv1, bn1, relu, maxpool, layer1 to layer4 (each a
// Sequential of blocks "0", "1", ...), avgpool and fc, and a block's projection is downsample.0
// (the 1x1 convolution) and downsample.1 (its batch norm). Ember builds the same tree as a named
// Sequential, so state_dict() has torchvision's names and shapes, buffers included
// (running_mean, running_var, num_batches_tracked), and a torchvision state_dict loads strictly.
// The model is a Sequential (fusion and checkpointing walk it as one) whose forward flattens the
// pooled features before fc, as torchvision's does, so its children are torchvision's ten and a
// script's `Sequential(*list(model.children())[:-1])` is the feature extractor it expects. The
// extra children inside a block hold nothing: relu1 (and relu2), one ReLU module per activation
// where torchvision shares one, so nn::fuse_for_inference can merge each into its convolution.
// `width` scales every stage (torchvision's is 64), for small models and small test fixtures.

ResNet::ResNet(Block block, std::vector<int64_t> layers, int64_t num_classes, int64_t in_channels,
               int64_t width)
    : nn::Sequential("ResNet") {
  EMBER_CHECK(width >= 1, "[models.ResNet] width must be positive: got {}", width);
  EMBER_CHECK(layers.size() == 4 && std::ranges::all_of(layers, [](int64_t n) { return n >= 1; }),
              "[models.ResNet] layers must be four positive block counts: got [{}]",
              fmt::join(layers, ", "));
  push_back("conv1",
            make_shared<nn::Conv2d>(in_channels, width, 7,
                                    nn::Conv2dOptions{.stride = 2, .padding = 3, .bias = false}));
  push_back("bn1", make_shared<nn::BatchNorm2d>(width));
  push_back("relu", make_shared<nn::ReLU>());
  push_back("maxpool",
            make_shared<nn::MaxPool2d>(3, nn::Pool2dOptions{.stride = Pair(2), .padding = 1}));
  const int64_t expansion = block == Block::Basic ? 1 : 4;
  int64_t in = width;
  for (size_t s = 0; s < layers.size(); ++s) {
    const int64_t planes = width << s;
    auto layer = make_shared<nn::Sequential>();
    for (int64_t b = 0; b < layers[s]; ++b) {
      const int64_t stride = b == 0 && s > 0 ? 2 : 1;
      if (block == Block::Basic) {
        layer->push_back(make_shared<BasicBlock>(in, planes, stride));
      } else {
        layer->push_back(make_shared<Bottleneck>(in, planes, stride));
      }
      in = expansion * planes;
    }
    push_back("layer" + std::to_string(s + 1), layer);
  }
  push_back("avgpool", make_shared<nn::AdaptiveAvgPool2d>(1));
  push_back("fc", make_shared<nn::Linear>(in, num_classes));
}

Tensor ResNet::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, m] : child_list()) y = (*m)(name == "fc" ? y.flatten(1) : y);
  return y;
}

std::shared_ptr<ResNet> resnet50(int64_t num_classes, int64_t in_channels, int64_t width) {
  return make_shared<ResNet>(ResNet::Block::Bottleneck, std::vector<int64_t>{3, 4, 6, 3},
                             num_classes, in_channels, width);
}

std::shared_ptr<ResNet> resnet18(int64_t num_classes, int64_t in_channels, int64_t width) {
  return make_shared<ResNet>(ResNet::Block::Basic, std::vector<int64_t>{2, 2, 2, 2}, num_classes,
                             in_channels, width);
}

std::shared_ptr<nn::Module> by_name(const std::string& name) {
  if (name == "lenet") return lenet5(10);
  if (name == "cnn") return fashion_cnn(10);
  if (name == "mlp") {
    auto net = mlp({784, 512, 512, 10});
    auto flat = make_shared<nn::Sequential>();
    flat->push_back(make_shared<nn::Flatten>());
    for (int64_t i = 0; i < net->size(); ++i) flat->push_back((*net)[i]);
    return flat;
  }
  if (name == "resnet18") return resnet18(10, 1);
  if (name == "resnet50") return resnet50(10, 1);
  if (name == "vit") return vit();
  EMBER_CHECK(false, "[models] unknown model '{}' ({})", name, fmt::join(names(), ", "));
  return nullptr;
}

const std::vector<std::string>& names() {
  static const std::vector<std::string> kNames = {"lenet",    "cnn",      "mlp",
                                                  "resnet18", "resnet50", "vit"};
  return kNames;
}

}  // namespace ember::models
