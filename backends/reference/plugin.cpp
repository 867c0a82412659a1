// The reference backend plugin: the entry symbol, the descriptor and the device table. Memory is
// plain aligned host memory, copies are memcpy, there is one device and no stream. Every entry
// point runs its body through sdk::guard / sdk::guard_value (Note [One boundary for every
// plugin entry point]); the kernels get the same from their registration.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/reference/kernels.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::reference {
namespace {

// Below the CPU's 100, so the best device (Note [The best device]) stays the CPU.
constexpr int32_t kPriority = 10;

struct Stats {
  std::atomic<uint64_t> allocated{0}, peak{0}, num_allocs{0};
};
Stats& stats() {
  static Stats* s = new Stats();  // leaked: outlives every static tensor at exit
  return *s;
}

size_t rounded(size_t bytes) {
  return (bytes + 63) / 64 * 64 + (bytes == 0 ? 64 : 0);
}

// The device table. Slots without an error buffer (device_props, alloc, free, memory_stats,
// empty_cache) guard with none: the core sees the status or the NULL.
int32_t device_count(void*, char* reason, size_t cap) {
  return sdk::guard_value(reason, cap, 0, [] { return 1; });
}

int32_t device_props(void*, int32_t, ember_device_props* out) {
  return sdk::guard(nullptr, 0, [&] {
    std::memset(out, 0, sizeof(*out));
    std::snprintf(out->name, sizeof(out->name), "reference (host memory, plain loops)");
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->total_memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
    out->num_cores = 1;  // single-threaded by design
    return EMBER_OK;
  });
}

void* alloc(void*, int32_t, size_t bytes) {
  return sdk::guard_value(nullptr, 0, nullptr, [&]() -> void* {
    void* p = std::aligned_alloc(64, rounded(bytes));
    if (!p) return nullptr;
    Stats& s = stats();
    const uint64_t now = s.allocated += rounded(bytes);
    ++s.num_allocs;
    uint64_t peak = s.peak.load();
    while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
    }
    return p;
  });
}

void free_block(void*, int32_t, void* ptr, size_t bytes) {
  sdk::guard(nullptr, 0, [&] {
    if (!ptr) return EMBER_OK;
    std::free(ptr);
    stats().allocated -= rounded(bytes);
    return EMBER_OK;
  });
}

// Host memory on both sides: every copy kind is a memmove.
int32_t copy_bytes(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, char* error,
                   size_t cap) {
  return sdk::guard(error, cap, [&] {
    if (bytes) std::memmove(dst, src, bytes);
    return EMBER_OK;
  });
}

int32_t synchronize(void*, int32_t, char* error, size_t cap) {
  return sdk::guard(error, cap, [] { return EMBER_OK; });  // no stream: nothing is pending
}

int32_t memory_stats(void*, int32_t, ember_memory_stats* out) {
  return sdk::guard(nullptr, 0, [&] {
    Stats& s = stats();
    *out = {};
    out->allocated = s.allocated.load();
    out->reserved = out->allocated;  // no cache
    out->peak_allocated = s.peak.load();
    out->num_allocs = s.num_allocs.load();
    out->num_os_allocs = out->num_allocs;
    return EMBER_OK;
  });
}

void empty_cache(void*, int32_t) {
  sdk::guard(nullptr, 0, [] { return EMBER_OK; });  // no cache: nothing to return
}

int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&]() -> int32_t {
    static const ember_device_type_v1 table = [] {
      ember_device_type_v1 t =
          sdk::device_type("reference", kPriority, /*host_accessible=*/true, device_count, alloc,
                           free_block, copy_bytes, synchronize);
      t.device_props = device_props;
      t.memory_stats = memory_stats;
      t.empty_cache = empty_cache;
      return t;  // no thread controls: the reference runs on the calling thread
    }();
    return sdk::init_backend(host, reg, table, register_kernels, error, cap);
  });
}

const ember_plugin_v1 kDescriptor = sdk::plugin_descriptor(
    0, "reference", "0.1.0", "plain single-threaded loops, " __VERSION__, init);

}  // namespace
}  // namespace ember::reference

EMBER_PLUGIN_DEFINE_ENTRY(ember::reference::kDescriptor)
