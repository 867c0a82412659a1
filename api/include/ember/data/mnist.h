// MNIST and Fashion-MNIST: the IDX file reader and a Dataset over the four standard files.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/tensor/tensor.h"

namespace ember::data {

/** Reads an IDX file of unsigned bytes (gzipped or not): uint8 [N, rows, cols] or [N]. */
Tensor read_idx(const std::string& path);

/** Images as the (Fashion-)MNIST datasets give them to a model: uint8 [N, rows, cols] to float32
 *  [N, 1, rows, cols] in [0, 1], each pixel / 255 (torchvision's ToTensor). */
Tensor to_float_images(const Tensor& pixels);

/** The names of Fashion-MNIST's ten classes, by label (as torchvision's FashionMNIST.classes). */
inline constexpr std::array<std::string_view, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/** The Fashion-MNIST directory: `root`, else $EMBER_DATA_DIR, else the Debian package's. */
std::string find_fashion_mnist(std::optional<std::string> root = std::nullopt);

/** (Fashion-)MNIST: images float32 [N, 1, 28, 28] in [0, 1] and labels int64 [N] in 0..9. */
class MNIST : public Dataset {
 public:
  /** Reads the train or t10k files under `root`, keeping the first `limit` examples if given. */
  MNIST(const std::string& root, bool train, std::optional<int64_t> limit = std::nullopt);
  /** Number of examples. */
  int64_t size() const override;
  /** {image [1, 28, 28], label []} of example `i`. */
  std::vector<Tensor> get(int64_t i) const override;
  /** {images [B, 1, 28, 28], labels [B]}. */
  std::vector<Tensor> get_batch(const std::vector<int64_t>& indices) const override;
  /** All images, float32 [N, 1, 28, 28]. */
  const Tensor& images() const { return tensors_.fields()[0]; }
  /** All labels, int64 [N]. */
  const Tensor& labels() const { return tensors_.fields()[1]; }

 private:
  static TensorDataset read(const std::string& root, bool train, std::optional<int64_t> limit);
  TensorDataset tensors_;
};

}  // namespace ember::data
