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
