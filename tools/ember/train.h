// `ember train`: trains a model on Fashion-MNIST (or a small GPT on a text file) with progress,
// evaluation and a checkpoint; `ember generate` samples text from such a GPT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ember::tools {

/** Everything `ember train` can be told on its command line. */
struct TrainOptions {
  std::string task = "classify";     ///< classify (Fashion-MNIST) or charlm (a text file)
  std::string model;                 ///< classify: lenet, cnn, mlp, resnet18, resnet50, vit
                                     ///< (empty: cnn); charlm: gpt
  std::string text;                  ///< charlm: the text file to learn
  int64_t block_size = 128;          ///< charlm: characters of context
  std::string device;                ///< empty: the best available device
  std::optional<std::string> data;   ///< dataset directory; default: the Debian package's
  std::string out = "ember-train";   ///< where the checkpoint and the curve go
  std::string optimizer = "sgd";     ///< sgd (with momentum) or adam
  int64_t epochs = 5;                ///< passes over the training set
  int64_t batch_size = 64;           ///< examples per step
  double lr = 0.01;                  ///< learning rate
  double momentum = 0.9;             ///< SGD momentum
  int64_t limit = 0;                 ///< train on only this many examples (0: all)
  int64_t test_limit = 0;            ///< evaluate on only this many examples (0: all)
  uint64_t seed = 0;                 ///< initialisation and shuffling
  int threads = 0;                   ///< CPU threads (0: all cores)
  int workers = 1;                   ///< data-loader threads
  bool progress = true;              ///< a progress bar when stdout is a terminal
  int nproc = 1;                     ///< data-parallel processes (`ember run` starts them)
  std::string lr_schedule = "none";  ///< none, step (StepLR) or cosine (over --epochs)
  int64_t lr_step_size = 1;          ///< StepLR: epochs between decays
  double lr_gamma = 0.5;             ///< StepLR: the decay factor
  std::string resume;                ///< a training checkpoint to continue from (empty: none)
  std::string amp = "none";          ///< mixed precision: none, bf16 or f16 (with loss scaling)
  bool channels_last = false;        ///< run images and convolution weights channels-last
  std::string profile;               ///< write a Chrome trace of the first steps here (empty: none)
  int64_t profile_steps = 5;         ///< how many steps --profile records
};

/** Runs the training; returns the final test accuracy in [0, 1] (classify) or the final
 *  validation bits per character (charlm). */
double train(const TrainOptions& options);

/** Everything `ember generate` can be told on its command line. */
struct GenerateOptions {
  std::string checkpoint;    ///< a `ember train --task charlm` checkpoint (<out>/gpt.safetensors)
  std::string prompt;        ///< the text to continue (empty: a newline, or the first character)
  int64_t length = 500;      ///< characters to generate
  double temperature = 0.8;  ///< softmax temperature (lower: more conservative)
  int64_t top_k = 0;         ///< sample from the k likeliest characters only (0: all)
  uint64_t seed = 0;         ///< the sampling generator's seed
  std::string device;        ///< empty: the best available device
  int threads = 0;           ///< CPU threads (0: all cores)
};

/** Prints the prompt and its continuation sampled from the checkpoint's model. */
void generate(const GenerateOptions& options);

}  // namespace ember::tools
