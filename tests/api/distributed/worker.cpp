// One rank of a distributed test job: `distributed_worker <scenario>`, started several times by
// distributed_test.cpp (directly or through `ember run`) with RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set. Prints what failed and exits 1 on a wrong value; exits 3 after catching an
// ember::Error (printed as "caught: <message>", and "kind: distributed" after a DistributedError),
// which the fault tests expect.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ember/distributed.h"
#include "ember/ember.h"

namespace dist = ember::distributed;
using ember::DType;
using ember::Tensor;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    std::fprintf(stderr, "FAIL %s\n", what.c_str());
  }
}

std::chrono::milliseconds test_timeout() {
  const char* t = std::getenv("EMBER_TEST_TIMEOUT_MS");
  return std::chrono::milliseconds(t ? std::atoll(t) : 20000);
}

// The group's options: the test's timeout, and the backend EMBER_DIST_BACKEND names (gloo).
dist::InitOptions options() {
  dist::InitOptions o;
  o.timeout = test_timeout();
  if (const char* b = std::getenv("EMBER_DIST_BACKEND")) o.backend = b;
  if (const char* m = std::getenv("EMBER_DIST_INIT")) o.init_method = m;
  if (const char* d = std::getenv("EMBER_TEST_DEVICE_INDEX")) o.device_index = std::atoi(d);
  return o;
}

// Where the tensors live: EMBER_TEST_DEVICE ("cuda" for the nccl backend), else the CPU.
ember::Device device() {
  const char* d = std::getenv("EMBER_TEST_DEVICE");
  return d && *d ? ember::Device(d) : ember::Device::cpu();
}

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(ember::Device::cpu()).to(DType::Float64).contiguous();
  const double* p = d.data_ptr<double>();
  return std::vector<double>(p, p + d.numel());
}

// Rank r's element i: small integers every dtype holds exactly (0/1 for bool).
double value_of(int r, int64_t i, DType dt) {
  return dt == DType::Bool ? static_cast<double>((r + i) % 2)
                           : static_cast<double>(1 + (r + i) % 3);
}

Tensor make(int r, int64_t n, DType dt, int64_t offset = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = value_of(r, i + offset, dt);
  return ember::from_vector(v, {n}, ember::TensorOptions(DType::Float64)).to(dt).to(device());
}

double combine(dist::ReduceOp op, DType dt, double a, double b) {
  const bool is_bool = dt == DType::Bool;
  switch (op) {
    case dist::ReduceOp::Sum:
    case dist::ReduceOp::Avg:
      return is_bool ? double(a != 0 || b != 0) : a + b;
    case dist::ReduceOp::Product:
      return is_bool ? double(a != 0 && b != 0) : a * b;
    case dist::ReduceOp::Min:
      return std::min(a, b);
    case dist::ReduceOp::Max:
      return std::max(a, b);
  }
  return 0;
}

const char* op_text(dist::ReduceOp op) {
  static const char* names[] = {"sum", "avg", "product", "min", "max"};
  return names[static_cast<int>(op)];
}

// Every collective on every dtype against values computed here.
int collectives() {
  dist::ProcessGroup pg = dist::init_process_group(options());
  const int rank = pg.rank(), world = pg.size();
  const int64_t n = 6 * world;  // divisible by the world size
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                   DType::Int32, DType::Int8, DType::UInt8, DType::Bool}) {
    const std::string dn(ember::dtype_name(dt));
    const bool floating = ember::is_floating(dt);
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Product,
                              dist::ReduceOp::Min, dist::ReduceOp::Max}) {
      if (op == dist::ReduceOp::Avg && !floating) {
        bool refused = false;
        try {
          pg.all_reduce(make(rank, n, dt), op);
        } catch (const ember::TypeError&) {
          refused = true;
        }
        expect(refused, "avg of " + dn + " must be refused");
        continue;
      }
      std::vector<double> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double acc = value_of(0, i, dt);
        for (int r = 1; r < world; ++r) acc = combine(op, dt, acc, value_of(r, i, dt));
        if (op == dist::ReduceOp::Avg) acc /= world;
        want[static_cast<size_t>(i)] = acc;
      }
      Tensor t = make(rank, n, dt);
      pg.all_reduce(t, op);
      // Averages of small integers are exact except in the 16-bit floats (x/3).
      const double tol = op == dist::ReduceOp::Avg ? 1e-2 * 4 : 0;
      std::vector<double> got = values(t);
      for (int64_t i = 0; i < n; ++i)
        expect(std::fabs(got[i] - want[i]) <= tol,
               "all_reduce " + std::string(op_text(op)) + " " + dn + " [" + std::to_string(i) +
                   "]: " + std::to_string(got[i]) + " != " + std::to_string(want[i]));
      // reduce_scatter: this rank's block of the same reduction.
      if (op != dist::ReduceOp::Avg || floating) {
        Tensor out = ember::empty({n / world}, ember::TensorOptions(dt, device()));
        pg.reduce_scatter(out, make(rank, n, dt), op);
        std::vector<double> rs = values(out);
        for (int64_t i = 0; i < n / world; ++i)
          expect(std::fabs(rs[i] - want[rank * (n / world) + i]) <= tol,
                 "reduce_scatter " + std::string(op_text(op)) + " " + dn);
      }
    }
    // broadcast from every root
    for (int root = 0; root < world; ++root) {
      Tensor t = make(rank, n, dt);
      pg.broadcast(t, root);
      std::vector<double> got = values(t);
      for (int64_t i = 0; i < n; ++i)
        expect(got[i] == value_of(root, i, dt),
               "broadcast " + dn + " root " + std::to_string(root));
    }
    // all_gather: rank order
    {
      Tensor out = ember::empty({n * world}, ember::TensorOptions(dt, device()));
      pg.all_gather(out, make(rank, n, dt));
      std::vector<double> got = values(out);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < n; ++i)
          expect(got[r * n + i] == value_of(r, i, dt), "all_gather " + dn);
    }
    // all_to_all: block r of the output is block `rank` of rank r's input
    {
      const int64_t b = n / world;
      Tensor out = ember::empty({n}, ember::TensorOptions(dt, device()));
      pg.all_to_all(out, make(rank, n, dt));
      std::vector<double> got = values(out);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < b; ++i)
          expect(got[r * b + i] == value_of(r, rank * b + i, dt), "all_to_all " + dn);
    }
    // send / recv around the ring, asynchronously, with a tag per dtype
    if (world > 1) {
      const int tag = static_cast<int>(dt);
      Tensor in = ember::empty({n}, ember::TensorOptions(dt, device()));
      dist::Work r = pg.recv_async(in, (rank + world - 1) % world, tag);
      dist::Work s = pg.send_async(make(rank, n, dt, 1), (rank + 1) % world, tag);
      s.wait();
      r.wait();
      expect(r.is_completed() && s.is_completed(), "send/recv work completed");
      std::vector<double> got = values(in);
      for (int64_t i = 0; i < n; ++i)
        expect(got[i] == value_of((rank + world - 1) % world, i + 1, dt), "send/recv " + dn);
    }
  }
  // Asynchronous all-reduces in flight together finish in order with the right values.
  std::vector<Tensor> ts;
  std::vector<dist::Work> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(ember::full({1000}, static_cast<double>(rank + k),
                             ember::TensorOptions(DType::Float32, device())));
    works.push_back(pg.all_reduce_async(ts.back()));
  }
  for (int k = 0; k < 8; ++k) {
    works[k].wait();
    const double want = world * (world - 1) / 2.0 + world * k;
    expect(values(ts[k])[999] == want, "async all_reduce " + std::to_string(k));
  }
  pg.barrier();
  // Argument errors are caught before anything is sent.
  bool refused = false;
  try {
    pg.all_gather(ember::empty({3}, device()), ember::empty({2}, device()));
  } catch (const ember::ValueError&) {
    refused = true;
  }
  expect(refused, "all_gather with a wrong output size must be refused");
  refused = false;
  try {
    pg.all_reduce(ember::empty({4, 4}, device()).transpose(0, 1));
  } catch (const ember::ValueError&) {
    refused = true;
  }
  expect(refused, "a strided tensor must be refused");
  refused = false;
  try {
    pg.broadcast(ember::empty({2}, device()), world);
  } catch (const ember::IndexError&) {
    refused = true;
  }
  expect(refused, "a root out of range must be refused");
  pg.barrier();
  dist::destroy_process_group();
  std::printf("collectives ok on rank %d of %d: %d failures\n", rank, world, failures);
  return failures == 0 ? 0 : 1;
}

// A model with a layer forward never uses (find_unused_parameters).
struct TwoOfThree : ember::nn::Module {
  std::shared_ptr<ember::nn::Linear> a, unused, b;
  TwoOfThree() : Module("TwoOfThree") {
    a = register_module("a", std::make_shared<ember::nn::Linear>(20, 32));
    unused = register_module("unused", std::make_shared<ember::nn::Linear>(4, 4));
    b = register_module("b", std::make_shared<ember::nn::Linear>(32, 5));
  }
  Tensor forward(const Tensor& x) override { return (*b)(ember::relu((*a)(x))); }
};

std::shared_ptr<ember::nn::Module> mlp(uint64_t seed) {
  ember::manual_seed(seed);
  return std::make_shared<ember::nn::Sequential>(
      std::initializer_list<std::shared_ptr<ember::nn::Module>>{
          std::make_shared<ember::nn::Linear>(20, 64), std::make_shared<ember::nn::ReLU>(),
          std::make_shared<ember::nn::Linear>(64, 32), std::make_shared<ember::nn::ReLU>(),
          std::make_shared<ember::nn::Linear>(32, 5)});
}

// Global batch `step` of 64 examples, the same on every rank.
std::pair<Tensor, Tensor> global_batch(int step) {
  ember::Generator g(1000 + static_cast<uint64_t>(step));
  Tensor x = ember::randn({64, 20}, {}, &g);
  Tensor y = ember::randint(0, 5, {64}, ember::TensorOptions(DType::Int64), &g);
  return {x, y};
}

double max_difference(ember::nn::Module& a, ember::nn::Module& b) {
  std::vector<Tensor> pa = a.parameters(), pb = b.parameters();
  double worst = pa.size() == pb.size() ? 0 : 1e9;
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    std::vector<double> x = values(pa[i]), y = values(pb[i]);
    for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::fabs(x[k] - y[k]));
  }
  return worst;
}

// DDP with world_size ranks x (64 / world_size) examples ends where one process with all 64
// ends, after 5 SGD steps: plainly, with gradient accumulation under no_sync() in small
// buckets, and with a parameter forward never uses.
int ddp() {
  dist::ProcessGroup pg = dist::init_process_group(options());
  const int rank = pg.rank(), world = pg.size();
  const int64_t local = 64 / world;
  ember::optim::SGDOptions so;
  so.lr = 0.1;
  so.momentum = 0.9;

  auto reference = mlp(7);
  ember::optim::SGD ref_opt(reference->parameters(), so);
  for (int step = 0; step < 5; ++step) {
    auto [x, y] = global_batch(step);
    ref_opt.zero_grad();
    ember::cross_entropy((*reference)(x), y).backward();
    ref_opt.step();
  }

  // Rank 0's initial parameters win: the other ranks start from another seed.
  auto plain = std::make_shared<ember::nn::DistributedDataParallel>(mlp(rank == 0 ? 7 : 99));
  ember::optim::SGD plain_opt(plain->parameters(), so);
  ember::nn::DDPOptions small;
  small.bucket_cap_mb = 1.0 / 1024;  // 1 KiB: several buckets
  auto accum = std::make_shared<ember::nn::DistributedDataParallel>(mlp(7), small);
  ember::optim::SGD accum_opt(accum->parameters(), so);
  expect(plain->num_buckets() == 1,
         "one 25 MiB bucket holds the whole MLP: " + std::to_string(plain->num_buckets()));
  expect(accum->num_buckets() >= 2, "1 KiB buckets: " + std::to_string(accum->num_buckets()));
  for (int step = 0; step < 5; ++step) {
    auto [x, y] = global_batch(step);
    Tensor xs = x.narrow(0, rank * local, local), ys = y.narrow(0, rank * local, local);
    plain_opt.zero_grad();
    ember::cross_entropy((*plain)(xs), ys).backward();
    plain_opt.step();

    accum_opt.zero_grad();
    const int64_t half = local / 2;
    {
      auto guard = accum->no_sync();
      (ember::cross_entropy((*accum)(xs.narrow(0, 0, half)), ys.narrow(0, 0, half)) * 0.5)
          .backward();
    }
    (ember::cross_entropy((*accum)(xs.narrow(0, half, half)), ys.narrow(0, half, half)) * 0.5)
        .backward();
    accum_opt.step();
  }
  const double d_plain = max_difference(*plain->module(), *reference);
  const double d_accum = max_difference(*accum->module(), *reference);
  expect(d_plain < 2e-5, "DDP vs one process: max difference " + std::to_string(d_plain));
  expect(d_accum < 2e-5,
         "DDP with no_sync vs one process: max difference " + std::to_string(d_accum));

  // Buffers (BatchNorm statistics, int64 counters) start as rank 0's, in one broadcast per dtype.
  auto bn = std::make_shared<ember::nn::BatchNorm1d>(20);
  for (Tensor b : bn->buffers()) b.fill_(rank + 1);
  auto bn_ddp = std::make_shared<ember::nn::DistributedDataParallel>(bn);
  for (const Tensor& b : bn->buffers())
    for (double v : values(b))
      expect(v == 1, "buffers broadcast from rank 0: " + std::to_string(v));

  ember::manual_seed(3);
  ember::nn::DDPOptions fu;
  fu.find_unused_parameters = true;
  auto partial =
      std::make_shared<ember::nn::DistributedDataParallel>(std::make_shared<TwoOfThree>(), fu);
  auto [x, y] = global_batch(0);
  ember::cross_entropy((*partial)(x.narrow(0, rank * local, local)),
                       y.narrow(0, rank * local, local))
      .backward();
  std::vector<double> g = values(
      std::static_pointer_cast<TwoOfThree>(partial->module())->unused->parameters()[0].grad());
  bool zero = true;
  for (double v : g) zero = zero && v == 0;
  expect(zero, "an unused parameter's gradient is zero");
  pg.barrier();
  std::printf("ddp on rank %d of %d: plain %.3g, accumulated %.3g, %d failures\n", rank, world,
              d_plain, d_accum, failures);
  dist::destroy_process_group();
  return failures == 0 ? 0 : 1;
}

// Milliseconds on the steady clock, which all processes of this machine share: the fault tests
// compare the victim's time of death with the times its survivors failed.
long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Says when, then dies of SIGKILL (as a rank does that the OOM killer or a crash takes).
[[noreturn]] void die() {
  std::printf("killed at %lld ms\n", now_ms());
  std::fflush(stdout);
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();
}

// Prints when the call that failed returned (the fault tests read "failed at").
void report_failure() {
  std::printf("failed at %lld ms\n", now_ms());
  std::fflush(stdout);
}

int victim_rank() {
  return std::atoi(std::getenv("EMBER_TEST_VICTIM") ? std::getenv("EMBER_TEST_VICTIM") : "1");
}

// Rank `EMBER_TEST_VICTIM` dies (SIGKILL) in the middle of a large all-reduce. With
// EMBER_TEST_HOW=skewed, ranks 0 and 1 first exchange a tensor that rank 2 has no part in, so the
// survivors fail at different operation numbers (Note [Naming the ranks that failed]).
int killed_rank() {
  dist::ProcessGroup pg = dist::init_process_group(options());
  const int victim = victim_rank();
  Tensor t = ember::ones({1 << 24});  // 64 MiB: long enough to be killed inside it
  pg.all_reduce(t);                   // every rank is connected and has done one
  const char* how = std::getenv("EMBER_TEST_HOW");
  if (how && std::string(how) == "skewed" && pg.rank() < 2) {
    Tensor one = ember::ones({4});
    if (pg.rank() == 0)
      pg.send(one, 1, 9);
    else
      pg.recv(one, 0, 9);
  }
  if (pg.rank() == victim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      die();
    }).detach();
  }
  try {
    for (int k = 0; k < 1000; ++k) pg.all_reduce(t);
  } catch (const ember::Error& e) {
    report_failure();
    // The group stays failed: the next call fails at once, quoting the first failure.
    const auto start = std::chrono::steady_clock::now();
    try {
      pg.barrier();
      std::printf("rank %d: a barrier after the failure returned\n", pg.rank());
      return 1;
    } catch (const ember::DistributedError& again) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("then, after %.3f s: %s\n", s, again.what());
    }
    throw;
  }
  std::printf("rank %d: the victim never died\n", pg.rank());
  return 1;
}

// Whether the first element of `t` (float32, zeroed before the receive) holds the sender's 1:
// bytes of the transfer have landed, and with 256 MiB most of it is still on its way. (Gloo's
// thread writes the tensor meanwhile; the relaxed atomic read is the test's only look at it.)
bool first_bytes_landed(const Tensor& t) {
  const uint32_t* first = static_cast<const uint32_t*>(t.data_ptr());
  return __atomic_load_n(first, __ATOMIC_RELAXED) != 0;
}

// Three ranks; rank 1 (the victim) dies of SIGKILL in the middle of a transfer of 256 MiB, while
// the others wait in send, recv or broadcast. `how` (EMBER_TEST_HOW):
//  "recv": rank 1 sends to rank 0, which receives; rank 2 waits in a recv from rank 0. Rank 0
//          also waits, on a thread of its own, in a recv from rank 2: its failure beside must end
//          that wait too (it prints "beside: <error>").
//  "send": rank 0 sends to rank 1, which receives; rank 2 waits in a send to rank 0.
//  "broadcast": rank 1 broadcasts to ranks 0 and 2.
// A receiver that sees the first bytes land creates the file EMBER_TEST_MARKER, which a sending
// victim waits for; a receiving victim dies when it sees them itself. Rank 2's recv or send,
// which rank 0 never answers, fails only because rank 0's failure closes its connections.
int killed_in_transfer(const std::string& how) {
  dist::ProcessGroup pg = dist::init_process_group(options());
  const int rank = pg.rank();
  const char* marker = std::getenv("EMBER_TEST_MARKER");
  const bool broadcast = how == "broadcast";
  if ((how != "recv" && how != "send" && !broadcast) || !marker) {
    std::printf("unknown mode '%s', or EMBER_TEST_MARKER unset\n", how.c_str());
    return 2;
  }
  const int peer = 1 - rank;  // of ranks 0 and 1 in send and recv
  const bool sender = rank == 1 ? how != "send" : how == "send";
  const int64_t n = int64_t{1} << 26;  // 256 MiB: a transfer long enough to die inside
  Tensor big = !broadcast && rank == 2 ? ember::ones({4})
               : sender                ? ember::ones({n})
                                       : ember::zeros({n});
  Tensor small = ember::zeros({4});
  std::optional<dist::Work> beside;  // rank 0's recv from rank 2 ("recv")
  // Starts this rank's part of the transfer.
  auto start = [&] {
    if (broadcast) return pg.broadcast_async(big, 1);
    return sender ? pg.send_async(big, peer, 3) : pg.recv_async(big, peer, 3);
  };
  pg.barrier();  // every rank is connected
  try {
    if (!broadcast && rank == 2) {
      if (how == "recv") {  // as many operations as rank 0 (Note [Naming the ranks that failed])
        dist::Work first = pg.recv_async(big, 0, 7);
        dist::Work second = pg.recv_async(small, 0, 8);
        first.wait();
        second.wait();
      } else {
        pg.send(big, 0, 7);
      }
      std::printf("rank 2: a %s that nobody answered returned\n", how.c_str());
      return 1;
    }
    dist::Work w = start();
    if (how == "recv" && rank == 0) beside = pg.recv_async(small, 2, 8);
    if (sender) {
      if (rank == 1) {  // dies once a receiver saw the transfer start
        while (!std::filesystem::exists(marker))
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        die();
      }
    } else {
      while (!first_bytes_landed(big) && !w.is_completed()) std::this_thread::yield();
      if (rank == 1) die();  // the receiving victim dies in the middle
      std::FILE* f = std::fopen(marker, "w");
      if (f) std::fclose(f);
    }
    w.wait();
    // The transfer was quicker than the victim: the next one never comes.
    std::printf("rank %d: the transfer completed before the victim died\n", rank);
    std::fflush(stdout);
    start().wait();
  } catch (const ember::Error&) {
    if (beside) {
      try {
        beside->wait();
        std::printf("rank 0: the recv beside returned\n");
        return 1;
      } catch (const ember::DistributedError& e) {
        std::printf("beside: %s\n", e.what());
      }
    }
    report_failure();
    throw;
  }
  std::printf("rank %d: the victim never died\n", rank);
  return 1;
}

// Rank 0 reduces 4 elements, the others 3.
int mismatched_sizes() {
  dist::ProcessGroup pg = dist::init_process_group(options());
  Tensor t = ember::ones({pg.rank() == 0 ? 4 : 3});
  pg.all_reduce(t);
  std::printf("rank %d: mismatched all_reduce returned\n", pg.rank());
  return 1;
}

// Rank 0 and the others make calls that differ in `how` (Note [Ranks agree before data moves]
// in backends/mpi/plugin.cpp): "dtype" (float32 against float64), "op" (an all-reduce against a
// broadcast from rank 0) or "send" (rank 0 sends 4 int32 to rank 1, which receives 4 float32).
int mismatched_calls(const std::string& how) {
  dist::ProcessGroup pg = dist::init_process_group(options());
  const bool first = pg.rank() == 0;
  if (how == "send") {
    if (first) {
      pg.send(ember::ones({4}, ember::TensorOptions(DType::Int32)), 1, 5);
      std::printf("rank 0: sent\n");
      std::fflush(stdout);
      std::this_thread::sleep_for(std::chrono::seconds(1));  // the receiver reports meanwhile
      return 0;
    }
    if (pg.rank() != 1) return 0;
    Tensor t = ember::zeros({4});
    pg.recv(t, 0, 5);
    std::printf("rank 1: a mismatched recv returned %g\n", values(t)[0]);
    return 1;
  }
  Tensor t = ember::ones(
      {4}, ember::TensorOptions(how == "dtype" && !first ? DType::Float64 : DType::Float32));
  if (how == "op" && !first)
    pg.broadcast(t, 0);
  else
    pg.all_reduce(t);
  std::printf("rank %d: a mismatched collective returned\n", pg.rank());
  return 1;
}

// Only joins.
int join_only() {
  dist::init_process_group(options());
  dist::default_group().barrier();
  std::printf("joined rank %d\n", dist::get_rank());
  return 0;
}

// The vendor communication libraries mapped into this process ("libmpi.so.40 libnccl.so.2"), or
// "none": files of /proc/self/maps named libnccl*, libmpi*, libopen-rte* or libopen-pal*.
std::string vendor_libraries_mapped() {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return "unreadable /proc/self/maps";
  std::set<std::string> found;
  char line[4096];
  while (std::fgets(line, sizeof(line), maps)) {
    const char* slash = std::strrchr(line, '/');
    if (!slash) continue;
    std::string name(slash + 1);
    name.erase(name.find_last_not_of(" \n") + 1);
    for (const char* prefix : {"libnccl", "libmpi", "libopen-rte", "libopen-pal"})
      if (name.rfind(prefix, 0) == 0) found.insert(name);
  }
  std::fclose(maps);
  std::string out;
  for (const std::string& f : found) out += (out.empty() ? "" : " ") + f;
  return out.empty() ? "none" : out;
}

// Discovery loads the mpi and nccl plugins but neither libnccl nor libmpi (Note [Lazy NCCL], Note
// [Lazy MPI]); the first process group of EMBER_DIST_BACKEND (if set) loads its library.
int vendor_libraries() {
  std::printf("before discovery: %s\n", vendor_libraries_mapped().c_str());
  ember::init();
  for (const ember::PluginRecord& p : ember::plugin_report().plugins)
    if (p.name == "mpi" || p.name == "nccl")
      std::printf("plugin %s: %s\n", p.name.c_str(), ember::outcome_name(p.outcome));
  std::printf("after discovery: %s\n", vendor_libraries_mapped().c_str());
  const char* backend = std::getenv("EMBER_DIST_BACKEND");
  if (!backend || !*backend) return 0;
  std::optional<dist::ProcessGroup> group;
  try {
    group = dist::init_process_group(options());
  } catch (const ember::DistributedError& e) {  // a library that cannot be opened, for one
    std::printf("distributed error: %s\n", e.what());
    std::printf("after %s failed: %s\n", backend, vendor_libraries_mapped().c_str());
    return 3;
  }
  dist::ProcessGroup& pg = *group;
  Tensor t = ember::ones({4}).to(device());
  pg.all_reduce(t);
  expect(values(t)[3] == pg.size(), "all_reduce of ones");
  std::printf("after %s on rank %d of %d: %s\n", backend, pg.rank(), pg.size(),
              vendor_libraries_mapped().c_str());
  dist::destroy_process_group();
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string scenario = argc > 1 ? argv[1] : "";
  try {
    if (scenario == "collectives") return collectives();
    if (scenario == "killed_rank") return killed_rank();
    if (scenario == "killed_in_transfer")
      return killed_in_transfer(std::getenv("EMBER_TEST_HOW") ? std::getenv("EMBER_TEST_HOW") : "");
    if (scenario == "mismatched_sizes") return mismatched_sizes();
    if (scenario == "mismatched_calls") return mismatched_calls(argc > 2 ? argv[2] : "");
    if (scenario == "join") return join_only();
    if (scenario == "ddp") return ddp();
    if (scenario == "vendor_libraries") return vendor_libraries();
  } catch (const ember::Error& e) {
    std::printf("caught: %s\n", e.what());
    if (dynamic_cast<const ember::DistributedError*>(&e)) std::printf("kind: distributed\n");
    std::fflush(stdout);
    return 3;
  }
  std::fprintf(stderr, "unknown scenario '%s'\n", scenario.c_str());
  return 2;
}
