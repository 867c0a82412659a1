// The workloads that compare_ember and compare_torch both run, with their sizes, repetition
// counts and the protocol between the driver and each side. Header-only and free of Ember and
// libtorch so that both programs share it verbatim.
#pragma once

#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" char** environ;

namespace compare {

/** The machine limit a workload's rate is set against. */
enum class Limit { None, FmaPeak, StreamCopy, StreamTriad };

/** One workload: what it runs is defined twice (Ember side, PyTorch side), its numbers once. */
struct Workload {
  /** Name on the command line of each side. */
  const char* name;
  /** Label in the table. */
  const char* label;
  /** Run at 1 and 2 threads (otherwise at 1 only: the work is too small to split). */
  bool threaded;
  /** Untimed units before the first sample. */
  int warmup;
  /** Samples per process. */
  int reps;
  /** Units timed together in one sample (the sample is their mean). */
  int64_t inner;
  /** Floating-point operations per unit (0: no FLOP rate). */
  double flop;
  /** Bytes moved per unit, STREAM convention: reads + writes, no write-allocate (0: none). */
  double bytes;
  /** The limit the rate is set against. */
  Limit limit;
  /** Images (or samples) per unit: the rate is given in images/s, with the FLOP rate's share of
   *  the limit beside it when flop > 0 (0: no image rate). */
  int64_t items = 0;
};

// Note [Compare sizes]: sizes follow benchmarks/ops_bench.cpp and nn_bench.cpp: 16M floats
// (64 MiB per operand, well past the last-level cache) for memory-bound ops, a ResNet stage-1
// layer for the convolution (N=8, C=64->64, 56x56, 3x3, pad 1), MNIST-shaped MLP and LeNet
// batches, and ResNet-18 on CIFAR-shaped 3x32x32 inputs. Repetition counts keep a full run
// (both sides, two rounds each) within a few minutes on a 2-core machine.
inline constexpr int64_t kBig = int64_t{16} << 20;
inline constexpr int64_t kSoftmaxRows = 4096, kSoftmaxCols = 1024;
inline constexpr double kConvFlop = 2.0 * 8 * 64 * 56 * 56 * 64 * 9;
/** Attention: batch 1, 8 heads, L = S = 1024, head size 64 (ops_bench's BM_AttentionFwdBwd);
 *  forward 4 L S d per head, backward 2.5 times that. */
inline constexpr int64_t kSdpaHeads = 8, kSdpaLen = 1024, kSdpaDim = 64;
inline constexpr double kSdpaFlop = 3.5 * 4.0 * kSdpaHeads * kSdpaLen * kSdpaLen * kSdpaDim;
/** The Transformer models (ember::models::vit and gpt, their default sizes, dropout 0): the ViT
 *  on a batch of 64 images, the GPT on 16 windows of 128 characters of a 65-letter alphabet; a
 *  layer of each alone (fwd+bwd), and an LSTM of the GPT's width on the GPT's batch. */
inline constexpr int64_t kVitBatch = 64, kVitTokens = 50, kVitDim = 64, kVitHeads = 4,
                         kVitMlp = 128;
inline constexpr int64_t kGptBatch = 16, kGptBlock = 128, kGptDim = 128, kGptHeads = 4,
                         kGptVocab = 65;
/** LeNet: batches in one epoch of 60000 images at batch 64 (the last one partial). */
inline constexpr int64_t kLeNetBatches = (60000 + 63) / 64;
/** LeNet: steps timed per sample, scaled to kLeNetBatches (a full epoch per process is too slow).
 */
inline constexpr int64_t kLeNetStepsPerSample = 50;

inline constexpr double mm_flop(double n) {
  return 2.0 * n * n * n;
}

// Note [Inference workloads]: the inference rows time one forward pass of a model in eval mode
// under inference mode, per batch: ResNet-18 and ResNet-50 as torchvision builds them (1000
// classes) on 3x224x224 images at batch 1 (latency) and 32 (throughput), in NCHW and
// channels-last; the small ViT of the training rows (ember::models::vit, 1x28x28) at batch 1
// and 64; the MLP 784-512-512-10 at batch 64 and 256. Ember folds batch norms and merges
// activations into the layers before them with nn::fuse_for_inference first; PyTorch's C++ API has
// no such pass for torch::nn modules (torch.jit.freeze needs a scripted module), so PyTorch runs
// the model as built and its tuned side folds each batch norm into its convolution by hand
// (torch_side.cpp). Only the shapes are the same on both sides, not the random weights. FLOPs count
// the multiply-adds of the convolutions and linear layers twice (torchvision's 1.81 and 4.09 GMACs
// per image); the batch norms, pools, ReLUs and residual adds are left out.
/** The side of the ResNets' square 3-channel input images (ImageNet's). */
inline constexpr int64_t kImageSide = 224;
/** The MLP's input, hidden and output widths. */
inline constexpr int64_t kMlpIn = 784, kMlpHidden = 512, kMlpOut = 10;

/** Multiply-adds of one 3x224x224 image through torchvision's ResNet-18 (basic blocks) or
 *  ResNet-50 (bottlenecks), 1000 classes: every convolution and the classifier. */
inline constexpr double resnet_macs(bool bottleneck) {
  auto conv = [](double in, double out, double k, double side) {
    return in * out * k * k * side * side;
  };
  double macs = conv(3, 64, 7, kImageSide / 2);  // the stem, stride 2
  const int basic[4] = {2, 2, 2, 2}, deep[4] = {3, 4, 6, 3};
  const int* blocks = bottleneck ? deep : basic;
  double in = 64;
  for (int s = 0; s < 4; ++s) {
    const double planes = 64 << s, side = (kImageSide / 4) >> s;  // after the max pool: 56
    for (int b = 0; b < blocks[s]; ++b) {
      const double stride = b == 0 && s > 0 ? 2 : 1;
      const double out = bottleneck ? 4 * planes : planes;
      if (bottleneck) {
        macs += conv(in, planes, 1, side * stride) + conv(planes, planes, 3, side) +
                conv(planes, out, 1, side);
      } else {
        macs += conv(in, out, 3, side) + conv(out, out, 3, side);
      }
      if (b == 0 && in != out) macs += conv(in, out, 1, side);  // the projection
      in = out;
    }
  }
  return macs + in * 1000;
}
/** FLOPs of one image through ResNet-18 and ResNet-50 (Note [Inference workloads]). */
inline constexpr double kResNet18Flop = 2 * resnet_macs(false),
                        kResNet50Flop = 2 * resnet_macs(true);
/** FLOPs of one sample through the MLP 784-512-512-10. */
inline constexpr double kMlpFlop =
    2.0 * (kMlpIn * kMlpHidden + kMlpHidden * kMlpHidden + kMlpHidden * kMlpOut);
static_assert(resnet_macs(false) == 1814073344.0 && resnet_macs(true) == 4089184256.0,
              "torchvision's multiply-adds per image");

/** The model of an inference workload and its batch, read from its name
 *  ("resnet50_inf_b32_cl": "resnet50", 32, channels-last). */
struct InferenceSpec {
  std::string model;           ///< "resnet18", "resnet50", "vit" or "mlp"
  int64_t batch = 0;           ///< images per forward
  bool channels_last = false;  ///< input and 4-d parameters channels-last
};

/** The spec of an inference workload's name, or a spec with batch 0 for any other name. */
inline InferenceSpec inference_spec(std::string_view name) {
  InferenceSpec spec;
  const size_t inf = name.find("_inf_b");
  if (inf == std::string_view::npos) return spec;
  spec.model = std::string(name.substr(0, inf));
  std::string_view rest = name.substr(inf + 6);
  spec.channels_last = rest.ends_with("_cl");
  if (spec.channels_last) rest.remove_suffix(3);
  spec.batch = std::atoll(std::string(rest).c_str());
  return spec;
}

/** Every workload in table order. */
inline const std::vector<Workload>& workloads() {
  static const std::vector<Workload> list = {
      {"add_1", "add, 1 element (op overhead)", false, 2, 15, 20000, 0, 0, Limit::None},
      {"add_1_grad", "add, 1 element, autograd recording", false, 2, 15, 20000, 0, 0, Limit::None},
      {"backward_1", "backward of a 1-element graph (a*b)", false, 1, 15, 2000, 0, 0, Limit::None},
      {"add_16m", "add 16M floats (allocating)", true, 2, 10, 1, 0, 3.0 * 4 * kBig,
       Limit::StreamTriad},
      {"mul_16m", "mul 16M floats (allocating)", true, 2, 10, 1, 0, 3.0 * 4 * kBig,
       Limit::StreamTriad},
      {"relu_16m", "relu 16M floats (allocating)", true, 2, 10, 1, 0, 2.0 * 4 * kBig,
       Limit::StreamCopy},
      {"sum_16m", "sum of 16M floats", true, 2, 10, 1, 0, 4.0 * kBig, Limit::StreamCopy},
      {"softmax", "softmax over rows, 4096x1024", true, 2, 10, 1, 0,
       2.0 * 4 * kSoftmaxRows * kSoftmaxCols, Limit::StreamCopy},
      {"matmul_256", "matmul 256x256x256", true, 5, 10, 20, mm_flop(256), 0, Limit::FmaPeak},
      {"matmul_1024", "matmul 1024x1024x1024", true, 2, 6, 1, mm_flop(1024), 0, Limit::FmaPeak},
      {"matmul_2048", "matmul 2048x2048x2048", true, 1, 3, 1, mm_flop(2048), 0, Limit::FmaPeak},
      {"conv_fwd", "conv2d fwd 8x64x56x56, 3x3", true, 2, 5, 1, kConvFlop, 0, Limit::FmaPeak},
      {"conv_fwd_cl", "conv2d fwd, same, channels-last", true, 2, 5, 1, kConvFlop, 0,
       Limit::FmaPeak},
      {"conv_fwd_bwd", "conv2d fwd+bwd 8x64x56x56, 3x3", true, 1, 4, 1, 3 * kConvFlop, 0,
       Limit::FmaPeak},
      {"sdpa_fwd_bwd", "attention fwd+bwd, 8 heads, L=1024, d=64", true, 1, 4, 1, kSdpaFlop, 0,
       Limit::FmaPeak},
      {"sdpa_causal_fwd_bwd", "attention fwd+bwd, causal, same sizes", true, 1, 4, 1, kSdpaFlop / 2,
       0, Limit::FmaPeak},
      {"encoder_vit", "Transformer layer fwd+bwd, ViT's 64x50x64", true, 2, 8, 5, 0, 0,
       Limit::None},
      {"encoder_gpt", "Transformer layer fwd+bwd, GPT's 16x128x128 causal", true, 2, 8, 2, 0, 0,
       Limit::None},
      {"lstm_gpt", "LSTM 128->128 fwd+bwd, 16x128 sequence", true, 1, 20, 1, 0, 0, Limit::None},
      {"gru_gpt", "GRU 128->128 fwd+bwd, 16x128 sequence", true, 1, 10, 1, 0, 0, Limit::None},
      {"vit_step", "ViT step (Adam), 64x1x28x28", true, 2, 5, 1, 0, 0, Limit::None},
      {"gpt_step", "GPT step (Adam), 16x128 characters", true, 2, 5, 1, 0, 0, Limit::None},
      {"mlp_step", "MLP 784-512-512-10 step, batch 128", true, 5, 10, 5, 0, 0, Limit::None},
      {"lenet_epoch", "LeNet-5 epoch, Fashion-MNIST, b64 (*)", true, 1, 3, 1, 0, 0, Limit::None},
      {"resnet18_step", "ResNet-18 step, 32x3x32x32", true, 2, 5, 1, 0, 0, Limit::None},
      {"resnet18_step_cl", "ResNet-18 step, same, channels-last", true, 2, 5, 1, 0, 0, Limit::None},
      {"resnet18_inf_b1", "ResNet-18 inference, 1x3x224x224", true, 3, 8, 3, kResNet18Flop, 0,
       Limit::FmaPeak, 1},
      {"resnet18_inf_b1_cl", "ResNet-18 inference, same, channels-last", true, 3, 8, 3,
       kResNet18Flop, 0, Limit::FmaPeak, 1},
      {"resnet18_inf_b32", "ResNet-18 inference, 32x3x224x224", true, 1, 4, 1, 32 * kResNet18Flop,
       0, Limit::FmaPeak, 32},
      {"resnet18_inf_b32_cl", "ResNet-18 inference, same, channels-last", true, 1, 4, 1,
       32 * kResNet18Flop, 0, Limit::FmaPeak, 32},
      {"resnet50_inf_b1", "ResNet-50 inference, 1x3x224x224", true, 2, 8, 2, kResNet50Flop, 0,
       Limit::FmaPeak, 1},
      {"resnet50_inf_b1_cl", "ResNet-50 inference, same, channels-last", true, 2, 8, 2,
       kResNet50Flop, 0, Limit::FmaPeak, 1},
      {"resnet50_inf_b32", "ResNet-50 inference, 32x3x224x224", true, 1, 3, 1, 32 * kResNet50Flop,
       0, Limit::FmaPeak, 32},
      {"resnet50_inf_b32_cl", "ResNet-50 inference, same, channels-last", true, 1, 3, 1,
       32 * kResNet50Flop, 0, Limit::FmaPeak, 32},
      {"vit_inf_b1", "ViT inference, 1x1x28x28", true, 5, 10, 20, 0, 0, Limit::None, 1},
      {"vit_inf_b64", "ViT inference, 64x1x28x28", true, 3, 10, 5, 0, 0, Limit::None, 64},
      {"mlp_inf_b64", "MLP 784-512-512-10 inference, batch 64", true, 5, 10, 50, 64 * kMlpFlop, 0,
       Limit::FmaPeak, 64},
      {"mlp_inf_b256", "MLP 784-512-512-10 inference, batch 256", true, 5, 10, 20, 256 * kMlpFlop,
       0, Limit::FmaPeak, 256},
      {"startup", "process start to first add result", false, 1, 5, 1, 0, 0, Limit::None},
  };
  return list;
}

/** The workload called `name`, or null. */
inline const Workload* find_workload(std::string_view name) {
  for (const Workload& w : workloads()) {
    if (name == w.name) return &w;
  }
  return nullptr;
}

/** Seconds on a monotonic clock. */
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** Runs `unit` w.warmup times, then w.reps samples of w.inner units; seconds per unit. */
template <typename F>
std::vector<double> sample(const Workload& w, F&& unit) {
  for (int i = 0; i < w.warmup; ++i) unit();
  std::vector<double> out;
  for (int r = 0; r < w.reps; ++r) {
    const double t0 = now_s();
    for (int64_t i = 0; i < w.inner; ++i) unit();
    out.push_back((now_s() - t0) / static_cast<double>(w.inner));
  }
  return out;
}

/** The one line a side prints for the driver: "samples <s> <s> ...". */
inline void print_samples(const std::vector<double>& s) {
  std::printf("samples");
  for (double v : s) std::printf(" %.9g", v);
  std::printf("\n");
  std::fflush(stdout);
}

/** Spawns this executable with the argument "--child" and waits: true if it exited with 0. */
inline bool spawn_child() {
  char self[] = "/proc/self/exe";
  char arg[] = "--child";
  char* argv[] = {self, arg, nullptr};
  pid_t pid = -1;
  if (posix_spawn(&pid, self, nullptr, nullptr, argv, environ) != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/** Parses "<workload> <threads>" or reports usage; returns the workload or null. */
inline const Workload* parse_args(int argc, char** argv, int& threads) {
  if (argc != 3) return nullptr;
  threads = std::atoi(argv[2]);
  return threads > 0 ? find_workload(argv[1]) : nullptr;
}

}  // namespace compare
