// CPU matmul and fused_linear: float32 (and bfloat16/float16 where this CPU's oneDNN implements
// them) through oneDNN's matmul primitive reading the operands in place from their strides,
// fused_linear's bias as the primitive's bias and its activation as a post-op; float64, the
// integer types and whatever oneDNN declines go through an own blocked loop (accumulating in
// double for float64, in 64-bit integers for integers, in float for the half types) and, for
// fused_linear, a pass adding the bias and applying the activation. Also home of the plugin's
// one oneDNN engine, stream and primitive cache, which softmax.cpp shares.
#include <oneapi/dnnl/dnnl.hpp>

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/cpu/allocator.h"
#include "backends/cpu/loops.h"
#include "backends/cpu/ops/ops.h"

namespace ember::cpu {

// ---- engine, stream, primitive cache ----------------------------------------------------------

dnnl::engine& dnnl_engine() {
  // Never destroyed: kernels may run at exit, as the caches below.
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Note [oneDNN from many threads]
// oneDNN may be built with the library scratchpad shared by all primitives (Debian's 2.6 was),
// which may
// then neither run concurrently nor move between threads: one cached primitive run from two
// user threads at once corrupted that scratchpad and hung convolution backward. So every
// primitive is made with a user-managed scratchpad (dnnl_attr()), dnnl_execute() hands each
// execution its own from scratch memory, and each thread has its own stream.
dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream stream(dnnl_engine());
  return stream;
}

dnnl::primitive_attr dnnl_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Note [CPU scratch memory]
// Kernels' temporaries (oneDNN scratchpads, operands reordered into blocked layouts) come from
// this plugin's caching allocator rather than the host's scratch_alloc: the host's is plain
// aligned_alloc, and a block of megabytes that glibc maps fresh (or trims and maps again) on
// every call pays a page fault per 4 KiB (Note [CPU caching allocator]): for the 6 MiB
// operands of a mid-sized convolution that was a fifth of its time. Scratch blocks are not
// counted as allocated (tensor) memory, only as reserved.
void* scratch_alloc(const ember_kernel_call*, size_t bytes) {
  return cached_alloc(bytes, /*scratch=*/true);
}
void scratch_free(const ember_kernel_call*, void* ptr, size_t bytes) {
  cached_free(ptr, bytes, /*scratch=*/true);
}

std::optional<dnnl::memory> dnnl_scratch_memory(const_dnnl_memory_desc_t md, ScratchGuard& buf) {
  const size_t bytes = md != nullptr ? dnnl_memory_desc_get_size(md) : 0;
  if (bytes == 0) return std::nullopt;
  if (!buf.alloc(bytes)) throw std::bad_alloc();
  dnnl_memory_t mem = nullptr;
  dnnl::error::wrap_c_api(dnnl_memory_create(&mem, md, dnnl_engine().get(), buf.ptr),
                          "could not create a scratch memory");
  return dnnl::memory(mem);
}

void dnnl_execute(const ember_kernel_call* call, const dnnl::primitive& prim,
                  std::unordered_map<int, dnnl::memory> args) {
  // The primitive's own scratchpad description, read through the C API: the C++ one would
  // clone the descriptor on every call.
  ScratchGuard scratch{call};
  if (auto pad = dnnl_scratch_memory(
          dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0),
          scratch)) {
    args[DNNL_ARG_SCRATCHPAD] = *pad;
  }
  dnnl::stream& stream = dnnl_stream();
  prim.execute(stream, args);
  stream.wait();
}

// Note [Primitives are made for a thread count]
// A oneDNN primitive fixes its thread count when it is made: many implementations split their
// work for omp_get_max_threads() then and open `parallel num_threads(n)` with that n on every
// run. A primitive kept from before set_num_threads(1) would still run on n threads, and one kept
// from the parent in a forked child would wait forever for the parent's pool, which the child
// does not have (Note [Forked children run on one thread] in plugin.cpp). So every cached
// primitive (here, the packed products and the convolutions' entries) is keyed by the calling
// thread's count too, and a thread with another count makes its own.
int32_t dnnl_threads() {
  return omp_get_max_threads();
}

namespace {

// Note [oneDNN primitive cache]
// oneDNN keeps its own cache of compiled kernels, but reaching it still means building an op
// descriptor and a primitive descriptor (which walks the implementation list) on every call:
// microseconds per matmul. Kernels here key their primitive by everything that shapes it
// (op, dtype, dims and strides of every operand) and keep the ready primitive. The cache is a
// small FIFO (kCacheCapacity entries) behind a mutex: lookups compare a hash first and are a
// short scan; a miss builds the primitive outside the lock, so two threads may build the same
// one and the second put is dropped. An empty handle is cached too: it records that oneDNN has
// no implementation (bf16 on a CPU without AVX-512), so the kernel goes to its own loop at once.
// The calling thread's OpenMP thread count is part of every key (Note [Primitives are made for
// a thread count]).
constexpr size_t kCacheCapacity = 256;

struct CacheEntry {
  uint64_t hash;
  int32_t threads;
  std::vector<int64_t> key;
  dnnl::primitive prim;
};

struct PrimitiveCache {
  std::mutex mutex;
  std::vector<CacheEntry> entries;  // oldest first
};

PrimitiveCache& cache() {
  static PrimitiveCache* c = new PrimitiveCache();  // never destroyed: kernels may run at exit
  return *c;
}

uint64_t hash_key(const int64_t* key, int32_t n, int32_t threads) {
  uint64_t h = (1469598103934665603ull ^ static_cast<uint64_t>(threads)) * 1099511628211ull;
  for (int32_t i = 0; i < n; ++i) h = (h ^ static_cast<uint64_t>(key[i])) * 1099511628211ull;
  return h;
}

// Whether entry `e` (a CacheEntry, or a PackedEntry of the packed products) is `key` for
// `threads` threads, hash `h`.
template <typename Entry>
bool same_key(const Entry& e, uint64_t h, const int64_t* key, int32_t n, int32_t threads) {
  return e.hash == h && e.threads == threads && e.key.size() == static_cast<size_t>(n) &&
         std::memcmp(e.key.data(), key, sizeof(int64_t) * static_cast<size_t>(n)) == 0;
}

}  // namespace

bool dnnl_cache_find(const int64_t* key, int32_t n, dnnl::primitive* out) {
  const int32_t threads = dnnl_threads();
  const uint64_t h = hash_key(key, n, threads);
  PrimitiveCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.entries.rbegin(); it != c.entries.rend(); ++it) {
    if (same_key(*it, h, key, n, threads)) {
      *out = it->prim;
      return true;
    }
  }
  return false;
}

void dnnl_cache_put(const int64_t* key, int32_t n, const dnnl::primitive& prim) {
  const int32_t threads = dnnl_threads();
  const uint64_t h = hash_key(key, n, threads);
  PrimitiveCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const CacheEntry& e : c.entries) {
    if (same_key(e, h, key, n, threads)) return;
  }
  if (c.entries.size() >= kCacheCapacity) c.entries.erase(c.entries.begin());
  c.entries.push_back({h, threads, std::vector<int64_t>(key, key + n), prim});
}

namespace {

// ---- geometry ---------------------------------------------------------------------------------

constexpr int kMaxBatch = DNNL_MAX_NDIMS - 2;  // batch dims oneDNN takes

// The shared geometry (plugin SDK), plus whether oneDNN can take that many batch dims.
struct Geometry : sdk::MatmulGeometry {
  bool too_many_dims = false;
};

Geometry make_geometry(const ember_tensor& a, const ember_tensor& b, const ember_tensor& c) {
  Geometry g;
  static_cast<sdk::MatmulGeometry&>(g) = sdk::matmul_geometry(a, b, c);
  g.too_many_dims = g.nb > kMaxBatch;
  return g;
}

using sdk::batch_offsets;

// ---- own blocked loop -------------------------------------------------------------------------

template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double,
                               std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

template <typename T>
inline Acc<T> to_acc(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));  // wraps like two's complement
  } else {
    return static_cast<Acc<T>>(static_cast<sdk::Compute<T>>(v));
  }
}

template <typename T>
inline T from_acc(Acc<T> v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<int64_t>(v));
  } else if constexpr (std::is_same_v<T, sdk::Half> || std::is_same_v<T, sdk::BFloat16>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Note [Blocked matmul loop]
// Work splits into tasks of (batch entry, kMB rows of C, kNB columns of C). A task keeps its
// kMB x kNB accumulators on the stack and walks K in steps of kKB, first packing the kKB x kNB
// panel of B (converted to the accumulator type) so the innermost loop is a unit-stride AXPY
// the compiler vectorizes, whatever B's strides are. Packing costs 1/kMB of the arithmetic.
constexpr int64_t kMB = 16, kNB = 128, kKB = 64;

template <typename T>
void blocked_matmul(const Geometry& g, const T* a, const T* b, T* c) {
  using A = Acc<T>;
  const int64_t mblocks = (g.m + kMB - 1) / kMB, nblocks = (g.n + kNB - 1) / kNB;
  const int64_t tasks = g.batch_count * mblocks * nblocks;
  const bool parallel = tasks > 1 && go_parallel(g.batch_count * g.m * g.n * g.k);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t nbk = t % nblocks, mbk = (t / nblocks) % mblocks, bi = t / (nblocks * mblocks);
    int64_t oa, ob, oc;
    batch_offsets(g, bi, &oa, &ob, &oc);
    const int64_t m0 = mbk * kMB, m1 = std::min(g.m, m0 + kMB);
    const int64_t n0 = nbk * kNB, nn = std::min(kNB, g.n - n0);
    A acc[kMB * kNB];
    A panel[kKB * kNB];
    std::fill(acc, acc + kMB * kNB, A(0));
    for (int64_t k0 = 0; k0 < g.k; k0 += kKB) {
      const int64_t kk = std::min(kKB, g.k - k0);
      for (int64_t p = 0; p < kk; ++p) {
        const T* src = b + ob + (k0 + p) * g.bk + n0 * g.bn;
        A* dst = panel + p * kNB;
        if (g.bn == 1) {
          for (int64_t j = 0; j < nn; ++j) dst[j] = to_acc(src[j]);
        } else {
          for (int64_t j = 0; j < nn; ++j) dst[j] = to_acc(src[j * g.bn]);
        }
      }
      for (int64_t i = m0; i < m1; ++i) {
        A* row = acc + (i - m0) * kNB;
        const T* arow = a + oa + i * g.am + k0 * g.ak;
        for (int64_t p = 0; p < kk; ++p) {
          const A av = to_acc(arow[p * g.ak]);
          const A* bp = panel + p * kNB;
          for (int64_t j = 0; j < nn; ++j) row[j] += av * bp[j];
        }
      }
    }
    for (int64_t i = m0; i < m1; ++i) {
      T* dst = c + oc + i * g.cm + n0 * g.cn;
      const A* row = acc + (i - m0) * kNB;
      for (int64_t j = 0; j < nn; ++j) dst[j * g.cn] = from_acc<T>(row[j]);
    }
  }
}

// ---- oneDNN path ------------------------------------------------------------------------------

// Note [oneDNN matmul operands]
// oneDNN's GEMM-based matmul reads an operand in place when one of its two innermost strides is
// 1, the other is at least the extent it steps over (a valid leading dimension), and no stride
// is 0. Size-1 dims get normalized strides, so a row or column of a bigger matrix still
// qualifies; broadcast batch dims (stride 0) become size-1 dims, which oneDNN broadcasts
// itself. Anything else (a slice with a step in both inner dims, an expanded matrix) is packed
// into a contiguous scratch buffer first. A batch dim broadcast in both A and B goes to the own
// loop (oneDNN wants each output batch dim to come from one operand).
struct Operand {
  int nd;
  dnnl::memory::dims dims, strides;
  const void* data;
  bool pack = false;
  bool pad_rows = false;  // its stored rows are copied to a padded leading dimension
  int64_t stored_ld = 0;  // the leading dimension in the tensor, when pad_rows
};

// Note [Power-of-two leading dimensions]
// oneDNN's AVX2 GEMM (measured with 2.6) streams a row-major B along its rows and a transposed A
// (A^T stored row-major, as in a Linear layer's weight gradient g^T x) along its columns; when
// those stored rows are a multiple of 2 KiB (N = 512, 1024... floats: every 512-wide layer), the
// rows it reads together map to the same cache sets and evict each other. Measured on a Linear
// layer's backward shapes (1 thread, AVX2): [128x512]x[512x512] ran at 58 GFLOP/s with B in
// place and 74 with B copied to a leading dimension of 528, [512x128]x[128x512] at 59 and 89,
// and g^T x (A transposed too) at 49-63 with only B padded and 67-69 with both. The copy costs
// 1-5% of the product. So such an operand (big enough to matter) is copied row by row to a
// leading dimension padded by 64 bytes first. A row-major A and a transposed B (the forward
// pass's W^T) run at full speed in place.

// The stored-row axis of a 2-D operand that pads (0: rows of a row-major matrix, 1: columns of
// a column-major one), or -1 if it stays in place.
int padded_axis(const Geometry& g, const Operand& op, bool is_b, size_t item) {
  if (g.nb != 0 || op.pack || g.m < 16 || g.k < 16 || g.n < 16) return -1;
  const int axis = is_b ? 0 : 1;  // B: row-major rows; A: columns of a transposed A
  if (op.strides[1 - axis] != 1) return -1;
  return (static_cast<size_t>(op.strides[axis]) * item) % 2048 == 0 ? axis : -1;
}

// The padded leading dimension for stored rows of n items: n plus 64 bytes, plus 64 more if
// that is again a multiple of 2 KiB.
int64_t padded_ld(int64_t n, size_t item) {
  const auto pad = static_cast<int64_t>(64 / item);
  int64_t ld = n + pad;
  if ((static_cast<size_t>(ld) * item) % 2048 == 0) ld += pad;
  return ld;
}

// Copies `rows` stored rows of `n` items from a leading dimension ld_in to ld_out.
void copy_rows(const void* src, int64_t ld_in, void* dst, int64_t ld_out, int64_t rows, int64_t n,
               size_t item) {
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(static_cast<char*>(dst) + static_cast<size_t>(r * ld_out) * item,
                static_cast<const char*>(src) + static_cast<size_t>(r * ld_in) * item,
                static_cast<size_t>(n) * item);
  }
}

// Fills dims/strides of an operand [batch..., r, c]; false if it must be packed.
bool describe(const Geometry& g, const int64_t* bstrides, int64_t r, int64_t c, int64_t sr,
              int64_t sc, Operand* op) {
  const int nd = g.nb + 2;
  op->nd = nd;
  op->dims.assign(static_cast<size_t>(nd), 1);
  op->strides.assign(static_cast<size_t>(nd), 1);
  op->dims[nd - 2] = r;
  op->dims[nd - 1] = c;
  bool plain = true;
  if ((c == 1 || sc == 1) && (r == 1 || sr >= c)) {
    op->strides[nd - 1] = 1;
    op->strides[nd - 2] = r == 1 ? c : sr;
  } else if ((r == 1 || sr == 1) && (c == 1 || sc >= r)) {
    op->strides[nd - 2] = 1;
    op->strides[nd - 1] = c == 1 ? r : sc;
  } else {
    plain = false;
  }
  for (int d = g.nb - 1; d >= 0; --d) {
    const bool bcast = bstrides[d] == 0;
    op->dims[d] = bcast ? 1 : g.batch[d];
    // A size-1 dim gets the dense stride: oneDNN rejects 0 and never steps along it.
    const int64_t dense = std::max<int64_t>(1, op->strides[d + 1] * op->dims[d + 1]);
    op->strides[d] = bcast ? dense : bstrides[d];
  }
  return plain;
}

// Contiguous strides of op->dims, written into op->strides.
void make_dense(Operand* op) {
  int64_t s = 1;
  for (int d = op->nd - 1; d >= 0; --d) {
    op->strides[d] = s;
    s *= op->dims[d];
  }
}

// Packs an operand into `dst` (contiguous over op.dims) reading the original strides.
void pack_operand(const ember_tensor& src, const Operand& op, const int64_t* orig_strides,
                  void* dst) {
  int64_t dst_strides[DNNL_MAX_NDIMS];
  int64_t s = 1;
  for (int d = op.nd - 1; d >= 0; --d) {
    dst_strides[d] = s;
    s *= op.dims[d];
  }
  const ember_tensor out = {dst,         src.dtype,       op.nd,           op.dims.data(),
                            dst_strides, src.device_type, src.device_index};
  const ember_tensor in = {const_cast<void*>(src.data),
                           src.dtype,
                           op.nd,
                           op.dims.data(),
                           orig_strides,
                           src.device_type,
                           src.device_index};
  const ember_tensor* ops[2] = {&out, &in};
  StridedIter<2> it(ops);
  const size_t item = sdk::itemsize(src.dtype);
  it.run([item](const std::array<char*, 2>& p, const std::array<int64_t, 2>& st, int64_t n) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * st[0], p[1] + i * st[1], item);
  });
}

dnnl::memory::data_type dnnl_type(int32_t dtype) {
  switch (dtype) {
    case EMBER_F32:
      return dnnl::memory::data_type::f32;
    case EMBER_BF16:
      return dnnl::memory::data_type::bf16;
    case EMBER_F16:
      return dnnl::memory::data_type::f16;
    default:
      return dnnl::memory::data_type::undef;
  }
}

enum class DnnlResult { Done, Declined };

// fused_linear's activation codes (ops.def).
enum Activation : int64_t { kNone = 0, kRelu = 1, kGelu = 2, kGeluTanh = 3 };

// What runs after the product: fused_linear's bias [N] (null: none) and activation; and the
// identity of fused_linear's weight, which may then be read packed (Note [Packed linear
// weights]; null for a plain matmul).
struct Epilogue {
  const ember_tensor* bias = nullptr;
  int64_t activation = kNone;
  const ember_tensor_identity* weight = nullptr;
};

// Note [Packed linear weights]
// oneDNN's matmul reading B (a linear layer's weight, transposed) in the plain layout copies it
// into its own blocked panels on every call; for the small row counts of inference (a batch of
// 64 through an MLP) that copy is a good part of the product: 810 -> 750 us for the MLP at batch
// 64 on one thread with the weights packed once. So fused_linear, given its weight's identity,
// also has a primitive that reads B in the layout oneDNN picks (format any) and keeps B reordered
// into it in a WeightCache (Note [Reordered weight cache] in weight_cache.cpp): the first call of
// a (weight, version) runs the plain primitive and only remembers it, the second reorders and
// keeps it, later ones read the copy. Training, whose weights change every step, never keeps
// one. Only row counts up to kPackedRows take this path (inference latency, where the copy
// matters; a big batch amortizes it and would double the weights' memory for little), and only
// where oneDNN's choice differs from the plain layout. On AVX2, where oneDNN runs the plain gemm,
// its choice is B dense row-major; a power-of-two-wide weight is then kept with padded rows
// (Note [Power-of-two leading dimensions]): packed densely, linear 512 -> 2048 at 64 rows ran at
// 38 GFLOP/s, half the speed of the weight read as given, and 74 padded. The copies are shared by
// every row count with the same B geometry and layout, so a last short batch does not pack a second
// copy.
constexpr int64_t kPackedRows = 512;
constexpr size_t kPackedSlots = 64;  // weights of one geometry: the layers of a deep model

// One product reading B packed: the primitive, B's packed layout, the reorder plain -> packed
// and the packed copies. Not ok: oneDNN declined or keeps B plain anyway.
struct PackedProduct {
  bool ok = false;
  dnnl::primitive prim;
  dnnl::memory::desc layout;
  dnnl::reorder reorder;
  std::shared_ptr<WeightCache> weights;
};

// A packed product under the primitive cache's key of its plain product.
struct PackedEntry {
  uint64_t hash;
  int32_t threads;
  std::vector<int64_t> key;
  std::shared_ptr<const PackedProduct> product;
};

// The packed products by key (looked up as the primitive cache's), and the weight caches by B's
// key and layout, shared across row counts. Small FIFOs; never destroyed (kernels may run at
// exit).
struct PackedCache {
  std::mutex mutex;
  std::vector<PackedEntry> products;
  std::vector<std::tuple<std::vector<int64_t>, dnnl::memory::desc, std::shared_ptr<WeightCache>>>
      weights;
};
constexpr size_t kPackedCapacity = 128;

PackedCache& packed_cache() {
  static PackedCache* c = new PackedCache();
  return *c;
}

// The weight cache for B's key `bkey` in `layout`, made on first use.
std::shared_ptr<WeightCache> weights_for(const std::vector<int64_t>& bkey,
                                         const dnnl::memory::desc& layout) {
  PackedCache& c = packed_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (const auto& [k, l, w] : c.weights)
    if (k == bkey && l == layout) return w;
  if (c.weights.size() >= kPackedCapacity) c.weights.erase(c.weights.begin());
  c.weights.emplace_back(bkey, layout, std::make_shared<WeightCache>(kPackedSlots));
  return std::get<2>(c.weights.back());
}

// The primitive attributes of a product with epilogue `epi`: its activation as a post-op.
dnnl::primitive_attr dnnl_attr_of(const Epilogue& epi) {
  dnnl::primitive_attr attr = dnnl_attr();
  if (epi.activation != kNone) {
    dnnl::post_ops ops;
    ops.append_eltwise(epi.activation == kRelu   ? dnnl::algorithm::eltwise_relu
                       : epi.activation == kGelu ? dnnl::algorithm::eltwise_gelu_erf
                                                 : dnnl::algorithm::eltwise_gelu_tanh,
                       0.f, 0.f);
    attr.set_post_ops(ops);
  }
  return attr;
}

// The packed product for the plain product's key (`kn` values, B's dims and strides from
// `bkey_at`), built on a miss outside the lock: A, C and the bias as given, B (plain layout
// `bmd`) in the layout oneDNN picks, with epilogue `epi`; `biasmd` null without bias.
std::shared_ptr<const PackedProduct> packed_product(const int64_t* key, int32_t kn, int32_t bkey_at,
                                                    const dnnl::memory::desc& amd,
                                                    const dnnl::memory::desc& bmd,
                                                    const dnnl::memory::desc* biasmd,
                                                    const dnnl::memory::desc& cmd,
                                                    const Epilogue& epi) {
  const int32_t threads = dnnl_threads();
  const uint64_t h = hash_key(key, kn, threads);
  PackedCache& c = packed_cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.products.rbegin(); it != c.products.rend(); ++it)
      if (same_key(*it, h, key, kn, threads)) return it->product;
  }
  auto p = std::make_shared<PackedProduct>();
  try {
    const dnnl::primitive_attr attr = dnnl_attr_of(epi);
    const dnnl::engine& eng = dnnl_engine();
    const dnnl::memory::desc any(bmd.get_dims(), bmd.get_data_type(),
                                 dnnl::memory::format_tag::any);
    const auto pd = biasmd ? dnnl::matmul::primitive_desc(eng, amd, any, *biasmd, cmd, attr)
                           : dnnl::matmul::primitive_desc(eng, amd, any, cmd, attr);
    // Where oneDNN runs the plain gemm (AVX2) it asks for B dense row-major; a row of a
    // power-of-two multiple of 2 KiB then puts every row of a panel in the same cache sets, so
    // the copy gets the padded rows of Note [Power-of-two leading dimensions] instead.
    dnnl::memory::desc chosen = pd.weights_desc();
    auto used = pd;
    if (chosen != bmd && chosen.get_format_kind() == dnnl::memory::format_kind::blocked &&
        chosen.get_inner_nblks() == 0 && chosen.get_ndims() == 2) {
      const dnnl::memory::dims dims = chosen.get_dims(), strides = chosen.get_strides();
      const size_t item = dnnl::memory::data_type_size(chosen.get_data_type());
      if (strides[1] == 1 && (static_cast<size_t>(strides[0]) * item) % 2048 == 0) {
        chosen = dnnl::memory::desc(dims, chosen.get_data_type(), {padded_ld(dims[1], item), 1});
        used = biasmd ? dnnl::matmul::primitive_desc(eng, amd, chosen, *biasmd, cmd, attr)
                      : dnnl::matmul::primitive_desc(eng, amd, chosen, cmd, attr);
      }
    }
    if (chosen != bmd) {
      p->layout = chosen;
      p->prim = dnnl::matmul(used);
      p->reorder =
          dnnl::reorder(dnnl::reorder::primitive_desc(eng, bmd, eng, p->layout, dnnl_attr()));
      // B's part of the key: its dtype, dims and strides.
      std::vector<int64_t> bkey = {key[1]};
      bkey.insert(bkey.end(), key + bkey_at, key + bkey_at + 2 * bmd.get_ndims());
      p->weights = weights_for(bkey, p->layout);
      p->ok = true;
    }
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) throw;
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.products.size() >= kPackedCapacity) c.products.erase(c.products.begin());
  c.products.push_back({h, threads, std::vector<int64_t>(key, key + kn), p});
  return p;
}

// Runs C = A x B (then the epilogue) through oneDNN; Declined when oneDNN has no implementation
// (or the geometry does not suit it) and the own loop should run instead.
DnnlResult dnnl_matmul(const ember_kernel_call* call, const Geometry& g, const ember_tensor& a,
                       const ember_tensor& b, const ember_tensor& c, const Epilogue& epi) {
  if (g.too_many_dims) return DnnlResult::Declined;
  for (int d = 0; d < g.nb; ++d) {
    if (g.sa[d] == 0 && g.sb[d] == 0) return DnnlResult::Declined;
  }
  Operand oa, ob, oc;
  oa.pack = !describe(g, g.sa, g.m, g.k, g.am, g.ak, &oa);
  ob.pack = !describe(g, g.sb, g.k, g.n, g.bk, g.bn, &ob);
  describe(g, g.sc, g.m, g.n, g.cm, g.cn, &oc);  // C is contiguous: always plain
  if (oa.pack) make_dense(&oa);
  if (ob.pack) make_dense(&ob);
  const size_t item = sdk::itemsize(a.dtype);
  for (const bool is_b : {false, true}) {
    Operand& op = is_b ? ob : oa;
    const int axis = padded_axis(g, op, is_b, item);
    if (axis < 0) continue;
    op.pad_rows = true;
    op.stored_ld = op.strides[axis];
    op.strides[axis] = padded_ld(op.dims[1 - axis], item);
  }

  // Key: tag (1: the plain product; 16 to 23: fused_linear's bias and activation; softmax and
  // the recurrent layers use others), dtype, rank, then dims and strides of A, B and C.
  std::array<int64_t, 3 + 6 * DNNL_MAX_NDIMS> key;
  int32_t kn = 0;
  const bool plain = epi.bias == nullptr && epi.activation == kNone;
  key[kn++] = plain ? 1 : 16 + (epi.bias != nullptr ? 1 : 0) + 2 * epi.activation;
  key[kn++] = a.dtype;
  key[kn++] = oa.nd;
  for (const Operand* op : {&oa, &ob, &oc}) {
    for (int d = 0; d < op->nd; ++d) key[kn++] = op->dims[d];
    for (int d = 0; d < op->nd; ++d) key[kn++] = op->strides[d];
  }
  const dnnl::memory::data_type dt = dnnl_type(a.dtype);
  const dnnl::memory::desc amd(oa.dims, dt, oa.strides), bmd(ob.dims, dt, ob.strides),
      cmd(oc.dims, dt, oc.strides);
  // The bias as a row broadcast over C's rows (fused_linear is 2-d: no batch dims).
  const dnnl::memory::desc biasmd =
      epi.bias != nullptr ? dnnl::memory::desc({1, g.n}, dt, {g.n, 1}) : dnnl::memory::desc();
  dnnl::primitive prim;
  if (!dnnl_cache_find(key.data(), kn, &prim)) {
    try {
      const dnnl::primitive_attr attr = dnnl_attr_of(epi);
      prim = dnnl::matmul(
          epi.bias != nullptr
              ? dnnl::matmul::primitive_desc(dnnl_engine(), amd, bmd, biasmd, cmd, attr)
              : dnnl::matmul::primitive_desc(dnnl_engine(), amd, bmd, cmd, attr));
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
      prim = dnnl::primitive();
    }
    dnnl_cache_put(key.data(), kn, prim);
  }
  if (!prim) return DnnlResult::Declined;

  // Note [Packed linear weights]: B read from its kept packed copy where there is one.
  const dnnl::engine& eng = dnnl_engine();
  std::shared_ptr<void> packed;
  std::shared_ptr<const PackedProduct> pp;
  if (epi.weight != nullptr && g.nb == 0 && g.m <= kPackedRows && !ob.pack && !ob.pad_rows) {
    // B's dims and strides follow the tag, dtype, rank and A's in the key.
    pp = packed_product(key.data(), kn, 3 + 2 * oa.nd, amd, bmd,
                        epi.bias != nullptr ? &biasmd : nullptr, cmd, epi);
    if (pp->ok) {
      packed = pp->weights->get(*epi.weight, b.data, pp->layout.get_size(), [&](void* to) {
        dnnl_execute(call, pp->reorder,
                     {{DNNL_ARG_FROM, dnnl::memory(bmd, eng, const_cast<void*>(b.data))},
                      {DNNL_ARG_TO, dnnl::memory(pp->layout, eng, to)}});
      });
    }
  }

  // Pack what oneDNN cannot read in place, in the reduced geometry: batch strides from g,
  // matrix strides from the tensor.
  int64_t orig[2][DNNL_MAX_NDIMS];
  for (int d = 0; d < g.nb; ++d) {
    orig[0][d] = g.sa[d];
    orig[1][d] = g.sb[d];
  }
  orig[0][g.nb] = g.am;
  orig[0][g.nb + 1] = g.ak;
  orig[1][g.nb] = g.bk;
  orig[1][g.nb + 1] = g.bn;
  ScratchGuard scratch[2] = {{call}, {call}};
  const void* data[2] = {a.data, b.data};
  for (int i = 0; i < 2; ++i) {
    const Operand& op = i == 0 ? oa : ob;
    if (!op.pad_rows) continue;
    // Stored rows: B's rows (axis 0) or a transposed A's columns (axis 1).
    const int axis = op.strides[0] == 1 ? 1 : 0;
    const int64_t ld = op.strides[axis], rows = op.dims[axis], n = op.dims[1 - axis];
    if (!scratch[i].alloc(static_cast<size_t>(rows * ld) * item)) throw std::bad_alloc();
    copy_rows(data[i], op.stored_ld, scratch[i].ptr, ld, rows, n, item);
    data[i] = scratch[i].ptr;
  }
  for (int i = 0; i < 2; ++i) {
    const Operand& op = i == 0 ? oa : ob;
    if (!op.pack) continue;
    size_t n = sdk::itemsize(a.dtype);
    for (int d = 0; d < op.nd; ++d) n *= static_cast<size_t>(op.dims[d]);
    if (!scratch[i].alloc(n)) throw std::bad_alloc();
    pack_operand(i == 0 ? a : b, op, orig[i], scratch[i].ptr);
    data[i] = scratch[i].ptr;
  }
  dnnl::memory ma(amd, eng, const_cast<void*>(data[0])), mc(cmd, eng, c.data);
  dnnl::memory mb = packed ? dnnl::memory(pp->layout, eng, packed.get())
                           : dnnl::memory(bmd, eng, const_cast<void*>(data[1]));
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
  if (epi.bias != nullptr) {
    args[DNNL_ARG_BIAS] = dnnl::memory(biasmd, eng, const_cast<void*>(epi.bias->data));
  }
  dnnl_execute(call, packed ? pp->prim : prim, std::move(args));
  return DnnlResult::Done;
}

// The own loop's epilogue for fused_linear: bias and activation over C [M, N] in the compute
// type (float for the half types, double for float64).
template <typename T>
void own_epilogue(const Geometry& g, const Epilogue& epi, T* c) {
  using C = sdk::Compute<T>;
  const T* bias = epi.bias != nullptr ? sdk::data<const T>(*epi.bias) : nullptr;
  const int64_t rows = g.m, n = g.n;
#pragma omp parallel for schedule(static) if (rows * n >= kGrainSize && !omp_in_parallel())
  for (int64_t i = 0; i < rows; ++i) {
    T* row = c + i * n;
    for (int64_t j = 0; j < n; ++j) {
      C v = static_cast<C>(row[j]);
      if (bias != nullptr) v += static_cast<C>(bias[j]);
      if (epi.activation == kRelu) {
        v = v < C(0) ? C(0) : v;  // a NaN stays NaN
      } else if (epi.activation == kGelu) {
        v = C(0.5) * v * (C(1) + std::erf(v * C(M_SQRT1_2)));
      } else if (epi.activation == kGeluTanh) {
        const C k = C(0.7978845608028654);  // sqrt(2 / pi)
        v = C(0.5) * v * (C(1) + std::tanh(k * (v + C(0.044715) * v * v * v)));
      }
      row[j] = T(v);
    }
  }
}

// C = A x B for the matmul and fused_linear kernels, then the epilogue: oneDNN where it takes
// the dtype and geometry, else the own loop.
int32_t run_product(const ember_kernel_call* call, const char* name, const ember_tensor& a,
                    const ember_tensor& b, const ember_tensor& c, const Epilogue& epi) {
  const Geometry g = make_geometry(a, b, c);
  // A failure of oneDNN is the vendor library's (EMBER_ERR_DEVICE); anything else, running out
  // of scratch memory included (std::bad_alloc), reaches the kernel's guard.
  try {
    if (g.k > 0 && dnnl_type(c.dtype) != dnnl::memory::data_type::undef &&
        dnnl_matmul(call, g, a, b, c, epi) == DnnlResult::Done) {
      return EMBER_OK;
    }
  } catch (const dnnl::error& e) {
    return sdk::fail(call, EMBER_ERR_DEVICE, "oneDNN %s failed: %s (status %d)", name, e.what(),
                     static_cast<int>(e.status));
  }
  if (c.dtype == EMBER_BOOL) {
    return sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: bool is not supported", name);
  }
  const bool known = sdk::visit_dtype(c.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      blocked_matmul<T>(g, sdk::data<const T>(a), sdk::data<const T>(b), sdk::data<T>(c));
      if constexpr (!std::is_integral_v<T>) {
        if (epi.bias != nullptr || epi.activation != kNone)
          own_epilogue<T>(g, epi, sdk::data<T>(c));
      }
    }
  });
  return known ? EMBER_OK
               : sdk::fail(call, EMBER_ERR_UNSUPPORTED, "%s: unknown dtype %d", name, c.dtype);
}

}  // namespace

EMBER_KERNEL(matmul) {
  const ember_tensor& a = call->inputs[0];
  const ember_tensor& b = call->inputs[1];
  const ember_tensor& c = call->outputs[0];
  if (c.ndim < 2 || c.ndim > sdk::MatmulGeometry::kMaxDims || a.ndim != c.ndim ||
      b.ndim != c.ndim) {
    return sdk::fail(call, EMBER_ERR_INVALID, "matmul: operands of rank %d, %d and %d", a.ndim,
                     b.ndim, c.ndim);
  }
  if (a.dtype != c.dtype || b.dtype != c.dtype) {
    return sdk::fail(call, EMBER_ERR_INVALID, "matmul: mixed dtypes %d, %d -> %d", a.dtype, b.dtype,
                     c.dtype);
  }
  if (sdk::numel(c) == 0) return EMBER_OK;
  return run_product(call, "matmul", a, b, c, {});
}

// fused_linear (contract in core/ops/nn.cpp): the product x w^T with w read through its
// transposed view, the bias and activation as the epilogue (Note [Fused linear layers]).
EMBER_KERNEL(fused_linear) {
  const ember_tensor& x = call->inputs[0];
  const ember_tensor& w = call->inputs[1];
  const ember_tensor& y = call->outputs[0];
  const ember_tensor* bias = call->num_inputs > 2 ? &call->inputs[2] : nullptr;
  const int64_t act = sdk::attrs<attrs::fused_linear>(call).activation;
  if (x.ndim != 2 || w.ndim != 2 || y.ndim != 2 || x.sizes[1] != w.sizes[1] ||
      y.sizes[0] != x.sizes[0] || y.sizes[1] != w.sizes[0] ||
      (bias != nullptr && (bias->ndim != 1 || bias->sizes[0] != w.sizes[0] ||
                           (bias->sizes[0] > 1 && bias->strides[0] != 1)))) {
    return sdk::fail(call, EMBER_ERR_INVALID, "fused_linear: bad operand shapes");
  }
  if (x.dtype != y.dtype || w.dtype != y.dtype || (bias != nullptr && bias->dtype != y.dtype)) {
    return sdk::fail(call, EMBER_ERR_INVALID, "fused_linear: mixed dtypes");
  }
  if (act < kNone || act > kGeluTanh) {
    return sdk::fail(call, EMBER_ERR_INVALID, "fused_linear: unknown activation %lld",
                     static_cast<long long>(act));
  }
  if (sdk::numel(y) == 0) return EMBER_OK;
  // w [N, K] read as B = w^T [K, N]: the same storage with sizes and strides swapped.
  const int64_t sizes[2] = {w.sizes[1], w.sizes[0]}, strides[2] = {w.strides[1], w.strides[0]};
  ember_tensor wt = w;
  wt.sizes = sizes;
  wt.strides = strides;
  return run_product(call, "fused_linear", x, wt, y, {bias, act, input_identity(call, 1)});
}

}  // namespace ember::cpu
