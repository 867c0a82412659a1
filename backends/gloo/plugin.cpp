// The gloo communication backend: collectives between processes over TCP on CPU tensors, with
// Debian's Gloo (libgloo). Registered through ABI 1.5 (plugin_abi.h, Note [Communication
// backends are plugins]); the core does the rendezvous, ordering, averages and diagnosis.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/tcp/pair.h>
#include <gloo/transport/tcp/unbound_buffer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_comm.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

namespace ember::gloo_backend {
namespace {
using std::chrono::milliseconds;

/** Gloo's rendezvous store on top of the core's (ember_store_v1). */
class StoreAdapter : public ::gloo::rendezvous::Store {
 public:
  StoreAdapter(const ember_store_v1* store, milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    char err[512] = {0};
    if (store_->set(store_->ctx, key.c_str(), data.data(), data.size(), err, sizeof(err)) !=
        EMBER_OK)
      throw ::gloo::IoException(err);
  }
  std::vector<char> get(const std::string& key) override { return get(key, timeout_); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    for (const std::string& k : keys) get(k, timeout);
  }

 private:
  std::vector<char> get(const std::string& key, milliseconds timeout) {
    std::vector<char> out;
    char err[512] = {0};
    auto sink = [](void* user, const void* data, size_t size) {
      const auto* p = static_cast<const char*>(data);
      static_cast<std::vector<char>*>(user)->assign(p, p + size);
    };
    if (store_->get(store_->ctx, key.c_str(), timeout.count(), sink, &out, err, sizeof(err)) !=
        EMBER_OK)
      throw ::gloo::IoException(err);
    return out;
  }
  const ember_store_v1* store_;
  milliseconds timeout_;
};

namespace tcp = ::gloo::transport::tcp;

// Note [A dead peer fails the waits on it]
// Every operation here, collectives and send/recv alike, waits on Gloo's unbound buffers. When a
// connection breaks (the peer died: end of file or a reset), this Gloo (Debian's
// 0.0~git20220518.5b14351) fails the operations still queued on that pair, but not the two it is
// moving: the receive whose bytes are arriving (Pair::rx_) and the sends being written
// (Pair::tx_). Their waits ran out the whole timeout (30 minutes by default) though the peer was
// gone, and so did every rank waiting on this one; a receive of 256 MiB from a rank killed in
// the middle did. Pair::close (Note [A failed call closes the connections]) fails no wait at
// all, so a recv on a thread of its own slept on after a collective failed beside it.
// Gloo's transport is open for the fix: the plugin's Device makes a Context that makes the Pair
// below, which, as it moves to CLOSED (changeState: virtual, called under the pair's lock, after
// Gloo recorded the pair's error), fails every wait it still holds with that error, or with one
// of its own if this rank closed it (and records which peer broke it, for the message). Calls that
// succeed run exactly as before. Gloo fails buffers as a friend (UnboundBuffer::signalException
// is protected); the plugin takes a pointer to it through a derived class, which C++ allows.
// The tcp headers include gloo/common/memory.h, which libgloo-dev lacks: compat/ declares what
// they use (Note [Gloo's missing memory.h]).

// Fails an unbound buffer's waits with `ex` (what Gloo's Pair does as its friend).
struct UnboundBufferAccess : tcp::UnboundBuffer {
  static void fail(tcp::UnboundBuffer& buf, std::exception_ptr ex) {
    (buf.*(&UnboundBufferAccess::signalException))(std::move(ex));
  }
};

// Gloo's message without its "[file:line] " prefix.
std::string gloo_text(const std::string& what) {
  const size_t end = what.find("] ");
  return what.rfind('[', 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

/** A Gloo TCP pair whose waits fail when it closes (Note [A dead peer fails the waits on it]). */
class Pair final : public tcp::Pair {
 public:
  using tcp::Pair::Pair;

  // Note [Closing the pair before its members die]
  // Gloo's ~Pair closes the connection under the pair's lock, so that the device thread stops
  // calling into it. By then this class's members are gone, and the device thread, seeing the
  // peer hang up in that gap, ran changeState through this class on a destroyed reason_ (a leak
  // the sanitizers reported at the end of a four-rank job, one run in ten). So this destructor
  // closes first, exactly as Gloo's would (base changeState, not this class's: nothing waits on a
  // pair being destroyed), and Gloo's then finds the pair CLOSED and does nothing.
  ~Pair() override {
    std::lock_guard lock(m_);
    if (state_ != CLOSED) tcp::Pair::changeState(CLOSED);
  }

  /** Gloo's reason if the peer broke this connection (not a failure on this rank); else empty. */
  std::string broken_by_peer() {
    std::lock_guard lock(m_);
    return state_ == CLOSED && !closed_here_ ? reason_ : std::string();
  }

 protected:
  void changeState(state next) noexcept override {
    if (next == CLOSED && state_ != CLOSED) fail_waits();
    tcp::Pair::changeState(next);
  }

 private:
  void fail_waits() noexcept {
    try {
      if (ex_ == nullptr) {  // Pair::close: this rank closes it after a failure
        closed_here_ = true;
        ex_ = std::make_exception_ptr(::gloo::IoException(
            "this rank closed its connection to rank " + std::to_string(rank_)));
      }
      try {
        std::rethrow_exception(ex_);
      } catch (const std::exception& e) {
        reason_ = gloo_text(e.what());
      }
      // A wait of this rank that ran out closes every pair with this message (Gloo's
      // Context::signalException): not the peer's doing either.
      if (reason_.find("Application timeout") != std::string::npos) closed_here_ = true;
      auto fail = [&](const ::gloo::WeakNonOwningPtr<tcp::UnboundBuffer>& weak) {
        ::gloo::NonOwningPtr<tcp::UnboundBuffer> buf(weak);
        if (buf) UnboundBufferAccess::fail(*buf.operator->(), ex_);
      };
      fail(rx_.ubuf);
      for (const tcp::Op& op : tx_) fail(op.ubuf);
      for (const auto& [slot, ops] : localPendingSend_)
        for (const auto& op : ops) fail(std::get<0>(op));
      for (const auto& [slot, ops] : localPendingRecv_)
        for (const auto& op : ops) fail(std::get<0>(op));
    } catch (...) {  // out of memory for a message: the waits still end at their timeout
    }
  }

  bool closed_here_ = false;  // under m_, as Gloo's own members
  std::string reason_;
};

/** Gloo's TCP context, making Pairs of the class above. */
class Context final : public tcp::Context {
 public:
  using tcp::Context::Context;
  std::unique_ptr<::gloo::transport::Pair>& createPair(int rank) override {
    pairs_[rank] = std::make_unique<Pair>(this, device_.get(), rank, getTimeout());
    return pairs_[rank];
  }
};

/** Gloo's TCP device, making Contexts of the class above. */
class Device final : public tcp::Device {
 public:
  using tcp::Device::Device;
  std::shared_ptr<::gloo::transport::Context> createContext(int rank, int size) override {
    return std::make_shared<Context>(shared_from_this(), rank, size);
  }
};

// Note [A failed call closes the connections]
// A collective that fails (a peer that died, a timeout) leaves the other ranks where they were:
// one that waits for bytes from this rank would wait out its whole timeout, and by then the
// ranks that failed first may be gone, with the rendezvous store that names the culprit (Note
// [Naming the ranks that failed] in the core). So a failure closes every connection of the
// communicator at once (Gloo resets them), as NCCL's backend aborts its communicator: the peers'
// calls fail within moments and every rank diagnoses the same failure while the store is still
// up. Closing fails this rank's own calls still waiting on other threads as well (a recv beside
// the collective), with the first failure (Note [A dead peer fails the waits on it]). Bytes half
// sent cannot be taken back either, so the communicator stays unusable: every later call fails
// at once, naming what broke it.
struct Comm {
  std::shared_ptr<::gloo::transport::Device> device;
  std::shared_ptr<::gloo::rendezvous::Context> context;
  int rank = 0, size = 1;
  std::mutex mu;          // guards broken_by (point-to-point calls run on threads of their own)
  std::string broken_by;  // why the connections were closed; empty while usable
};

// Reductions, element type T computed in Acc (float for the 16-bit floats).
template <typename T, typename Acc, typename F>
void reduce_with(void* c, const void* a, const void* b, size_t n, F f) {
  auto* out = static_cast<T*>(c);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i)
    out[i] = static_cast<T>(f(static_cast<Acc>(x[i]), static_cast<Acc>(y[i])));
}

template <typename T, typename Acc>
::gloo::AllreduceOptions::Func reduction_for(int32_t op) {
  switch (op) {
    case EMBER_REDUCE_SUM:
      return [](void* c, const void* a, const void* b, size_t n) {
        reduce_with<T, Acc>(c, a, b, n, [](Acc x, Acc y) { return x + y; });
      };
    case EMBER_REDUCE_PRODUCT:
      return [](void* c, const void* a, const void* b, size_t n) {
        reduce_with<T, Acc>(c, a, b, n, [](Acc x, Acc y) { return x * y; });
      };
    case EMBER_REDUCE_MIN:
      return [](void* c, const void* a, const void* b, size_t n) {
        reduce_with<T, Acc>(c, a, b, n, [](Acc x, Acc y) { return std::min(x, y); });
      };
    default:
      return [](void* c, const void* a, const void* b, size_t n) {
        reduce_with<T, Acc>(c, a, b, n, [](Acc x, Acc y) { return std::max(x, y); });
      };
  }
}

// Note [Bool reductions]
// As on other backends, a bool tensor sums to "any" (logical or), multiplies to "all"; min and
// max are and / or.
::gloo::AllreduceOptions::Func bool_reduction(int32_t op) {
  const bool any = op == EMBER_REDUCE_SUM || op == EMBER_REDUCE_MAX;
  if (any)
    return [](void* c, const void* a, const void* b, size_t n) {
      reduce_with<uint8_t, int>(c, a, b, n, [](int x, int y) { return (x | y) != 0; });
    };
  return [](void* c, const void* a, const void* b, size_t n) {
    reduce_with<uint8_t, int>(c, a, b, n, [](int x, int y) { return (x & y) != 0; });
  };
}

::gloo::AllreduceOptions::Func reduction(int32_t dtype, int32_t op) {
  switch (dtype) {
    case EMBER_F32:
      return reduction_for<float, float>(op);
    case EMBER_F64:
      return reduction_for<double, double>(op);
    case EMBER_F16:
      return reduction_for<sdk::Half, float>(op);
    case EMBER_BF16:
      return reduction_for<sdk::BFloat16, float>(op);
    case EMBER_I64:
      return reduction_for<int64_t, int64_t>(op);
    case EMBER_I32:
      return reduction_for<int32_t, int32_t>(op);
    case EMBER_I8:
      return reduction_for<int8_t, int8_t>(op);
    case EMBER_U8:
      return reduction_for<uint8_t, uint8_t>(op);
    case EMBER_BOOL:
      return bool_reduction(op);
    default:
      return nullptr;
  }
}

// Note [Mismatched calls never meet]
// Gloo matches messages by slot, built from the operation's tag. The tag here is a hash of what
// the call is (operation, dtype, element counts, reduction, root), so ranks that disagree (one
// reduces 4 elements, another 3) wait on different slots instead of exchanging bytes of the
// wrong size: both run into the timeout and the core names what each rank was doing. Matching
// calls cost nothing extra.
uint32_t signature(const ember_collective_call& call) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<uint8_t>(v >> (8 * i));
      h *= 1099511628211ull;
    }
  };
  mix(call.op);
  mix(call.reduce);
  mix(call.peer);
  mix(call.input.data ? call.input.dtype : call.output.dtype);
  mix(call.input.data ? sdk::numel(call.input) : -1);
  mix(call.output.data ? sdk::numel(call.output) : -1);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// All-reduce of n elements of sizeof(S) bytes each, combined by `fn`.
template <typename S>
void allreduce_as(Comm& c, char* buf, size_t n, const ::gloo::AllreduceOptions::Func& fn,
                  milliseconds timeout, uint32_t tag) {
  ::gloo::AllreduceOptions opts(c.context);
  opts.setTag(tag);
  opts.setOutput(reinterpret_cast<S*>(buf), n);
  opts.setReduceFunction(fn);
  opts.setTimeout(timeout);
  ::gloo::allreduce(opts);
}

// Gloo moves bytes; every dtype is sent as chars except where a reduction needs its type.
int32_t run(Comm& c, const ember_collective_call& call) {
  const milliseconds timeout(call.timeout_ms);
  const size_t esize = sdk::itemsize(call.input.data ? call.input.dtype : call.output.dtype);
  auto* in = static_cast<char*>(call.input.data);
  auto* out = static_cast<char*>(call.output.data);
  const size_t in_bytes = call.input.data ? sdk::numel(call.input) * esize : 0;
  const size_t out_bytes = call.output.data ? sdk::numel(call.output) * esize : 0;
  const uint32_t tag = signature(call);
  switch (call.op) {
    case EMBER_COLL_ALL_REDUCE:
    case EMBER_COLL_REDUCE_SCATTER: {
      auto fn = reduction(call.input.dtype, call.reduce);
      if (!fn) {
        std::snprintf(call.error, call.error_capacity, "gloo cannot reduce dtype %d",
                      call.input.dtype);
        return EMBER_ERR_UNSUPPORTED;
      }
      const size_t n = in_bytes / esize;
      // Note [Gloo's reduce-scatter]: this Gloo has no reduce-scatter with options; it is an
      // all-reduce of a copy and this rank's block of the result (twice the traffic).
      std::vector<char> scratch;
      char* buf = in;
      if (call.op == EMBER_COLL_REDUCE_SCATTER) {
        scratch.assign(in, in + in_bytes);
        buf = scratch.data();
      }
      if (n > 0) {
        switch (esize) {  // Gloo splits the buffer by its element size: use one of the same
          case 8:
            allreduce_as<int64_t>(c, buf, n, fn, timeout, tag);
            break;
          case 4:
            allreduce_as<int32_t>(c, buf, n, fn, timeout, tag);
            break;
          case 2:
            allreduce_as<uint16_t>(c, buf, n, fn, timeout, tag);
            break;
          default:
            allreduce_as<uint8_t>(c, buf, n, fn, timeout, tag);
            break;
        }
      }
      if (call.op == EMBER_COLL_REDUCE_SCATTER)
        std::memcpy(out, buf + static_cast<size_t>(c.rank) * out_bytes, out_bytes);
      return EMBER_OK;
    }
    case EMBER_COLL_BROADCAST: {
      ::gloo::BroadcastOptions opts(c.context);
      opts.setTag(tag);
      opts.setOutput(out, out_bytes);
      opts.setRoot(call.peer);
      opts.setTimeout(timeout);
      if (out_bytes > 0) ::gloo::broadcast(opts);
      return EMBER_OK;
    }
    case EMBER_COLL_ALL_GATHER: {
      ::gloo::AllgatherOptions opts(c.context);
      opts.setTag(tag);
      opts.setInput(in, in_bytes);
      opts.setOutput(out, out_bytes);
      opts.setTimeout(timeout);
      if (in_bytes > 0) ::gloo::allgather(opts);
      return EMBER_OK;
    }
    case EMBER_COLL_ALL_TO_ALL: {
      ::gloo::AlltoallOptions opts(c.context);
      opts.setTag(tag);
      opts.setInput(in, in_bytes);
      opts.setOutput(out, out_bytes);
      opts.setTimeout(timeout);
      if (in_bytes > 0) ::gloo::alltoall(opts);
      return EMBER_OK;
    }
    case EMBER_COLL_BARRIER: {
      ::gloo::BarrierOptions opts(c.context);
      opts.setTag(tag);
      opts.setTimeout(timeout);
      ::gloo::barrier(opts);
      return EMBER_OK;
    }
    case EMBER_COLL_SEND:
    case EMBER_COLL_RECV: {
      const bool send = call.op == EMBER_COLL_SEND;
      char* data = send ? in : out;
      const size_t bytes = send ? in_bytes : out_bytes;
      // Slots above 2^32 stay clear of those the collectives use for their tags.
      const uint64_t slot = (uint64_t{1} << 32) + static_cast<uint32_t>(call.tag);
      auto buf = c.context->createUnboundBuffer(data, bytes);
      if (send) {
        buf->send(call.peer, slot);
        buf->waitSend(timeout);
      } else {
        buf->recv(call.peer, slot);
        buf->waitRecv(timeout);
      }
      return EMBER_OK;
    }
    default:
      std::snprintf(call.error, call.error_capacity, "gloo has no operation %d", call.op);
      return EMBER_ERR_UNSUPPORTED;
  }
}

// Gloo reports a timeout and a broken connection alike as an IoException; its text says which.
int32_t failure(const std::exception& e, char* error, size_t cap) {
  std::snprintf(error, cap, "%s", e.what());
  const std::string what = e.what();
  return what.find("imed out") != std::string::npos ? EMBER_ERR_TIMEOUT : EMBER_ERR_PEER;
}

int32_t available(void*, char*, size_t) {
  return 1;
}

int32_t create(void*, const ember_comm_config* cfg, void** out, char* error, size_t cap) {
  try {
    auto c = std::make_unique<Comm>();
    c->rank = cfg->rank;
    c->size = cfg->world_size;
    tcp::attr attr;
    attr.hostname = cfg->local_address && cfg->local_address[0] ? cfg->local_address : "127.0.0.1";
    c->device = std::make_shared<Device>(tcp::CreateDeviceAttr(attr));
    c->context = std::make_shared<::gloo::rendezvous::Context>(cfg->rank, cfg->world_size);
    c->context->setTimeout(milliseconds(cfg->timeout_ms));
    StoreAdapter store(cfg->store, milliseconds(cfg->timeout_ms));
    c->context->connectFullMesh(store, c->device);
    *out = c.release();
    return EMBER_OK;
  } catch (const std::exception& e) {
    return failure(e, error, cap);
  } catch (...) {
    std::snprintf(error, cap, "gloo failed to connect (non-standard exception)");
    return EMBER_ERR_INTERNAL;
  }
}

// Closes the communicator's connections because of `why` (Note [A failed call closes the
// connections]); the first reason is kept.
void close_after(Comm& c, const char* why) {
  std::lock_guard lock(c.mu);
  if (!c.broken_by.empty()) return;
  c.broken_by = why;
  try {
    c.context->closeConnections();
  } catch (...) {  // a pair that cannot close is closed by the peer's own failure
  }
}

// The message and status of a call that failed with `e`: the ranks that broke their connections
// (Note [A dead peer fails the waits on it]), or the other call whose failure closed them (Note
// [A failed call closes the connections]), or Gloo's own words (a timeout, for one).
int32_t call_failure(Comm& c, const std::exception& e, char* error, size_t cap) {
  const int32_t status = failure(e, error, cap);
  if (status == EMBER_ERR_TIMEOUT) return status;
  {
    std::lock_guard lock(c.mu);
    if (!c.broken_by.empty()) {
      std::snprintf(error, cap,
                    "another call of this rank failed while this one waited, and closed the "
                    "connections: %s",
                    c.broken_by.c_str());
      return EMBER_ERR_PEER;
    }
  }
  std::string ranks, why;
  int broken = 0;
  try {
    for (int r = 0; r < c.size; ++r) {
      auto* pair = r == c.rank ? nullptr : dynamic_cast<Pair*>(c.context->getPair(r).get());
      const std::string reason = pair ? pair->broken_by_peer() : std::string();
      if (reason.empty()) continue;
      ranks += (broken++ ? ", " : "") + std::to_string(r);
      if (why.empty()) why = reason;
    }
  } catch (const std::exception&) {  // no pairs to ask: Gloo's words stand
    broken = 0;
  }
  if (broken == 1)
    std::snprintf(error, cap,
                  "rank %s broke its connection while this rank waited (it exited, or failed and "
                  "closed its connections; Gloo: %s)",
                  ranks.c_str(), why.c_str());
  else if (broken > 1)
    std::snprintf(error, cap,
                  "ranks %s broke their connections while this rank waited (they exited, or "
                  "failed and closed their connections; Gloo, on the first: %s)",
                  ranks.c_str(), why.c_str());
  return status;
}

int32_t collective(void*, void* comm, const ember_collective_call* call) {
  Comm& c = *static_cast<Comm*>(comm);
  {
    std::lock_guard lock(c.mu);
    if (!c.broken_by.empty()) {
      std::snprintf(call->error, call->error_capacity,
                    "the gloo communicator is unusable since an earlier call failed: %s (destroy "
                    "the process group and initialize it again)",
                    c.broken_by.c_str());
      return EMBER_ERR_PEER;
    }
  }
  int32_t status = EMBER_ERR_INTERNAL;
  try {
    return run(c, *call);
  } catch (const std::exception& e) {
    status = call_failure(c, e, call->error, call->error_capacity);
  } catch (...) {
    std::snprintf(call->error, call->error_capacity, "gloo failed (non-standard exception)");
  }
  close_after(c, call->error);
  return status;
}

void destroy(void*, void* comm) {
  try {
    delete static_cast<Comm*>(comm);
  } catch (...) {  // a destructor that throws must not cross the boundary
  }
}

constexpr ember_comm_backend_v1 kTable =
    sdk::comm_backend("gloo", "cpu,reference", available, create, collective, destroy);

const ember_plugin_v1 kDescriptor = sdk::plugin_descriptor(
    5, "gloo", "0.1.0", "Gloo 0.5 over TCP, " __VERSION__, sdk::init_comm_backend<kTable>);

}  // namespace
}  // namespace ember::gloo_backend

EMBER_PLUGIN_DEFINE_ENTRY(ember::gloo_backend::kDescriptor)
