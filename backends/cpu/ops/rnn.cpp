// CPU lstm_layer, gru_layer and their backward passes (contracts in core/ops/rnn.cpp; Note [The
// LSTM recurrence as one op]): float32 and float64. Each step is one product with the recurrent
// weight (for float32 oneDNN's matmul on a weight packed once per call, which threads itself,
// Note [Recurrent products on a weight packed once]; a plain loop for float64) and one pass over
// the gates (OpenMP across batch rows when a step has enough of them), in float32 with the
// vectorizable sigmoid and tanh of dense_math.h.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "backends/cpu/dense_math.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

[[gnu::always_inline]] inline float sigmoid_of(float x) {
  return sigmoid_approx(x);
}
[[gnu::always_inline]] inline double sigmoid_of(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}
[[gnu::always_inline]] inline float tanh_of(float x) {
  return tanh_approx(x);
}
[[gnu::always_inline]] inline double tanh_of(double x) {
  return std::tanh(x);
}

// ---- one batch row of one step -----------------------------------------------------------------
// Each pointer is a distinct row (restrict) so that the loops vectorize; float32 runs an AVX2
// copy where the CPU has it (Note [AVX2 clones of hot loops]).

/** Activates the row's gates [i, f, g, o] in place and writes the new c and h. */
template <typename T>
[[gnu::always_inline]] inline void gates_forward_impl(T* __restrict i, const T* __restrict cprev,
                                                      T* __restrict cn, T* __restrict hn,
                                                      int64_t H) {
  for (int64_t j = 0; j < 2 * H; ++j) i[j] = sigmoid_of(i[j]);      // i and f
  for (int64_t j = 2 * H; j < 3 * H; ++j) i[j] = tanh_of(i[j]);     // g
  for (int64_t j = 3 * H; j < 4 * H; ++j) i[j] = sigmoid_of(i[j]);  // o
  const T *f = i + H, *g = i + 2 * H, *o = i + 3 * H;
  for (int64_t j = 0; j < H; ++j) cn[j] = f[j] * cprev[j] + i[j] * g[j];
  for (int64_t j = 0; j < H; ++j) hn[j] = o[j] * tanh_of(cn[j]);
}

/** The row's gate gradients (the contract's recurrence for one step), dc_next updated in
 *  place; dh_next is read. */
template <typename T>
[[gnu::always_inline]] inline void gates_backward_impl(
    const T* __restrict i, const T* __restrict ct, const T* __restrict cprev,
    const T* __restrict dht, const T* __restrict dct, const T* __restrict dhn, T* __restrict dcn,
    T* __restrict di, int64_t H) {
  const T *f = i + H, *g = i + 2 * H, *o = i + 3 * H;
  T *df = di + H, *dg = di + 2 * H, *dout = di + 3 * H;
  for (int64_t j = 0; j < H; ++j) dout[j] = tanh_of(ct[j]);  // tanh(c), used below
  for (int64_t j = 0; j < H; ++j) {
    const T tc = dout[j];
    const T dhj = dht[j] + dhn[j];
    const T dcj = dct[j] + dcn[j] + dhj * o[j] * (T(1) - tc * tc);
    di[j] = dcj * g[j] * i[j] * (T(1) - i[j]);
    df[j] = dcj * cprev[j] * f[j] * (T(1) - f[j]);
    dg[j] = dcj * i[j] * (T(1) - g[j] * g[j]);
    dout[j] = dhj * tc * o[j] * (T(1) - o[j]);
    dcn[j] = dcj * f[j];
  }
}

EMBER_CPU_AVX2 void gates_forward_avx2(float* i, const float* cprev, float* cn, float* hn,
                                       int64_t H) {
  gates_forward_impl(i, cprev, cn, hn, H);
}
EMBER_CPU_AVX2 void gates_backward_avx2(const float* i, const float* ct, const float* cprev,
                                        const float* dht, const float* dct, const float* dhn,
                                        float* dcn, float* di, int64_t H) {
  gates_backward_impl(i, ct, cprev, dht, dct, dhn, dcn, di, H);
}

template <typename T>
void gates_forward(T* i, const T* cprev, T* cn, T* hn, int64_t H) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return gates_forward_avx2(i, cprev, cn, hn, H);
  }
  gates_forward_impl(i, cprev, cn, hn, H);
}
template <typename T>
void gates_backward(const T* i, const T* ct, const T* cprev, const T* dht, const T* dct,
                    const T* dhn, T* dcn, T* di, int64_t H) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return gates_backward_avx2(i, ct, cprev, dht, dct, dhn, dcn, di, H);
  }
  gates_backward_impl(i, ct, cprev, dht, dct, dhn, dcn, di, H);
}

/** The GRU row of one step: from its gates_x row gx [r_x, z_x, n_x] and gh [r_h, z_h, n_h] =
 *  h_prev w_hh^T + b_hh, writes its gates row [r, z, n, n_h] and the new h. */
template <typename T>
[[gnu::always_inline]] inline void gru_forward_impl(const T* __restrict gx, const T* __restrict gh,
                                                    const T* __restrict hprev, T* __restrict g,
                                                    T* __restrict hn, int64_t H) {
  T *r = g, *z = g + H, *n = g + 2 * H, *nh = g + 3 * H;
  for (int64_t j = 0; j < 2 * H; ++j) g[j] = sigmoid_of(gx[j] + gh[j]);  // r and z
  for (int64_t j = 0; j < H; ++j) nh[j] = gh[2 * H + j];
  for (int64_t j = 0; j < H; ++j) n[j] = tanh_of(gx[2 * H + j] + r[j] * nh[j]);
  for (int64_t j = 0; j < H; ++j) hn[j] = n[j] + z[j] * (hprev[j] - n[j]);
}

/** The GRU row's gate gradients (the contract's recurrence for one step): dh carries dh_next in
 *  and leaves with dh_t z, to which the caller adds dgates_h w_hh. */
template <typename T>
[[gnu::always_inline]] inline void gru_backward_impl(const T* __restrict g,
                                                     const T* __restrict hprev,
                                                     const T* __restrict dht, T* dh,
                                                     T* __restrict dgx, T* __restrict dgh,
                                                     int64_t H) {
  const T *r = g, *z = g + H, *n = g + 2 * H, *nh = g + 3 * H;
  for (int64_t j = 0; j < H; ++j) {
    const T d = dht[j] + dh[j];
    const T an = d * (T(1) - z[j]) * (T(1) - n[j] * n[j]);
    const T ar = an * nh[j] * r[j] * (T(1) - r[j]);
    const T az = d * (hprev[j] - n[j]) * z[j] * (T(1) - z[j]);
    dgx[j] = dgh[j] = ar;
    dgx[H + j] = dgh[H + j] = az;
    dgx[2 * H + j] = an;
    dgh[2 * H + j] = an * r[j];
    dh[j] = d * z[j];
  }
}

EMBER_CPU_AVX2 void gru_forward_avx2(const float* gx, const float* gh, const float* hprev, float* g,
                                     float* hn, int64_t H) {
  gru_forward_impl(gx, gh, hprev, g, hn, H);
}
EMBER_CPU_AVX2 void gru_backward_avx2(const float* g, const float* hprev, const float* dht,
                                      float* dh, float* dgx, float* dgh, int64_t H) {
  gru_backward_impl(g, hprev, dht, dh, dgx, dgh, H);
}

template <typename T>
void gru_forward_row(const T* gx, const T* gh, const T* hprev, T* g, T* hn, int64_t H) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return gru_forward_avx2(gx, gh, hprev, g, hn, H);
  }
  gru_forward_impl(gx, gh, hprev, g, hn, H);
}
template <typename T>
void gru_backward_row(const T* g, const T* hprev, const T* dht, T* dh, T* dgx, T* dgh, int64_t H) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu_has_avx2()) return gru_backward_avx2(g, hprev, dht, dh, dgx, dgh, H);
  }
  gru_backward_impl(g, hprev, dht, dh, dgx, dgh, H);
}

// A gate costs an exponential or two, about ten times an elementwise add: rows go across threads
// at a tenth of the elementwise grain (measured: 16 rows of 512 gates gain 2 threads).
constexpr int64_t kGateGrain = kGrainSize / 8;

/** Runs body(n) for the batch rows n < N, across threads when a step holds enough work. */
template <typename Body>
void for_rows(int64_t N, int64_t per_row, Body&& body) {
#pragma omp parallel for schedule(static) if (N * per_row >= kGateGrain && N > 1)
  for (int64_t n = 0; n < N; ++n) body(n);
}

// Note [Recurrent products on a weight packed once]
// Every step multiplies the batch's few rows by the same recurrent weight. dnnl_sgemm packs its
// operands into its own layout on every call, a large part of a step at N = 16 rows. For float32
// the kernels instead build one oneDNN matmul whose weight layout oneDNN picks (format any),
// reorder the weight into it once per kernel call, and run that primitive at every step,
// accumulating through a sum post-op where the step adds to what is there (the gates start as
// gates_x, the GRU's dh as dh_t z). The primitive is cached (Note [oneDNN primitive cache] in
// matmul.cpp); where oneDNN has no implementation the kernels fall back to gemm. float64 keeps
// the plain loop.

/** c [M, N] = (or +=, `accumulate`) a [M, K] op(w), with op(w) = w^T for a weight stored [N, K]
 *  (`w_is_nk`) or w itself for one stored [K, N]: float32 through oneDNN's matmul on the weight
 *  packed once (Note [Recurrent products on a weight packed once]), otherwise gemm. */
template <typename T>
class StepProduct {
 public:
  StepProduct(const ember_kernel_call* call, int64_t M, int64_t K, int64_t N, const T* w,
              bool w_is_nk, bool accumulate)
      : M_(M),
        K_(K),
        N_(N),
        w_(w),
        w_is_nk_(w_is_nk),
        accumulate_(accumulate),
        weights_{call},
        scratch_{call} {
    if constexpr (std::is_same_v<T, float>) pack();
  }

  /** c = (or +=) a op(w) for one step's rows. */
  void run(const T* a, T* c) const {
    if constexpr (std::is_same_v<T, float>) {
      if (prim_) {
        // The same memory objects every step, pointed at this step's rows.
        a_mem_.set_data_handle(const_cast<T*>(a));
        c_mem_.set_data_handle(c);
        dnnl::stream& stream = dnnl_stream();
        prim_.execute(stream, args_);
        stream.wait();
        return;
      }
    }
    gemm('N', w_is_nk_ ? 'T' : 'N', M_, N_, K_, T(1), a, K_, w_, w_is_nk_ ? K_ : N_,
         accumulate_ ? T(1) : T(0), c, N_);
  }

 private:
  void pack() {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::engine& eng = dnnl_engine();
    const dnnl::memory::desc a_md({M_, K_}, f32, tag::ab), c_md({M_, N_}, f32, tag::ab);
    const int64_t key[] = {64, M_, K_, N_, w_is_nk_ ? 1 : 0, accumulate_ ? 1 : 0};
    if (!dnnl_cache_find(key, 6, &prim_)) {
      try {
        dnnl::primitive_attr attr = dnnl_attr();
        if (accumulate_) {
          dnnl::post_ops ops;
          ops.append_sum(1.0f);
          attr.set_post_ops(ops);
        }
        prim_ = dnnl::matmul(dnnl::matmul::primitive_desc(
            eng, a_md, dnnl::memory::desc({K_, N_}, f32, tag::any), c_md, attr));
      } catch (const dnnl::error& e) {
        if (e.status != dnnl_unimplemented) throw;
        prim_ = dnnl::primitive();
      }
      dnnl_cache_put(key, 6, prim_);
    }
    if (!prim_) return;
    // The layouts oneDNN chose, read through the C API (the C++ one would clone the descriptor).
    const const_dnnl_primitive_desc_t pd = prim_.get_primitive_desc();
    packed_ =
        dnnl_scratch_memory(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), weights_);
    pad_ = dnnl_scratch_memory(dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0),
                               scratch_);
    a_mem_ = dnnl::memory(a_md, eng, DNNL_MEMORY_NONE);
    c_mem_ = dnnl::memory(c_md, eng, DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, a_mem_}, {DNNL_ARG_WEIGHTS, *packed_}, {DNNL_ARG_DST, c_mem_}};
    if (pad_) args_.emplace(DNNL_ARG_SCRATCHPAD, *pad_);
    dnnl::memory user(dnnl::memory::desc({K_, N_}, f32, w_is_nk_ ? tag::ba : tag::ab), eng,
                      const_cast<T*>(w_));
    dnnl::stream& stream = dnnl_stream();
    dnnl::reorder(user, *packed_).execute(stream, user, *packed_);
    stream.wait();
  }

  int64_t M_, K_, N_;
  const T* w_;
  bool w_is_nk_, accumulate_;
  ScratchGuard weights_, scratch_;
  dnnl::primitive prim_;
  std::optional<dnnl::memory> packed_, pad_;
  dnnl::memory a_mem_, c_mem_;                  // a step's rows and result
  std::unordered_map<int, dnnl::memory> args_;  // the primitive's arguments, made once
};

/** The sizes of a call and where step t's neighbours are. */
struct Steps {
  int64_t L, N, H;
  bool reverse;
  /** The step taken k-th in walking order. */
  int64_t at(int64_t k) const { return reverse ? L - 1 - k : k; }
  /** The step whose state step t starts from, or -1 for the initial state. */
  int64_t before(int64_t t) const {
    const int64_t p = reverse ? t + 1 : t - 1;
    return p < 0 || p >= L ? -1 : p;
  }
};

template <typename T>
void forward(const ember_kernel_call* call, const Steps& s, const T* gx, const T* w, const T* h0,
             const T* c0, T* h, T* c, T* gates) {
  const int64_t H = s.H, G = 4 * H, step = s.N * G, state = s.N * H;
  const StepProduct<T> recurrent(call, s.N, H, G, w, /*w_is_nk=*/true, /*accumulate=*/true);
  for (int64_t k = 0; k < s.L; ++k) {
    const int64_t t = s.at(k), p = s.before(t);
    const T* hp = p < 0 ? h0 : h + p * state;
    const T* cp = p < 0 ? c0 : c + p * state;
    T* gt = gates + t * step;
    std::memcpy(gt, gx + t * step, static_cast<size_t>(step) * sizeof(T));
    recurrent.run(hp, gt);  // + h_prev w_hh^T
    T* ct = c + t * state;
    T* ht = h + t * state;
    for_rows(s.N, G,
             [&](int64_t n) { gates_forward(gt + n * G, cp + n * H, ct + n * H, ht + n * H, H); });
  }
}

// dh0 and dc0 carry dh_next and dc_next from step to step and end as the contract's results.
template <typename T>
void backward(const ember_kernel_call* call, const Steps& s, const T* dh, const T* dc, const T* w,
              const T* c0, const T* c, const T* gates, T* dgx, T* dh0, T* dc0) {
  const int64_t H = s.H, G = 4 * H, step = s.N * G, state = s.N * H;
  const StepProduct<T> recurrent(call, s.N, G, H, w, /*w_is_nk=*/false, /*accumulate=*/false);
  std::fill(dh0, dh0 + state, T(0));
  std::fill(dc0, dc0 + state, T(0));
  for (int64_t k = s.L - 1; k >= 0; --k) {
    const int64_t t = s.at(k), p = s.before(t);
    const T* cp = p < 0 ? c0 : c + p * state;
    const T* gt = gates + t * step;
    T* dgt = dgx + t * step;
    for_rows(s.N, G, [&](int64_t n) {
      const int64_t r = t * state + n * H;
      gates_backward(gt + n * G, c + r, cp + n * H, dh + r, dc + r, dh0 + n * H, dc0 + n * H,
                     dgt + n * G, H);
    });
    recurrent.run(dgt, dh0);  // dh_next = dgates w_hh
  }
}

/** The GRU's steps: per step one product h_prev w_hh^T (onto b_hh) and one pass over the rows. */
template <typename T>
void gru_forward(const ember_kernel_call* call, const Steps& s, const T* gx, const T* w, const T* b,
                 const T* h0, T* h, T* gates) {
  const int64_t H = s.H, G = 3 * H, state = s.N * H;
  const StepProduct<T> recurrent(call, s.N, H, G, w, /*w_is_nk=*/true, /*accumulate=*/true);
  std::vector<T> gh(static_cast<size_t>(s.N * G));
  for (int64_t k = 0; k < s.L; ++k) {
    const int64_t t = s.at(k), p = s.before(t);
    const T* hp = p < 0 ? h0 : h + p * state;
    for (int64_t n = 0; n < s.N; ++n) std::copy(b, b + G, gh.data() + n * G);
    recurrent.run(hp, gh.data());  // + h_prev w_hh^T
    const T* gxt = gx + t * s.N * G;
    T* gt = gates + t * s.N * 4 * H;
    T* ht = h + t * state;
    for_rows(s.N, 4 * H, [&](int64_t n) {
      gru_forward_row(gxt + n * G, gh.data() + n * G, hp + n * H, gt + n * 4 * H, ht + n * H, H);
    });
  }
}

// dh0 carries dh_next from step to step and ends as the contract's dh0.
template <typename T>
void gru_backward(const ember_kernel_call* call, const Steps& s, const T* dh, const T* w,
                  const T* h0, const T* h, const T* gates, T* dgx, T* dgh, T* dh0) {
  const int64_t H = s.H, G = 3 * H, state = s.N * H;
  const StepProduct<T> recurrent(call, s.N, G, H, w, /*w_is_nk=*/false, /*accumulate=*/true);
  std::fill(dh0, dh0 + state, T(0));
  for (int64_t k = s.L - 1; k >= 0; --k) {
    const int64_t t = s.at(k), p = s.before(t);
    const T* hp = p < 0 ? h0 : h + p * state;
    const T* gt = gates + t * s.N * 4 * H;
    T* dgxt = dgx + t * s.N * G;
    T* dght = dgh + t * s.N * G;
    for_rows(s.N, 4 * H, [&](int64_t n) {
      gru_backward_row(gt + n * 4 * H, hp + n * H, dh + t * state + n * H, dh0 + n * H,
                       dgxt + n * G, dght + n * G, H);
    });
    recurrent.run(dght, dh0);  // + dgates_h w_hh
  }
}

}  // namespace

EMBER_KERNEL(lstm_layer) {
  const auto a = sdk::attrs<attrs::lstm_layer>(call);
  const ember_tensor& gx = call->inputs[0];
  const Steps s{gx.sizes[0], gx.sizes[1], call->inputs[1].sizes[1], a.reverse != 0};
  return visit_f32_f64(call, "lstm_layer", [&](auto tag) {
    using T = decltype(tag);
    forward(call, s, sdk::data<const T>(gx), sdk::data<const T>(call->inputs[1]),
            sdk::data<const T>(call->inputs[2]), sdk::data<const T>(call->inputs[3]),
            sdk::data<T>(call->outputs[0]), sdk::data<T>(call->outputs[1]),
            sdk::data<T>(call->outputs[2]));
  });
}

EMBER_KERNEL(lstm_layer_backward) {
  const auto a = sdk::attrs<attrs::lstm_layer_backward>(call);
  const ember_tensor& dh = call->inputs[0];
  const Steps s{dh.sizes[0], dh.sizes[1], dh.sizes[2], a.reverse != 0};
  return visit_f32_f64(call, "lstm_layer_backward", [&](auto tag) {
    using T = decltype(tag);
    const auto in = [&](int i) { return sdk::data<const T>(call->inputs[i]); };
    backward(call, s, in(0), in(1), in(2), in(4), in(6), in(7), sdk::data<T>(call->outputs[0]),
             sdk::data<T>(call->outputs[1]), sdk::data<T>(call->outputs[2]));
  });
}

EMBER_KERNEL(gru_layer) {
  const auto a = sdk::attrs<attrs::gru_layer>(call);
  const ember_tensor& gx = call->inputs[0];
  const Steps s{gx.sizes[0], gx.sizes[1], call->inputs[1].sizes[1], a.reverse != 0};
  return visit_f32_f64(call, "gru_layer", [&](auto tag) {
    using T = decltype(tag);
    const auto in = [&](int i) { return sdk::data<const T>(call->inputs[i]); };
    gru_forward(call, s, in(0), in(1), in(2), in(3), sdk::data<T>(call->outputs[0]),
                sdk::data<T>(call->outputs[1]));
  });
}

EMBER_KERNEL(gru_layer_backward) {
  const auto a = sdk::attrs<attrs::gru_layer_backward>(call);
  const ember_tensor& dh = call->inputs[0];
  const Steps s{dh.sizes[0], dh.sizes[1], dh.sizes[2], a.reverse != 0};
  return visit_f32_f64(call, "gru_layer_backward", [&](auto tag) {
    using T = decltype(tag);
    const auto in = [&](int i) { return sdk::data<const T>(call->inputs[i]); };
    gru_backward(call, s, in(0), in(1), in(2), in(3), in(4), sdk::data<T>(call->outputs[0]),
                 sdk::data<T>(call->outputs[1]), sdk::data<T>(call->outputs[2]));
  });
}

}  // namespace ember::cpu
