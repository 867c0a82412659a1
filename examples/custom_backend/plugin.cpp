// The toy backend: the plugin descriptor, its entry symbol and the device type "toy" (one
// device, aligned host memory, copies by memcpy, nothing asynchronous). The kernels are in
// kernels.cpp. Like every Ember plugin it includes only the plugin SDK and never links the core.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_ops.hpp"
#include "kernels.h"

namespace toy {
namespace {

// Note [The toy device]
// Priority: best_device() picks the available device type of highest priority; Ember's cpu
// backend declares 100 and its reference backend 10. The toy declares less than both, so loading
// it never moves a program off the cpu: only code that asks for Device("toy") gets it.
// Host access: the memory is ordinary host memory, yet the table says host_accessible = 0, as a
// discrete accelerator would. The core then never dereferences a toy pointer itself: moving
// tensors, item() and printing go through copy_bytes() below and all computing through kernels,
// so the toy runs the core's accelerator paths, not its shortcuts for host memory.
constexpr int32_t kPriority = 5;
constexpr int32_t kHostAccessible = 0;

// Note [Nothing throws across the C boundary]
// The core calls this file through C function pointers, where an exception must never unwind.
// The device functions use only the C library and atomics, which do not throw, and are noexcept;
// init and every kernel run behind the SDK's boundary (sdk::init_backend, sdk::guarded: Note
// [One boundary for every plugin entry point] in <ember/plugin_sdk_ops.hpp>).

/** Every block is aligned to a cache line: enough for any dtype and for vector loads. */
constexpr size_t kAlignment = 64;

/** Byte counters of the one device; leaked, so tensors freed during exit still find them. */
struct Stats {
  std::atomic<uint64_t> in_use{0}, peak{0}, num_allocs{0};
};
Stats& stats() noexcept {
  static Stats* s = new Stats();
  return *s;
}

/** Bytes a block for `bytes` occupies: a positive multiple of the alignment. */
size_t block_size(size_t bytes) noexcept {
  return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

int32_t device_count(void*, char*, size_t) noexcept {
  return 1;
}

int32_t device_props(void*, int32_t, ember_device_props* out) noexcept {
  std::memset(out, 0, sizeof(*out));
  std::snprintf(out->name, sizeof(out->name), "toy (host memory, plain loops)");
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  out->total_memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
  out->num_cores = 1;  // kernels run on the calling thread
  return EMBER_OK;
}

void* alloc(void*, int32_t, size_t bytes) noexcept {
  void* p = std::aligned_alloc(kAlignment, block_size(bytes));
  if (!p) return nullptr;
  Stats& s = stats();
  const uint64_t now = s.in_use += block_size(bytes);
  ++s.num_allocs;
  uint64_t peak = s.peak.load();
  while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
  }
  return p;
}

void free_block(void*, int32_t, void* ptr, size_t bytes) noexcept {
  if (!ptr) return;
  std::free(ptr);
  stats().in_use -= block_size(bytes);
}

// Host memory on both sides: every kind of copy is a memcpy.
int32_t copy_bytes(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t kind,
                   char* error, size_t capacity) noexcept {
  if (kind != EMBER_COPY_H2D && kind != EMBER_COPY_D2H && kind != EMBER_COPY_D2D) {
    std::snprintf(error, capacity, "[toy] unknown copy kind: got %d (0 to toy, 1 to host, 2 toy)",
                  kind);
    return EMBER_ERR_INVALID;
  }
  if (bytes > 0) std::memcpy(dst, src, bytes);
  return EMBER_OK;
}

// Kernels and copies are done when they return: there is never anything to wait for.
int32_t synchronize(void*, int32_t, char*, size_t) noexcept {
  return EMBER_OK;
}

int32_t memory_stats(void*, int32_t, ember_memory_stats* out) noexcept {
  const Stats& s = stats();
  *out = {};
  out->allocated = s.in_use.load();
  out->reserved = out->allocated;  // nothing is cached
  out->peak_allocated = s.peak.load();
  out->num_allocs = s.num_allocs.load();
  out->num_os_allocs = out->num_allocs;  // every allocation goes to the C library
  return EMBER_OK;
}

void empty_cache(void*, int32_t) noexcept {}

int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error,
             size_t capacity) noexcept {
  // The ABI 1.3 fields after get_num_threads (streams, events, pinned memory, options) stay
  // null: not offered, so the core treats the toy's work as synchronous.
  static const ember_device_type_v1 table = [] {
    ember_device_type_v1 t{};
    t.struct_size = sizeof(t);
    t.name = "toy";
    t.priority = kPriority;
    t.host_accessible = kHostAccessible;
    t.device_count = device_count;
    t.device_props = device_props;
    t.alloc = alloc;
    t.free = free_block;
    t.copy = copy_bytes;
    t.synchronize = synchronize;
    t.memory_stats = memory_stats;
    t.empty_cache = empty_cache;
    return t;
  }();
  return ember::sdk::init_backend(host, reg, table, register_kernels, error, capacity);
}

const ember_plugin_v1 kDescriptor = {
    sizeof(ember_plugin_v1),
    EMBER_ABI_MAJOR,
    0,  // the oldest core minor it runs on: it needs nothing past ABI 1.0
    "toy",
    "0.1.0",
    "example out-of-tree backend (examples/custom_backend), " __VERSION__,
    init,
    nullptr,
};

}  // namespace
}  // namespace toy

/** The one exported symbol: the core reads the plugin's descriptor through it. */
extern "C" EMBER_PLUGIN_EXPORT const ember_plugin_v1* ember_plugin_entry_v1(void) {
  return &toy::kDescriptor;
}
