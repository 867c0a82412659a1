// `ember predict`: runs an image classifier saved by `ember train` (or a torch.save file of its
// weights) on IDX image files or PGM images: top-k classes, accuracy against labels, throughput.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ember::tools {

/** Everything `ember predict` can be told on its command line. */
struct PredictOptions {
  std::string checkpoint;           ///< <out>/<model>.safetensors of ember train, or a .pt/.pth
  std::vector<std::string> inputs;  ///< IDX image files and PGM images (empty: the Fashion-MNIST
                                    ///< test set)
  std::string model;                ///< the architecture (empty: the checkpoint's "model" metadata)
  std::string labels;               ///< IDX labels of the one IDX input (empty: found beside it)
  std::optional<std::string> data;  ///< Fashion-MNIST directory when no inputs are given
  std::string device;               ///< empty: the best available device
  int threads = 0;                  ///< CPU threads (0: all cores)
  int64_t batch_size = 64;          ///< images per forward pass
  bool channels_last = false;       ///< images and convolution weights channels-last
  std::string amp = "none";         ///< autocast: none, bf16 or f16
  bool fuse = true;                 ///< fold batch norms into the layers before them
  int64_t top_k = 1;                ///< classes listed per image
  int64_t limit = 0;                ///< only the first N images (0: all)
  int64_t show = -1;                ///< a line for each of the first N images (-1: for every image
                                    ///< file, none for IDX files)
};

/** Classifies the inputs and prints the results and a summary; returns the accuracy over the
 *  labelled images in [0, 1], or NaN when no image has a label. */
double predict(const PredictOptions& options);

}  // namespace ember::tools
