// CPU convolution: conv2d, conv2d_backward_input, conv2d_backward_weight and the optional
// conv2d_relu and conv2d_add_relu (contract in core/ops/conv.cpp; the ReLU and the residual's sum
// are oneDNN post-ops). float32, bfloat16 and
// float16 run through oneDNN's convolution_forward / _backward_data / _backward_weights with the
// layouts oneDNN picks (the half types computed in float32, Note [Half-type convolutions in
// float32]); float64 and any geometry oneDNN declines run through own direct loops split over
// OpenMP.
#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "backends/cpu/allocator.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {
namespace {

enum class Dir : int64_t { Forward = 0, BackwardData = 1, BackwardWeights = 2 };

// What a forward does after the convolution: nothing, a ReLU (conv2d_relu), or adding the
// residual and a ReLU (conv2d_add_relu, Note [Convolution, residual add and ReLU]).
enum class Post : int64_t { None = 0, Relu = 1, AddRelu = 2 };

// Sizes and attributes of one convolution: x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW].
struct Geom {
  int64_t n, c, h, w, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, g;
};

// Reads the geometry from a call of direction `dir` (which tensor is which differs) of op A (the
// three convolutions share their attributes, EMBER_CONV_ATTRS in ops.def).
template <typename A>
bool read_geom(const ember_kernel_call* call, Dir dir, Geom* gm) {
  if (call->num_inputs < 2 || call->num_outputs < 1) return false;
  const ember_tensor* x = nullptr;
  const ember_tensor* w = nullptr;
  const ember_tensor* y = nullptr;
  if (dir == Dir::Forward) {
    x = &call->inputs[0], w = &call->inputs[1], y = &call->outputs[0];
  } else if (dir == Dir::BackwardData) {
    y = &call->inputs[0], w = &call->inputs[1], x = &call->outputs[0];
  } else {
    x = &call->inputs[0], y = &call->inputs[1], w = &call->outputs[0];
  }
  if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4) return false;
  const auto a = sdk::attrs<A>(call);
  *gm = {x->sizes[0], x->sizes[1], x->sizes[2], x->sizes[3], w->sizes[0], y->sizes[2],
         y->sizes[3], w->sizes[2], w->sizes[3], a.stride_h,  a.stride_w,  a.pad_h,
         a.pad_w,     a.dil_h,     a.dil_w,     a.groups};
  return gm->g >= 1 && gm->sh >= 1 && gm->sw >= 1 && gm->dh >= 1 && gm->dw >= 1 &&
         gm->c % gm->g == 0 && gm->o % gm->g == 0 && w->sizes[1] == gm->c / gm->g &&
         y->sizes[0] == gm->n && y->sizes[1] == gm->o;
}

// ---- own direct loops -------------------------------------------------------------------------

// floor(a / b) for b > 0.
inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Output positions [lo, hi) along one dim whose tap `k` lands inside an input of size `in`:
// 0 <= i*s - p + k*d < in.
inline void tap_range(int64_t out, int64_t in, int64_t s, int64_t p, int64_t k, int64_t d,
                      int64_t* lo, int64_t* hi) {
  const int64_t off = k * d - p;  // input index of output 0
  *lo = std::max<int64_t>(0, floor_div(-off + s - 1, s));
  *hi = std::min<int64_t>(out, floor_div(in - 1 - off, s) + 1);
  if (*hi < *lo) *hi = *lo;
}

// Note [Direct convolution loops]
// Each task owns whole output planes, so no two threads write one element: the forward owns
// y[n, o] (accumulating every (channel, tap) into a plane of Compute<T>), the input gradient
// owns dx[n, c] (scattering every (out channel, tap)), the weight gradient owns dw[o, c] (a dot
// product per tap over N and the output plane). The valid output range of each tap is computed
// once (tap_range), so the inner loops carry no bounds checks. Slow next to oneDNN, but exact,
// generic over dtypes and fast enough for gradcheck sizes and float64 work. The accumulator
// planes (one per thread) are allocated before the parallel region: an exception such as
// std::bad_alloc must not leave an OpenMP region (Note [One boundary for every plugin entry
// point]).

/** One accumulator plane of `plane` elements per thread of a region of `threads`. */
template <typename C>
struct ThreadPlanes {
  std::vector<C> data;
  int64_t plane;
  ThreadPlanes(int threads, int64_t plane_)
      : data(static_cast<size_t>(threads) * static_cast<size_t>(plane_)), plane(plane_) {}
  /** This thread's plane. */
  C* mine() { return data.data() + static_cast<int64_t>(omp_get_thread_num()) * plane; }
};

template <typename T>
void conv_forward_loop(const Geom& g, const T* x, const T* w, const T* b, bool relu, T* y) {
  using C = sdk::Compute<T>;
  const int64_t cg = g.c / g.g, og = g.o / g.g, plane = g.oh * g.ow;
  const bool parallel = go_parallel(g.n * g.o * plane * cg * g.kh * g.kw);
  const int threads = parallel ? omp_get_max_threads() : 1;
  ThreadPlanes<C> planes(threads, plane);
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
  for (int64_t t = 0; t < g.n * g.o; ++t) {
    const int64_t n = t / g.o, o = t % g.o, c0 = (o / og) * cg;
    C* acc = planes.mine();
    std::fill(acc, acc + plane, b ? static_cast<C>(b[o]) : C(0));
    for (int64_t ci = 0; ci < cg; ++ci) {
      const T* xp = x + ((n * g.c + c0 + ci) * g.h) * g.w;
      for (int64_t a = 0; a < g.kh; ++a) {
        int64_t ilo, ihi;
        tap_range(g.oh, g.h, g.sh, g.ph, a, g.dh, &ilo, &ihi);
        for (int64_t e = 0; e < g.kw; ++e) {
          int64_t jlo, jhi;
          tap_range(g.ow, g.w, g.sw, g.pw, e, g.dw, &jlo, &jhi);
          const C wv = static_cast<C>(w[((o * cg + ci) * g.kh + a) * g.kw + e]);
          for (int64_t i = ilo; i < ihi; ++i) {
            const T* xr = xp + (i * g.sh - g.ph + a * g.dh) * g.w + (e * g.dw - g.pw);
            C* yr = acc + i * g.ow;
            for (int64_t j = jlo; j < jhi; ++j) yr[j] += wv * static_cast<C>(xr[j * g.sw]);
          }
        }
      }
    }
    T* yp = y + t * plane;
    if (relu) {
      for (int64_t i = 0; i < plane; ++i) yp[i] = store<T>(acc[i] < C(0) ? C(0) : acc[i]);
    } else {
      for (int64_t i = 0; i < plane; ++i) yp[i] = store<T>(acc[i]);
    }
  }
}

template <typename T>
void conv_backward_data_loop(const Geom& g, const T* dy, const T* w, T* dx) {
  using C = sdk::Compute<T>;
  const int64_t cg = g.c / g.g, og = g.o / g.g, plane = g.h * g.w, oplane = g.oh * g.ow;
  const bool parallel = go_parallel(g.n * g.o * oplane * cg * g.kh * g.kw);
  const int threads = parallel ? omp_get_max_threads() : 1;
  ThreadPlanes<C> planes(threads, plane);
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
  for (int64_t t = 0; t < g.n * g.c; ++t) {
    const int64_t n = t / g.c, c = t % g.c, ci = c % cg, o0 = (c / cg) * og;
    C* acc = planes.mine();
    std::fill(acc, acc + plane, C(0));
    for (int64_t oi = 0; oi < og; ++oi) {
      const int64_t o = o0 + oi;
      const T* dyp = dy + (n * g.o + o) * oplane;
      for (int64_t a = 0; a < g.kh; ++a) {
        int64_t ilo, ihi;
        tap_range(g.oh, g.h, g.sh, g.ph, a, g.dh, &ilo, &ihi);
        for (int64_t e = 0; e < g.kw; ++e) {
          int64_t jlo, jhi;
          tap_range(g.ow, g.w, g.sw, g.pw, e, g.dw, &jlo, &jhi);
          const C wv = static_cast<C>(w[((o * cg + ci) * g.kh + a) * g.kw + e]);
          for (int64_t i = ilo; i < ihi; ++i) {
            C* xr = acc + (i * g.sh - g.ph + a * g.dh) * g.w + (e * g.dw - g.pw);
            const T* dyr = dyp + i * g.ow;
            for (int64_t j = jlo; j < jhi; ++j) xr[j * g.sw] += wv * static_cast<C>(dyr[j]);
          }
        }
      }
    }
    T* xp = dx + t * plane;
    for (int64_t i = 0; i < plane; ++i) xp[i] = store<T>(acc[i]);
  }
}

template <typename T>
void conv_backward_weight_loop(const Geom& g, const T* x, const T* dy, T* dw) {
  using C = sdk::Compute<T>;
  const int64_t cg = g.c / g.g, og = g.o / g.g, plane = g.h * g.w, oplane = g.oh * g.ow;
#pragma omp parallel for schedule(static) if (go_parallel(g.n * g.o * oplane * cg * g.kh * g.kw))
  for (int64_t t = 0; t < g.o * cg; ++t) {
    const int64_t o = t / cg, ci = t % cg, c = (o / og) * cg + ci;
    for (int64_t a = 0; a < g.kh; ++a) {
      int64_t ilo, ihi;
      tap_range(g.oh, g.h, g.sh, g.ph, a, g.dh, &ilo, &ihi);
      for (int64_t e = 0; e < g.kw; ++e) {
        int64_t jlo, jhi;
        tap_range(g.ow, g.w, g.sw, g.pw, e, g.dw, &jlo, &jhi);
        C s = 0;
        for (int64_t n = 0; n < g.n; ++n) {
          const T* xp = x + (n * g.c + c) * plane;
          const T* dyp = dy + (n * g.o + o) * oplane;
          for (int64_t i = ilo; i < ihi; ++i) {
            const T* xr = xp + (i * g.sh - g.ph + a * g.dh) * g.w + (e * g.dw - g.pw);
            const T* dyr = dyp + i * g.ow;
            for (int64_t j = jlo; j < jhi; ++j) {
              s += static_cast<C>(dyr[j]) * static_cast<C>(xr[j * g.sw]);
            }
          }
        }
        dw[(t * g.kh + a) * g.kw + e] = store<T>(s);
      }
    }
  }
}

// ---- oneDNN path ------------------------------------------------------------------------------

// Note [oneDNN convolution layouts]
// The primitives are created with format_tag::any, so oneDNN picks its preferred (blocked,
// e.g. nChw8c / OIhw8i8o on AVX2) layouts; user tensors are plain NCHW / OIHW (goihw with
// groups), reordered into scratch buffers on the way in and out when the chosen layout differs.
// Channels-last calls (Note [Channels-last kernels] in plugin_abi.h) hand NHWC images and OHWI
// weights, and the primitive is created with NHWC images (the weights still "any"): the user
// chose the layout for the convolution to run in, as PyTorch's channels-last convolutions do.
// A primitive plus its three reorders is cached per (direction, geometry, layout).
//
// The reordered weights each entry keeps (Note [Reordered weight cache] in weight_cache.cpp):
// layers of one geometry share an entry.
constexpr size_t kWeightSlots = 8;

struct ConvEntry {
  uint64_t hash = 0;
  std::array<int64_t, 18> key{};
  bool ok = false;  // false: oneDNN declined, use the own loop
  dnnl::primitive conv;
  // Per operand (0: x, 1: w, 2: y): the layout the primitive wants and, when it differs from
  // the plain user layout, the reorder user -> internal (inputs) or internal -> user (output).
  std::array<dnnl::memory::desc, 3> internal, user;
  std::array<dnnl::primitive, 3> reorder;
  std::array<bool, 3> needs_reorder{};
  // Post::AddRelu with a reordered output: the residual's reorder user -> internal layout.
  dnnl::primitive residual_reorder;
  WeightCache weights{kWeightSlots};  // Note [Reordered weight cache]
};

struct ConvCache {
  std::mutex mutex;
  std::vector<std::shared_ptr<ConvEntry>> entries;  // oldest first
};

ConvCache& conv_cache() {
  static ConvCache* c = new ConvCache();  // never destroyed: kernels may run at exit
  return *c;
}

constexpr size_t kConvCacheCapacity = 128;

// The key of an entry; the thread count, as every cached primitive's (Note [Primitives are made
// for a thread count] in matmul.cpp).
std::array<int64_t, 18> make_key(Dir dir, const Geom& g, bool bias, bool cl, Post post) {
  return {(static_cast<int64_t>(dir) * 2 + (cl ? 1 : 0)) * 3 + static_cast<int64_t>(post),
          dnnl_threads(),
          g.n,
          g.c,
          g.h,
          g.w,
          g.o,
          g.oh,
          g.ow,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.ph,
          g.pw,
          g.dh,
          g.dw,
          g.g * 2 + (bias ? 1 : 0)};
}

uint64_t hash_of(const std::array<int64_t, 18>& key) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return h;
}

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
constexpr auto kF32 = dnnl::memory::data_type::f32;

// Note [1x1 convolutions on AVX2]
// For a channels-last 1x1 forward convolution oneDNN 3.2 lists its brgemm kernel
// (brgconv_1x1:avx2) first, but on AVX2 CPUs its plain 1x1 kernel (jit_1x1:avx2), which takes
// NHWC images too, was faster on every 1x1 layer of ResNet-50 at batch 1 (Zen 3, one thread,
// alternating runs: 5-35%, e.g. 256->64 at 56x56 1.66 vs 1.86 ms, 1024->256 at 14x14 1.22 vs
// 1.59 ms) and on most at batch 4, strided ones included; inside a whole ResNet-50 run the 1x1
// layers' time went down by a median 11% (7 alternating runs), where onnxruntime's NCHWc
// kernels had been ahead. So there the 1x1 kernel is taken when oneDNN offers it. With AVX-512
// the brgemm kernels are oneDNN's own best and stay; 3x3 layers keep brgconv, which was ahead
// of jit:avx2 on NHWC at 56x56 and 7x7 by 2x.

/** True when oneDNN's best instruction set here is AVX2 (no AVX-512). */
bool avx2_only() {
  static const bool only = [] {
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    return isa == dnnl::cpu_isa::avx2 || isa == dnnl::cpu_isa::avx2_vnni ||
           isa == dnnl::cpu_isa::avx2_vnni_2;
  }();
  return only;
}

/** Moves `pd` on to its first implementation named `prefix...` with the same image layouts;
 *  false (and `pd` spent) when there is none. */
bool next_impl_named(dnnl::convolution_forward::primitive_desc& pd, std::string_view prefix) {
  const dnnl::memory::desc src = pd.src_desc(), dst = pd.dst_desc();
  do {
    if (std::string_view(pd.impl_info_str()).substr(0, prefix.size()) == prefix &&
        pd.src_desc() == src && pd.dst_desc() == dst) {
      return true;
    }
  } while (pd.next_impl());
  return false;
}

// Builds the primitive and reorders for one geometry and layout (cl: channels-last operands),
// the forward with the post-ops `post` asks for (the residual as a sum post-op: the destination
// holds it before the convolution); ok = false when oneDNN declines it.
std::shared_ptr<ConvEntry> build_entry(Dir dir, const Geom& g, bool bias, bool cl, Post post) {
  auto e = std::make_shared<ConvEntry>();
  const dnnl::engine& eng = dnnl_engine();
  const dims xd = {g.n, g.c, g.h, g.w}, yd = {g.n, g.o, g.oh, g.ow};
  const dims wd =
      g.g > 1 ? dims{g.g, g.o / g.g, g.c / g.g, g.kh, g.kw} : dims{g.o, g.c / g.g, g.kh, g.kw};
  const tag wtag = cl ? (g.g > 1 ? tag::gohwi : tag::ohwi) : (g.g > 1 ? tag::goihw : tag::oihw);
  const tag image = cl ? tag::nhwc : tag::nchw;
  e->user = {dnnl::memory::desc(xd, kF32, image), dnnl::memory::desc(wd, kF32, wtag),
             dnnl::memory::desc(yd, kF32, image)};
  // Channels-last images stay channels-last inside (Note [oneDNN convolution layouts]).
  const tag inside = cl ? tag::nhwc : tag::any;
  const dnnl::memory::desc xa(xd, kF32, inside), wa(wd, kF32, tag::any), ya(yd, kF32, inside);
  // oneDNN's dilation counts the gaps (PyTorch's minus 1); the right padding is whatever makes
  // the sizes consistent, which oneDNN accepts down to 1 - stride.
  const dims strides = {g.sh, g.sw}, dil = {g.dh - 1, g.dw - 1}, pad_l = {g.ph, g.pw};
  const dims pad_r = {(g.oh - 1) * g.sh + (g.kh - 1) * g.dh + 1 - g.h - g.ph,
                      (g.ow - 1) * g.sw + (g.kw - 1) * g.dw + 1 - g.w - g.pw};
  if (pad_r[0] + g.sh <= 0 || pad_r[1] + g.sw <= 0) return e;
  try {
    constexpr auto direct = dnnl::algorithm::convolution_direct;
    // A training forward also for the fused (inference-only) convolution: with
    // forward_inference oneDNN picks kernels that want channels-last images, so row-major
    // calls paid a reorder each way (ResNet-50, batch 1, 2 threads: 42.8 vs 41.5 ms).
    const auto training = dnnl::prop_kind::forward_training;
    dnnl::primitive_attr attr = dnnl_attr();
    if (post != Post::None) {
      dnnl::post_ops ops;
      if (post == Post::AddRelu) ops.append_sum(1.f);
      ops.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
      attr.set_post_ops(ops);
    }
    const auto make_forward = [&] {
      return bias ? dnnl::convolution_forward::primitive_desc(
                        eng, training, direct, xa, wa, dnnl::memory::desc({g.o}, kF32, tag::x), ya,
                        strides, dil, pad_l, pad_r, attr)
                  : dnnl::convolution_forward::primitive_desc(eng, training, direct, xa, wa, ya,
                                                              strides, dil, pad_l, pad_r, attr);
    };
    dnnl::convolution_forward::primitive_desc fpd = make_forward();
    if (dir == Dir::Forward && cl && g.kh == 1 && g.kw == 1 && avx2_only() &&
        !next_impl_named(fpd, "jit_1x1")) {
      fpd = make_forward();  // no such implementation: oneDNN's first choice after all
    }
    if (dir == Dir::Forward) {
      e->internal = {fpd.src_desc(), fpd.weights_desc(), fpd.dst_desc()};
      e->conv = dnnl::convolution_forward(fpd);
    } else if (dir == Dir::BackwardData) {
      const dnnl::convolution_backward_data::primitive_desc bpd(
          eng, direct, xa, wa, ya, strides, dil, pad_l, pad_r, fpd, dnnl_attr());
      e->internal = {bpd.diff_src_desc(), bpd.weights_desc(), bpd.diff_dst_desc()};
      e->conv = dnnl::convolution_backward_data(bpd);
    } else {
      const dnnl::convolution_backward_weights::primitive_desc bpd(
          eng, direct, xa, wa, ya, strides, dil, pad_l, pad_r, fpd, dnnl_attr());
      e->internal = {bpd.src_desc(), bpd.diff_weights_desc(), bpd.diff_dst_desc()};
      e->conv = dnnl::convolution_backward_weights(bpd);
    }
  } catch (const dnnl::error& err) {
    if (err.status != dnnl_unimplemented && err.status != dnnl_invalid_arguments) throw;
    return e;
  }
  // Which operand is the output: y forward, x backward-data, w backward-weights.
  const int out = dir == Dir::Forward ? 2 : dir == Dir::BackwardData ? 0 : 1;
  for (int i = 0; i < 3; ++i) {
    e->needs_reorder[i] = e->internal[i] != e->user[i];
    if (!e->needs_reorder[i]) continue;
    const auto& from = i == out ? e->internal[i] : e->user[i];
    const auto& to = i == out ? e->user[i] : e->internal[i];
    e->reorder[i] = dnnl::reorder(dnnl::reorder::primitive_desc(eng, from, eng, to, dnnl_attr()));
  }
  if (post == Post::AddRelu && e->needs_reorder[2]) {
    e->residual_reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(eng, e->user[2], eng, e->internal[2], dnnl_attr()));
  }
  e->ok = true;
  return e;
}

std::shared_ptr<ConvEntry> find_entry(Dir dir, const Geom& g, bool bias, bool cl, Post post) {
  const auto key = make_key(dir, g, bias, cl, post);
  const uint64_t h = hash_of(key);
  ConvCache& c = conv_cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.entries.rbegin(); it != c.entries.rend(); ++it) {
      if ((*it)->hash == h && (*it)->key == key) return *it;
    }
  }
  auto e = build_entry(dir, g, bias, cl, post);  // outside the lock (Note [oneDNN primitive cache])
  e->hash = h;
  e->key = key;
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.entries.size() >= kConvCacheCapacity) c.entries.erase(c.entries.begin());
  c.entries.push_back(e);
  return e;
}

// Note [Half-type convolutions in float32]
// A bfloat16 or float16 convolution runs the float32 primitive: its operands are widened
// exactly into float32 scratch, every product is accumulated in float32 and the result is
// rounded once to nearest even, as a native half-type kernel does it (its accumulator is float32
// too). CPUs without half-type arithmetic (AVX2 here) have no faster way, and oneDNN 2.6 offered
// no bf16 convolution on them: the direct loops this replaces made a bf16 CNN training step 6x
// slower than float32. The conversions are own loops rather than converting reorders, which
// oneDNN 2.6 ran through its generic reorder at ~30x the cost of the convolution. CPUs with
// AMX or AVX512-BF16 would be faster still with native bf16 primitives; that is not done.

/** Widens n elements of half type `dtype` at src into float32 at dst (toward = false), or
 *  rounds float32 at src into the half type at dst (toward = true). */
void convert_half(int32_t dtype, const void* src, void* dst, int64_t n, bool toward) {
  sdk::visit_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (sdk::kIsHalf<T>) {
#pragma omp parallel for schedule(static) if (go_parallel(n))
      for (int64_t i = 0; i < n; ++i) {
        if (toward) {
          static_cast<T*>(dst)[i] = T(static_cast<const float*>(src)[i]);
        } else {
          static_cast<float*>(dst)[i] = static_cast<float>(static_cast<const T*>(src)[i]);
        }
      }
    }
  });
}

// Runs one direction through oneDNN (a forward with the post-ops of `post`, `residual` its
// residual for Post::AddRelu, in the output's layout); false when oneDNN declined the geometry.
// Half types run in float32 (Note [Half-type convolutions in float32]).
bool dnnl_conv(const ember_kernel_call* call, Dir dir, const Geom& g, bool cl, Post post,
               const ember_tensor* residual) {
  const bool bias = dir == Dir::Forward && call->num_inputs >= 3;
  const auto e = find_entry(dir, g, bias, cl, post);
  if (!e->ok) return false;
  // The user pointers in the order (x, w, y).
  void* user[3];
  if (dir == Dir::Forward) {
    user[0] = call->inputs[0].data, user[1] = call->inputs[1].data, user[2] = call->outputs[0].data;
  } else if (dir == Dir::BackwardData) {
    user[2] = call->inputs[0].data, user[1] = call->inputs[1].data, user[0] = call->outputs[0].data;
  } else {
    user[0] = call->inputs[0].data, user[2] = call->inputs[1].data, user[1] = call->outputs[0].data;
  }
  const int out = dir == Dir::Forward ? 2 : dir == Dir::BackwardData ? 0 : 1;
  const dnnl::engine& eng = dnnl_engine();
  const int32_t dtype = call->outputs[0].dtype;
  ScratchGuard scratch[3] = {{call}, {call}, {call}};
  ScratchGuard wide[3] = {{call}, {call}, {call}};  // float32 copies of half-type operands
  // Operand i in the plain float32 layout: the user tensor, or for a half type its widened
  // copy (an output's copy is narrowed after the convolution).
  const auto user_mem = [&](int i) {
    if (dtype == EMBER_F32) return dnnl::memory(e->user[i], eng, user[i]);
    if (!wide[i].alloc(e->user[i].get_size())) throw std::bad_alloc();
    const int64_t n = static_cast<int64_t>(e->user[i].get_size() / sizeof(float));
    if (i != out) convert_half(dtype, user[i], wide[i].ptr, n, false);
    return dnnl::memory(e->user[i], eng, wide[i].ptr);
  };
  dnnl::memory mem[3];
  std::shared_ptr<void> weight;  // the cached reordered weight in use, if any
  for (int i = 0; i < 3; ++i) {
    if (!e->needs_reorder[i]) {
      mem[i] = user_mem(i);
      continue;
    }
    const ember_tensor_identity* id =
        i == 1 && dir != Dir::BackwardWeights ? input_identity(call, 1) : nullptr;
    if (id) {
      weight = e->weights.get(*id, user[1], e->internal[1].get_size(), [&](void* to) {
        dnnl_execute(
            call, e->reorder[1],
            {{DNNL_ARG_FROM, user_mem(1)}, {DNNL_ARG_TO, dnnl::memory(e->internal[1], eng, to)}});
      });
      if (weight) {
        mem[1] = dnnl::memory(e->internal[1], eng, weight.get());
        continue;
      }
    }
    if (!scratch[i].alloc(e->internal[i].get_size())) throw std::bad_alloc();
    mem[i] = dnnl::memory(e->internal[i], eng, scratch[i].ptr);
    if (i != out) {
      dnnl_execute(call, e->reorder[i], {{DNNL_ARG_FROM, user_mem(i)}, {DNNL_ARG_TO, mem[i]}});
    }
  }
  if (post == Post::AddRelu) {
    // The sum post-op adds what the destination holds: the residual, in the user layout (widened
    // for a half type), copied or reordered into it.
    ScratchGuard wide_residual{call};
    const void* r = residual->data;
    if (dtype != EMBER_F32) {
      if (!wide_residual.alloc(e->user[2].get_size())) throw std::bad_alloc();
      convert_half(dtype, r, wide_residual.ptr,
                   static_cast<int64_t>(e->user[2].get_size() / sizeof(float)), false);
      r = wide_residual.ptr;
    }
    if (e->needs_reorder[2]) {
      dnnl_execute(call, e->residual_reorder,
                   {{DNNL_ARG_FROM, dnnl::memory(e->user[2], eng, const_cast<void*>(r))},
                    {DNNL_ARG_TO, mem[2]}});
    } else if (mem[2].get_data_handle() != r) {
      std::memcpy(mem[2].get_data_handle(), r, e->user[2].get_size());
    }
  }
  if (dir == Dir::Forward) {
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
    std::vector<float> wide_bias;
    if (bias) {
      void* b = const_cast<void*>(call->inputs[2].data);
      if (dtype != EMBER_F32) {
        wide_bias.resize(static_cast<size_t>(g.o));
        convert_half(dtype, b, wide_bias.data(), g.o, false);
        b = wide_bias.data();
      }
      args[DNNL_ARG_BIAS] = dnnl::memory(dnnl::memory::desc({g.o}, kF32, tag::x), eng, b);
    }
    dnnl_execute(call, e->conv, std::move(args));
  } else if (dir == Dir::BackwardData) {
    dnnl_execute(
        call, e->conv,
        {{DNNL_ARG_DIFF_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DIFF_DST, mem[2]}});
  } else {
    dnnl_execute(
        call, e->conv,
        {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_DIFF_WEIGHTS, mem[1]}, {DNNL_ARG_DIFF_DST, mem[2]}});
  }
  if (e->needs_reorder[out]) {
    dnnl_execute(call, e->reorder[out], {{DNNL_ARG_FROM, mem[out]}, {DNNL_ARG_TO, user_mem(out)}});
  }
  if (dtype != EMBER_F32) {
    convert_half(dtype, wide[out].ptr, user[out], static_cast<int64_t>(wide[out].bytes / 4), true);
  }
  return true;
}

int32_t run_conv_call(const ember_kernel_call* call, Dir dir, const char* name, const Geom& g,
                      bool relu, const ember_tensor* residual = nullptr);

// A channels-last call that oneDNN does not run (float64, or a geometry it declines): the own
// row-major loops on row-major scratch copies of the 4-d operands (made by this plugin's copy
// kernel), the output copied back.
int32_t run_rows_of_channels_last(const ember_kernel_call* call, Dir dir, const char* name,
                                  const Geom& g, int nin, bool relu) {
  // The copy kernel on one (from, to) pair, with the call's host and error buffer.
  const auto copy_into = [&](const ember_tensor& from, const ember_tensor& to) {
    ember_kernel_call c = *call;
    c.num_inputs = 1, c.inputs = &from, c.num_outputs = 1, c.outputs = &to;
    c.num_ints = 0, c.ints = nullptr, c.num_floats = 0, c.floats = nullptr;
    c.input_ids = nullptr, c.output_ids = nullptr;
    return cpu::copy(&c);
  };
  constexpr int kMax = 4;  // at most x, w, bias and the output
  ember_tensor in[kMax], out = call->outputs[0];
  std::copy(call->inputs, call->inputs + nin, in);
  int64_t strides[kMax][4];
  ScratchGuard bufs[kMax] = {{call}, {call}, {call}, {call}};
  for (int i = 0; i <= nin; ++i) {
    ember_tensor& t = i < nin ? in[i] : out;
    if (t.ndim != 4) continue;
    const ember_tensor user = t;
    strides[i][3] = 1, strides[i][2] = t.sizes[3], strides[i][1] = t.sizes[2] * t.sizes[3];
    strides[i][0] = t.sizes[1] * strides[i][1];
    if (!bufs[i].alloc(static_cast<size_t>(sdk::numel(t)) * sdk::itemsize(t.dtype))) {
      return sdk::fail(call, EMBER_ERR_OUT_OF_MEMORY, "%s: no scratch memory", name);
    }
    t.strides = strides[i];
    t.data = bufs[i].ptr;
    if (i < nin) {
      if (const int32_t st = copy_into(user, t); st != EMBER_OK) return st;
    }
  }
  ember_kernel_call rc = *call;
  rc.inputs = in;
  rc.outputs = &out;
  const int32_t status = run_conv_call(&rc, dir, name, g, relu);
  return status == EMBER_OK ? copy_into(out, call->outputs[0]) : status;
}

// Convolution op A in direction `dir`.
template <typename A>
int32_t run_conv(const ember_kernel_call* call, Dir dir) {
  const char* name = ops::kInfo[A::kOp].name;
  Geom g;
  if (!read_geom<A>(call, dir, &g)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: inconsistent operand shapes or attributes",
                     name);
  }
  return run_conv_call(call, dir, name, g, std::is_same_v<A, attrs::conv2d_relu>);
}

// y = max(y + r, 0) over n elements in the compute type (a NaN stays NaN): conv2d_add_relu's
// tail where the convolution ran without it.
void add_relu(int32_t dtype, void* y, const void* r, int64_t n) {
  sdk::visit_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_floating_point_v<T> || sdk::kIsHalf<T>) {
      using C = sdk::Compute<T>;
      T* py = static_cast<T*>(y);
      const T* pr = static_cast<const T*>(r);
#pragma omp parallel for schedule(static) if (go_parallel(n))
      for (int64_t i = 0; i < n; ++i) {
        const C v = static_cast<C>(py[i]) + static_cast<C>(pr[i]);
        py[i] = store<T>(v < C(0) ? C(0) : v);
      }
    }
  });
}

// A convolution call of direction `dir` whose geometry was read (a forward rectified when
// `relu`; with `residual`, conv2d_add_relu's: relu(conv + residual), the residual in the
// output's layout).
int32_t run_conv_call(const ember_kernel_call* call, Dir dir, const char* name, const Geom& g,
                      bool relu, const ember_tensor* residual) {
  const int32_t dtype = call->outputs[0].dtype;
  const int nin = dir == Dir::Forward ? std::min(call->num_inputs, 3) : 2;
  // The call's layout: every operand row-major, or every 4-d one channels-last (Note
  // [Channels-last kernels] in plugin_abi.h). Operands dense in both orders fit either.
  bool all_rows = true, all_cl = true;
  for (int i = 0; i <= nin; ++i) {
    const ember_tensor& t = i < nin ? call->inputs[i] : call->outputs[0];
    if (t.dtype != dtype) {
      return sdk::fail(call, EMBER_ERR_INVALID, "%s: operand %d is of dtype %d, expected %d", name,
                       i, t.dtype, dtype);
    }
    all_rows = all_rows && sdk::is_contiguous(t);
    all_cl = all_cl && (t.ndim == 4 ? sdk::is_channels_last(t) : sdk::is_contiguous(t));
  }
  if (!all_rows && !all_cl) {
    return sdk::fail(call, EMBER_ERR_INVALID,
                     "%s: operands must all be contiguous or all (4-d ones) channels-last", name);
  }
  const bool cl = !all_rows;
  const ember_tensor& y = call->outputs[0];
  if (residual != nullptr) {
    bool same = residual->dtype == dtype && residual->ndim == 4;
    for (int d = 0; same && d < 4; ++d)
      same = residual->sizes[d] == y.sizes[d] &&
             (y.sizes[d] == 1 || residual->strides[d] == y.strides[d]);
    if (!same) {
      return sdk::fail(call, EMBER_ERR_INVALID,
                       "%s: the residual must have the output's dtype, shape and layout", name);
    }
  }
  if (sdk::numel(y) == 0) return EMBER_OK;
  const Post post = residual ? Post::AddRelu : relu ? Post::Relu : Post::None;
  // A failure of oneDNN is the vendor library's (EMBER_ERR_DEVICE); anything else, running out
  // of scratch memory included (std::bad_alloc), reaches the kernel's guard.
  try {
    const bool dnnl_type = dtype == EMBER_F32 || dtype == EMBER_BF16 || dtype == EMBER_F16;
    if (dnnl_type && dnnl_conv(call, dir, g, cl, post, residual)) return EMBER_OK;
  } catch (const dnnl::error& e) {
    return sdk::fail(call, EMBER_ERR_DEVICE, "oneDNN %s failed: %s (status %d)", name, e.what(),
                     static_cast<int>(e.status));
  }
  if (residual != nullptr) {  // the convolution alone, then the residual and the ReLU
    const int32_t st = run_conv_call(call, dir, name, g, false);
    if (st == EMBER_OK) add_relu(dtype, y.data, residual->data, sdk::numel(y));
    return st;
  }
  if (cl) return run_rows_of_channels_last(call, dir, name, g, nin, relu);
  bool floating = false;
  const bool known = sdk::visit_dtype(dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, sdk::Half> ||
                  std::is_same_v<T, sdk::BFloat16>) {
      floating = true;
      const T* a = sdk::data<const T>(call->inputs[0]);
      const T* b = sdk::data<const T>(call->inputs[1]);
      T* out = sdk::data<T>(call->outputs[0]);
      if (dir == Dir::Forward) {
        const T* bias = call->num_inputs >= 3 ? sdk::data<const T>(call->inputs[2]) : nullptr;
        conv_forward_loop<T>(g, a, b, bias, relu, out);
      } else if (dir == Dir::BackwardData) {
        conv_backward_data_loop<T>(g, a, b, out);
      } else {
        conv_backward_weight_loop<T>(g, a, b, out);
      }
    }
  });
  if (!known || !floating) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: dtype %d is not supported", name, dtype);
  }
  return EMBER_OK;
}

}  // namespace

EMBER_KERNEL(conv2d) {
  return run_conv<attrs::conv2d>(call, Dir::Forward);
}

EMBER_KERNEL(conv2d_relu) {
  return run_conv<attrs::conv2d_relu>(call, Dir::Forward);
}

// conv2d_add_relu: {x, w, residual, optional b}, run as the forward of {x, w, optional b} (the
// weight's identity keeps its place) with the residual beside it.
EMBER_KERNEL(conv2d_add_relu) {
  const char* name = "conv2d_add_relu";
  if (call->num_inputs < 3 || call->num_inputs > 4 || call->num_outputs != 1) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: %d inputs and %d outputs", name,
                     call->num_inputs, call->num_outputs);
  }
  ember_tensor in[3] = {call->inputs[0], call->inputs[1], {}};
  if (call->num_inputs == 4) in[2] = call->inputs[3];
  ember_kernel_call rc = *call;
  rc.inputs = in;
  rc.num_inputs = call->num_inputs - 1;
  Geom g;
  if (!read_geom<attrs::conv2d_add_relu>(&rc, Dir::Forward, &g)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "%s: inconsistent operand shapes or attributes",
                     name);
  }
  return run_conv_call(&rc, Dir::Forward, name, g, true, &call->inputs[2]);
}

EMBER_KERNEL(conv2d_backward_input) {
  return run_conv<attrs::conv2d_backward_input>(call, Dir::BackwardData);
}

EMBER_KERNEL(conv2d_backward_weight) {
  return run_conv<attrs::conv2d_backward_weight>(call, Dir::BackwardWeights);
}

}  // namespace ember::cpu
