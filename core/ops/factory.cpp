// Factories. Values made on the host (ranges, random numbers) are written into CPU memory
// and moved to the target device; constant fills run the device's "fill" kernel.
#include "ember/ops/factory.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numbers>
#include <random>
#include <sstream>
#include <string>

#include "core/dispatch/call.h"
#include "core/dispatch/capture.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/index.h"
#include "ember/ops/reduce.h"
#include "ember/plugin_sdk_random.hpp"

namespace ember {
namespace {

// Makes a host tensor of `dtype` by calling gen(i) for each element, then moves it. gen may
// return any arithmetic type; integer results reach integer dtypes without a detour via double.
template <typename Gen>
Tensor host_generate(IntList sizes, TensorOptions opts, Gen&& gen) {
  Tensor host = empty(sizes, {opts.dtype, Device::cpu()});
  const int64_t n = host.numel();
  visit_dtype(opts.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(host.data_ptr());
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<sdk::Compute<T>>(gen(i)));
  });
  return host.to(opts.device);
}

}  // namespace

Tensor zeros(IntList sizes, TensorOptions opts) {
  return full(sizes, 0, opts);
}
Tensor ones(IntList sizes, TensorOptions opts) {
  return full(sizes, 1, opts);
}
namespace {
// Fills a new tensor with the "fill" kernel directly rather than fill_(): a new tensor starts at
// version 0, as in PyTorch, since nothing can have saved it yet.
Tensor filled(Tensor t, Scalar value) {
  check_scalar_fits(value, t.dtype(), "full");
  if (t.numel() == 0) return t;
  run_kernel(attrs::fill{.int_value = value.to_int(), .value = value.to_double()}, t.dtype(), {},
             {&t});
  return t;
}
}  // namespace

Tensor full(IntList sizes, Scalar value, TensorOptions opts) {
  return filled(empty(sizes, opts), value);
}
Tensor zeros_like(const Tensor& t) {
  return full_like(t, 0);
}
Tensor ones_like(const Tensor& t) {
  return full_like(t, 1);
}
Tensor full_like(const Tensor& t, Scalar v) {
  return filled(empty_like(t), v);
}

Tensor arange(Scalar start, Scalar end, Scalar step, std::optional<TensorOptions> opts) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const TensorOptions o = opts.value_or(TensorOptions(integral ? DType::Int64 : default_dtype()));
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0 && std::isfinite(s) && std::isfinite(e) && std::isfinite(st),
              "[arange] step must be non-zero and bounds finite: start {} end {} step {}", s, e,
              st);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s),
              "[arange] upper bound and step have inconsistent signs: start {} end {} step {}", s,
              e, st);
  // The count in double first: a range like [0, 1e30) in steps of 1e-30 must be an error, not
  // a double-to-int64 conversion that wraps around.
  const double count = std::ceil((e - s) / st);
  EMBER_CHECK(count < 0x1p62, "[arange] {} elements exceed int64: start {} end {} step {}", count,
              s, e, st);
  const int64_t n =
      integral ? static_cast<int64_t>((static_cast<__int128>(end.to_int()) - start.to_int() +
                                       step.to_int() - (st > 0 ? 1 : -1)) /
                                      step.to_int())
               : static_cast<int64_t>(count);
  if (integral && is_integral(o.dtype)) {
    const int64_t a = start.to_int(), b = step.to_int();
    // Every value lies in [start, end), so fits int64, but i * step alone may not (a range
    // from near INT64_MIN in steps near INT64_MAX): the product is taken in 128 bits.
    return host_generate({n}, o, [&](int64_t i) {
      return static_cast<int64_t>(static_cast<__int128>(a) + static_cast<__int128>(i) * b);
    });
  }
  return host_generate({n}, o, [&](int64_t i) { return s + static_cast<double>(i) * st; });
}

Tensor arange(Scalar end, std::optional<TensorOptions> opts) {
  return arange(0, end, 1, opts);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions opts) {
  EMBER_CHECK(steps >= 0, "[linspace] number of steps must be non-negative: got {}", steps);
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  // Like PyTorch: the second half counts back from `end` so both ends are exact.
  return host_generate({steps}, opts, [&](int64_t i) {
    if (steps == 1) return start;
    return i < steps / 2 ? start + step * static_cast<double>(i)
                         : end - step * static_cast<double>(steps - 1 - i);
  });
}

Tensor logspace(double start, double end, int64_t steps, double base, TensorOptions opts) {
  EMBER_CHECK(steps >= 0, "[logspace] number of steps must be non-negative: got {}", steps);
  const Tensor exponents = linspace(start, end, steps, {DType::Float64, Device::cpu()});
  const double* e = exponents.data_ptr<double>();
  return host_generate({steps}, opts, [&](int64_t i) { return std::pow(base, e[i]); });
}

Tensor scalar_tensor(Scalar value, TensorOptions opts) {
  return full({}, value, opts);
}

namespace {
// A window (Note [Window functions]): w(n, N - 1) for n in [0, length) of the symmetric window of
// length N (length + 1 when periodic).
template <typename W>
Tensor window(const char* op, int64_t length, bool periodic, TensorOptions opts, W&& w) {
  EMBER_CHECK_TYPE(is_floating(opts.dtype), "[{}] expects a floating point dtype: got {}", op,
                   opts.dtype);
  EMBER_CHECK(length >= 0, "[{}] requires a non-negative window length: got {}", op, length);
  if (length == 1) return ones({1}, opts);
  const double last = static_cast<double>(periodic ? length : length - 1);
  return host_generate({length}, opts, [&](int64_t n) { return w(static_cast<double>(n), last); });
}

constexpr double kTwoPi = 6.283185307179586476925286766559;
}  // namespace

Tensor hann_window(int64_t length, bool periodic, TensorOptions opts) {
  return window("hann_window", length, periodic, opts,
                [](double n, double last) { return 0.5 - 0.5 * std::cos(kTwoPi * n / last); });
}

Tensor hamming_window(int64_t length, bool periodic, double alpha, double beta,
                      TensorOptions opts) {
  return window("hamming_window", length, periodic, opts,
                [&](double n, double last) { return alpha - beta * std::cos(kTwoPi * n / last); });
}

Tensor blackman_window(int64_t length, bool periodic, TensorOptions opts) {
  return window("blackman_window", length, periodic, opts, [](double n, double last) {
    return 0.42 - 0.5 * std::cos(kTwoPi * n / last) + 0.08 * std::cos(2 * kTwoPi * n / last);
  });
}

Tensor bartlett_window(int64_t length, bool periodic, TensorOptions opts) {
  return window("bartlett_window", length, periodic, opts,
                [](double n, double last) { return 1.0 - std::fabs(2.0 * n / last - 1.0); });
}

Tensor kaiser_window(int64_t length, bool periodic, double beta, TensorOptions opts) {
  EMBER_CHECK(beta >= 0, "[kaiser_window] beta must be non-negative: got {}", beta);
  const double i0_beta = std::cyl_bessel_i(0.0, beta);
  return window("kaiser_window", length, periodic, opts, [&](double n, double last) {
    const double r = 2.0 * n / last - 1.0;
    return std::cyl_bessel_i(0.0, beta * std::sqrt(std::max(0.0, 1.0 - r * r))) / i0_beta;
  });
}

Tensor eye(int64_t n, int64_t m, TensorOptions opts) {
  if (m < 0) m = n;
  EMBER_CHECK(n >= 0, "[eye] n must be non-negative: got {}", n);
  return host_generate({n, m}, opts, [&](int64_t i) { return (i / m) == (i % m) ? 1.0 : 0.0; });
}

struct Generator::State {
  std::mt19937_64 engine;
  std::normal_distribution<double> normal{0.0, 1.0};
  std::atomic<uint64_t> seed;
  std::atomic<uint64_t> philox_offset{0};
};

Generator::Generator(uint64_t seed) : state_(new State{std::mt19937_64(seed), {}, {seed}}) {}
Generator::~Generator() {
  delete state_;
}
void Generator::manual_seed(uint64_t seed) {
  state_->engine.seed(seed);
  state_->normal.reset();
  state_->seed.store(seed, std::memory_order_relaxed);
  state_->philox_offset.store(0, std::memory_order_relaxed);
}
uint64_t Generator::seed() const {
  return state_->seed.load(std::memory_order_relaxed);
}
// A capture would replay the draws of its recording: the same numbers on every call.
constexpr const char* kRandomInCapture =
    "[compile] random numbers were drawn (dropout in training mode, a random factory): a replay "
    "would repeat them (call eval(), or run the function eagerly)";

uint64_t Generator::philox_reserve(uint64_t blocks) {
  if (capture::detail::g_active.load(std::memory_order_relaxed) != 0) {
    capture::refuse(kRandomInCapture);
  }
  return state_->philox_offset.fetch_add(blocks, std::memory_order_relaxed);
}
uint64_t Generator::next() {
  if (capture::detail::g_active.load(std::memory_order_relaxed) != 0) {
    capture::refuse(kRandomInCapture);
  }
  return state_->engine();
}
double Generator::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}
double Generator::normal() {
  if (capture::detail::g_active.load(std::memory_order_relaxed) != 0) {
    capture::refuse(kRandomInCapture);
  }
  return state_->normal(state_->engine);
}

// Note [Generator states]
// A state is "ember-generator-v1 <seed> <philox offset> <engine> <normal distribution> end" in
// ASCII: the engine and the distribution in the standard library's own text form for
// std::mt19937_64 and std::normal_distribution (operator<<), which round-trips exactly,
// including the normal value the distribution keeps for its next call; the last word shows the
// state was not cut short. Text costs a few KiB and is the same on every platform Ember
// targets; a checkpoint stores it as a uint8 tensor.
Tensor Generator::get_state() const {
  std::ostringstream out;
  out << "ember-generator-v1 " << seed() << ' ' << state_->philox_offset.load() << ' '
      << state_->engine << ' ' << state_->normal << " end";
  const std::string text = out.str();
  Tensor t = empty({static_cast<int64_t>(text.size())}, {DType::UInt8, Device::cpu()});
  std::memcpy(t.data_ptr(), text.data(), text.size());
  return t;
}

void Generator::set_state(const Tensor& state) {
  EMBER_CHECK_TYPE(state.defined() && state.dtype() == DType::UInt8 && state.dim() == 1,
                   "[Generator.set_state] the state must be a 1-d uint8 tensor from get_state(): "
                   "got {}",
                   state.defined() ? fmt::format("{} {}", state.dtype(), shape_str(state.sizes()))
                                   : std::string("an undefined tensor"));
  const Tensor host = state.to(Device::cpu()).contiguous();
  std::istringstream in(
      std::string(static_cast<const char*>(host.data_ptr()), static_cast<size_t>(host.numel())));
  std::string magic;
  uint64_t seed = 0, offset = 0;
  std::mt19937_64 engine;
  std::normal_distribution<double> normal;
  std::string end;
  in >> magic >> seed >> offset >> engine >> normal >> end;
  EMBER_CHECK(!in.fail() && magic == "ember-generator-v1" && end == "end" && (in >> std::ws).eof(),
              "[Generator.set_state] not a generator state of this version ({} bytes): pass "
              "what get_state() returned",
              host.numel());
  state_->engine = engine;
  state_->normal = normal;
  state_->seed.store(seed, std::memory_order_relaxed);
  state_->philox_offset.store(offset, std::memory_order_relaxed);
}

namespace {

// The default generators: the CPU's, and one per (device type, index) made on first use with
// the seed last given to manual_seed. Never destroyed (tensors may be drawn from at exit).
struct DefaultGenerators {
  std::mutex mu;
  std::atomic<uint64_t> seed{Generator::kDefaultSeed};
  Generator cpu;
  std::map<std::pair<int16_t, int16_t>, std::unique_ptr<Generator>> devices;
};

DefaultGenerators& default_generators() {
  static DefaultGenerators* g = new DefaultGenerators();
  return *g;
}

Tensor philox_draw(const char* op, IntList sizes, TensorOptions opts, Generator* gen, int64_t kind,
                   double p, double scale);

// Note [Random numbers on every device]
// rand, randn and dropout masks are Philox4x32-10 (plugin_sdk_random.hpp): element i of a draw
// is word i % 4 (float64: a pair of words) of the block at counter offset + i / 4 under the
// generator's seed, mapped to the dtype by random_value. A draw reserves its blocks from the
// generator first (philox_reserve), so the values depend only on (seed, counter, index), not
// on who computes them: a backend with a "random" kernel (ints {kind, seed, offset}, floats
// {p, scale}) fills the tensor on its device in parallel; for any other device the core fills
// it on the host with the same function and copies it there. The same seed therefore gives the
// same tensor on the CPU, on a GPU and on the reference backend (normal values up to the last
// bit of the device's log/sin/cos). Each device has its own default generator, so drawing on a
// GPU does not move the CPU's stream, and manual_seed seeds them all, as PyTorch's does.
Tensor philox_tensor(const char* op, IntList sizes, TensorOptions opts, Generator* gen,
                     int64_t kind, double p, double scale) {
  // A draw whole, named `op` (rand, randn, dropout's mask) with floats {p, scale}, whether a
  // kernel or the host makes it (a capture's consumer writes it as a random op of its own: Note
  // [Composite ops in a capture]).
  capture::Composite region(op, {}, {}, {p, scale});
  Tensor out = philox_draw(op, sizes, opts, gen, kind, p, scale);
  region.finish({&out});
  return out;
}

Tensor philox_draw(const char* op, IntList sizes, TensorOptions opts, Generator* gen, int64_t kind,
                   double p, double scale) {
  Generator& g = gen ? *gen : default_generator(opts.device);
  const int64_t n = shape_numel(sizes, op);
  const bool f64 = opts.dtype == DType::Float64;
  const uint64_t seed = g.seed();
  const uint64_t offset = n > 0 ? g.philox_reserve(sdk::random_blocks(n, f64)) : 0;
  if (n > 0 && has_kernel(core_op(ops::random), opts.device, opts.dtype)) {
    Tensor out = empty(sizes, {opts.dtype, opts.device});
    run_kernel(attrs::random{.kind = kind,
                             .seed = static_cast<int64_t>(seed),
                             .offset = static_cast<int64_t>(offset),
                             .p = p,
                             .scale = scale},
               opts.dtype, {}, {&out});
    return out;
  }
  const int bits = sdk::random_bits(static_cast<int32_t>(opts.dtype));
  const int per = sdk::random_per_block(f64);
  sdk::PhiloxBlock block{};
  sdk::NormalPair pair{};
  return host_generate(sizes, opts, [&](int64_t i) {
    const int k = static_cast<int>(i % per);
    if (k == 0) block = sdk::random_block(seed, offset, static_cast<uint64_t>(i / per));
    if (kind != sdk::kRandomNormal) return sdk::random_value(block, k, bits, kind, p, scale);
    if (k % 2 == 0) pair = sdk::random_normal_pair(block, k / 2, f64);  // one log per pair
    return k % 2 == 0 ? pair.first : pair.second;
  });
}

}  // namespace

Generator& default_generator() {
  return default_generators().cpu;
}

Generator& default_generator(Device device) {
  if (device.type == kCpuType) return default_generator();
  DefaultGenerators& d = default_generators();
  std::lock_guard lock(d.mu);
  std::unique_ptr<Generator>& g = d.devices[{device.type, device.index}];
  if (!g) g = std::make_unique<Generator>(d.seed.load(std::memory_order_relaxed));
  return *g;
}

void manual_seed(uint64_t seed) {
  DefaultGenerators& d = default_generators();
  std::lock_guard lock(d.mu);
  d.seed.store(seed, std::memory_order_relaxed);
  d.cpu.manual_seed(seed);
  for (auto& [device, g] : d.devices) g->manual_seed(seed);
}

Tensor rand(IntList sizes, TensorOptions opts, Generator* gen) {
  EMBER_CHECK_TYPE(is_floating(opts.dtype), "[rand] needs a floating dtype: got {}", opts.dtype);
  // Note [rand stays below 1]: a draw with more bits than the dtype's significand could round up
  // to 1.0 (about 1 in 500 for bfloat16), so, like PyTorch, only that many bits are drawn.
  return philox_tensor("rand", sizes, opts, gen, sdk::kRandomUniform, 0, 0);
}

Tensor randn(IntList sizes, TensorOptions opts, Generator* gen) {
  EMBER_CHECK_TYPE(is_floating(opts.dtype), "[randn] needs a floating dtype: got {}", opts.dtype);
  return philox_tensor("randn", sizes, opts, gen, sdk::kRandomNormal, 0, 0);
}

Tensor normal(double mean, double std, IntList sizes, TensorOptions opts, Generator* gen) {
  EMBER_CHECK(std >= 0.0, "[normal] expects std >= 0.0: got {}", std);
  return add(mul(randn(sizes, opts, gen), std), mean);
}

Tensor normal(const Tensor& mean, const Tensor& std, Generator* gen) {
  EMBER_CHECK_TYPE(mean.defined() && std.defined(), "[normal] undefined tensor argument");
  EMBER_CHECK_TYPE(is_floating(mean.dtype()) && is_floating(std.dtype()),
                   "[normal] expects floating mean and std: got {} and {}", mean.dtype(),
                   std.dtype());
  if (std.numel() > 0) {
    EMBER_CHECK(all(ge(std, 0.0)).item<bool>(), "[normal] expects std >= 0.0: got a minimum of {}",
                amin(std).item());
  }
  const std::vector<Tensor> b = broadcast_tensors({mean, std});
  const DType dtype = promote_types(mean.dtype(), std.dtype());
  autograd::NoGradGuard no_grad;  // torch.normal's samples have no gradient
  return add(mul(randn(b[0].sizes(), TensorOptions(dtype, mean.device()), gen), b[1]), b[0]);
}

Tensor normal(const Tensor& mean, double std, Generator* gen) {
  EMBER_CHECK_TYPE(mean.defined(), "[normal] undefined tensor argument");
  return normal(mean, detail::scalar_tensor(std, mean.dtype(), mean.device()), gen);
}

Tensor normal(double mean, const Tensor& std, Generator* gen) {
  EMBER_CHECK_TYPE(std.defined(), "[normal] undefined tensor argument");
  return normal(detail::scalar_tensor(mean, std.dtype(), std.device()), std, gen);
}

// Note [out= arguments]
// PyTorch's functions take out= to write their result into a tensor the caller owns. Ember
// computes the result as usual and copies it: the same values and checks as PyTorch's (out on
// the result's device, a dtype the result casts to, out taking the result's shape), one copy
// more than a kernel writing in place, and one rule for every op instead of one per kernel. An
// out= call records no autograd (PyTorch refuses it when an input requires grad), so a result
// that requires grad is an error rather than a tensor whose history is silently dropped.
Tensor& write_out(Tensor& out, const Tensor& result, std::string_view op, bool* resized_nonempty) {
  EMBER_CHECK_TYPE(out.defined() && result.defined(), "[{}] out= needs a defined tensor", op);
  EMBER_CHECK(!result.requires_grad(),
              "[{}] functions with out= arguments don't support automatic differentiation, but "
              "an input requires grad (call it under no_grad, or without out=)",
              op);
  EMBER_CHECK(out.device() == result.device(),
              "[{}] out is on {} but the result is on {} (pass an out on the same device)", op,
              out.device(), result.device());
  EMBER_CHECK_TYPE(can_cast(result.dtype(), out.dtype()),
                   "[{}] result type {} can't be cast to the desired output type {}", op,
                   result.dtype(), out.dtype());
  if (resized_nonempty) *resized_nonempty = false;
  if (out.sizes() != result.sizes()) {
    if (resized_nonempty) *resized_nonempty = out.numel() > 0;
    out.set_data(empty(result.sizes(), TensorOptions(out.dtype(), out.device())));
  }
  out.copy_(result);
  return out;
}

// A probability outside [0, 1] (NaN included) is an error, as in PyTorch, not a draw that is
// always 0 or always 1.
Tensor bernoulli(const Tensor& p, Generator* gen) {
  EMBER_CHECK_TYPE(p.defined() && is_floating(p.dtype()),
                   "[bernoulli] expects floating probabilities: got {}",
                   p.defined() ? fmt::format("{}", p.dtype()) : std::string("undefined"));
  if (p.numel() > 0) {
    const bool ok = all(logical_and(ge(p, 0.0), le(p, 1.0))).item<bool>();
    EMBER_CHECK(ok, "[bernoulli] expects every probability in [0, 1]: got values in [{}, {}]",
                amin(p).item(), amax(p).item());
  }
  const Tensor u = rand(p.sizes(), TensorOptions(p.dtype(), p.device()), gen);
  return lt(u, p).to(p.dtype());
}

Tensor bernoulli(const Tensor& input, double p, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[bernoulli] expects p to be in [0, 1]: got p={}", p);
  EMBER_CHECK_TYPE(input.defined() && is_floating(input.dtype()),
                   "[bernoulli] expects a floating input: got {}",
                   input.defined() ? fmt::format("{}", input.dtype()) : std::string("undefined"));
  const Tensor u = rand(input.sizes(), TensorOptions(input.dtype(), input.device()), gen);
  return lt(u, p).to(input.dtype());
}

Tensor detail::dropout_mask(IntList sizes, TensorOptions opts, double p, double scale,
                            Generator* gen) {
  return philox_tensor("dropout", sizes, opts, gen, sdk::kRandomDropoutMask, p, scale);
}

Tensor randint(int64_t low, int64_t high, IntList sizes, TensorOptions opts, Generator* gen) {
  EMBER_CHECK(low < high, "[randint] low must be below high: got low {} high {}", low, high);
  Generator& g = gen ? *gen : default_generator();
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  return host_generate(sizes, opts, [&](int64_t) {
    return static_cast<int64_t>(static_cast<uint64_t>(low) + g.next() % range);
  });
}

namespace {

/** x, floating, replaced in place by draw(sizes, options): draws of x's shape in float64 on its
 *  device, converted to x's dtype after the draw. */
template <typename Draw>
Tensor& draw_into(Tensor& x, const char* op, Draw&& draw) {
  EMBER_CHECK_TYPE(x.defined(), "[{}] undefined tensor argument", op);
  EMBER_CHECK_NOT_IMPLEMENTED(is_floating(x.dtype()),
                              "[{}] not implemented for {} (a floating dtype only)", op, x.dtype());
  return apply_inplace(x, op, [&](const Tensor& v) {
    autograd::NoGradGuard no_grad;
    return draw(v.sizes(), TensorOptions{DType::Float64, v.device()}).to(v.dtype());
  });
}

/** draw_into() of f(u), u uniform in [0, 1). */
template <typename F>
Tensor& uniform_draw_into(Tensor& x, const char* op, Generator* gen, F&& f) {
  return draw_into(x, op, [&](IntList sizes, TensorOptions o) { return f(rand(sizes, o, gen)); });
}

}  // namespace

Tensor& exponential_(Tensor& x, double lambd, Generator* gen) {
  EMBER_CHECK(lambd > 0, "[exponential_] expects lambd > 0: got {}", lambd);
  return uniform_draw_into(x, "exponential_", gen,
                           [&](const Tensor& u) { return div(neg(log1p(neg(u))), lambd); });
}

Tensor& geometric_(Tensor& x, double p, Generator* gen) {
  EMBER_CHECK(p > 0 && p < 1, "[geometric_] expects p in (0, 1): got {}", p);
  // 1 - u is in (0, 1], so the count is at least 1 but for 1 - u == 1 exactly (0 trials).
  return uniform_draw_into(x, "geometric_", gen, [&](const Tensor& u) {
    return clamp(ceil(div(log1p(neg(u)), std::log1p(-p))), Scalar(1.0), std::nullopt);
  });
}

Tensor& log_normal_(Tensor& x, double mean, double std, Generator* gen) {
  EMBER_CHECK(std > 0, "[log_normal_] expects std > 0: got {}", std);
  return draw_into(x, "log_normal_", [&](IntList sizes, TensorOptions o) {
    return exp(normal(mean, std, sizes, o, gen));
  });
}

Tensor& cauchy_(Tensor& x, double median, double sigma, Generator* gen) {
  EMBER_CHECK(sigma > 0, "[cauchy_] expects sigma > 0: got {}", sigma);
  return uniform_draw_into(x, "cauchy_", gen, [&](const Tensor& u) {
    return add(mul(tan(mul(sub(u, 0.5), std::numbers::pi)), sigma), median);
  });
}

Tensor& random_(Tensor& x, int64_t from, std::optional<int64_t> to, Generator* gen) {
  EMBER_CHECK_TYPE(x.defined(), "[random_] undefined tensor argument");
  int64_t high = 0;
  if (to) {
    high = *to;
  } else if (x.dtype() == DType::Bool) {
    high = 2;
  } else if (is_floating(x.dtype())) {
    high = (int64_t{1} << std::numeric_limits<double>::digits) + 1;
    if (x.dtype() == DType::Float32) high = (int64_t{1} << 24) + 1;
    if (x.dtype() == DType::Float16) high = (int64_t{1} << 11) + 1;
    if (x.dtype() == DType::BFloat16) high = (int64_t{1} << 8) + 1;
  } else {
    high = std::numeric_limits<int64_t>::max();
    if (x.dtype() == DType::Int32) high = int64_t{std::numeric_limits<int32_t>::max()} + 1;
    if (x.dtype() == DType::Int8) high = int64_t{std::numeric_limits<int8_t>::max()} + 1;
    if (x.dtype() == DType::UInt8) high = int64_t{std::numeric_limits<uint8_t>::max()} + 1;
  }
  EMBER_CHECK(from < high, "[random_] expects 'from' to be less than 'to': got from={} >= to={}",
              from, high);
  return apply_inplace(x, "random_", [&](const Tensor& v) {
    autograd::NoGradGuard no_grad;
    return randint(from, high, v.sizes(), {DType::Int64, v.device()}, gen).to(v.dtype());
  });
}

// Note [multinomial by Gumbel noise]
// argmax_i(log w_i + g_i), with g_i = -log(-log u_i) independent standard Gumbel draws, is i with
// probability w_i / sum(w), and the k largest such scores are k draws without replacement in
// order (the Gumbel-top-k trick). So sampling is a handful of ordinary ops, on any device, with
// no host loop: a zero weight scores -inf and is never drawn, and the weights need no
// normalising. The draws are in float32 at least (float64 for float64 weights).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  EMBER_CHECK(probs.defined() && (probs.dim() == 1 || probs.dim() == 2),
              "[multinomial] expected a 1-D or 2-D tensor of weights: got {}",
              probs.defined() ? fmt::format("shape {}", shape_str(probs.sizes()))
                              : std::string("undefined"));
  EMBER_CHECK_TYPE(is_floating(probs.dtype()), "[multinomial] needs floating weights: got {}",
                   probs.dtype());
  const int64_t k = probs.size(-1);
  EMBER_CHECK(k > 0 && probs.numel() > 0,
              "[multinomial] needs at least one category and one row: got shape {}",
              shape_str(probs.sizes()));
  EMBER_CHECK(num_samples > 0, "[multinomial] num_samples must be positive: got {}", num_samples);
  EMBER_CHECK(replacement || num_samples <= k,
              "[multinomial] cannot draw {} samples without replacement from {} categories "
              "(pass replacement = true)",
              num_samples, k);
  autograd::NoGradGuard no_grad;
  const DType dt = probs.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
  const Tensor w = (probs.dim() == 1 ? probs.unsqueeze(0) : probs).to(dt);
  const Tensor row_sums = sum(w, {-1});
  const double total = sum(row_sums).item(), lowest = min(w).item();
  EMBER_CHECK(std::isfinite(total) && lowest >= 0,
              "[multinomial] weights must be finite and non-negative: got sum {} and minimum {}",
              total, lowest);
  EMBER_CHECK(amin(row_sums).item() > 0,
              "[multinomial] every row needs a positive weight: a row sums to 0");
  if (!replacement) {
    const int64_t fewest = amin(sum(gt(w, 0.0), {-1})).item<int64_t>();
    EMBER_CHECK(fewest >= num_samples,
                "[multinomial] cannot draw {} samples without replacement: a row has only {} "
                "categories of positive weight",
                num_samples, fewest);
  }
  const int64_t rows = w.size(0);
  const auto gumbel = [&](IntList sizes) {
    return neg(log(neg(log(rand(sizes, TensorOptions(dt, w.device()), gen)))));
  };
  const Tensor out = replacement
                         ? argmax(add(log(w).unsqueeze(1), gumbel({rows, num_samples, k})), -1)
                         : std::get<1>(topk(add(log(w), gumbel({rows, k})), num_samples, -1));
  return probs.dim() == 1 ? out.squeeze(0) : out;
}

Tensor from_blob(void* data, IntList sizes, IntList strides, DType dtype,
                 std::function<void(void*)> deleter, Device device) {
  EMBER_CHECK(sizes.size() == strides.size(), "[from_blob] {} sizes but {} strides", sizes.size(),
              strides.size());
  int64_t extent = 0;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    EMBER_CHECK(sizes[i] >= 0 && strides[i] >= 0, "[from_blob] negative size or stride: {} {}",
                shape_str(sizes), shape_str(strides));
    if (sizes[i] == 0) empty = true;
    int64_t reach = 0;
    EMBER_CHECK(sizes[i] == 0 || (!__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) &&
                                  !__builtin_add_overflow(extent, reach, &extent)),
                "[from_blob] sizes {} strides {} reach past int64", shape_str(sizes),
                shape_str(strides));
  }
  shape_numel(sizes, "from_blob");
  const size_t bytes = empty ? 0 : static_cast<size_t>(extent + 1) * itemsize(dtype);
  auto* fn = new std::function<void(void*)>(std::move(deleter));
  auto del = [](void* ctx, void* p, size_t, Device) {
    auto* f = static_cast<std::function<void(void*)>*>(ctx);
    if (*f) (*f)(p);
    delete f;
  };
  Storage s = make_intrusive<StorageImpl>(data, bytes, device, +del, fn);
  return Tensor(make_intrusive<TensorImpl>(std::move(s), Shape(sizes), Shape(strides), 0, dtype));
}

Tensor from_blob(void* data, IntList sizes, DType dtype, std::function<void(void*)> deleter,
                 Device device) {
  return from_blob(data, sizes, contiguous_strides(sizes), dtype, std::move(deleter), device);
}

}  // namespace ember
