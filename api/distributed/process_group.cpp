#include "ember/distributed/process_group.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "ember/autograd/grad_mode.h"
#include "ember/dispatch/device_registry.h"
#include "ember/dispatch/stream.h"
#include "ember/ops/elementwise.h"
#include "ember/plugin/loader.h"
#include "ember/plugin_sdk_comm.hpp"
#include "ember/util/error.h"

namespace ember::distributed {
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Work

namespace {
const char* op_name(int32_t op) {
  const char* name = sdk::collective_name(op);
  return name ? name : "collective";
}
}  // namespace

struct Work::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;  // empty: success
  ErrorKind kind = ErrorKind::Distributed;
  milliseconds timeout{0};
  int32_t op = 0;    // with seq, names the operation when a wait outlives the backend's timeout
  uint64_t seq = 0;  // (formatted only then: no string work on the path of every call)
};

// Note [A wait is bounded too]
// The backend bounds each operation by the group's timeout; wait() adds a margin on top, so
// even a backend that ignored its timeout leaves the caller with an error, not a hang.
void Work::wait() const {
  std::unique_lock lock(state_->mu);
  // The diagnosis after a failure takes up to 15 s more (Note [Naming the ranks that failed]).
  const auto margin = state_->timeout + std::chrono::seconds(30);
  const bool done = state_->cv.wait_for(lock, margin, [&] { return state_->done; });
  EMBER_CHECK_AS(DistributedError, done,
                 "[distributed] {} did not finish within {} ms (the backend ignored its timeout; "
                 "the process group is unusable)",
                 fmt::format("{} #{}", op_name(state_->op), state_->seq), margin.count());
  if (!state_->error.empty()) throw_error(state_->kind, state_->error);
}

bool Work::is_completed() const {
  std::lock_guard lock(state_->mu);
  return state_->done;
}

// ---------------------------------------------------------------------------------------------
// The group

namespace {

ember_tensor describe(const Tensor& t) {
  if (!t.defined()) return ember_tensor{};
  return ember_tensor{t.data_ptr(),
                      static_cast<int32_t>(t.dtype()),
                      static_cast<int32_t>(t.dim()),
                      t.sizes().data(),
                      t.strides().data(),
                      t.device().type,
                      t.device().index};
}

std::string tensor_text(const Tensor& t) {
  return t.defined() ? fmt::format("{} {}", dtype_name(t.dtype()), shape_str(t.sizes())) : "";
}

// The store as the C table a backend sees.
int32_t store_set(void* ctx, const char* key, const void* value, size_t size, char* error,
                  size_t cap) {
  try {
    const auto* p = static_cast<const uint8_t*>(value);
    static_cast<Store*>(ctx)->set(key, std::vector<uint8_t>(p, p + size));
    return EMBER_OK;
  } catch (const std::exception& e) {
    std::snprintf(error, cap, "%s", e.what());
    return EMBER_ERR_PEER;
  }
}

int32_t store_get(void* ctx, const char* key, int64_t timeout_ms, ember_store_sink sink, void* user,
                  char* error, size_t cap) {
  try {
    const std::vector<uint8_t> v = static_cast<Store*>(ctx)->get(key, milliseconds(timeout_ms));
    sink(user, v.data(), v.size());
    return EMBER_OK;
  } catch (const std::exception& e) {
    std::snprintf(error, cap, "%s", e.what());
    return EMBER_ERR_TIMEOUT;
  }
}

// Note [SIGPIPE and peers that died]
// Writing to a socket whose peer died raises SIGPIPE, whose default action ends the process; a
// rank must instead see the write fail and report the peer (Python, and so PyTorch, ignore
// SIGPIPE process-wide). Transports write from the threads that call them and from threads they
// start, which inherit the creator's signal mask: so SIGPIPE is blocked on the group's worker
// and point-to-point threads for their whole life, and around a backend's create(), where its
// own threads are started; a SIGPIPE raised meanwhile is consumed before the mask is restored.
// The process-wide disposition is left as the program set it.
class BlockSigpipe {
 public:
  BlockSigpipe() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~BlockSigpipe() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe, nullptr, &zero) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockSigpipe(const BlockSigpipe&) = delete;
  BlockSigpipe& operator=(const BlockSigpipe&) = delete;

 private:
  sigset_t old_;
};

// Set by the blocking forms for the submit they call (Note [Blocking calls run on the caller]).
thread_local bool t_blocking_call = false;

// Marks the operation the current thread submits next as one it will wait for at once.
struct Blocking {
  Blocking() { t_blocking_call = true; }
  ~Blocking() { t_blocking_call = false; }
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  EMBER_CHECK(end && *end == '\0' && x >= 0 && x < (1 << 30),
              "[distributed] {} must be a non-negative integer: got '{}'", name, v);
  return static_cast<int>(x);
}

}  // namespace

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  milliseconds timeout{0};
  CommBackend backend;
  void* comm = nullptr;
  std::shared_ptr<Store> store;       // this group's keys
  std::shared_ptr<Store> root_store;  // the job's store (liveness keys)
  ember_store_v1 store_table{};
  uint64_t issued = 0;  // operations issued so far, the same count on every rank
  std::mutex broken_mu;
  std::string broken_by;  // the first failure's message, under broken_mu; empty while usable

  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  bool busy = false;  // an operation of the queue runs (on the worker or a caller)
  std::thread worker;
  std::vector<std::pair<std::thread, std::shared_ptr<Work::State>>> p2p;  // in flight or done

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
      cv.notify_all();
    }
    if (worker.joinable()) worker.join();
    for (auto& t : p2p) t.first.join();
    if (comm) backend.table.destroy(backend.table.ctx, comm);
  }

  void run_worker() {
    BlockSigpipe no_sigpipe;  // Note [SIGPIPE and peers that died]
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return !busy && (stopping || !queue.empty()); });
        if (queue.empty()) return;
        job = std::move(queue.front());
        queue.pop_front();
        busy = true;
      }
      job();
      std::lock_guard lock(mu);
      busy = false;
      cv.notify_all();
    }
  }

  // Note [Naming the ranks that failed]
  // A backend knows that a connection broke or a wait ran out, rarely which rank is to blame.
  // After a failure each rank writes what it was doing (operation number, name, dtype, sizes)
  // into the store and reads the others' notes for up to ten seconds: a rank whose connection to
  // the TCP store closed exited (the store marks it, Note [The TCP store]); one that wrote no
  // note did not answer (it hangs, or never reached this operation); one that wrote another
  // operation or other sizes is named with them. If the store itself is gone, rank 0, which
  // serves it, is; a rank 0 that reported a failure keeps the store up while the others are
  // still connected (Note [The store outlives a failure]).
  // A rank has one note, its first failure's, not one per operation number: ranks that fail at
  // different operations (a point-to-point call only some ranks made, a transfer that finished
  // on one side just before the peer died) read each other's at once, where notes kept per
  // operation made each wait out the ten seconds for a note that never came and call the other
  // silent. Later failures of the same rank (calls beside the first) keep the first note.
  std::mutex note_mu;
  bool noted = false;  // this rank's note is in the store, under note_mu

  std::string diagnose(const std::string& mine) {
    std::vector<int> silent, exited;
    std::vector<std::string> differ;
    const std::string gone = "the rendezvous store on rank 0 is gone: rank 0 did not answer";
    try {
      {
        std::lock_guard lock(note_mu);
        if (!std::exchange(noted, true))
          store->set(fmt::format("health/{}", rank),
                     std::vector<uint8_t>(mine.begin(), mine.end()));
      }
      if (root_store) root_store->set(TCPStore::kFailedKey, {1});  // Note [The store outlives...]
      const auto deadline =
          Clock::now() + std::min<milliseconds>(timeout, std::chrono::seconds(10));
      for (int r = 0; r < size; ++r) {
        if (r == rank) continue;
        const std::string key = fmt::format("health/{}", r);
        for (;;) {
          if (store->check(key)) {
            const std::vector<uint8_t> v = store->get(key, milliseconds(1000));
            const std::string theirs(v.begin(), v.end());
            if (theirs != mine) differ.push_back(fmt::format("rank {} was at {}", r, theirs));
            break;
          }
          if (root_store && root_store->check(fmt::format("closed/rank {}", r))) {
            exited.push_back(r);
            break;
          }
          if (Clock::now() >= deadline) {
            silent.push_back(r);
            break;
          }
          std::this_thread::sleep_for(milliseconds(20));
        }
      }
      // Rank 0 serves the store: it stays until the ranks that answered have read its note.
      store->set(fmt::format("health/{}/read", rank), {1});
      if (rank == 0) {
        const auto linger = Clock::now() + std::chrono::seconds(5);
        for (int r = 1; r < size; ++r) {
          if (std::find(silent.begin(), silent.end(), r) != silent.end() ||
              std::find(exited.begin(), exited.end(), r) != exited.end())
            continue;
          try {
            const auto left = std::chrono::duration_cast<milliseconds>(linger - Clock::now());
            store->get(fmt::format("health/{}/read", r), std::max(left, milliseconds(1)));
          } catch (const std::exception&) {  // that rank is gone as well: nothing to wait for
          }
        }
      }
    } catch (const std::exception&) {
      return gone;
    }
    std::vector<std::string> parts;
    auto ranks = [](const std::vector<int>& rs) {
      return fmt::format("rank{} {}", rs.size() == 1 ? "" : "s", fmt::join(rs, ", "));
    };
    if (!exited.empty())
      parts.push_back(ranks(exited) + " exited (the connection to the store closed)");
    if (!silent.empty()) parts.push_back(ranks(silent) + " did not answer");
    if (!differ.empty())
      parts.push_back(fmt::format("{} (this rank was at {})", fmt::join(differ, "; "), mine));
    return parts.empty() ? "every rank answered" : fmt::format("{}", fmt::join(parts, "; "));
  }

  Work submit(int32_t op, int32_t reduce, int32_t peer, int32_t tag, Tensor input, Tensor output,
              bool average) {
    auto state = std::make_shared<Work::State>();
    const uint64_t seq = issued++;
    state->timeout = timeout;
    state->op = op;
    state->seq = seq;
    // Note [The caller's stream]: a device backend (nccl) queues the operation on the stream
    // the caller's work on these tensors went to, taken here on the caller's thread.
    const Tensor& any = input.defined() ? input : output;
    void* stream = any.defined() ? current_stream(any.device()).handle() : nullptr;
    auto job = [this, state, seq, op, reduce, peer, tag, input, output, average, stream] {
      // What this operation is, for messages: formatted only after a failure.
      auto mine = [&] {
        const Tensor& t = input.defined() ? input : output;
        return t.defined() ? fmt::format("{} #{} of {}", op_name(op), seq, tensor_text(t))
                           : fmt::format("{} #{}", op_name(op), seq);
      };
      char err[1024] = {0};
      ember_collective_call call{sizeof(ember_collective_call),
                                 op,
                                 reduce,
                                 peer,
                                 tag,
                                 describe(input),
                                 describe(output),
                                 timeout.count(),
                                 stream,
                                 err,
                                 sizeof(err)};
      int32_t status = EMBER_ERR_INTERNAL;
      std::string error;
      ErrorKind kind = ErrorKind::Distributed;
      // Note [A failed group stays failed]
      // After a collective failed with a peer that died or a timeout, the ranks no longer agree
      // on what was sent: the backend may have delivered part of it, and the ranks that are left
      // stopped at different operations. As in PyTorch, whose communicators are aborted then,
      // the group is unusable from then on: every later operation fails at once, quoting the
      // first failure, without reaching the backend or repeating the diagnosis. A new group
      // (destroy_process_group, init_process_group) starts afresh. Errors in the arguments
      // (dtype, sizes, devices) are found before anything is sent and leave the group usable.
      {
        std::lock_guard broken_lock(broken_mu);
        if (!broken_by.empty()) {
          error = fmt::format(
              "[distributed] {} on rank {}: the process group is unusable since an earlier "
              "operation failed (destroy_process_group, then init_process_group again): {}",
              mine(), rank, broken_by);
          status = EMBER_ERR_PEER;
        }
      }
      if (error.empty()) {
        try {
          status = backend.table.collective(backend.table.ctx, comm, &call);
          if (status == EMBER_OK && average) {
            autograd::NoGradGuard no_grad;  // the collectives are not recorded, nor is this
            Tensor o = output;
            div_(o, static_cast<double>(size));
          }
        } catch (const Error& e) {
          error = e.what();
          kind = e.kind();
        } catch (const std::exception& e) {
          error = e.what();
        }
      }
      if (status != EMBER_OK && error.empty()) {
        kind = status_error_kind(status);
        const std::string why = err[0] ? err : "no reason given";
        const std::string what = mine();
        error = fmt::format("[distributed] {} failed on rank {} ({}): {}", what, rank, backend.name,
                            why);
        if (kind == ErrorKind::Distributed) {
          error += "; " + diagnose(what);
          std::lock_guard broken_lock(broken_mu);
          if (broken_by.empty()) broken_by = error.substr(std::string("[distributed] ").size());
        }
      }
      std::lock_guard lock(state->mu);
      state->error = std::move(error);
      state->kind = kind;
      state->done = true;
      state->cv.notify_all();
    };
    std::unique_lock lock(mu);
    // Note [Blocking calls run on the caller]
    // A blocking collective whose turn it already is (nothing queued, nothing running) runs on
    // the calling thread: handing it to the worker and waking the caller again cost about a
    // millisecond per call on a loaded machine, more than a small all-reduce itself. Order is
    // kept: `busy` keeps the worker off while it runs, as it keeps callers off the worker's.
    const bool here = std::exchange(t_blocking_call, false);
    if (here && op != EMBER_COLL_SEND && op != EMBER_COLL_RECV && queue.empty() && !busy) {
      busy = true;
      lock.unlock();
      {
        BlockSigpipe no_sigpipe;  // Note [SIGPIPE and peers that died]
        job();
      }
      lock.lock();
      busy = false;
      cv.notify_all();
      return Work(state);
    }
    if (op == EMBER_COLL_SEND || op == EMBER_COLL_RECV) {
      // Note [Point-to-point runs beside the queue]
      // A send and a receive are matched by peer and tag, not by their place in the order of
      // collectives: queued behind each other, a recv waiting for a send that is queued behind
      // it on the other rank would deadlock both. Each runs on a thread of its own.
      std::erase_if(p2p, [](std::pair<std::thread, std::shared_ptr<Work::State>>& t) {
        if (!Work(t.second).is_completed()) return false;
        t.first.join();  // finished: its thread ends at once
        return true;
      });
      p2p.emplace_back(std::thread([job = std::move(job)] {
                         BlockSigpipe no_sigpipe;  // Note [SIGPIPE and peers that died]
                         job();
                       }),
                       state);
    } else {
      queue.push_back(std::move(job));
      cv.notify_one();
    }
    return Work(state);
  }

  // Checks that a tensor can go to the backend as it is.
  void check_tensor(const char* op, const Tensor& t, const char* role) const {
    EMBER_CHECK(t.defined(), "[distributed.{}] the {} tensor is undefined", op, role);
    EMBER_CHECK(t.is_contiguous(),
                "[distributed.{}] the {} tensor must be contiguous: sizes {}, strides {} (call "
                ".contiguous() first)",
                op, role, shape_str(t.sizes()), shape_str(t.strides()));
    const std::string type(t.device().type_name());
    bool ok = false;
    for (const std::string& d : backend.device_types) ok = ok || d == type;
    EMBER_CHECK_TYPE(ok,
                     "[distributed.{}] backend {} moves tensors on {}, not on {} (move the tensor, "
                     "or use a backend for {})",
                     op, backend.name, fmt::join(backend.device_types, ", "), type, type);
  }

  void check_pair(const char* op, const Tensor& out, const Tensor& in, int64_t out_per_in_num,
                  int64_t out_per_in_den) const {
    check_tensor(op, in, "input");
    check_tensor(op, out, "output");
    EMBER_CHECK_TYPE(out.dtype() == in.dtype() && out.device() == in.device(),
                     "[distributed.{}] input and output differ: {} on {} and {} on {}", op,
                     dtype_name(in.dtype()), in.device().str(), dtype_name(out.dtype()),
                     out.device().str());
    EMBER_CHECK(out.numel() * out_per_in_den == in.numel() * out_per_in_num,
                "[distributed.{}] the output has {} elements; with {} input elements and {} "
                "ranks it must have {}",
                op, out.numel(), in.numel(), size, in.numel() * out_per_in_num / out_per_in_den);
  }

  int32_t reduce_code(const char* op, const Tensor& t, ReduceOp r) const {
    switch (r) {
      case ReduceOp::Sum:
        return EMBER_REDUCE_SUM;
      case ReduceOp::Product:
        return EMBER_REDUCE_PRODUCT;
      case ReduceOp::Min:
        return EMBER_REDUCE_MIN;
      case ReduceOp::Max:
        return EMBER_REDUCE_MAX;
      case ReduceOp::Avg:
        EMBER_CHECK_TYPE(
            is_floating(t.dtype()),
            "[distributed.{}] Avg needs a floating tensor: got {} (use Sum and divide)", op,
            dtype_name(t.dtype()));
        return EMBER_REDUCE_SUM;
    }
    return EMBER_REDUCE_SUM;
  }

  void check_peer(const char* op, int peer, const char* role) const {
    EMBER_CHECK_INDEX(peer >= 0 && peer < size,
                      "[distributed.{}] {} rank {} is out of range: the group has {} ranks", op,
                      role, peer, size);
  }
};

int ProcessGroup::rank() const {
  return impl_->rank;
}
int ProcessGroup::size() const {
  return impl_->size;
}
const std::string& ProcessGroup::backend() const {
  return impl_->backend.name;
}
milliseconds ProcessGroup::timeout() const {
  return impl_->timeout;
}

Work ProcessGroup::all_reduce_async(const Tensor& t, ReduceOp op) const {
  impl_->check_tensor("all_reduce", t, "input");
  const int32_t code = impl_->reduce_code("all_reduce", t, op);
  return impl_->submit(EMBER_COLL_ALL_REDUCE, code, 0, 0, t, t, op == ReduceOp::Avg);
}

Work ProcessGroup::broadcast_async(const Tensor& t, int root) const {
  impl_->check_tensor("broadcast", t, "input");
  impl_->check_peer("broadcast", root, "root");
  return impl_->submit(EMBER_COLL_BROADCAST, 0, root, 0, t, t, false);
}

Work ProcessGroup::all_gather_async(const Tensor& output, const Tensor& input) const {
  impl_->check_pair("all_gather", output, input, impl_->size, 1);
  return impl_->submit(EMBER_COLL_ALL_GATHER, 0, 0, 0, input, output, false);
}

Work ProcessGroup::reduce_scatter_async(const Tensor& output, const Tensor& input,
                                        ReduceOp op) const {
  impl_->check_pair("reduce_scatter", output, input, 1, impl_->size);
  const int32_t code = impl_->reduce_code("reduce_scatter", input, op);
  return impl_->submit(EMBER_COLL_REDUCE_SCATTER, code, 0, 0, input, output, op == ReduceOp::Avg);
}

Work ProcessGroup::all_to_all_async(const Tensor& output, const Tensor& input) const {
  impl_->check_pair("all_to_all", output, input, 1, 1);
  EMBER_CHECK(input.numel() % impl_->size == 0,
              "[distributed.all_to_all] {} elements do not split into {} equal blocks",
              input.numel(), impl_->size);
  return impl_->submit(EMBER_COLL_ALL_TO_ALL, 0, 0, 0, input, output, false);
}

Work ProcessGroup::barrier_async() const {
  return impl_->submit(EMBER_COLL_BARRIER, 0, 0, 0, Tensor(), Tensor(), false);
}

Work ProcessGroup::send_async(const Tensor& t, int dst, int tag) const {
  impl_->check_tensor("send", t, "input");
  impl_->check_peer("send", dst, "destination");
  EMBER_CHECK(dst != impl_->rank, "[distributed.send] rank {} cannot send to itself", dst);
  return impl_->submit(EMBER_COLL_SEND, 0, dst, tag, t, Tensor(), false);
}

Work ProcessGroup::recv_async(const Tensor& t, int src, int tag) const {
  impl_->check_tensor("recv", t, "output");
  impl_->check_peer("recv", src, "source");
  EMBER_CHECK(src != impl_->rank, "[distributed.recv] rank {} cannot receive from itself", src);
  return impl_->submit(EMBER_COLL_RECV, 0, src, tag, Tensor(), t, false);
}

void ProcessGroup::all_reduce(const Tensor& t, ReduceOp op) const {
  Blocking blocking;
  all_reduce_async(t, op).wait();
}
void ProcessGroup::broadcast(const Tensor& t, int root) const {
  Blocking blocking;
  broadcast_async(t, root).wait();
}
void ProcessGroup::all_gather(const Tensor& output, const Tensor& input) const {
  Blocking blocking;
  all_gather_async(output, input).wait();
}
void ProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op) const {
  Blocking blocking;
  reduce_scatter_async(output, input, op).wait();
}
void ProcessGroup::all_to_all(const Tensor& output, const Tensor& input) const {
  Blocking blocking;
  all_to_all_async(output, input).wait();
}
void ProcessGroup::barrier() const {
  Blocking blocking;
  barrier_async().wait();
}
void ProcessGroup::send(const Tensor& t, int dst, int tag) const {
  Blocking blocking;
  send_async(t, dst, tag).wait();
}
void ProcessGroup::recv(const Tensor& t, int src, int tag) const {
  Blocking blocking;
  recv_async(t, src, tag).wait();
}

// ---------------------------------------------------------------------------------------------
// init_process_group

namespace {

std::mutex g_mu;
std::shared_ptr<ProcessGroup::Impl> g_default;

CommBackend find_backend(const std::string& name) {
  std::vector<std::string> names;
  for (const CommBackend& b : comm_backends()) {
    if (b.name == name) {
      EMBER_CHECK_AS(DistributedError, b.usable,
                     "[distributed] communication backend '{}' is not usable here: {}", name,
                     b.reason);
      return b;
    }
    names.push_back(b.name);
  }
  throw NotImplementedError(fmt::format(
      "[distributed] no communication backend '{}': the loaded plugins offer [{}] (install the "
      "plugin for {}; `ember plugins` shows what was found)",
      name, fmt::join(names, ", "), name));
}

// Note [Rendezvous]
// Every rank joins through the job's store: it claims its rank (a second claim is an error:
// two processes with the same RANK), writes its world size, and waits for all ranks' entries.
// Ranks missing when the timeout ends are named; a rank whose world size differs is named with
// it. Then the backend connects its ranks, exchanging its addresses through the group's part
// of the store.
void join(Store& store, int rank, int world, milliseconds timeout) {
  EMBER_CHECK(store.add(fmt::format("join/rank/{}", rank), 1) == 1,
              "[distributed] two processes joined as rank {} (each process needs its own RANK)",
              rank);
  const std::string mine = std::to_string(world);
  store.set(fmt::format("join/world/{}", rank), std::vector<uint8_t>(mine.begin(), mine.end()));
  const auto deadline = Clock::now() + timeout;
  std::vector<int> missing;
  for (int r = 0; r < world; ++r) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    const std::string key = fmt::format("join/world/{}", r);
    if (!missing.empty()) {
      if (!store.check(key)) missing.push_back(r);
      continue;
    }
    try {
      const std::vector<uint8_t> v = store.get(key, std::max(left, milliseconds(1)));
      const std::string theirs(v.begin(), v.end());
      EMBER_CHECK(theirs == mine,
                  "[distributed] WORLD_SIZE differs between ranks: rank {} has {}, rank {} has {} "
                  "(start every rank with the same WORLD_SIZE)",
                  r, theirs, rank, mine);
    } catch (const DistributedError& e) {
      if (std::string(e.what()).find("timed out") == std::string::npos) throw;
      missing.push_back(r);
    }
  }
  EMBER_CHECK_AS(DistributedError, missing.empty(),
                 "[distributed] rank{} {} did not join within {} ms (WORLD_SIZE={}: are all {} "
                 "processes started, with the same MASTER_ADDR and MASTER_PORT?)",
                 missing.size() == 1 ? "" : "s", fmt::join(missing, ", "), timeout.count(), world,
                 world);
}

}  // namespace

ProcessGroup init_process_group(const InitOptions& options) {
  std::lock_guard lock(g_mu);
  EMBER_CHECK(!g_default,
              "[distributed] init_process_group called twice (call destroy_process_group first)");
  EMBER_CHECK(options.timeout.count() > 0, "[distributed] the timeout must be positive: {} ms",
              options.timeout.count());
  auto impl = std::make_shared<ProcessGroup::Impl>();
  impl->backend = find_backend(options.backend);
  impl->timeout = options.timeout;

  int rank = options.rank, world = options.world_size;
  const ember_comm_backend_v1& t = impl->backend.table;
  if ((rank < 0 || world < 0) && t.world) {
    char err[512] = {0};
    int32_t r = -1, w = -1;
    if (t.world(t.ctx, &r, &w, err, sizeof(err)) == EMBER_OK) {
      if (rank < 0) rank = r;
      if (world < 0) world = w;
    }
  }
  if (rank < 0) rank = env_int("RANK", -1);
  if (world < 0) world = env_int("WORLD_SIZE", -1);
  EMBER_CHECK(rank >= 0 && world >= 1,
              "[distributed] the rank and world size are unknown: RANK={}, WORLD_SIZE={} (start "
              "the processes with `ember run`, or set RANK and WORLD_SIZE, or pass them)",
              std::getenv("RANK") ? std::getenv("RANK") : "unset",
              std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "unset");
  EMBER_CHECK(rank < world, "[distributed] RANK={} is out of range for WORLD_SIZE={} (0..{})", rank,
              world, world - 1);
  impl->rank = rank;
  impl->size = world;

  std::shared_ptr<Store> store;
  std::string local = "127.0.0.1";
  const std::string& m = options.init_method;
  if (m.rfind("file://", 0) == 0) {
    store = std::make_shared<FileStore>(m.substr(7));
    char host[256] = {0};
    if (::gethostname(host, sizeof(host) - 1) == 0 && host[0]) local = host;
  } else {
    std::string addr;
    int port = -1;
    if (m == "env://") {
      const char* a = std::getenv("MASTER_ADDR");
      addr = a && *a ? a : "";
      port = env_int("MASTER_PORT", -1);
      EMBER_CHECK(!addr.empty() && port > 0,
                  "[distributed] env:// needs MASTER_ADDR and MASTER_PORT: got '{}' and '{}' (set "
                  "both, or start the processes with `ember run`)",
                  addr, std::getenv("MASTER_PORT") ? std::getenv("MASTER_PORT") : "");
    } else if (m.rfind("tcp://", 0) == 0) {
      const std::string hp = m.substr(6);
      const size_t colon = hp.rfind(':');
      EMBER_CHECK(colon != std::string::npos && colon > 0,
                  "[distributed] init method '{}' lacks a port (tcp://host:port)", m);
      addr = hp.substr(0, colon);
      port = std::atoi(hp.c_str() + colon + 1);
    } else {
      throw ValueError(fmt::format(
          "[distributed] unknown init method '{}' (env://, tcp://host:port or file:///path)", m));
    }
    auto tcp = std::make_shared<TCPStore>(addr, port, rank == 0, options.timeout);
    tcp->set_owner(fmt::format("rank {}", rank));
    local = tcp->local_address();
    store = tcp;
  }
  join(*store, rank, world, options.timeout);

  impl->root_store = store;
  impl->store = std::make_shared<PrefixStore>("pg0", store);
  impl->store_table =
      ember_store_v1{sizeof(ember_store_v1), impl->store.get(), store_set, store_get};
  int device = options.device_index >= 0 ? options.device_index : env_int("LOCAL_RANK", 0);
  ember_comm_config cfg{sizeof(ember_comm_config),
                        rank,
                        world,
                        options.timeout.count(),
                        local.c_str(),
                        &impl->store_table,
                        device,
                        detail::host_table()};
  char err[1024] = {0};
  int32_t status = EMBER_ERR_INTERNAL;
  {
    BlockSigpipe no_sigpipe;  // the backend's threads start here (Note [SIGPIPE and peers ...])
    status = t.create(t.ctx, &cfg, &impl->comm, err, sizeof(err));
  }
  if (status != EMBER_OK) {
    impl->comm = nullptr;
    throw_error(status_error_kind(status),
                fmt::format("[distributed] backend {} could not connect rank {} of {}: {}",
                            impl->backend.name, rank, world, err[0] ? err : "no reason given"));
  }
  ProcessGroup::Impl* raw = impl.get();
  impl->worker = std::thread([raw] { raw->run_worker(); });
  g_default = impl;
  return ProcessGroup(impl);
}

bool is_initialized() {
  std::lock_guard lock(g_mu);
  return g_default != nullptr;
}

ProcessGroup default_group() {
  std::lock_guard lock(g_mu);
  EMBER_CHECK(g_default != nullptr,
              "[distributed] no process group: call init_process_group first");
  return ProcessGroup(g_default);
}

int get_rank() {
  return default_group().rank();
}
int get_world_size() {
  return default_group().size();
}

void destroy_process_group() {
  std::shared_ptr<ProcessGroup::Impl> g;
  {
    std::lock_guard lock(g_mu);
    g = std::move(g_default);
  }
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
  for (const CommBackend& b : comm_backends()) out.push_back(b.name);
  return out;
}

}  // namespace ember::distributed
