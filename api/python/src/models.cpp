// ember._C.models: the reference models of <ember/models.h>, as modules Python can train, save
// and nest (they are nn.Module subclasses).
#include "bind.h"

namespace ember::python {

void bind_models(nb::module_& root) {
  nb::module_ m =
      root.def_submodule("models", "Reference models: LeNet-5, CNNs, ResNets, ViT, GPT.");
  nb::class_<models::BasicBlock, nn::Module> basic(m, "BasicBlock", nb::dynamic_attr(),
                                                   module_type_slots(),
                                                   "ResNet-18's two-convolution residual block.");
  basic.def(nb::init<int64_t, int64_t, int64_t>(), "in_channels"_a, "out_channels"_a,
            "stride"_a = 1, record_init());
  bind_tensor_forward(basic);
  nb::class_<models::Bottleneck, nn::Module> bottleneck(m, "Bottleneck", nb::dynamic_attr(),
                                                        module_type_slots(),
                                                        "ResNet-50's 1x1-3x3-1x1 residual block.");
  bottleneck.def(nb::init<int64_t, int64_t, int64_t>(), "in_channels"_a, "width"_a, "stride"_a = 1,
                 record_init());
  bind_tensor_forward(bottleneck);

  m.def("lenet5", &models::lenet5, "num_classes"_a = 10, "LeNet-5 for 1x28x28 inputs.");
  m.def("fashion_cnn", &models::fashion_cnn, "num_classes"_a = 10,
        "Two conv-batchnorm-relu-pool stages and two linear layers, for 1x28x28 inputs.");
  m.def(
      "mlp", [](std::vector<int64_t> sizes) { return models::mlp(sizes); }, "sizes"_a,
      "Linear layers of the given sizes with ReLU between them.");
  nb::class_<models::ResNet, nn::Sequential> resnet(
      m, "ResNet", nb::dynamic_attr(), module_type_slots(),
      "torchvision's ResNet: its stages as children, the pooled features flattened before fc.");
  bind_tensor_forward(resnet);
  resnet.def(
      "__init__",
      [](models::ResNet* self, nb::handle block, std::vector<int64_t> layers, int64_t num_classes,
         int64_t in_channels, int64_t width) {
        const bool basic = block.is(nb::type<models::BasicBlock>());
        EMBER_CHECK_TYPE(basic || block.is(nb::type<models::Bottleneck>()),
                         "[models.ResNet] block must be models.BasicBlock or models.Bottleneck, "
                         "got {}",
                         nb::cast<std::string>(nb::repr(block)));
        GilRelease release;
        new (self)
            models::ResNet(basic ? models::ResNet::Block::Basic : models::ResNet::Block::Bottleneck,
                           std::move(layers), num_classes, in_channels, width);
      },
      "block"_a, "layers"_a, "num_classes"_a = 1000, "in_channels"_a = 3, "width"_a = 64,
      record_init(), "torchvision's ResNet(block, layers): stages of layers[i] blocks.");
  m.def("resnet18", &models::resnet18, "num_classes"_a = 1000, "in_channels"_a = 3, "width"_a = 64,
        release_gil(), "ResNet-18 as torchvision builds it (its parameter names).");
  m.def("resnet50", &models::resnet50, "num_classes"_a = 1000, "in_channels"_a = 3, "width"_a = 64,
        release_gil(), "ResNet-50 as torchvision builds it (its parameter names).");

  nb::class_<models::VisionTransformer, nn::Module> vit(m, "VisionTransformer", nb::dynamic_attr(),
                                                        module_type_slots(),
                                                        "A small Vision Transformer.");
  bind_tensor_forward(vit);
  vit.def(
      "__init__",
      [](models::VisionTransformer* self, int64_t image_size, int64_t patch_size,
         int64_t in_channels, int64_t num_classes, int64_t dim, int64_t depth, int64_t heads,
         int64_t mlp_dim, double dropout) {
        new (self) models::VisionTransformer({image_size, patch_size, in_channels, num_classes, dim,
                                              depth, heads, mlp_dim, dropout});
      },
      nb::kw_only(), "image_size"_a = 28, "patch_size"_a = 4, "in_channels"_a = 1,
      "num_classes"_a = 10, "dim"_a = 64, "depth"_a = 4, "heads"_a = 4, "mlp_dim"_a = 128,
      "dropout"_a = 0.0, "A ViT of the given sizes (28x28 grey images by default).", record_init());
  m.def(
      "vit",
      [](int64_t image_size, int64_t patch_size, int64_t in_channels, int64_t num_classes,
         int64_t dim, int64_t depth, int64_t heads, int64_t mlp_dim, double dropout) {
        return models::vit({image_size, patch_size, in_channels, num_classes, dim, depth, heads,
                            mlp_dim, dropout});
      },
      nb::kw_only(), "image_size"_a = 28, "patch_size"_a = 4, "in_channels"_a = 1,
      "num_classes"_a = 10, "dim"_a = 64, "depth"_a = 4, "heads"_a = 4, "mlp_dim"_a = 128,
      "dropout"_a = 0.0, "A small Vision Transformer for 28x28 images.");

  nb::class_<models::GPT, nn::Module> gpt(m, "GPT", nb::dynamic_attr(), module_type_slots(),
                                          "A small causal Transformer language model.");
  bind_tensor_forward(gpt);
  gpt.def(
         "__init__",
         [](models::GPT* self, int64_t vocab_size, int64_t block_size, int64_t dim, int64_t depth,
            int64_t heads, double dropout) {
           new (self) models::GPT({vocab_size, block_size, dim, depth, heads, dropout});
         },
         nb::kw_only(), "vocab_size"_a = 256, "block_size"_a = 128, "dim"_a = 128, "depth"_a = 4,
         "heads"_a = 4, "dropout"_a = 0.1, "A GPT of the given sizes.", record_init())
      .def("generate", &models::GPT::generate, "idx"_a, "max_new_tokens"_a, "temperature"_a = 1.0,
           "top_k"_a = 0, "generator"_a.none() = nb::none(), release_gil(),
           "idx [N, T] continued by max_new_tokens sampled tokens.");
  m.def(
      "gpt",
      [](int64_t vocab_size, int64_t block_size, int64_t dim, int64_t depth, int64_t heads,
         double dropout) {
        return models::gpt({vocab_size, block_size, dim, depth, heads, dropout});
      },
      nb::kw_only(), "vocab_size"_a = 256, "block_size"_a = 128, "dim"_a = 128, "depth"_a = 4,
      "heads"_a = 4, "dropout"_a = 0.1, "A small causal character-level language model.");
  m.def("by_name", &models::by_name, "name"_a,
        "A model by name ('lenet', 'cnn', 'mlp', 'resnet18', 'resnet50', 'vit') for 28x28 inputs.");
}

}  // namespace ember::python
