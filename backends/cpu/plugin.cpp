// The CPU backend plugin: the entry symbol, the descriptor and the device table.
#include <omp.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "backends/cpu/allocator.h"
#include "backends/cpu/kernels.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::cpu {
namespace {

// Every entry point below runs its body through the SDK's boundary (Note [One boundary for
// every plugin entry point]): an exception (std::bad_alloc from a std::string or the
// allocator's lists) becomes a status, a null block or no devices instead of std::terminate.
// The slots without an error buffer lose the message; those without a result lose nothing.

int32_t device_count(void*, char* reason, size_t cap) {
  return sdk::guard_value(reason, cap, 0, [] { return 1; });
}

int32_t device_props(void*, int32_t, ember_device_props* out) {
  return sdk::guard(nullptr, 0, [&]() -> int32_t {
    std::memset(out, 0, sizeof(*out));
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, name = "CPU";
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("model name", 0) == 0) {
        name = line.substr(line.find(':') + 2);
        break;
      }
    }
    std::snprintf(out->name, sizeof(out->name), "%s", name.c_str());
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    out->total_memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * page : 0;
    out->num_cores = static_cast<int32_t>(sysconf(_SC_NPROCESSORS_ONLN));
    return EMBER_OK;
  });
}

void* alloc(void*, int32_t, size_t bytes) {
  return sdk::guard_value(nullptr, 0, nullptr, [&] { return cached_alloc(bytes); });
}
void free_block(void*, int32_t, void* ptr, size_t bytes) {
  sdk::guard(nullptr, 0, [&]() -> int32_t {
    cached_free(ptr, bytes);
    return EMBER_OK;
  });
}

int32_t copy_bytes(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, char* error,
                   size_t cap) {
  return sdk::guard(error, cap, [&]() -> int32_t {
    if (bytes) std::memmove(dst, src, bytes);
    return EMBER_OK;
  });
}
int32_t synchronize(void*, int32_t, char* error, size_t cap) {
  return sdk::guard(error, cap, []() -> int32_t { return EMBER_OK; });
}
int32_t memory_stats(void*, int32_t, ember_memory_stats* out) {
  return sdk::guard(nullptr, 0, [&]() -> int32_t {
    *out = cached_stats();
    return EMBER_OK;
  });
}
void empty_cache(void*, int32_t) {
  sdk::guard(nullptr, 0, []() -> int32_t {
    cached_release_all();
    return EMBER_OK;
  });
}

// Note [One thread pool]
// oneDNN in Debian is built with OpenMP (libgomp), and every parallel loop of this plugin uses
// OpenMP too, so there is exactly one pool of worker threads; set_num_threads sizes it.
//
// Note [Forked children run on one thread]
// fork() copies only the calling thread. libgomp keeps the thread that ran a parallel region
// attached to its pool, so in the child that thread's next region with more than one thread
// hands work to pool threads that do not exist and waits for them forever: `os.fork()` or a
// multiprocessing worker after one large op hung. As PyTorch does, a pthread_atfork handler
// marks the child and gives the forking thread (the child's only thread) one OpenMP thread:
// every loop of this plugin asks omp_get_max_threads() for its team, and a team of one never
// touches the pool (libgomp returns before it). oneDNN primitives kept from the parent were made
// for the parent's thread count, so the primitive caches key by the count and the child makes
// its own (Note [Primitives are made for a thread count] in ops/matmul.cpp). set_num_threads in
// the child keeps that one thread. Threads the child starts later have no pool yet and get
// fresh ones of their own, which work.
std::atomic<bool> g_forked{false};

void in_forked_child() {
  g_forked.store(true, std::memory_order_relaxed);
  omp_set_num_threads(1);
}

void set_num_threads(void*, int32_t n) {
  sdk::guard(nullptr, 0, [n]() -> int32_t {
    omp_set_num_threads(g_forked.load(std::memory_order_relaxed) ? 1 : n);
    return EMBER_OK;
  });
}
int32_t get_num_threads(void*) {
  return sdk::guard_value(nullptr, 0, 1, [] { return omp_get_max_threads(); });
}

int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&]() -> int32_t {
    // Plugins are never unloaded, so the handler stays valid (Note [Forked children run on one
    // thread]).
    static const int atfork = pthread_atfork(nullptr, nullptr, in_forked_child);
    if (atfork != 0) {
      std::snprintf(error, cap, "pthread_atfork failed: %s", std::strerror(atfork));
      return EMBER_ERR_OUT_OF_MEMORY;
    }
    static const ember_device_type_v1 table = [] {
      ember_device_type_v1 t = sdk::device_type("cpu", 100, /*host_accessible=*/true, device_count,
                                                alloc, free_block, copy_bytes, synchronize);
      t.device_props = device_props;
      t.memory_stats = memory_stats;
      t.empty_cache = empty_cache;
      t.set_num_threads = set_num_threads;
      t.get_num_threads = get_num_threads;
      return t;
    }();
    return sdk::init_backend(host, reg, table, register_kernels, error, cap);
  });
}

const ember_plugin_v1 kDescriptor = sdk::plugin_descriptor(
    0, "cpu", "0.1.0", "oneDNN " EMBER_DNNL_VERSION ", OpenMP, " __VERSION__, init);

}  // namespace
}  // namespace ember::cpu

EMBER_PLUGIN_DEFINE_ENTRY(ember::cpu::kDescriptor)
