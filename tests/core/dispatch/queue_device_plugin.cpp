// A device type "queue" that lets the core's stream, event, pinned-memory and non-blocking-copy
// paths (ABI 1.3) be tested without a GPU. Its memory is host memory the core may not touch
// (host_accessible = 0); copy_async queues the copy on the calling thread's current stream, and a
// stream's queue runs only when something waits for it (stream_synchronize, an event
// synchronize, a blocking copy on it, synchronize), so "not done yet" is observable. Each queued
// copy counts as 1 ms for timing events. Counters are read back as options ("count.<what>").
// One kernel, float32 neg on contiguous tensors, queues its work on the call's stream the same
// way (and counts 1 ms), for the profiler's device timing.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ember/plugin_abi.h"
#include "ember/plugin_sdk_entry.hpp"

namespace {

constexpr int kPool = 4;
constexpr size_t kMaxAlloc = size_t{1} << 30;

struct QueueStream {
  std::vector<std::function<void()>> pending;
  uint64_t queued = 0;  // ops ever queued
  uint64_t done = 0;    // ops ever run
};

struct QueueEvent {
  QueueStream* stream = nullptr;
  uint64_t mark = 0;  // done when stream->done >= mark
  bool timing = false;
};

std::recursive_mutex g_mu;         // guards everything below
QueueStream g_streams[1 + kPool];  // [0]: the default stream
int g_next_pool = 0;
thread_local QueueStream* t_current = nullptr;
std::map<void*, size_t> g_pinned;      // live pinned blocks
std::map<void*, int> g_pinned_uses;    // queued copies still touching a pinned block
std::vector<void*> g_pinned_deferred;  // freed while copies were queued on them
std::map<std::string, long long> g_count;
std::string g_last_record;  // "<ptr> <stream index>" of the last record_stream

QueueStream* current() {
  return t_current ? t_current : &g_streams[0];
}

int stream_index(const QueueStream* s) {
  for (int i = 0; i <= kPool; ++i) {
    if (&g_streams[i] == s) return i;
  }
  return -1;
}

QueueStream* resolve(void* handle) {
  return handle ? static_cast<QueueStream*>(handle) : &g_streams[0];
}

void run(QueueStream* s) {
  std::lock_guard lock(g_mu);
  for (auto& op : s->pending) op();
  s->done += s->pending.size();
  s->pending.clear();
  for (auto it = g_pinned_deferred.begin(); it != g_pinned_deferred.end();) {
    if (g_pinned_uses[*it] == 0) {
      std::free(*it);
      g_pinned.erase(*it);
      it = g_pinned_deferred.erase(it);
    } else {
      ++it;
    }
  }
}

void run_all() {
  for (QueueStream& s : g_streams) run(&s);
}

void* pinned_block_of(const void* p) {
  for (auto& [base, size] : g_pinned) {
    if (p >= base && p < static_cast<char*>(base) + size) return base;
  }
  return nullptr;
}

int32_t device_count(void*, char*, size_t) {
  return 2;  // two devices, for the current-device tests; both share the state below
}

void* alloc(void*, int32_t, size_t bytes) {
  ++g_count["alloc"];
  return bytes > kMaxAlloc ? nullptr : std::malloc(bytes ? bytes : 1);
}

void* alloc_checked(void* ctx, int32_t index, size_t bytes, char* error, size_t cap) {
  void* p = alloc(ctx, index, bytes);
  if (!p)
    std::snprintf(error, cap, "queue: %zu bytes requested, %zu is the limit", bytes, kMaxAlloc);
  return p;
}

void free_block(void*, int32_t, void* p, size_t) {
  std::free(p);
}

int32_t copy(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t, char*, size_t) {
  ++g_count["copy"];
  run(current());  // a blocking copy runs after the work queued before it
  std::memcpy(dst, src, bytes);
  return EMBER_OK;
}

int32_t copy_async(void*, int32_t, void* dst, const void* src, size_t bytes, int32_t kind, char*,
                   size_t) {
  std::lock_guard lock(g_mu);
  ++g_count["copy_async"];
  void* block = pinned_block_of(kind == EMBER_COPY_H2D ? src : dst);
  if (!block) {  // pageable memory: behaves as copy
    run(current());
    std::memcpy(dst, src, bytes);
    return EMBER_OK;
  }
  ++g_pinned_uses[block];
  QueueStream* s = current();
  s->pending.push_back([=] {
    std::memcpy(dst, src, bytes);
    --g_pinned_uses[block];
  });
  ++s->queued;
  return EMBER_OK;
}

int32_t synchronize(void*, int32_t, char*, size_t) {
  run_all();
  return EMBER_OK;
}

void* host_alloc(void*, size_t bytes, char*, size_t) {
  std::lock_guard lock(g_mu);
  ++g_count["host_alloc"];
  void* p = std::malloc(bytes);
  g_pinned[p] = bytes;
  return p;
}

void host_free(void*, void* p, size_t bytes) {
  std::lock_guard lock(g_mu);
  ++g_count["host_free"];
  if (g_pinned.count(p) == 0 || g_pinned[p] != bytes) ++g_count["host_free_mismatch"];
  if (g_pinned_uses[p] > 0) {  // Note [Pinned host memory]: not before its copies ran
    ++g_count["host_free_deferred"];
    g_pinned_deferred.push_back(p);
    return;
  }
  g_pinned.erase(p);
  std::free(p);
}

void* stream_get(void*, int32_t, int32_t which) {
  return which == EMBER_STREAM_DEFAULT ? &g_streams[0] : current();
}

int32_t stream_from_pool(void*, int32_t, int32_t, void** out, char*, size_t) {
  std::lock_guard lock(g_mu);
  *out = &g_streams[1 + (g_next_pool++ % kPool)];
  return EMBER_OK;
}

int32_t stream_set_current(void*, int32_t, void* stream, char* error, size_t cap) {
  QueueStream* s = resolve(stream);
  if (stream_index(s) < 0) {
    std::snprintf(error, cap, "%p is not a stream of this device", stream);
    return EMBER_ERR_INVALID;
  }
  t_current = s == &g_streams[0] ? nullptr : s;
  return EMBER_OK;
}

int32_t stream_synchronize(void*, int32_t, void* stream, char*, size_t) {
  run(resolve(stream));
  return EMBER_OK;
}

int32_t stream_query(void*, int32_t, void* stream, int32_t* done, char*, size_t) {
  std::lock_guard lock(g_mu);
  *done = resolve(stream)->pending.empty() ? 1 : 0;
  return EMBER_OK;
}

int32_t stream_wait_event(void*, int32_t, void* stream, void* event, char*, size_t) {
  std::lock_guard lock(g_mu);
  ++g_count["stream_wait_event"];
  // This device runs each queue when waited for, so a cross-stream dependency is honoured by
  // running the event's stream now.
  if (auto* e = static_cast<QueueEvent*>(event); e->stream && e->stream != resolve(stream))
    run(e->stream);
  return EMBER_OK;
}

int32_t event_create(void*, int32_t, int32_t flags, void** out, char*, size_t) {
  std::lock_guard lock(g_mu);
  ++g_count["event_live"];
  *out = new QueueEvent{nullptr, 0, (flags & EMBER_EVENT_TIMING) != 0};
  return EMBER_OK;
}

void event_destroy(void*, int32_t, void* event) {
  std::lock_guard lock(g_mu);
  --g_count["event_live"];
  delete static_cast<QueueEvent*>(event);
}

int32_t event_record(void*, int32_t, void* event, void* stream, char*, size_t) {
  std::lock_guard lock(g_mu);
  auto* e = static_cast<QueueEvent*>(event);
  e->stream = resolve(stream);
  e->mark = e->stream->queued;
  return EMBER_OK;
}

int32_t event_synchronize(void*, int32_t, void* event, char*, size_t) {
  auto* e = static_cast<QueueEvent*>(event);
  if (e->stream) run(e->stream);
  return EMBER_OK;
}

int32_t event_query(void*, int32_t, void* event, int32_t* done, char*, size_t) {
  std::lock_guard lock(g_mu);
  auto* e = static_cast<QueueEvent*>(event);
  *done = (!e->stream || e->stream->done >= e->mark) ? 1 : 0;
  return EMBER_OK;
}

int32_t event_elapsed_ms(void*, int32_t, void* start, void* end, double* ms, char* error,
                         size_t cap) {
  std::lock_guard lock(g_mu);
  auto* a = static_cast<QueueEvent*>(start);
  auto* b = static_cast<QueueEvent*>(end);
  if (!a->timing || !b->timing || !a->stream || a->stream != b->stream ||
      a->stream->done < b->mark) {
    std::snprintf(error, cap, "events not recorded with timing on one stream, or not complete");
    return EMBER_ERR_INVALID;
  }
  *ms = static_cast<double>(b->mark - a->mark);
  return EMBER_OK;
}

int32_t record_stream(void*, int32_t, void* ptr, void* stream, char*, size_t) {
  std::lock_guard lock(g_mu);
  ++g_count["record_stream"];
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%p %d", ptr, stream_index(resolve(stream)));
  g_last_record = buf;
  return EMBER_OK;
}

// neg of a contiguous float32 tensor, queued on the stream the core passed (ABI 1.4).
int32_t neg_kernel(const ember_kernel_call* call) {
  const ember_tensor& in = call->inputs[0];
  const ember_tensor& out = call->outputs[0];
  int64_t n = 1, expected_stride = 1;
  for (int32_t d = in.ndim - 1; d >= 0; --d) {
    if (in.strides[d] != expected_stride || out.strides[d] != expected_stride) {
      std::snprintf(call->error, call->error_capacity, "queue: neg needs contiguous tensors");
      return EMBER_ERR_UNSUPPORTED;
    }
    expected_stride *= in.sizes[d];
    n *= in.sizes[d];
  }
  std::lock_guard lock(g_mu);
  ++g_count["kernel"];
  // The stream field is ABI 1.4; this plugin runs on 1.3 cores too.
  QueueStream* s =
      call->struct_size > offsetof(ember_kernel_call, stream) ? resolve(call->stream) : current();
  const auto* src = static_cast<const float*>(in.data);
  auto* dst = static_cast<float*>(out.data);
  s->pending.push_back([=] {
    for (int64_t i = 0; i < n; ++i) dst[i] = -src[i];
  });
  ++s->queued;
  return EMBER_OK;
}

int32_t set_option(void*, const char* key, const char* value, char* error, size_t cap) {
  if (std::strcmp(key, "reset") == 0) {
    std::lock_guard lock(g_mu);
    g_count.clear();
    return EMBER_OK;
  }
  std::snprintf(error, cap, "unknown option '%s' (value '%s')", key, value);
  return EMBER_ERR_INVALID;
}

int32_t get_option(void*, const char* key, char* value, size_t cap) {
  std::lock_guard lock(g_mu);
  if (std::strcmp(key, "last_record_stream") == 0) {
    std::snprintf(value, cap, "%s", g_last_record.c_str());
    return EMBER_OK;
  }
  if (std::strcmp(key, "pending") == 0) {
    size_t n = 0;
    for (const QueueStream& s : g_streams) n += s.pending.size();
    std::snprintf(value, cap, "%zu", n);
    return EMBER_OK;
  }
  if (std::strncmp(key, "count.", 6) == 0) {
    std::snprintf(value, cap, "%lld", g_count[key + 6]);
    return EMBER_OK;
  }
  return EMBER_ERR_INVALID;
}

int32_t init(const ember_host_v1*, const ember_registrar_v1* reg, char* error, size_t cap) {
  static const ember_device_type_v1 table = [] {
    // Priority below the CPU's: never the default device.
    ember_device_type_v1 t = ember::sdk::device_type(
        "queue", 50, /*host_accessible=*/false, device_count, alloc, free_block, copy, synchronize);
    t.alloc_checked = alloc_checked;
    t.host_alloc = host_alloc;
    t.host_free = host_free;
    t.copy_async = copy_async;
    t.stream_get = stream_get;
    t.stream_from_pool = stream_from_pool;
    t.stream_set_current = stream_set_current;
    t.stream_synchronize = stream_synchronize;
    t.stream_query = stream_query;
    t.stream_wait_event = stream_wait_event;
    t.event_create = event_create;
    t.event_destroy = event_destroy;
    t.event_record = event_record;
    t.event_synchronize = event_synchronize;
    t.event_query = event_query;
    t.event_elapsed_ms = event_elapsed_ms;
    t.record_stream = record_stream;
    t.set_option = set_option;
    t.get_option = get_option;
    return t;
  }();
  const int32_t type = reg->device_type(reg->ctx, &table);
  if (type < 0) {
    std::snprintf(error, cap, "could not register the queue device type");
    return EMBER_ERR_INTERNAL;
  }
  reg->kernel(reg->ctx, "neg", type, 1u << EMBER_F32, 0, neg_kernel);
  return EMBER_OK;
}

const ember_plugin_v1 kDescriptor =
    ember::sdk::plugin_descriptor(3, "queue", "1.0", "test fixture", init);

}  // namespace

EMBER_PLUGIN_DEFINE_ENTRY(kDescriptor)
