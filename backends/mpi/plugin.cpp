// The mpi communication backend: collectives between the processes mpirun (or srun) started, on
// CPU tensors, with the system's MPI (Debian's Open MPI). Registered through ABI 1.5
// (plugin_abi.h, Note [Communication backends are plugins]); the core does the ordering, averages
// and diagnosis, MPI the transport. libmpi is dlopen'ed by the first call that needs MPI (Note
// [Lazy MPI] in lazy_mpi.cpp); every MPI call goes through its table, mpi(), and the handles
// (MPI_COMM_WORLD, MPI_FLOAT, ...) are read from the loaded library (Note [Open MPI's handles are
// data symbols]).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/mpi/lazy_mpi.h"
#include "ember/plugin_sdk.hpp"
#include "ember/plugin_sdk_comm.hpp"
#include "ember/plugin_sdk_entry.hpp"
#include "ember/plugin_sdk_ops.hpp"

/** Most elements one MPI call moves (MPI counts are int); a build may lower it to test chunking. */
#ifndef EMBER_MPI_MAX_COUNT
#define EMBER_MPI_MAX_COUNT INT_MAX
#endif

#define EMBER_MPI_STR2(x) #x
#define EMBER_MPI_STR(x) EMBER_MPI_STR2(x)
/** The MPI this plugin was compiled against, for `ember plugins`. */
#if defined(OMPI_MAJOR_VERSION)
#define EMBER_OMPI_MAJOR_MINOR \
  EMBER_MPI_STR(OMPI_MAJOR_VERSION) "." EMBER_MPI_STR(OMPI_MINOR_VERSION)
#define EMBER_MPI_BUILD "Open MPI " EMBER_OMPI_MAJOR_MINOR "." EMBER_MPI_STR(OMPI_RELEASE_VERSION)
#elif defined(MPICH_VERSION)
#define EMBER_MPI_BUILD "MPICH " MPICH_VERSION
#else
#define EMBER_MPI_BUILD "MPI " EMBER_MPI_STR(MPI_VERSION) "." EMBER_MPI_STR(MPI_SUBVERSION)
#endif

namespace ember::mpi_backend {
namespace {
using Clock = std::chrono::steady_clock;

/** Most elements one MPI call moves (Note [Large tensors go in pieces]). */
constexpr int64_t kMaxCount = EMBER_MPI_MAX_COUNT;
static_assert(kMaxCount > 0 && kMaxCount <= INT_MAX, "MPI counts are int");
static_assert(sizeof(sdk::Half) == 2 && sizeof(sdk::BFloat16) == 2, "16-bit floats are 2 bytes");
static_assert(sizeof(bool) == 1, "ember's bool is one byte, as MPI_C_BOOL");

// Note [MPI is initialized on first use]
// Every Ember process loads this plugin at start-up, under mpirun or not, so init and available
// only read the environment: MPI_Init contacts the launcher (or, outside one, starts a singleton
// job), which is neither cheap nor harmless. MPI is initialized by the first create (or by world
// when the launcher's variables do not tell the world size), once per process, asking for
// MPI_THREAD_MULTIPLE: the core runs collectives on its worker thread and every send and receive
// on a thread of its own (Note [Point-to-point runs beside the queue] in process_group.cpp), so
// MPI is entered from several threads at once. An application that initialized MPI itself keeps
// it: it must have asked for MPI_THREAD_MULTIPLE too, and it calls MPI_Finalize. When this
// plugin initialized MPI, MPI_Finalize runs at plugin shutdown or at exit, whichever comes first
// (the core does not promise to call shutdown, and mpirun reports a process that exits without
// finalizing as failed); it is skipped after a collective failed or an operation timed out,
// since MPI_Finalize would wait for the peer that did not answer.
// libmpi itself is opened by that first use too (Note [Lazy MPI] in lazy_mpi.cpp).

/** What the process shares: who initialized MPI, the 16-bit float type and its reductions. */
struct Global {
  std::mutex mu;
  bool initialized_by_us = false;
  bool types_ready = false;
  // No MPI handle may be read before MPI is loaded (Note [Open MPI's handles are data symbols]).
  MPI_Datatype two_bytes{};           // F16 and BF16 travel as 2 opaque bytes, once types_ready
  MPI_Op half_ops[2][4] = {};         // [F16, BF16][EMBER_REDUCE_*], once types_ready
  std::atomic<bool> poisoned{false};  // an operation failed: skip MPI_Finalize
  const ember_host_v1* host = nullptr;
};

// Never destroyed: the exit handler and late destroy() calls may still use it.
Global& global() {
  static Global* g = new Global;
  return *g;
}

/** The MPI table. Only valid once ensure_mpi loaded it: every MPI call comes after that. */
const MpiApi& mpi() {
  return *mpi_api_if_loaded();
}

/** Logs through the core (0 debug .. 3 error), once init has run. */
void log(int32_t level, const char* message) {
  const ember_host_v1* host = global().host;
  if (host && host->log) host->log(level, message);
}

/** MPI's text for an error code. */
std::string error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (mpi().error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(text, static_cast<size_t>(std::max(len, 0)));
}

/** The name of an MPI thread level, for messages. */
const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    default:
      return "MPI_THREAD_MULTIPLE";
  }
}

// ---------------------------------------------------------------------------------------------
// Element types and reductions

// Note [16-bit floats through MPI]
// MPI has no half or bfloat16 type. Both travel as a committed 2-byte contiguous type, and their
// reductions are user-defined operations (MPI_Op_create) that widen to float, combine and round
// back, pair by pair, as the other backends do (so a sum of many ranks rounds at each step).
// Bool travels as MPI_C_BOOL and reduces logically (Note [Bool reductions] in the gloo backend):
// a sum or max is "any" (MPI_LOR), a product or min "all" (MPI_LAND).

/** inout[i] = in[i] R inout[i] on a 16-bit float type, computed in float. */
template <typename T, int32_t R>
void reduce_16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = a[i], y = b[i];
    float r;
    if constexpr (R == EMBER_REDUCE_SUM)
      r = x + y;
    else if constexpr (R == EMBER_REDUCE_PRODUCT)
      r = x * y;
    else if constexpr (R == EMBER_REDUCE_MIN)
      r = std::min(x, y);
    else
      r = std::max(x, y);
    b[i] = T(r);
  }
}

// Creates the 2-byte type and the 16-bit reductions; MPI is initialized, g.mu is held.
int32_t create_types(Global& g, char* error, size_t cap) {
  using H = sdk::Half;
  using B = sdk::BFloat16;
  MPI_User_function* const fns[2][4] = {
      {reduce_16<H, EMBER_REDUCE_SUM>, reduce_16<H, EMBER_REDUCE_PRODUCT>,
       reduce_16<H, EMBER_REDUCE_MIN>, reduce_16<H, EMBER_REDUCE_MAX>},
      {reduce_16<B, EMBER_REDUCE_SUM>, reduce_16<B, EMBER_REDUCE_PRODUCT>,
       reduce_16<B, EMBER_REDUCE_MIN>, reduce_16<B, EMBER_REDUCE_MAX>}};
  int rc = mpi().type_contiguous(2, MPI_BYTE, &g.two_bytes);
  if (rc == MPI_SUCCESS) rc = mpi().type_commit(&g.two_bytes);
  for (int t = 0; t < 2 && rc == MPI_SUCCESS; ++t)
    for (int r = 0; r < 4 && rc == MPI_SUCCESS; ++r)
      rc = mpi().op_create(fns[t][r], /*commute=*/1, &g.half_ops[t][r]);
  if (rc != MPI_SUCCESS)
    return sdk::fail_into(error, cap, EMBER_ERR_INTERNAL,
                          "could not create the MPI type and reductions of float16/bfloat16: %s",
                          error_text(rc).c_str());
  g.types_ready = true;
  return EMBER_OK;
}

/** The MPI type an ember dtype travels as, or MPI_DATATYPE_NULL. */
MPI_Datatype mpi_type(int32_t dtype) {
  switch (dtype) {
    case EMBER_F32:
      return MPI_FLOAT;
    case EMBER_F64:
      return MPI_DOUBLE;
    case EMBER_F16:
    case EMBER_BF16:
      return global().two_bytes;
    case EMBER_I64:
      return MPI_INT64_T;
    case EMBER_I32:
      return MPI_INT32_T;
    case EMBER_I8:
      return MPI_INT8_T;
    case EMBER_U8:
      return MPI_UINT8_T;
    case EMBER_BOOL:
      return MPI_C_BOOL;
    default:
      return MPI_DATATYPE_NULL;
  }
}

/** The MPI reduction of `reduce` on `dtype`, or MPI_OP_NULL. */
MPI_Op mpi_op(int32_t dtype, int32_t reduce) {
  if (reduce < EMBER_REDUCE_SUM || reduce > EMBER_REDUCE_MAX) return MPI_OP_NULL;
  if (dtype == EMBER_F16 || dtype == EMBER_BF16)
    return global().half_ops[dtype == EMBER_F16 ? 0 : 1][reduce];
  if (dtype == EMBER_BOOL)
    return reduce == EMBER_REDUCE_SUM || reduce == EMBER_REDUCE_MAX ? MPI_LOR : MPI_LAND;
  switch (reduce) {
    case EMBER_REDUCE_SUM:
      return MPI_SUM;
    case EMBER_REDUCE_PRODUCT:
      return MPI_PROD;
    case EMBER_REDUCE_MIN:
      return MPI_MIN;
    default:
      return MPI_MAX;
  }
}

// ---------------------------------------------------------------------------------------------
// Initialization and the launcher

/** MPI_Finalize, if this plugin initialized MPI (so loaded it) and nothing failed since. */
void finalize_mpi() {
  Global& g = global();
  std::lock_guard lock(g.mu);
  int finalized = 0;
  if (!g.initialized_by_us || mpi().finalized(&finalized) != MPI_SUCCESS || finalized) return;
  if (g.poisoned.load()) {
    log(2,
        "[mpi] MPI_Finalize skipped: an operation failed or timed out, and MPI_Finalize would "
        "wait for the ranks that did not answer (mpirun may report that this process exited "
        "without finalizing)");
    return;
  }
  mpi().finalize();
}

/** finalize_mpi for std::atexit. */
void finalize_at_exit() {
  finalize_mpi();
}

/** Loads libmpi and initializes MPI with MPI_THREAD_MULTIPLE unless it is (Note [MPI is
 *  initialized on first use]). */
int32_t ensure_mpi(char* error, size_t cap) {
  const MpiApi* api = nullptr;  // loads libmpi the first time (Note [Lazy MPI])
  if (int32_t s = mpi_api(&api, error, cap); s != EMBER_OK) return s;
  Global& g = global();
  std::lock_guard lock(g.mu);
  int finalized = 0, initialized = 0, provided = MPI_THREAD_SINGLE;
  mpi().finalized(&finalized);
  if (finalized)
    return sdk::fail_into(error, cap, EMBER_ERR_INVALID,
                          "MPI was already finalized in this process and cannot start again");
  mpi().initialized(&initialized);
  if (!initialized) {
    const int rc = mpi().init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS)
      return sdk::fail_into(error, cap, EMBER_ERR_PEER, "MPI_Init_thread failed: %s",
                            error_text(rc).c_str());
    g.initialized_by_us = true;
    std::atexit(finalize_at_exit);
    // Open MPI reports some failures of a duplicate's non-blocking collectives through
    // MPI_COMM_WORLD's handler; ours may return them (an application's MPI keeps its own).
    mpi().comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    mpi().query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE)
    return sdk::fail_into(
        error, cap, EMBER_ERR_UNSUPPORTED,
        "MPI provides %s, the mpi backend needs MPI_THREAD_MULTIPLE (the core sends and receives "
        "on other threads than its collectives): %s",
        thread_level_name(provided),
        g.initialized_by_us ? "use an MPI built with thread support (Open MPI: "
                              "--enable-mpi-thread-multiple)"
                            : "the application initialized MPI itself; call MPI_Init_thread with "
                              "MPI_THREAD_MULTIPLE");
  return g.types_ready ? EMBER_OK : create_types(g, error, cap);
}

// Note [The launcher numbers the ranks]
// mpirun and srun export each process's rank and the job's size before it starts, under names
// that differ between MPIs; they are the same numbers MPI_COMM_WORLD will have, so world() reads
// them without initializing MPI. Only where a launcher gives the rank but not the size (PMIx
// under srun) is MPI initialized to ask MPI_COMM_WORLD.
struct LauncherVars {
  const char* rank;
  const char* size;
};
/** The launchers this backend recognizes. */
constexpr LauncherVars kLaunchers[] = {
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},  // Open MPI's mpirun
    {"PMI_RANK", "PMI_SIZE"},                          // MPICH / Intel MPI (hydra), srun PMI-2
    {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},    // MVAPICH's mpirun_rsh
    {"PMIX_RANK", nullptr},                            // PMIx: srun --mpi=pmix, prterun
};

/** A non-negative integer from the environment, or -1. */
int env_int(const char* name) {
  const char* v = name ? std::getenv(name) : nullptr;
  if (!v || !*v) return -1;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return end && *end == '\0' && x >= 0 && x < INT_MAX ? static_cast<int>(x) : -1;
}

/** True if an MPI launcher started this process. */
bool under_launcher() {
  for (const LauncherVars& l : kLaunchers) {
    const char* v = std::getenv(l.size ? l.size : l.rank);
    if (v && *v) return true;  // set and not empty
  }
  return false;
}

/** 1 under an MPI launcher, else 0 with the reason; never initializes MPI. */
int32_t available(void*, char* reason, size_t cap) {
  return sdk::guard_value(reason, cap, 0, [&] {
    if (under_launcher()) return 1;
    std::snprintf(reason, cap, "not started by mpirun or srun (OMPI_COMM_WORLD_SIZE unset)");
    return 0;
  });
}

/** The launcher's rank and world size (Note [The launcher numbers the ranks]). */
int32_t world_impl(int32_t* rank, int32_t* size, char* error, size_t cap) {
  for (const LauncherVars& l : kLaunchers) {
    const int r = env_int(l.rank), s = env_int(l.size);
    if (r >= 0 && s > 0) {
      *rank = r;
      *size = s;
      return EMBER_OK;
    }
  }
  if (!under_launcher())
    return sdk::fail_into(error, cap, EMBER_ERR_INVALID,
                          "not started by mpirun or srun (OMPI_COMM_WORLD_SIZE unset)");
  if (int32_t s = ensure_mpi(error, cap); s != EMBER_OK) return s;
  int r = 0, s = 0;
  mpi().comm_rank(MPI_COMM_WORLD, &r);
  mpi().comm_size(MPI_COMM_WORLD, &s);
  *rank = r;
  *size = s;
  return EMBER_OK;
}

/** world_impl behind the boundary. */
int32_t world(void*, int32_t* rank, int32_t* size, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return world_impl(rank, size, error, cap); });
}

// ---------------------------------------------------------------------------------------------
// Waiting with a deadline

// Note [Waiting with a deadline]
// MPI's blocking calls cannot be bounded in time, so every operation starts in its non-blocking
// form (MPI_Iallreduce, MPI_Isend, ...) and its requests are tested until they complete or the
// call's timeout runs out. MPI_Test also drives MPI's progress (Open MPI's non-blocking
// collectives advance only inside MPI calls, one step of their schedule per call on each rank),
// so for the first 10 ms the tests follow each other with only a yield between them, as MPI's
// own blocking calls poll; then the pause between them grows from 50 us to 1 ms, so a long wait
// costs little CPU (ranks share cores under --oversubscribe). (Pausing from the start made a
// 1-element all-reduce between two ranks take 4 ms: every step of its schedule waited out the
// other rank's pause.) MPI cannot cancel a collective: after a timeout its requests stay
// pending and may still write the buffers, so the communicator is marked unusable and every later
// call on it fails at once, naming the operation that broke it. A receive is cancelled instead;
// if MPI confirms the cancellation nothing is pending and the communicator stays usable.

enum class Waited { kDone, kFailed, kTimedOut };

/** Tests `reqs` until all completed (statuses, if given, filled), one failed (`rc`), or the
 *  deadline. */
Waited wait_all(std::vector<MPI_Request>& reqs, std::vector<MPI_Status>* statuses,
                Clock::time_point deadline, int* rc) {
  auto pause = std::chrono::microseconds(50);
  const auto spin_until = Clock::now() + std::chrono::milliseconds(10);
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < reqs.size(); ++i) {
      if (reqs[i] == MPI_REQUEST_NULL) continue;
      int flag = 0;
      MPI_Status status;
      *rc = mpi().test(&reqs[i], &flag, &status);
      if (*rc != MPI_SUCCESS) return Waited::kFailed;
      if (!flag) {
        all = false;
        continue;
      }
      if (statuses) (*statuses)[i] = status;
    }
    if (all) return Waited::kDone;
    const auto now = Clock::now();
    if (now >= deadline) return Waited::kTimedOut;
    if (now < spin_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(pause);
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(1));
    }
  }
}

/** Cancels pending receives and waits briefly for MPI to confirm; true if none is left pending. */
bool cancel_receives(std::vector<MPI_Request>& reqs) {
  for (MPI_Request& r : reqs)
    if (r != MPI_REQUEST_NULL) mpi().cancel(&r);
  int rc = MPI_SUCCESS;
  const auto deadline = Clock::now() + std::chrono::milliseconds(100);
  return wait_all(reqs, nullptr, deadline, &rc) == Waited::kDone;
}

// ---------------------------------------------------------------------------------------------
// The communicator

/** One process group's duplicate of MPI_COMM_WORLD. */
struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  int tag_ub = 32767;  // the standard's minimum until MPI says more
  std::atomic<bool> broken{false};
  std::mutex mu;
  std::string broken_by;  // why it is unusable, under mu

  /** Marks the communicator unusable (Note [Waiting with a deadline]). */
  void mark_broken(const std::string& why) {
    std::lock_guard lock(mu);
    if (!broken.exchange(true)) broken_by = why;
    global().poisoned = true;
  }
  /** Why it is unusable, or "". */
  std::string broken_reason() {
    if (!broken.load()) return "";
    std::lock_guard lock(mu);
    return broken_by;
  }
};

/** Initializes MPI if needed, checks the rank, duplicates MPI_COMM_WORLD in time. */
int32_t create_impl(const ember_comm_config* cfg, void** out, char* error, size_t cap) {
  if (int32_t s = ensure_mpi(error, cap); s != EMBER_OK) return s;
  int wrank = 0, wsize = 0;
  mpi().comm_rank(MPI_COMM_WORLD, &wrank);
  mpi().comm_size(MPI_COMM_WORLD, &wsize);
  if (cfg->rank != wrank || cfg->world_size != wsize)
    return sdk::fail_into(
        error, cap, EMBER_ERR_INVALID,
        "rank %d of %d is not this process's place in MPI_COMM_WORLD, rank %d of %d (the mpi "
        "backend spans the processes mpirun started: leave RANK and WORLD_SIZE unset, or set "
        "them as mpirun numbers the processes)",
        cfg->rank, cfg->world_size, wrank, wsize);
  auto c = std::make_unique<Comm>();
  c->rank = wrank;
  c->size = wsize;
  // MPI_Comm_idup rather than MPI_Comm_dup: a rank that never joins must end in the timeout.
  std::vector<MPI_Request> reqs(1, MPI_REQUEST_NULL);
  int rc = mpi().comm_idup(MPI_COMM_WORLD, &c->comm, &reqs[0]);
  if (rc != MPI_SUCCESS)
    return sdk::fail_into(error, cap, EMBER_ERR_PEER, "MPI_Comm_idup failed: %s",
                          error_text(rc).c_str());
  const auto deadline = Clock::now() + std::chrono::milliseconds(cfg->timeout_ms);
  switch (wait_all(reqs, nullptr, deadline, &rc)) {
    case Waited::kDone:
      break;
    case Waited::kFailed:
      return sdk::fail_into(error, cap, EMBER_ERR_PEER, "MPI_Comm_idup failed: %s",
                            error_text(rc).c_str());
    case Waited::kTimedOut:
      global().poisoned = true;
      c.release();  // MPI may still write the handle: leak it
      return sdk::fail_into(
          error, cap, EMBER_ERR_TIMEOUT,
          "MPI did not create the communicator within %lld ms (every process mpirun started "
          "must create the process group)",
          static_cast<long long>(cfg->timeout_ms));
  }
  mpi().comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  void* ub = nullptr;
  int flag = 0;
  if (mpi().comm_get_attr(c->comm, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag && ub)
    c->tag_ub = *static_cast<int*>(ub);
  *out = c.release();
  return EMBER_OK;
}

/** create_impl behind the boundary. */
int32_t create(void*, const ember_comm_config* cfg, void** out, char* error, size_t cap) {
  return sdk::guard(error, cap, [&] { return create_impl(cfg, out, error, cap); });
}

// ---------------------------------------------------------------------------------------------
// Operations

/** Writes a printf-style message into call.error and returns `status`. */
int32_t fail(const ember_collective_call& call, int32_t status, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
int32_t fail(const ember_collective_call& call, int32_t status, const char* fmt, ...) {
  if (call.error && call.error_capacity > 0) {
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(call.error, call.error_capacity, fmt, args);
    va_end(args);
  }
  return status;
}

// Note [Large tensors go in pieces]
// MPI counts are int. The element-wise operations (all-reduce, broadcast, send, receive) are
// split into pieces of at most 2^31-1 elements, started together and matched in order on every
// rank (MPI keeps the order of collectives on a communicator, and of messages between two ranks
// with one tag). The others would need derived types whose reductions MPI does not predefine;
// they refuse more than 2^31-1 elements per rank.

/** Starts one request per piece of `n` elements (at least one, so sizes that differ between
 *  ranks still meet): start(offset, count, &request). */
template <typename Start>
int start_pieces(int64_t n, std::vector<MPI_Request>& reqs, Start&& start) {
  int64_t off = 0;
  do {
    const int count = static_cast<int>(std::min(n - off, kMaxCount));
    reqs.push_back(MPI_REQUEST_NULL);
    const int rc = start(off, count, &reqs.back());
    if (rc != MPI_SUCCESS) return rc;
    off += count;
  } while (off < n);
  return MPI_SUCCESS;
}

// Note [Ranks agree before data moves]
// MPI trusts every rank's count and type: an all-reduce of 4 elements on one rank and 3 on
// another reduces 3 and leaves the fourth as it was on one rank, or fails with MPI_ERR_TRUNCATE
// on one rank only, and an int32 tensor received as float32 arrives as wrong values. So every
// collective starts with an all-gather of a header, what this rank is about to do (operation,
// dtype, reduction, root, elements), and every rank compares all of them before any data moves.
// A disagreement is a DistributedError on every rank that names each rank's call. The exchange
// itself waits for every rank, so it is the barrier too. A send goes with its header, first, on
// the same tag (MPI keeps the order of messages between two ranks on one tag); the receiver
// posts the header's receive before the data's and checks it, so a receive whose sender moved
// another dtype or count is named as such, not as a count that came out wrong. The cost is one
// small all-gather per collective (about the latency of a 1-element all-reduce) and one small
// message per send.

/** What one rank is about to do, as the ranks exchange it (Note [Ranks agree before ...]). */
struct Header {
  int64_t magic = 0;    // kHeaderMagic once filled (a header never received stays 0)
  int64_t op = -1;      // EMBER_COLL_*
  int64_t dtype = -1;   // EMBER_* dtype, -1 for a barrier
  int64_t reduce = -1;  // EMBER_REDUCE_* for the reductions, else -1
  int64_t root = -1;    // the broadcast's root, else -1
  int64_t numel = 0;    // elements of this rank's tensor (the input's; a broadcast's output)
  bool operator==(const Header&) const = default;
};
/** int64 words of a Header on the wire. */
constexpr int kHeaderWords = sizeof(Header) / sizeof(int64_t);
static_assert(sizeof(Header) == kHeaderWords * sizeof(int64_t), "a Header is int64 words");
/** Marks a header that was filled in (ASCII "EMBERHDR" read as a little-endian int64). */
constexpr int64_t kHeaderMagic = 0x5244484d45424d45;

/** The header of `call`, which moves `n` elements of `dtype`. */
Header header_of(const ember_collective_call& call, int32_t dtype, int64_t n) {
  Header h;
  h.magic = kHeaderMagic;
  h.op = call.op;
  if (call.op == EMBER_COLL_BARRIER) return h;
  h.dtype = dtype;
  h.numel = n;
  if (call.op == EMBER_COLL_ALL_REDUCE || call.op == EMBER_COLL_REDUCE_SCATTER)
    h.reduce = call.reduce;
  if (call.op == EMBER_COLL_BROADCAST) h.root = call.peer;
  return h;
}

/** A header for messages: "all_reduce (sum) of 4 float32", "broadcast from rank 0 of ...". */
std::string header_text(const Header& h) {
  constexpr const char* reductions[] = {"sum", "product", "min", "max"};
  const char* op = sdk::collective_name(static_cast<int32_t>(h.op));
  std::string s = op ? op : "operation " + std::to_string(h.op);
  if (h.op == EMBER_COLL_BARRIER) return s;
  if (h.reduce >= 0 && h.reduce < 4) s += std::string(" (") + reductions[h.reduce] + ")";
  if (h.root >= 0) s += " from rank " + std::to_string(h.root);
  return s + " of " + std::to_string(h.numel) + " " +
         sdk::dtype_name(static_cast<int32_t>(h.dtype));
}

/** "rank 0: <header>; ranks 1, 2: <header>" for the distinct headers in `all`, one per rank. */
std::string headers_text(const std::vector<Header>& all) {
  std::vector<std::pair<Header, std::vector<int>>> distinct;
  for (int r = 0; r < static_cast<int>(all.size()); ++r) {
    auto it = std::find_if(distinct.begin(), distinct.end(),
                           [&](const auto& d) { return d.first == all[r]; });
    if (it == distinct.end())
      distinct.push_back({all[r], {r}});
    else
      it->second.push_back(r);
  }
  std::string s;
  for (const auto& [h, ranks] : distinct) {
    if (!s.empty()) s += "; ";
    s += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
    s += ": " + (h.magic == kHeaderMagic ? header_text(h) : std::string("no call"));
  }
  return s;
}

/** Leaks `buffer` if `request` is still pending: MPI may write (or read) it later, after a
 *  timeout or a failure left the request behind (Note [Waiting with a deadline]). */
template <typename T>
void leak_if_pending(std::unique_ptr<T>& buffer, MPI_Request request) {
  if (request != MPI_REQUEST_NULL) (void)buffer.release();
}

/** Turns how the requests of `what` ended into the call's status: EMBER_OK when they completed;
 *  after a timeout a receive is cancelled, anything else makes the communicator unusable (Note
 *  [Waiting with a deadline]). */
int32_t settle(Comm& c, const ember_collective_call& call, const char* what, Waited waited, int rc,
               std::vector<MPI_Request>& reqs) {
  const bool p2p = call.op == EMBER_COLL_SEND || call.op == EMBER_COLL_RECV;
  if (waited == Waited::kTimedOut) {
    if (call.op == EMBER_COLL_RECV && cancel_receives(reqs))
      return fail(call, EMBER_ERR_TIMEOUT,
                  "MPI %s did not complete within %lld ms (cancelled; the communicator stays "
                  "usable)",
                  what, static_cast<long long>(call.timeout_ms));
    c.mark_broken(std::string("an MPI ") + what + " timed out");
    return fail(call, EMBER_ERR_TIMEOUT,
                "MPI %s did not complete within %lld ms (the communicator is unusable now: MPI "
                "cannot cancel it)",
                what, static_cast<long long>(call.timeout_ms));
  }
  if (waited == Waited::kFailed) {
    const std::string text = error_text(rc);
    // A failed collective leaves the ranks out of step; a failed message only itself.
    if (!p2p) c.mark_broken(std::string("an MPI ") + what + " failed: " + text);
    return fail(call, EMBER_ERR_PEER, "MPI %s failed: %s", what, text.c_str());
  }
  return EMBER_OK;
}

/** Waits for `reqs` (started with `rc`) until the call's deadline, and settles the outcome. */
int32_t finish(Comm& c, const ember_collective_call& call, const char* what, int rc,
               std::vector<MPI_Request>& reqs, std::vector<MPI_Status>* statuses) {
  Waited waited = Waited::kFailed;
  if (rc == MPI_SUCCESS) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(call.timeout_ms);
    waited = wait_all(reqs, statuses, deadline, &rc);
  }
  return settle(c, call, what, waited, rc, reqs);
}

/** Exchanges every rank's header for a collective and fails, on every rank alike, unless all
 *  are `mine` (Note [Ranks agree before data moves]). */
int32_t agree(Comm& c, const ember_collective_call& call, const char* what, const Header& mine) {
  auto sent = std::make_unique<Header>(mine);
  auto all = std::make_unique<std::vector<Header>>(static_cast<size_t>(c.size));
  std::vector<MPI_Request> reqs(1, MPI_REQUEST_NULL);
  const int rc = mpi().iallgather(sent.get(), kHeaderWords, MPI_INT64_T, all->data(), kHeaderWords,
                                  MPI_INT64_T, c.comm, &reqs[0]);
  if (int32_t s = finish(c, call, what, rc, reqs, nullptr); s != EMBER_OK) {
    leak_if_pending(sent, reqs[0]);
    leak_if_pending(all, reqs[0]);
    return s;
  }
  if (std::all_of(all->begin(), all->end(), [&](const Header& h) { return h == mine; }))
    return EMBER_OK;
  return fail(call, EMBER_ERR_PEER,
              "the ranks made different collectives, so nothing was sent: %s (every rank must "
              "make the same call with the same dtype and number of elements)",
              headers_text(*all).c_str());
}

/** Runs one operation to completion or its timeout (Note [Waiting with a deadline]). */
int32_t run(Comm& c, const ember_collective_call& call) {
  const char* label = sdk::collective_name(call.op);
  if (!label) return fail(call, EMBER_ERR_UNSUPPORTED, "mpi has no operation %d", call.op);
  if (const std::string why = c.broken_reason(); !why.empty())
    return fail(call, EMBER_ERR_PEER,
                "the MPI communicator is unusable since %s (destroy the process group and start "
                "the job again)",
                why.c_str());
  const bool output_only = call.op == EMBER_COLL_BROADCAST || call.op == EMBER_COLL_RECV;
  const ember_tensor& t = output_only ? call.output : call.input;
  const int64_t n = call.op == EMBER_COLL_BARRIER ? 0 : sdk::numel(t);
  MPI_Datatype type = MPI_DATATYPE_NULL;
  size_t esize = 0;
  if (call.op != EMBER_COLL_BARRIER) {
    type = mpi_type(t.dtype);
    esize = sdk::itemsize(t.dtype);
    if (type == MPI_DATATYPE_NULL)
      return fail(call, EMBER_ERR_UNSUPPORTED, "mpi cannot move dtype %d", t.dtype);
  }
  MPI_Op op = MPI_OP_NULL;
  if (call.op == EMBER_COLL_ALL_REDUCE || call.op == EMBER_COLL_REDUCE_SCATTER) {
    op = mpi_op(t.dtype, call.reduce);
    if (op == MPI_OP_NULL)
      return fail(call, EMBER_ERR_UNSUPPORTED, "mpi has no reduction %d", call.reduce);
  }
  const bool p2p = call.op == EMBER_COLL_SEND || call.op == EMBER_COLL_RECV;
  if (p2p && (call.tag < 0 || call.tag > c.tag_ub))
    return fail(call, EMBER_ERR_UNSUPPORTED, "MPI tags run from 0 to %d: got %d", c.tag_ub,
                call.tag);
  // Per-rank counts of the operations that go in one piece (Note [Large tensors go in pieces]).
  int64_t whole = 0;
  if (call.op == EMBER_COLL_ALL_GATHER) whole = n;
  if (call.op == EMBER_COLL_REDUCE_SCATTER) whole = n / c.size;
  if (call.op == EMBER_COLL_ALL_TO_ALL) whole = n / c.size;
  if (whole > INT_MAX)
    return fail(call, EMBER_ERR_UNSUPPORTED,
                "MPI %s moves at most %d elements per rank: got %lld (split the tensor)", label,
                INT_MAX, static_cast<long long>(whole));

  // What this call is, for messages: "all_reduce", "send to rank 1 (tag 3)".
  char what[96];
  if (p2p)
    std::snprintf(what, sizeof(what), "%s %s rank %d (tag %d)", label,
                  call.op == EMBER_COLL_SEND ? "to" : "from", call.peer, call.tag);
  else
    std::snprintf(what, sizeof(what), "%s", label);
  const Header mine = header_of(call, t.dtype, n);
  if (!p2p) {
    if (int32_t s = agree(c, call, what, mine); s != EMBER_OK) return s;
    if (call.op == EMBER_COLL_BARRIER) return EMBER_OK;  // the agreement was the barrier
  }

  auto* in = static_cast<char*>(call.input.data);
  auto* out = static_cast<char*>(call.output.data);
  const auto at = [&](char* base, int64_t off) { return base + static_cast<size_t>(off) * esize; };
  std::vector<MPI_Request> reqs;
  // A send's header and a receive's sender's header (Note [Ranks agree before data moves]).
  auto header = std::make_unique<Header>(mine);
  int rc = MPI_SUCCESS;
  switch (call.op) {
    case EMBER_COLL_ALL_REDUCE:
      rc = start_pieces(n, reqs, [&](int64_t off, int count, MPI_Request* r) {
        const void* src = in == out ? MPI_IN_PLACE : at(in, off);
        return mpi().iallreduce(src, at(out, off), count, type, op, c.comm, r);
      });
      break;
    case EMBER_COLL_BROADCAST:
      rc = start_pieces(n, reqs, [&](int64_t off, int count, MPI_Request* r) {
        return mpi().ibcast(at(out, off), count, type, call.peer, c.comm, r);
      });
      break;
    case EMBER_COLL_ALL_GATHER:
      reqs.push_back(MPI_REQUEST_NULL);
      rc = mpi().iallgather(in, static_cast<int>(whole), type, out, static_cast<int>(whole), type,
                            c.comm, &reqs.back());
      break;
    case EMBER_COLL_REDUCE_SCATTER:
      reqs.push_back(MPI_REQUEST_NULL);
      rc = mpi().ireduce_scatter_block(in, out, static_cast<int>(whole), type, op, c.comm,
                                       &reqs.back());
      break;
    case EMBER_COLL_ALL_TO_ALL:
      reqs.push_back(MPI_REQUEST_NULL);
      rc = mpi().ialltoall(in, static_cast<int>(whole), type, out, static_cast<int>(whole), type,
                           c.comm, &reqs.back());
      break;
    case EMBER_COLL_SEND:
      reqs.push_back(MPI_REQUEST_NULL);
      rc = mpi().isend(header.get(), kHeaderWords, MPI_INT64_T, call.peer, call.tag, c.comm,
                       &reqs[0]);
      if (rc == MPI_SUCCESS)
        rc = start_pieces(n, reqs, [&](int64_t off, int count, MPI_Request* r) {
          return mpi().isend(at(in, off), count, type, call.peer, call.tag, c.comm, r);
        });
      break;
    case EMBER_COLL_RECV:
      reqs.push_back(MPI_REQUEST_NULL);
      *header = Header{};
      rc = mpi().irecv(header.get(), kHeaderWords, MPI_INT64_T, call.peer, call.tag, c.comm,
                       &reqs[0]);
      if (rc == MPI_SUCCESS)
        rc = start_pieces(n, reqs, [&](int64_t off, int count, MPI_Request* r) {
          return mpi().irecv(at(out, off), count, type, call.peer, call.tag, c.comm, r);
        });
      break;
  }
  std::vector<MPI_Status> statuses(reqs.size());
  const int32_t status = finish(c, call, what, rc, reqs, &statuses);
  if (call.op == EMBER_COLL_SEND) leak_if_pending(header, reqs[0]);
  if (call.op != EMBER_COLL_RECV) return status;
  // The sender's header arrives first, whatever becomes of the data (which MPI_ERR_TRUNCATE
  // reports when the sender moved more): a sender that moved something else is named as such.
  // A data request may fail before the header's was tested: it gets a moment more.
  if (!reqs.empty() && reqs[0] != MPI_REQUEST_NULL) {
    std::vector<MPI_Request> first(1, reqs[0]);
    int ignored = MPI_SUCCESS;
    if (wait_all(first, nullptr, Clock::now() + std::chrono::milliseconds(100), &ignored) !=
            Waited::kDone &&
        !cancel_receives(first))
      leak_if_pending(header, first[0]);
    reqs[0] = first[0];
  }
  if (!header) return status;  // the header never came
  const Header theirs = *header;
  Header expected = mine;
  expected.op = EMBER_COLL_SEND;
  if (theirs.magic == kHeaderMagic && !(theirs == expected))
    return fail(call, EMBER_ERR_PEER,
                "MPI %s: the sender moved %s, this rank expected %s (the tensors of a send and "
                "its receive must have the same dtype and number of elements)",
                what, header_text(theirs).c_str(), header_text(expected).c_str());
  if (status != EMBER_OK) return status;
  int64_t off = 0;  // a shorter message is not an error to MPI
  for (size_t i = 1; i < statuses.size(); ++i) {
    const int64_t want = std::min(n - off, kMaxCount);
    int got = 0;
    mpi().get_count(&statuses[i], type, &got);
    if (got != want)
      return fail(call, EMBER_ERR_PEER,
                  "MPI %s delivered %d elements where %lld were expected (the sender's tensor "
                  "has another size)",
                  what, got, static_cast<long long>(want));
    off += want;
  }
  return EMBER_OK;
}

/** run behind the boundary. */
int32_t collective(void*, void* comm, const ember_collective_call* call) {
  return sdk::guard(call->error, call->error_capacity,
                    [&] { return run(*static_cast<Comm*>(comm), *call); });
}

/** Frees the communicator, unless MPI is finalized or operations may still use it. */
void destroy(void*, void* comm) {
  char ignored[64];
  sdk::guard(ignored, sizeof(ignored), [&] {
    std::unique_ptr<Comm> c(static_cast<Comm*>(comm));
    int finalized = 0;
    mpi().finalized(&finalized);
    // A broken communicator keeps its handle: operations still pending on it may use it.
    if (!finalized && c->comm != MPI_COMM_NULL && !c->broken.load()) mpi().comm_free(&c->comm);
    return EMBER_OK;
  });
}

// ---------------------------------------------------------------------------------------------
// The plugin

/** Registers the mpi communication backend. */
int32_t init(const ember_host_v1* host, const ember_registrar_v1* reg, char* error, size_t cap) {
  return sdk::guard(error, cap, [&]() -> int32_t {
    global().host = host;
    static const ember_comm_backend_v1 table = [] {
      ember_comm_backend_v1 t =
          sdk::comm_backend("mpi", "cpu,reference", available, create, collective, destroy);
      t.world = world;
      return t;
    }();
    return sdk::register_comm_backend(reg, table, error, cap);
  });
}

/** Finalizes MPI if this plugin initialized it. */
void shutdown() {
  char ignored[64];
  sdk::guard(ignored, sizeof(ignored), [] {
    finalize_mpi();
    return EMBER_OK;
  });
}

const ember_plugin_v1 kDescriptor =
    sdk::plugin_descriptor(5, "mpi", "0.1.0", EMBER_MPI_BUILD ", " __VERSION__, init, shutdown);

}  // namespace
}  // namespace ember::mpi_backend

EMBER_PLUGIN_DEFINE_ENTRY(ember::mpi_backend::kDescriptor)
