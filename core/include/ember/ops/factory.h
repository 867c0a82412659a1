// Factories: tensors made from sizes, ranges, random numbers, host data or foreign memory.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/** dtype and device for a new tensor: default_dtype() (float32 unless set_default_dtype said
 *  otherwise; Note [The default dtype]) on default_device() (the CPU unless set_default_device
 *  said otherwise; Note [The default device]) unless told otherwise. */
struct TensorOptions {
  DType dtype = default_dtype();
  Device device = default_device();
  /** CPU memory page-locked for an accelerator (Note [Pinned host memory] in plugin_abi.h). */
  bool pinned = false;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype(d) {}  // NOLINT(google-explicit-constructor)
  TensorOptions(DType d, Device dev) : dtype(d), device(dev) {}
  TensorOptions(Device dev) : device(dev) {}  // NOLINT(google-explicit-constructor)
  /** These options with pinned host memory on or off (libtorch's pinned_memory). */
  TensorOptions pinned_memory(bool on = true) const {
    TensorOptions o = *this;
    o.pinned = on;
    return o;
  }
};

/** Uninitialised contiguous tensor. */
EMBER_API Tensor empty(IntList sizes, TensorOptions opts = {});
/** Uninitialised tensor dense in `format` (Contiguous or ChannelsLast). */
EMBER_API Tensor empty(IntList sizes, TensorOptions opts, MemoryFormat format);
/** Zeros. */
EMBER_API Tensor zeros(IntList sizes, TensorOptions opts = {});
/** Ones. */
EMBER_API Tensor ones(IntList sizes, TensorOptions opts = {});
/** Every element `value`. */
EMBER_API Tensor full(IntList sizes, Scalar value, TensorOptions opts = {});
/** Same sizes, dtype and device as `t`, uninitialised; Preserve keeps t's channels-last. */
EMBER_API Tensor empty_like(const Tensor& t, MemoryFormat format = MemoryFormat::Preserve);
/** Same sizes, dtype, device and memory format as `t`, zeros. */
EMBER_API Tensor zeros_like(const Tensor& t);
/** Same sizes, dtype, device and memory format as `t`, ones. */
EMBER_API Tensor ones_like(const Tensor& t);
/** Same sizes, dtype, device and memory format as `t`, filled with `value`. */
EMBER_API Tensor full_like(const Tensor& t, Scalar value);
/** start, start+step, ... < end; int64 if all arguments are integers, else default_dtype(). */
EMBER_API Tensor arange(Scalar start, Scalar end, Scalar step = 1,
                        std::optional<TensorOptions> opts = {});
/** 0, 1, ..., end-1 as int64 (or `opts`). */
EMBER_API Tensor arange(Scalar end, std::optional<TensorOptions> opts = {});
/** `steps` evenly spaced values from start to end inclusive. */
EMBER_API Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
/** base ** each of linspace(start, end, steps), computed in float64. */
EMBER_API Tensor logspace(double start, double end, int64_t steps, double base = 10.0,
                          TensorOptions opts = {});
/** A 0-d tensor holding value (the default dtype unless opts say otherwise). */
EMBER_API Tensor scalar_tensor(Scalar value, TensorOptions opts = {});

// Note [Window functions]
// PyTorch's windows for spectral analysis, of a floating dtype: a periodic window (the default)
// is the symmetric window of length + 1 without its last point, and a window of length 1 is [1].
// Each point is computed in float64 and rounded once to the dtype.

/** The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1)). */
EMBER_API Tensor hann_window(int64_t length, bool periodic = true, TensorOptions opts = {});
/** The Hamming window: alpha - beta cos(2 pi n / (N - 1)). */
EMBER_API Tensor hamming_window(int64_t length, bool periodic = true, double alpha = 0.54,
                                double beta = 0.46, TensorOptions opts = {});
/** The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)). */
EMBER_API Tensor blackman_window(int64_t length, bool periodic = true, TensorOptions opts = {});
/** The Bartlett (triangular) window: 1 - |2 n / (N - 1) - 1|. */
EMBER_API Tensor bartlett_window(int64_t length, bool periodic = true, TensorOptions opts = {});
/** The Kaiser window: I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta). */
EMBER_API Tensor kaiser_window(int64_t length, bool periodic = true, double beta = 12.0,
                               TensorOptions opts = {});

/** n x m identity (m defaults to n). */
EMBER_API Tensor eye(int64_t n, int64_t m = -1, TensorOptions opts = {});

/** A seedable random-number generator: a seed and a Philox counter for tensors (rand, randn,
 *  dropout; Note [Random numbers on every device]) and a 64-bit Mersenne twister for host draws
 *  (next, uniform, normal, randint). Philox reservations are thread-safe; host draws are not. */
class EMBER_API Generator {
 public:
  /** Seeded generator. */
  explicit Generator(uint64_t seed = kDefaultSeed);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  /** Reseeds (and restarts the Philox counter). */
  void manual_seed(uint64_t seed);
  /** The seed last set. */
  uint64_t seed() const;
  /** Reserves `blocks` Philox blocks: returns the counter they start at; the next reservation
   *  starts past them, so no two draws share a block. */
  uint64_t philox_reserve(uint64_t blocks);
  /** Next raw 64 random bits. */
  uint64_t next();
  /** Uniform in [0, 1). */
  double uniform();
  /** Standard normal. */
  double normal();
  /** The whole state (seed, Philox counter, host engine and its cached normal) as a 1-d uint8
   *  CPU tensor, for checkpoints (PyTorch's get_state); set_state(get_state()) changes nothing. */
  Tensor get_state() const;
  /** Restores a state from get_state(); anything else is a ValueError naming what is wrong. */
  void set_state(const Tensor& state);

  /** The seed a default-constructed generator (and every default generator) starts with. */
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;

 private:
  struct State;
  State* state_;
};

/** The process-wide default generator of the CPU. */
EMBER_API Generator& default_generator();
/** The default generator of `device` (each device has its own, as in PyTorch). */
EMBER_API Generator& default_generator(Device device);
/** Seeds the default generators of every device, including those created later. */
EMBER_API void manual_seed(uint64_t seed);

/** Uniform in [0, 1). */
EMBER_API Tensor rand(IntList sizes, TensorOptions opts = {}, Generator* gen = nullptr);
/** Standard normal. */
EMBER_API Tensor randn(IntList sizes, TensorOptions opts = {}, Generator* gen = nullptr);
/** Samples of N(mean, std^2); std must be >= 0. */
EMBER_API Tensor normal(double mean, double std, IntList sizes, TensorOptions opts = {},
                        Generator* gen = nullptr);
/** Samples of N(mean, std^2) elementwise, mean and std broadcast together (torch.normal with
 *  tensors); every std must be >= 0. */
EMBER_API Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen = nullptr);
/** normal() with a tensor of means and one std. */
EMBER_API Tensor normal(const Tensor& mean, double std, Generator* gen = nullptr);
/** normal() with one mean and a tensor of stds. */
EMBER_API Tensor normal(double mean, const Tensor& std, Generator* gen = nullptr);
/** 1 with probability p[i], else 0, of p's floating dtype; every p[i] must be in [0, 1]. */
EMBER_API Tensor bernoulli(const Tensor& p, Generator* gen = nullptr);
/** 1 with probability p, else 0, of input's shape and floating dtype; p must be in [0, 1]. */
EMBER_API Tensor bernoulli(const Tensor& input, double p, Generator* gen = nullptr);
/** Integers uniform in [low, high); int64 unless told otherwise. */
EMBER_API Tensor randint(int64_t low, int64_t high, IntList sizes,
                         TensorOptions opts = TensorOptions(DType::Int64),
                         Generator* gen = nullptr);

// In place, x's elements replaced by draws (Tensor.exponential_ and the like; a floating x except
// for random_): apply_inplace's rules, so a leaf that requires grad is refused outside no_grad.
/** Draws of the exponential distribution of rate lambd > 0. */
EMBER_API Tensor& exponential_(Tensor& x, double lambd = 1, Generator* gen = nullptr);
/** Draws of the geometric distribution (trials to the first success, from 1) with p in (0, 1). */
EMBER_API Tensor& geometric_(Tensor& x, double p, Generator* gen = nullptr);
/** Draws of exp(N(mean, std^2)), std > 0. */
EMBER_API Tensor& log_normal_(Tensor& x, double mean = 1, double std = 2, Generator* gen = nullptr);
/** Draws of the Cauchy distribution median + sigma * tan(pi (u - 1/2)), sigma > 0. */
EMBER_API Tensor& cauchy_(Tensor& x, double median = 0, double sigma = 1, Generator* gen = nullptr);
/** Integers uniform in [from, to) in x's dtype; without `to`, up to the largest integer the dtype
 *  holds exactly (2^24 for float32, 2^53 for float64, the type's maximum for integers), with it. */
EMBER_API Tensor& random_(Tensor& x, int64_t from = 0, std::optional<int64_t> to = {},
                          Generator* gen = nullptr);

/** Indices drawn from each row of `probs` (1-D or [rows, k], non-negative weights, not
 *  necessarily normalised): `num_samples` per row, with or without replacement, as
 *  torch.multinomial. */
EMBER_API Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                             Generator* gen = nullptr);

/** PyTorch's out= argument: copies `result` (of op `op`) into `out` and returns out. out must
 *  be on result's device with a dtype result casts to (can_cast); a shape that differs makes out
 *  take result's shape (`*resized_nonempty` says whether out held elements then, which PyTorch
 *  warns about); no autograd is recorded, so a result that requires grad is refused (Note
 *  [out= arguments] in factory.cpp). */
EMBER_API Tensor& write_out(Tensor& out, const Tensor& result, std::string_view op,
                            bool* resized_nonempty = nullptr);

namespace detail {
/** A dropout mask of `sizes`: 0 with probability p, else `scale` (core/ops/nn.cpp's dropout). */
Tensor dropout_mask(IntList sizes, TensorOptions opts, double p, double scale, Generator* gen);
}  // namespace detail

/** Wraps foreign host memory without copying; `deleter(data)` runs when the last view goes. */
EMBER_API Tensor from_blob(void* data, IntList sizes, IntList strides, DType dtype,
                           std::function<void(void*)> deleter, Device device = Device::cpu());
/** from_blob with contiguous strides. */
EMBER_API Tensor from_blob(void* data, IntList sizes, DType dtype,
                           std::function<void(void*)> deleter = {}, Device device = Device::cpu());

/** Copies host values of type T into a new tensor of `sizes`. */
template <typename T>
Tensor from_vector(const std::vector<T>& values, IntList sizes, TensorOptions opts) {
  Tensor host = empty(sizes, {dtype_of<T>(), Device::cpu()});
  EMBER_CHECK(static_cast<size_t>(host.numel()) == values.size(),
              "[tensor] {} values cannot fill sizes {}", values.size(), shape_str(sizes));
  std::copy(values.begin(), values.end(), host.data_ptr<T>());
  return host.to(opts.device).to(opts.dtype);
}

/** Nested initializer lists, as in tensor({{1., 2.}, {3., 4.}}). */
template <typename T>
struct NestedList {
  std::vector<T> values;
  Shape sizes;
  /** A leaf value; only literals of T's kind (floating, integer or bool) match. */
  template <typename U, typename = std::enable_if_t<
                            (std::is_floating_point_v<T> && std::is_floating_point_v<U>) ||
                            (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                             std::is_integral_v<U> && !std::is_same_v<U, bool>) ||
                            (std::is_same_v<T, bool> && std::is_same_v<U, bool>)>>
  NestedList(U v) : values{static_cast<T>(v)} {}        // NOLINT(google-explicit-constructor)
  NestedList(std::initializer_list<NestedList> rows) {  // NOLINT(google-explicit-constructor)
    sizes.push_back(static_cast<int64_t>(rows.size()));
    bool first = true;
    for (const NestedList& r : rows) {
      if (first) {
        for (int64_t s : r.sizes) sizes.push_back(s);
        first = false;
      } else {
        EMBER_CHECK(r.sizes.size() + 1 == sizes.size() &&
                        std::equal(r.sizes.begin(), r.sizes.end(), sizes.begin() + 1),
                    "[tensor] ragged nested list: rows of sizes {} and {}",
                    shape_str(IntList(sizes.data() + 1, sizes.size() - 1)), shape_str(r.sizes));
      }
      values.insert(values.end(), r.values.begin(), r.values.end());
    }
  }
};

/** A tensor from (nested) floating values: default_dtype() unless `opts` says otherwise. */
inline Tensor tensor(NestedList<double> data, TensorOptions opts = {}) {
  return from_vector(data.values, data.sizes, {DType::Float64, Device::cpu()})
      .to(opts.device)  // converted where it lands: the host may have no backend
      .to(opts.dtype);
}
/** A tensor from (nested) integer values: int64 unless `opts` says otherwise. */
inline Tensor tensor(NestedList<int64_t> data, TensorOptions opts = TensorOptions(DType::Int64)) {
  return from_vector(data.values, data.sizes, {DType::Int64, Device::cpu()})
      .to(opts.device)  // converted where it lands: the host may have no backend
      .to(opts.dtype);
}
/** A tensor from (nested) booleans. */
inline Tensor tensor(NestedList<bool> data, TensorOptions opts = TensorOptions(DType::Bool)) {
  std::vector<uint8_t> bytes(data.values.begin(), data.values.end());
  Tensor t = from_vector(bytes, data.sizes, {DType::UInt8, Device::cpu()});
  return t.to(opts.device).to(DType::Bool).to(opts.dtype);
}

}  // namespace ember
