// Reference models: LeNet-5, a small batch-norm CNN for 28x28 images, an MLP, ResNet-18 and
// ResNet-50.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/nn.h"

namespace ember::models {

/** LeNet-5 for 1x28x28 inputs (the first convolution pads by 2): 10 logits. */
std::shared_ptr<nn::Sequential> lenet5(int64_t num_classes = 10);
/** Two conv-batchnorm-relu-pool stages (32 and 64 channels) and two linear layers, for
 *  1x28x28 inputs: the default model of `ember train`. */
std::shared_ptr<nn::Sequential> fashion_cnn(int64_t num_classes = 10);
/** Linear layers of the given sizes with ReLU between them (sizes = {784, 512, 512, 10}). */
std::shared_ptr<nn::Sequential> mlp(const std::vector<int64_t>& sizes);

/** The two-convolution residual block of ResNet-18 and ResNet-34. */
class BasicBlock : public nn::Module {
 public:
  /** A block from `in` to `out` channels; stride 2 (or a channel change) adds a projection. */
  BasicBlock(int64_t in, int64_t out, int64_t stride);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::Sequential> downsample_;
};

/** The 1x1-3x3-1x1 residual block of ResNet-50 and deeper (torchvision's v1.5: the stride sits
 *  on the 3x3 convolution); its output has 4 x `width` channels. */
class Bottleneck : public nn::Module {
 public:
  /** A block from `in` channels to 4 x `width`; stride 2 (or a channel change) adds a
   *  projection. */
  Bottleneck(int64_t in, int64_t width, int64_t stride);
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_, conv3_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<nn::Sequential> downsample_;
};

/** ResNet-18 as torchvision builds it (7x7 stem, max pool, 4 stages of 2 blocks), with its
 *  parameter names ("layer1.0.conv1.weight"); `width` channels in the stem and width x 1, 2, 4,
 *  8 in the stages (Note [torchvision's ResNet layout]). */
std::shared_ptr<nn::Sequential> resnet18(int64_t num_classes = 1000, int64_t in_channels = 3,
                                         int64_t width = 64);
/** ResNet-50 as torchvision builds it (7x7 stem, max pool, stages of 3, 4, 6 and 3 Bottleneck
 *  blocks), with its parameter names; 25,557,032 parameters with 1000 classes and width 64. */
std::shared_ptr<nn::Sequential> resnet50(int64_t num_classes = 1000, int64_t in_channels = 3,
                                         int64_t width = 64);

/** A model by name ("lenet", "cnn", "mlp", "resnet18", "resnet50") for 1x28x28 inputs and 10
 *  classes. */
std::shared_ptr<nn::Sequential> by_name(const std::string& name);

}  // namespace ember::models
