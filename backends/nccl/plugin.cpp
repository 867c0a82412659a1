// The nccl communication backend: collectives between GPUs with NVIDIA's NCCL, on CUDA tensors.
// Registered through ABI 1.5 (plugin_abi.h, Note [Communication backends are plugins]); the core
// does the rendezvous store, the ordering, averages and diagnosis, NCCL the transport. Plain C++
// against the CUDA runtime and NCCL: no kernels of its own. NCCL is dlopen'ed by the first create
// (Note [Lazy NCCL] in lazy_nccl.cpp); every NCCL call goes through its table, nccl().
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backends/nccl/lazy_nccl.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_comm.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "the nccl backend needs NCCL 2.14 or newer (non-blocking communicators)"
#endif

#define EMBER_NCCL_STR2(x) #x
#define EMBER_NCCL_STR(x) EMBER_NCCL_STR2(x)
/** The NCCL this plugin was compiled against, for `ember plugins`. */
#define EMBER_NCCL_BUILD \
  "NCCL " EMBER_NCCL_STR(NCCL_MAJOR) "." EMBER_NCCL_STR(NCCL_MINOR) "." EMBER_NCCL_STR(NCCL_PATCH)

namespace ember::nccl_backend {
namespace {
using Clock = std::chrono::steady_clock;

// Note [No GPU is not an error]
// Every Ember process loads this plugin at start-up. On a host with the CUDA libraries but no
// GPU or no driver, cudaGetDeviceCount fails fast; `available` then returns 0 with the CUDA
// runtime's reason, and the plugin stays loaded and harmless (as the cuda plugin's Note [No
// device is not an error]). Nothing here opens or initializes NCCL before create (Note [Lazy
// NCCL] in lazy_nccl.cpp).

// Note [NCCL calls never block the host]
// Communicators are created non-blocking (ncclConfig_t::blocking = 0): every NCCL call returns at
// once, with ncclInProgress while NCCL still connects or enqueues, and the communicator's state
// (ncclCommGetAsyncError) is polled until it leaves ncclInProgress; no other NCCL call on that
// communicator, and no CUDA work on its streams, may come before that. An operation is then
// complete when an event recorded after it on its stream is; that event and the communicator's
// asynchronous error are polled together until call->timeout_ms runs out, with pauses growing
// from 50 us to 1 ms. A timeout, or an error NCCL reports as fatal (a peer that died, a network
// failure), aborts the communicator (ncclCommAbort stops its kernels, so no buffer is written
// after the call returned) and every later call on it fails at once, naming what broke it.

// Note [The caller's stream]
// Collectives run on call->stream, which the ABI defines as the current stream of the tensors'
// device, so they start after the kernels that produced their inputs, and the host then waits
// for them. NULL is CUDA's legacy default stream, which orders only against blocking streams; the
// cuda plugin's streams are all non-blocking, so a core that passes NULL for CUDA tensors must
// have synchronized their producers first. Messages run on their pair's own stream (Note
// [Point-to-point on communicators of their own]), made to wait for call->stream first.

/** Writes a printf-style message into `error` and returns `status`. */
int32_t fail(char* error, size_t cap, int32_t status, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
int32_t fail(char* error, size_t cap, int32_t status, const char* fmt, ...) {
  if (error && cap > 0) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(error, cap, fmt, args);
    va_end(args);
  }
  return status;
}

/** The NCCL table. Only valid once a create loaded it: every NCCL call comes after one. */
const NcclApi& nccl() {
  return *nccl_api_if_loaded();
}

/** A CUDA error as "text (cudaErrorName)"; clears the thread's last error. */
std::string cuda_text(cudaError_t e) {
  cudaGetLastError();
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

/** A NCCL result with NCCL's last message, when it has one. */
std::string nccl_text(ncclResult_t r, ncclComm_t comm) {
  std::string s = nccl().get_error_string(r);
  const char* last = nccl().get_last_error(comm);
  if (last && *last) s += std::string(": ") + last;
  return s;
}

/** The NCCL type an ember dtype travels as; false for none. */
bool nccl_type(int32_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case EMBER_F32:
      *out = ncclFloat32;
      return true;
    case EMBER_F64:
      *out = ncclFloat64;
      return true;
    case EMBER_F16:
      *out = ncclFloat16;
      return true;
    case EMBER_BF16:
      *out = ncclBfloat16;
      return true;
    case EMBER_I64:
      *out = ncclInt64;
      return true;
    case EMBER_I32:
      *out = ncclInt32;
      return true;
    case EMBER_I8:
      *out = ncclInt8;
      return true;
    case EMBER_U8:
    case EMBER_BOOL:
      *out = ncclUint8;
      return true;
    default:
      return false;
  }
}

/** The NCCL reduction of `reduce` on `dtype`; false for none. A bool (0 or 1 in a byte) sums to
 *  "any" and multiplies to "all", which max and min compute (Note [Bool reductions] in gloo). */
bool nccl_op(int32_t dtype, int32_t reduce, ncclRedOp_t* out) {
  if (dtype == EMBER_BOOL) {
    if (reduce == EMBER_REDUCE_SUM || reduce == EMBER_REDUCE_MAX)
      reduce = EMBER_REDUCE_MAX;
    else if (reduce == EMBER_REDUCE_PRODUCT || reduce == EMBER_REDUCE_MIN)
      reduce = EMBER_REDUCE_MIN;
  }
  switch (reduce) {
    case EMBER_REDUCE_SUM:
      *out = ncclSum;
      return true;
    case EMBER_REDUCE_PRODUCT:
      *out = ncclProd;
      return true;
    case EMBER_REDUCE_MIN:
      *out = ncclMin;
      return true;
    case EMBER_REDUCE_MAX:
      *out = ncclMax;
      return true;
    default:
      return false;
  }
}

/** A CUDA event that destroys itself (work it marks may still be pending). */
class Event {
 public:
  Event() = default;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  /** Creates the event (without timing); cudaSuccess or why not. */
  cudaError_t create() { return cudaEventCreateWithFlags(&event_, cudaEventDisableTiming); }
  /** The handle. */
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/** Pauses between polls: none for the first few, then 50 us doubling up to 1 ms. */
class Backoff {
 public:
  /** Waits before the next poll. */
  void pause() {
    if (round_++ < 16) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(pause_);
    pause_ = std::min<std::chrono::microseconds>(pause_ * 2, std::chrono::milliseconds(1));
  }

 private:
  int round_ = 0;
  std::chrono::microseconds pause_{50};
};

/** Polls a communicator that returned ncclInProgress until its state is settled or the deadline;
 *  the state, or ncclInProgress when the deadline passed. */
ncclResult_t settle(ncclComm_t comm, Clock::time_point deadline) {
  Backoff backoff;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = nccl().comm_get_async_error(comm, &state);
    if (r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (Clock::now() >= deadline) return ncclInProgress;
    backoff.pause();
  }
}

// ---------------------------------------------------------------------------------------------
// Communicators

/** One NCCL communicator, used by one thread at a time (NCCL communicators are not thread-safe),
 *  and what made it unusable. */
struct Link {
  std::mutex mu;  // held around every NCCL call on `comm`
  ncclComm_t comm = nullptr;
  bool aborted = false;   // under mu
  std::string broken_by;  // why it was aborted, under mu

  /** Aborts the communicator (mu held): its kernels stop, later calls fail naming `why`. */
  void abort_locked(const std::string& why) {
    if (comm) nccl().comm_abort(comm);
    comm = nullptr;
    if (!aborted) broken_by = why;
    aborted = true;
  }
};

// Note [Point-to-point on communicators of their own]
// The core runs every send and receive on a thread of its own beside the collectives (Note
// [Point-to-point runs beside the queue] in process_group.cpp), so how they interleave with the
// collectives and with each other differs between ranks. NCCL runs the operations of one
// communicator in the order they were issued: on one communicator a receive issued before an
// all-reduce on one rank and after it on the other would deadlock both. So each ordered pair of
// ranks (src -> dst) gets a two-rank communicator of its own, made at its first message (src
// writes a unique id into the store under "nccl/p2p/<src>-<dst>", dst reads it) with a stream of
// its own that does not synchronize with the default stream. Messages from src to dst are then
// matched in the order they were issued, and never wait behind a collective or a message going
// the other way. NCCL has no tags: the tag is not checked, only the order. The store must live as
// long as the communicator (the core's does: it belongs to the process group).

/** The communicator and stream of messages from one rank to another. */
struct Pair {
  Link link;
  cudaStream_t stream = nullptr;
  bool has_id = false;  // under link.mu
  ncclUniqueId id;      // the pair's, once has_id
};

/** One process group's NCCL communicator, its device and its point-to-point pairs. */
struct Comm {
  int rank = 0, size = 1, device = 0;
  int64_t timeout_ms = 0;
  const ember_store_v1* store = nullptr;
  Link main;               // the collectives, in the order the core issues them
  int* scratch = nullptr;  // one int on the device: the barrier's all-reduce
  std::mutex pairs_mu;
  std::map<std::pair<int, int>, std::unique_ptr<Pair>> pairs;  // (src, dst), under pairs_mu
};

/** Joins `link` as `rank` of `nranks` with `id`, non-blocking, within the deadline. */
int32_t join_link(Link& link, int nranks, int rank, const ncclUniqueId& id,
                  Clock::time_point deadline, int64_t timeout_ms, const char* what, char* error,
                  size_t cap) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // Note [NCCL calls never block the host]
  ncclComm_t comm = nullptr;
  ncclResult_t r = nccl().comm_init_rank_config(&comm, nranks, id, rank, &config);
  if (r == ncclInProgress || (r == ncclSuccess && comm)) r = settle(comm, deadline);
  if (r == ncclInProgress) {
    if (comm) nccl().comm_abort(comm);
    return fail(error, cap, EMBER_ERR_TIMEOUT,
                "NCCL did not connect %s within %lld ms (does every rank create the process "
                "group, each on a GPU of its own?)",
                what, static_cast<long long>(timeout_ms));
  }
  if (r != ncclSuccess) {
    const std::string text = nccl_text(r, comm);
    if (comm) nccl().comm_abort(comm);
    return fail(error, cap, EMBER_ERR_PEER, "NCCL could not connect %s: %s", what, text.c_str());
  }
  link.comm = comm;
  return EMBER_OK;
}

/** Reads the unique id `key` from the store (waiting up to the timeout). */
int32_t store_get_id(const ember_store_v1* store, const char* key, int64_t timeout_ms,
                     ncclUniqueId* id, char* error, size_t cap) {
  std::string bytes;
  auto sink = [](void* user, const void* data, size_t size) {
    static_cast<std::string*>(user)->assign(static_cast<const char*>(data), size);
  };
  const int32_t s = store->get(store->ctx, key, timeout_ms, sink, &bytes, error, cap);
  if (s != EMBER_OK) return s;
  if (bytes.size() != sizeof(ncclUniqueId))
    return fail(error, cap, EMBER_ERR_PEER,
                "the store's %s holds %zu bytes, not a NCCL unique id (%zu bytes): is another "
                "backend or NCCL version using this store?",
                key, bytes.size(), sizeof(ncclUniqueId));
  std::memcpy(id, bytes.data(), sizeof(ncclUniqueId));
  return EMBER_OK;
}

/** Makes a unique id and writes it into the store as `key`. */
int32_t store_set_id(const ember_store_v1* store, const char* key, ncclUniqueId* id, char* error,
                     size_t cap) {
  const ncclResult_t r = nccl().get_unique_id(id);
  if (r != ncclSuccess)
    return fail(error, cap, EMBER_ERR_PEER, "ncclGetUniqueId failed: %s",
                nccl_text(r, nullptr).c_str());
  return store->set(store->ctx, key, id, sizeof(*id), error, cap);
}

// Note [A rank's device]
// A rank uses config->device_index (the core passes InitOptions::device_index or LOCAL_RANK), or
// rank % device count when it is -1. CUDA's current device is per thread and the core calls from
// its worker and point-to-point threads, so every entry point sets it again before touching CUDA
// or NCCL; tensors on another device are refused rather than read across devices.

/** Makes `device` the calling thread's current CUDA device. */
int32_t select_device(int device, char* error, size_t cap) {
  const cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess)
    return fail(error, cap, EMBER_ERR_DEVICE, "cudaSetDevice(%d) failed: %s", device,
                cuda_text(e).c_str());
  return EMBER_OK;
}

/** Loads NCCL, picks the device, exchanges the unique id through the store and joins, within the
 *  timeout. */
int32_t create_impl(const ember_comm_config* cfg, void** out, char* error, size_t cap) {
  const NcclApi* api = nullptr;  // loads NCCL the first time (Note [Lazy NCCL])
  if (int32_t s = nccl_api(&api, error, cap); s != EMBER_OK) return s;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return fail(error, cap, EMBER_ERR_DEVICE, "no CUDA device: %s", cuda_text(e).c_str());
  if (count == 0)
    return fail(error, cap, EMBER_ERR_DEVICE, "no CUDA device: the driver reports 0 devices");
  const int device = cfg->device_index >= 0 ? cfg->device_index : cfg->rank % count;
  if (device >= count)
    return fail(error, cap, EMBER_ERR_INVALID,
                "device %d is out of range: this host has %d CUDA device%s (LOCAL_RANK or "
                "InitOptions::device_index picks one)",
                device, count, count == 1 ? "" : "s");
  if (!cfg->store)
    return fail(error, cap, EMBER_ERR_INVALID, "nccl needs the process group's store");
  if (int32_t s = select_device(device, error, cap); s != EMBER_OK) return s;

  auto c = std::make_unique<Comm>();
  c->rank = cfg->rank;
  c->size = cfg->world_size;
  c->device = device;
  c->timeout_ms = cfg->timeout_ms;
  c->store = cfg->store;
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg->timeout_ms);
  ncclUniqueId id;
  const int32_t s =
      cfg->rank == 0 ? store_set_id(cfg->store, "nccl/unique_id", &id, error, cap)
                     : store_get_id(cfg->store, "nccl/unique_id", cfg->timeout_ms, &id, error, cap);
  if (s != EMBER_OK) return s;
  char what[64];
  std::snprintf(what, sizeof(what), "rank %d of %d on cuda:%d", cfg->rank, cfg->world_size, device);
  if (int32_t r = join_link(c->main, cfg->world_size, cfg->rank, id, deadline, cfg->timeout_ms,
                            what, error, cap);
      r != EMBER_OK)
    return r;
  const cudaError_t m = cudaMalloc(reinterpret_cast<void**>(&c->scratch), sizeof(int));
  if (m != cudaSuccess) {
    c->main.abort_locked("its creation failed");
    return fail(error, cap, EMBER_ERR_OUT_OF_MEMORY, "cudaMalloc of the barrier's int failed: %s",
                cuda_text(m).c_str());
  }
  *out = c.release();
  return EMBER_OK;
}

/** create_impl behind the boundary. */
int32_t create(void*, const ember_comm_config* cfg, void** out, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return create_impl(cfg, out, error, cap); });
}

/** The pair src -> dst, connected on first use (Note [Point-to-point on communicators of their
 *  own]); nullptr with the reason in `error` when it cannot be. Its link's mutex is not held. */
Pair* pair_for(Comm& c, int src, int dst, int64_t timeout_ms, char* error, size_t cap,
               int32_t* status) {
  Pair* p = nullptr;
  {
    std::lock_guard lock(c.pairs_mu);
    auto& slot = c.pairs[{src, dst}];
    if (!slot) slot = std::make_unique<Pair>();
    p = slot.get();
  }
  std::lock_guard lock(p->link.mu);
  if (p->link.comm || p->link.aborted) return p;  // ready, or its failure is reported later
  // The id is exchanged once: src writes it at its first message; dst may wait for it again
  // after a receive that timed out, since nothing was connected yet.
  if (!p->has_id) {
    char key[64];
    std::snprintf(key, sizeof(key), "nccl/p2p/%d-%d", src, dst);
    char why[512] = {0};
    *status = src == c.rank ? store_set_id(c.store, key, &p->id, why, sizeof(why))
                            : store_get_id(c.store, key, timeout_ms, &p->id, why, sizeof(why));
    if (*status != EMBER_OK && src == c.rank) {
      fail(error, cap, *status, "writing the store's %s failed: %s", key, why);
      return nullptr;
    }
    if (*status != EMBER_OK) {
      fail(error, cap, *status,
           "rank %d did not open its messages to rank %d within %lld ms (the store's %s: %s)", src,
           dst, static_cast<long long>(timeout_ms), key, why);
      return nullptr;
    }
    p->has_id = true;
  }
  if (!p->stream) {
    const cudaError_t e = cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
      p->stream = nullptr;
      *status = fail(error, cap, EMBER_ERR_DEVICE, "cudaStreamCreateWithFlags failed: %s",
                     cuda_text(e).c_str());
      return nullptr;
    }
  }
  char what[64];
  std::snprintf(what, sizeof(what), "the messages from rank %d to rank %d", src, dst);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  *status =
      join_link(p->link, 2, src == c.rank ? 0 : 1, p->id, deadline, timeout_ms, what, error, cap);
  if (*status == EMBER_OK) return p;
  // Not retried: the other rank gave up on this id as well.
  p->link.aborted = true;
  p->link.broken_by = std::string("connecting ") + what + " failed";
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Operations

/** Where one operation runs: its communicator, the peer's rank in it, its stream. */
struct Target {
  Link* link;
  int peer;
  cudaStream_t stream;
};

/** A failed NCCL call on `link` (mu held): invalid arguments leave the communicator as it was,
 *  anything else aborts it (Note [NCCL calls never block the host]). */
int32_t nccl_failure(Link& link, ncclResult_t r, const char* what, char* error, size_t cap) {
  const std::string text = nccl_text(r, link.comm);
  if (r == ncclInvalidArgument || r == ncclInvalidUsage)
    return fail(error, cap, EMBER_ERR_INVALID, "NCCL %s refused its arguments: %s", what,
                text.c_str());
  link.abort_locked(std::string("an NCCL ") + what + " failed: " + text);
  return fail(error, cap, r == ncclUnhandledCudaError ? EMBER_ERR_DEVICE : EMBER_ERR_PEER,
              "NCCL %s failed: %s (the communicator was aborted)", what, text.c_str());
}

/** Issues `issue(comm, peer, stream)` on `t`, then waits for it on the host within the call's
 *  timeout (Note [NCCL calls never block the host]). */
template <typename Issue>
int32_t run_on(const Target& t, const ember_collective_call& call, const char* what,
               Issue&& issue) {
  char* error = call.error;
  const size_t cap = call.error_capacity;
  const auto deadline = Clock::now() + std::chrono::milliseconds(call.timeout_ms);
  Link& link = *t.link;
  Event done;
  if (const cudaError_t e = done.create(); e != cudaSuccess)
    return fail(error, cap, EMBER_ERR_DEVICE, "cudaEventCreate failed: %s", cuda_text(e).c_str());
  {
    std::lock_guard lock(link.mu);
    if (link.aborted)
      return fail(error, cap, EMBER_ERR_PEER,
                  "the NCCL communicator is unusable since %s (destroy the process group and "
                  "start the job again)",
                  link.broken_by.c_str());
    ncclResult_t r = issue(link.comm, t.peer, t.stream);
    if (r == ncclInProgress) r = settle(link.comm, deadline);
    if (r == ncclInProgress) {
      link.abort_locked(std::string("an NCCL ") + what + " timed out");
      return fail(error, cap, EMBER_ERR_TIMEOUT,
                  "NCCL %s was not even enqueued within %lld ms (the communicator was aborted)",
                  what, static_cast<long long>(call.timeout_ms));
    }
    if (r != ncclSuccess) return nccl_failure(link, r, what, error, cap);
    if (const cudaError_t e = cudaEventRecord(done.get(), t.stream); e != cudaSuccess)
      return fail(error, cap, EMBER_ERR_DEVICE, "cudaEventRecord after NCCL %s failed: %s", what,
                  cuda_text(e).c_str());
  }
  Backoff backoff;
  for (;;) {
    const cudaError_t e = cudaEventQuery(done.get());
    if (e == cudaSuccess) return EMBER_OK;
    {
      std::lock_guard lock(link.mu);
      if (e != cudaErrorNotReady) {
        const std::string text = cuda_text(e);
        link.abort_locked(std::string("an NCCL ") + what + " failed on the device");
        return fail(error, cap, EMBER_ERR_DEVICE,
                    "NCCL %s failed on the device: %s (the communicator was aborted)", what,
                    text.c_str());
      }
      if (link.aborted)  // another thread aborted it while this one waited
        return fail(error, cap, EMBER_ERR_PEER, "NCCL %s was aborted: %s", what,
                    link.broken_by.c_str());
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = nccl().comm_get_async_error(link.comm, &state);
      if (r != ncclSuccess) return nccl_failure(link, r, what, error, cap);
      if (state != ncclSuccess && state != ncclInProgress)
        return nccl_failure(link, state, what, error, cap);
      if (Clock::now() >= deadline) {
        link.abort_locked(std::string("an NCCL ") + what + " timed out");
        return fail(error, cap, EMBER_ERR_TIMEOUT,
                    "NCCL %s did not complete within %lld ms (the communicator was aborted)", what,
                    static_cast<long long>(call.timeout_ms));
      }
    }
    backoff.pause();
  }
}

/** Checks one operation and runs it on its communicator (the main one, or a pair). */
int32_t run(Comm& c, const ember_collective_call& call) {
  char* error = call.error;
  const size_t cap = call.error_capacity;
  const char* label = sdk::collective_name(call.op);
  if (!label) return fail(error, cap, EMBER_ERR_UNSUPPORTED, "nccl has no operation %d", call.op);
  if (int32_t s = select_device(c.device, error, cap); s != EMBER_OK) return s;
  const bool output_only = call.op == EMBER_COLL_BROADCAST || call.op == EMBER_COLL_RECV;
  const ember_tensor& t = output_only ? call.output : call.input;
  ncclDataType_t type = ncclUint8;
  size_t n = 0, esize = 0;
  if (call.op != EMBER_COLL_BARRIER) {
    if (!nccl_type(t.dtype, &type))
      return fail(error, cap, EMBER_ERR_UNSUPPORTED, "nccl cannot move dtype %d", t.dtype);
    n = static_cast<size_t>(sdk::numel(t));
    esize = sdk::itemsize(t.dtype);
    for (const ember_tensor* x : {&call.input, &call.output})
      if (x->data && x->device_index != c.device)
        return fail(error, cap, EMBER_ERR_INVALID,
                    "the tensor is on cuda:%d, this rank's communicator on cuda:%d (move the "
                    "tensor, or pick the device with InitOptions::device_index)",
                    x->device_index, c.device);
  }
  ncclRedOp_t op = ncclSum;
  if ((call.op == EMBER_COLL_ALL_REDUCE || call.op == EMBER_COLL_REDUCE_SCATTER) &&
      !nccl_op(t.dtype, call.reduce, &op))
    return fail(error, cap, EMBER_ERR_UNSUPPORTED, "nccl has no reduction %d", call.reduce);

  const void* in = call.input.data;
  void* out = call.output.data;
  const Target coll{&c.main, 0, static_cast<cudaStream_t>(call.stream)};
  switch (call.op) {
    case EMBER_COLL_ALL_REDUCE:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        return nccl().all_reduce(in, out, n, type, op, comm, s);
      });
    case EMBER_COLL_BROADCAST:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        return nccl().broadcast(out, out, n, type, call.peer, comm, s);
      });
    case EMBER_COLL_ALL_GATHER:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        return nccl().all_gather(in, out, n, type, comm, s);
      });
    case EMBER_COLL_REDUCE_SCATTER:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        return nccl().reduce_scatter(in, out, n / static_cast<size_t>(c.size), type, op, comm, s);
      });
    case EMBER_COLL_ALL_TO_ALL:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        const size_t block = n / static_cast<size_t>(c.size), bytes = block * esize;
        ncclResult_t first = nccl().group_start();
        for (int r = 0; r < c.size && first == ncclSuccess; ++r) {
          const size_t at = static_cast<size_t>(r) * bytes;
          first = nccl().send(static_cast<const char*>(in) + at, block, type, r, comm, s);
          if (first == ncclSuccess)
            first = nccl().recv(static_cast<char*>(out) + at, block, type, r, comm, s);
        }
        const ncclResult_t end = nccl().group_end();  // always closes the group
        return first != ncclSuccess ? first : end;
      });
    case EMBER_COLL_BARRIER:
      return run_on(coll, call, label, [&](ncclComm_t comm, int, cudaStream_t s) {
        return nccl().all_reduce(c.scratch, c.scratch, 1, ncclInt32, ncclSum, comm, s);
      });
    case EMBER_COLL_SEND:
    case EMBER_COLL_RECV: {
      const bool send = call.op == EMBER_COLL_SEND;
      char what[64];
      std::snprintf(what, sizeof(what), "%s %s rank %d", label, send ? "to" : "from", call.peer);
      int32_t status = EMBER_OK;
      Pair* p = send ? pair_for(c, c.rank, call.peer, call.timeout_ms, error, cap, &status)
                     : pair_for(c, call.peer, c.rank, call.timeout_ms, error, cap, &status);
      if (!p) return status;
      // The pair's stream first waits for the work queued so far on the caller's stream.
      Event ready;
      cudaError_t e = ready.create();
      if (e == cudaSuccess)
        e = cudaEventRecord(ready.get(), static_cast<cudaStream_t>(call.stream));
      if (e == cudaSuccess) e = cudaStreamWaitEvent(p->stream, ready.get(), 0);
      if (e != cudaSuccess)
        return fail(error, cap, EMBER_ERR_DEVICE,
                    "ordering NCCL %s after the caller's stream failed: %s", what,
                    cuda_text(e).c_str());
      const Target pair{&p->link, send ? 1 : 0, p->stream};
      return run_on(pair, call, what, [&](ncclComm_t comm, int peer, cudaStream_t s) {
        return send ? nccl().send(in, n, type, peer, comm, s)
                    : nccl().recv(out, n, type, peer, comm, s);
      });
    }
  }
  return fail(error, cap, EMBER_ERR_UNSUPPORTED, "nccl has no operation %d", call.op);
}

/** run behind the boundary. */
int32_t collective(void*, void* comm, const ember_collective_call* call) {
  return sdk::guard(call->error, call->error_capacity,
                    [&] { return run(*static_cast<Comm*>(comm), *call); });
}

// Note [Leaving a group]
// destroy flushes every communicator with ncclCommFinalize, started on all of them before any is
// waited for (so no rank waits on a pair another rank finalizes later), polls them until they
// are quiescent or the group's timeout passes, then frees them with ncclCommDestroy; one that
// failed or did not settle in time is aborted instead. Aborted communicators are already freed.

/** Leaves the group: finalizes or aborts every communicator, frees the streams and scratch. */
void destroy_impl(Comm* c) {
  // At exit the CUDA runtime may be torn down before the core's process group: leak, don't crash.
  if (cudaSetDevice(c->device) == cudaErrorCudartUnloading) return;
  std::vector<Link*> links{&c->main};
  for (auto& [key, p] : c->pairs) links.push_back(&p->link);
  std::vector<ncclResult_t> states(links.size(), ncclSuccess);
  for (size_t i = 0; i < links.size(); ++i) {
    std::lock_guard lock(links[i]->mu);
    if (links[i]->comm) states[i] = nccl().comm_finalize(links[i]->comm);
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(c->timeout_ms);
  for (size_t i = 0; i < links.size(); ++i) {
    std::lock_guard lock(links[i]->mu);
    if (!links[i]->comm) continue;
    if (states[i] == ncclSuccess || states[i] == ncclInProgress)
      states[i] = settle(links[i]->comm, deadline);
    if (states[i] == ncclSuccess)
      nccl().comm_destroy(links[i]->comm);
    else
      nccl().comm_abort(links[i]->comm);
    links[i]->comm = nullptr;
  }
  for (auto& [key, p] : c->pairs)
    if (p->stream) cudaStreamDestroy(p->stream);
  if (c->scratch) cudaFree(c->scratch);
  cudaGetLastError();  // at exit the runtime may be gone already; nothing to report to
}

/** destroy_impl behind the boundary. */
void destroy(void*, void* comm) {
  char ignored[64];
  sdk::guard(ignored, sizeof(ignored), [&] {
    std::unique_ptr<Comm> c(static_cast<Comm*>(comm));
    destroy_impl(c.get());
    return EMBER_OK;
  });
}

// ---------------------------------------------------------------------------------------------
// The plugin

/** 1 if this process sees a CUDA device, else 0 with the reason (Note [No GPU is not an error]). */
int32_t available(void*, char* reason, size_t cap) {
  return sdk::guard_value(reason, cap, 0, [&] {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      const char* hint = "";
      if (e == cudaErrorInsufficientDriver) {  // as the cuda plugin says it
        void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        if (h)
          dlclose(h);
        else
          hint = "; the NVIDIA driver (libcuda.so.1) is not installed";
      }
      std::snprintf(reason, cap, "no CUDA device: %s%s", cuda_text(e).c_str(), hint);
      return 0;
    }
    if (count == 0) {
      std::snprintf(reason, cap, "no CUDA device: the driver reports 0 devices");
      return 0;
    }
    return 1;
  });
}

/** The nccl communication backend, which the plugin's init registers. */
constexpr ember_comm_backend_v1 kTable =
    sdk::comm_backend("nccl", "cuda", available, create, collective, destroy);

const ember_plugin_v1 kDescriptor = sdk::plugin_descriptor(
    5, "nccl", "0.1.0", EMBER_NCCL_BUILD ", " __VERSION__, sdk::init_comm_backend<kTable>);

}  // namespace
}  // namespace ember::nccl_backend

EMBER_PLUGIN_DEFINE_ENTRY(ember::nccl_backend::kDescriptor)
