// ember::distributed across real processes on loopback: every collective and dtype, DDP against
// one process, faults (a killed rank, mismatched sizes, a bad rendezvous), the launcher, and
// DistributedSampler. Each job is bounded: a rank still running at its deadline is killed and
// the test fails.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/plugin/elf_check.h"
#include "ember/data/sampler.h"
#include "ember/distributed/store.h"
#include "ember/util/error.h"
#include "tests/testing/build_paths.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

struct Exit {
  int status = -1;  // exit status, or 128 + signal
  std::string output;
};

// Note [Test ports below the ephemeral range]
// A port found by binding port 0 comes from the kernel's ephemeral range (32768-60999 here), the
// range every outgoing connection of the tests running beside this one draws from, so between
// its release here and rank 0's store binding it a connection may take it and the job fails at
// once. Ports are therefore drawn at random below that range, the first one that binds.
int free_port() {
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32767);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(gen);
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool bound = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(s);
    if (bound) return port;
  }
  ADD_FAILURE() << "no free loopback port in 20000-32767";
  return 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts `argv` with the environment plus `env`, output to a file; returns the pid.
pid_t spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& out) {
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (!env.count(v.substr(0, v.find('=')))) vars.push_back(v);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& v : vars) cenv.push_back(const_cast<char*>(v.c_str()));
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data()), 0) << argv[0];
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

// Waits for `pids` until `deadline_s`; kills what is left (and fails the test).
std::vector<Exit> wait_all(const std::vector<pid_t>& pids, const std::vector<std::string>& outs,
                           double deadline_s) {
  std::vector<Exit> exits(pids.size());
  std::vector<bool> done(pids.size(), false);
  const auto deadline = Clock::now() + std::chrono::duration<double>(deadline_s);
  size_t left = pids.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int st = 0;
      if (::waitpid(pids[i], &st, WNOHANG) == pids[i]) {
        exits[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        done[i] = true;
        --left;
      }
    }
    if (left == 0) break;
    if (Clock::now() > deadline) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (done[i]) continue;
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], nullptr, 0);
        ADD_FAILURE() << "process " << i << " still ran after " << deadline_s << " s: a hang";
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (size_t i = 0; i < pids.size(); ++i) exits[i].output = read_file(outs[i]);
  return exits;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "ember_dist_" + std::to_string(::getpid()) + "_" + name;
}

// Runs `world` workers of `scenario` with rank variables (per-rank overrides in `extra`).
std::vector<Exit> run_job(const std::string& scenario, int world, int timeout_ms, double deadline_s,
                          std::vector<std::map<std::string, std::string>> extra = {},
                          int port = 0) {
  port = port ? port : free_port();
  std::vector<pid_t> pids;
  std::vector<std::string> outs;
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env{
        {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)},
        {"RANK", std::to_string(r)},  {"WORLD_SIZE", std::to_string(world)},
        {"OMP_NUM_THREADS", "1"},     {"EMBER_TEST_TIMEOUT_MS", std::to_string(timeout_ms)}};
    if (static_cast<size_t>(r) < extra.size())
      for (const auto& [k, v] : extra[r]) env[k] = v;
    outs.push_back(temp_path(scenario + "_" + std::to_string(r) + ".log"));
    // EMBER_TEST_WORKER: a copy of the worker (kill_under_load.sh runs one, beside its libraries,
    // so that a rebuild of the shared build tree meanwhile cannot break the running ranks).
    const char* worker = std::getenv("EMBER_TEST_WORKER");
    pids.push_back(
        spawn({worker && *worker ? worker : EMBER_DIST_WORKER, scenario}, env, outs.back()));
  }
  return wait_all(pids, outs, deadline_s);
}

// The rest of every line of `output` that starts with `prefix`, in order.
std::vector<std::string> lines_starting(const std::string& output, const std::string& prefix) {
  std::vector<std::string> rests;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) rests.push_back(line.substr(prefix.size()));
  return rests;
}

// libnccl*, libmpi* and Open MPI's libopen-rte*, libopen-pal*: what the communication plugins
// open on first use only.
bool is_vendor_library(const std::string& soname) {
  for (const char* prefix : {"libnccl", "libmpi", "libopen-rte", "libopen-pal"})
    if (soname.rfind(prefix, 0) == 0) return true;
  return false;
}

void expect_all_ok(const std::vector<Exit>& exits) {
  for (size_t r = 0; r < exits.size(); ++r)
    EXPECT_EQ(exits[r].status, 0) << "rank " << r << ":\n" << exits[r].output;
}

}  // namespace

TEST(Collectives, EveryOperationAndDtypeOnTwoRanks) {
  expect_all_ok(run_job("collectives", 2, 20000, 120));
}

TEST(Collectives, EveryOperationAndDtypeOnThreeRanks) {
  expect_all_ok(run_job("collectives", 3, 20000, 120));
}

TEST(Rendezvous, AFileStoreOnASharedDirectoryJoinsTheRanks) {
  const std::string dir = temp_path("file_store");
  std::filesystem::remove_all(dir);
  const std::map<std::string, std::string> file{
      {"EMBER_DIST_INIT", "file://" + dir}, {"MASTER_ADDR", ""}, {"MASTER_PORT", ""}};
  expect_all_ok(run_job("collectives", 2, 20000, 120, {file, file}));
  std::filesystem::remove_all(dir);
}

TEST(DistributedDataParallel, TwoRanksMatchOneProcessWithTheGlobalBatch) {
  const std::vector<Exit> exits = run_job("ddp", 2, 20000, 120);
  expect_all_ok(exits);
  EXPECT_NE(exits[0].output.find("ddp on rank 0 of 2"), std::string::npos) << exits[0].output;
}

TEST(DistributedDataParallel, FourRanksMatchOneProcessWithTheGlobalBatch) {
  expect_all_ok(run_job("ddp", 4, 20000, 120));
}

TEST(Faults, AKilledRankIsNamedByEveryOtherRankWithinTheTimeout) {
  const auto start = Clock::now();
  const std::vector<Exit> exits = run_job("killed_rank", 3, 15000, 60, {}, 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_EQ(exits.size(), 3u);
  EXPECT_EQ(exits[1].status, 128 + SIGKILL) << exits[1].output;
  for (int r : {0, 2}) {
    EXPECT_EQ(exits[r].status, 3) << exits[r].output;
    EXPECT_NE(exits[r].output.find("rank 1 exited (the connection to the store closed)"),
              std::string::npos)
        << exits[r].output;
    EXPECT_NE(exits[r].output.find("all_reduce"), std::string::npos) << exits[r].output;
    // A later call fails at once (well inside the 15 s timeout), quoting the first failure.
    const size_t then = exits[r].output.find("then, after ");
    ASSERT_NE(then, std::string::npos) << exits[r].output;
    EXPECT_LT(std::stod(exits[r].output.substr(then + 12)), 1.0) << exits[r].output;
    EXPECT_NE(exits[r].output.find("barrier #", then), std::string::npos) << exits[r].output;
    EXPECT_NE(exits[r].output.find("unusable since an earlier operation failed", then),
              std::string::npos)
        << exits[r].output;
  }
  EXPECT_LT(seconds, 15.0 + 10.0);  // within the timeout (plus start-up), never a hang
}

namespace {
// The milliseconds after `label` ("killed at", "failed at") in `output`, or -1.
long long ms_after(const std::string& output, const std::string& label) {
  const size_t at = output.find(label + " ");
  return at == std::string::npos ? -1 : std::atoll(output.c_str() + at + label.size() + 1);
}

// One job of three ranks whose rank 1 is killed while the others wait for it, under a timeout of
// 60 s: what went wrong (empty if nothing) and the slowest survivor's seconds from the kill to
// its DistributedError.
struct KilledJob {
  std::string problems;
  double worst_s = 0;
};

// `scenario` "killed_rank" (an all-reduce; `how` "skewed": the survivors at different operation
// numbers) or "killed_in_transfer" with EMBER_TEST_HOW `how`.
KilledJob run_killed_job(const std::string& scenario, const std::string& how, double limit_s) {
  const std::string marker = temp_path("marker_" + how);
  std::filesystem::remove(marker);
  const std::map<std::string, std::string> env{{"EMBER_TEST_HOW", how},
                                               {"EMBER_TEST_MARKER", marker}};
  // The deadline is half the timeout: a survivor that waits for its timeout is a hang here.
  const std::vector<Exit> exits = run_job(scenario, 3, 60000, 30, {env, env, env});
  std::filesystem::remove(marker);
  KilledJob job;
  std::ostringstream problems;
  const long long killed = ms_after(exits[1].output, "killed at");
  if (exits[1].status != 128 + SIGKILL || killed < 0)
    problems << "rank 1 was not killed:\n" << exits[1].output << "\n";
  if (how == "recv") {  // rank 0's recv beside failed with the failure that closed the connections
    const std::vector<std::string> beside = lines_starting(exits[0].output, "beside: ");
    if (beside.size() != 1 ||
        beside[0].find("another call of this rank failed while this one waited") ==
            std::string::npos)
      problems << "rank 0's recv beside did not fail with its failure:\n"
               << exits[0].output << "\n";
  }
  for (int r : {0, 2}) {
    const std::string& out = exits[r].output;
    const std::vector<std::string> caught = lines_starting(out, "caught: ");
    const long long failed = ms_after(out, "failed at");
    const double s = failed < 0 || killed < 0 ? std::numeric_limits<double>::infinity()
                                              : (failed - killed) / 1000.0;
    job.worst_s = std::max(job.worst_s, s);
    if (exits[r].status != 3 || caught.size() != 1 ||
        lines_starting(out, "kind: distributed").size() != 1 ||
        caught[0].find("rank 1 exited") == std::string::npos ||
        caught[0].find("did not answer") != std::string::npos || s > limit_s)
      problems << "rank " << r << " (status " << exits[r].status << ", failed " << s
               << " s after the kill):\n"
               << out << "\n";
  }
  job.problems = problems.str();
  return job;
}
}  // namespace

// Note [A dead peer fails the waits on it] in backends/gloo/plugin.cpp: every survivor of a rank
// killed in the middle of an all-reduce, a send, a recv or a broadcast (or waiting on a survivor
// that is) fails within moments with a DistributedError naming it, not at the 60 s timeout, also
// when the survivors fail at different operations (Note [Naming the ranks that failed]).
// EMBER_TEST_KILL_REPEAT=N runs the five jobs N times (tests/api/distributed/kill_under_load.sh
// does 50 beside busy loops) and prints the worst latency.
TEST(Faults, EverySurvivorOfAKilledRankFailsWithinMomentsThoughTheTimeoutIsLong) {
  const char* repeat_env = std::getenv("EMBER_TEST_KILL_REPEAT");
  const int repeat = repeat_env ? std::max(1, std::atoi(repeat_env)) : 1;
  const double limit_s = 5.0;
  struct Case {
    const char* scenario;
    const char* how;
  };
  const Case cases[] = {{"killed_rank", ""},
                        {"killed_rank", "skewed"},
                        {"killed_in_transfer", "recv"},
                        {"killed_in_transfer", "send"},
                        {"killed_in_transfer", "broadcast"}};
  int passed = 0, jobs = 0;
  double worst_s = 0;
  std::string worst_case;
  for (int k = 0; k < repeat; ++k) {
    for (const Case& c : cases) {
      const std::string name = std::string(c.scenario) + (*c.how ? " " : "") + c.how;
      SCOPED_TRACE(name + ", run " + std::to_string(k + 1));
      const KilledJob job = run_killed_job(c.scenario, c.how, limit_s);
      ++jobs;
      passed += job.problems.empty();
      std::printf("%s, run %d: the last survivor failed %.3f s after the kill\n", name.c_str(),
                  k + 1, job.worst_s);
      EXPECT_TRUE(job.problems.empty()) << job.problems;
      if (job.worst_s > worst_s) {
        worst_s = job.worst_s;
        worst_case = name;
      }
    }
  }
  std::printf("killed-rank jobs: %d of %d passed; worst failure latency %.3f s (%s)\n", passed,
              jobs, worst_s, worst_case.c_str());
}

TEST(Faults, MismatchedSizesAreAnErrorNamingBothSizes) {
  const std::vector<Exit> exits = run_job("mismatched_sizes", 2, 2000, 60);
  for (int r : {0, 1}) {
    EXPECT_EQ(exits[r].status, 3) << exits[r].output;
    EXPECT_NE(exits[r].output.find("float32 [4]"), std::string::npos) << exits[r].output;
    EXPECT_NE(exits[r].output.find("float32 [3]"), std::string::npos) << exits[r].output;
  }
}

// Note [The store outlives a failure]: the server waits for the other clients, only after one.
TEST(Rendezvous, AStoreThatSawAFailureServesUntilTheOtherRanksLeave) {
  using ember::distributed::TCPStore;
  using std::chrono::milliseconds;
  for (const bool failed : {false, true}) {
    SCOPED_TRACE(failed ? "after a failure" : "without a failure");
    const int port = free_port();
    auto server = std::make_unique<TCPStore>("127.0.0.1", port, true, milliseconds(5000));
    auto client = std::make_unique<TCPStore>("127.0.0.1", port, false, milliseconds(5000));
    if (failed) client->set(TCPStore::kFailedKey, {1});
    const auto start = Clock::now();
    std::thread rank0([&] { server.reset(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (failed) {  // still served: a late diagnosis reaches it
      client->set("late", {7});
      EXPECT_EQ(client->get("late", milliseconds(100)), std::vector<uint8_t>{7});
    } else {  // gone at once
      EXPECT_THROW(client->set("late", {7}), ember::DistributedError);
    }
    client.reset();
    rank0.join();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (failed) {
      EXPECT_GE(s, 0.3);
    }
    EXPECT_LT(s, 4.0);  // the other clients left: no wait for the timeout
  }
}

TEST(Rendezvous, MasterPortInUseIsAClearError) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  socklen_t len = sizeof(a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const std::vector<Exit> exits = run_job("join", 1, 2000, 30, {}, ntohs(a.sin_port));
  ::close(s);
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("already in use"), std::string::npos) << exits[0].output;
}

TEST(Rendezvous, AMissingRankIsNamedWhenTheTimeoutEnds) {
  // WORLD_SIZE=3, but only ranks 0 and 1 start.
  const std::vector<Exit> exits =
      run_job("join", 2, 1500, 30, {{{"WORLD_SIZE", "3"}}, {{"WORLD_SIZE", "3"}}});
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("rank 2 did not join"), std::string::npos) << exits[0].output;
  EXPECT_EQ(exits[1].status, 3) << exits[1].output;
}

TEST(Rendezvous, DifferentWorldSizesAreNamed) {
  const std::vector<Exit> exits = run_job("join", 2, 3000, 30, {{}, {{"WORLD_SIZE", "3"}}});
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("WORLD_SIZE differs"), std::string::npos) << exits[0].output;
}

TEST(Rendezvous, AnUnreachableMasterIsAClearErrorWithinTheTimeout) {
  const auto start = Clock::now();
  const std::vector<Exit> exits =
      run_job("join", 1, 1500, 30, {{{"RANK", "1"}, {"WORLD_SIZE", "2"}}});
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("cannot reach the rendezvous store"), std::string::npos)
      << exits[0].output;
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 15.0);
}

TEST(Rendezvous, RankOutOfRangeAndMissingVariablesAreClearErrors) {
  std::vector<Exit> exits = run_job("join", 1, 1500, 30, {{{"RANK", "2"}, {"WORLD_SIZE", "2"}}});
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("RANK=2 is out of range for WORLD_SIZE=2"), std::string::npos)
      << exits[0].output;
  exits = run_job("join", 1, 1500, 30, {{{"MASTER_ADDR", ""}}});
  EXPECT_EQ(exits[0].status, 3) << exits[0].output;
  EXPECT_NE(exits[0].output.find("MASTER_ADDR and MASTER_PORT"), std::string::npos)
      << exits[0].output;
}

TEST(Launcher, RunsTheRanksOfAJob) {
  const std::string out = temp_path("launcher_ok.log");
  const pid_t pid = spawn({EMBER_CLI, "run", "--nproc-per-node", "2", EMBER_DIST_WORKER, "ddp"},
                          {{"EMBER_TEST_TIMEOUT_MS", "20000"}}, out);
  const std::vector<Exit> exits = wait_all({pid}, {out}, 120);
  EXPECT_EQ(exits[0].status, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("ddp on rank 1 of 2"), std::string::npos) << exits[0].output;
}

TEST(Launcher, AFailedRankStopsTheJobAndIsNamed) {
  const std::string out = temp_path("launcher_fail.log");
  const pid_t pid =
      spawn({EMBER_CLI, "run", "--nproc-per-node", "3", EMBER_DIST_WORKER, "killed_rank"},
            {{"EMBER_TEST_TIMEOUT_MS", "20000"}}, out);
  const std::vector<Exit> exits = wait_all({pid}, {out}, 60);
  EXPECT_NE(exits[0].status, 0) << exits[0].output;
  EXPECT_NE(exits[0].output.find("rank 1"), std::string::npos) << exits[0].output;
}

TEST(DistributedSampler, RanksShareEachEpochWithoutOverlap) {
  for (bool shuffle : {false, true}) {
    std::multiset<int64_t> seen;
    std::vector<std::vector<int64_t>> parts;
    for (int r = 0; r < 4; ++r) {
      ember::data::DistributedSampler s(r, 4, shuffle, 42);
      parts.push_back(s.indices(100, 3));
      EXPECT_EQ(parts.back().size(), 25u);
      seen.insert(parts.back().begin(), parts.back().end());
    }
    EXPECT_EQ(seen.size(), 100u);
    for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
    if (shuffle) {
      ember::data::DistributedSampler s(0, 4, true, 42);
      EXPECT_NE(s.indices(100, 4), parts[0]) << "a new epoch reshuffles";
      s.set_epoch(3);
      EXPECT_EQ(s.indices(100, 9), parts[0]) << "set_epoch fixes the epoch";
    }
  }
}

TEST(DistributedSampler, UnevenSizesArePaddedOrDropped) {
  std::multiset<int64_t> seen;
  for (int r = 0; r < 3; ++r) {
    std::vector<int64_t> p = ember::data::DistributedSampler(r, 3, false).indices(10, 0);
    EXPECT_EQ(p.size(), 4u);  // 12 = 10 padded with 0 and 1
    seen.insert(p.begin(), p.end());
  }
  EXPECT_EQ(seen.count(0), 2u);
  EXPECT_EQ(seen.count(1), 2u);
  EXPECT_EQ(seen.count(9), 1u);
  EXPECT_EQ(ember::data::DistributedSampler(2, 3, false, 0, true).indices(10, 0),
            (std::vector<int64_t>{2, 5, 8}));
  EXPECT_THROW(ember::data::DistributedSampler(3, 3), ember::Error);
}

namespace {
// Train loss, test loss and test accuracy (%) of "epoch 1/1: train loss A, test loss B, test
// accuracy C%"; empty if the line is missing.
std::vector<double> last_epoch_figures(const std::string& output) {
  const size_t at = output.rfind("epoch 1/1: train loss");
  if (at == std::string::npos) return {};
  double a = 0, b = 0, c = 0;
  if (std::sscanf(output.c_str() + at,
                  "epoch 1/1: train loss %lf, test loss %lf, test accuracy %lf", &a, &b, &c) != 3)
    return {};
  return {a, b, c};
}
}  // namespace

TEST(Launcher, TrainInTwoProcessesMatchesOneProcessWithTheSameGlobalBatch) {
  const std::vector<std::string> args = {"train", "--model",       "mlp",       "--epochs",
                                         "1",     "--limit",       "2048",      "--test-limit",
                                         "500",   "--no-progress", "--threads", "1"};
  std::vector<std::string> one = {EMBER_CLI}, two = {EMBER_CLI};
  one.insert(one.end(), args.begin(), args.end());
  two.insert(two.end(), args.begin(), args.end());
  one.insert(one.end(), {"--out", temp_path("train1")});
  two.insert(two.end(), {"--out", temp_path("train2"), "--nproc", "2"});
  const std::string out1 = temp_path("train1.log"), out2 = temp_path("train2.log");
  const std::vector<Exit> e1 = wait_all({spawn(one, {}, out1)}, {out1}, 300);
  const std::vector<Exit> e2 = wait_all({spawn(two, {}, out2)}, {out2}, 300);
  ASSERT_EQ(e1[0].status, 0) << e1[0].output;
  ASSERT_EQ(e2[0].status, 0) << e2[0].output;
  EXPECT_NE(e2[0].output.find("[rank 0] checkpoint:"), std::string::npos) << e2[0].output;
  EXPECT_EQ(e2[0].output.find("[rank 1] checkpoint:"), std::string::npos) << "rank 0 writes";
  // The same steps: equal up to the order of float sums (the average of two half-batch means).
  const std::vector<double> f1 = last_epoch_figures(e1[0].output);
  const std::vector<double> f2 = last_epoch_figures(e2[0].output);
  ASSERT_EQ(f1.size(), 3u) << e1[0].output;
  ASSERT_EQ(f2.size(), 3u) << e2[0].output;
  EXPECT_NEAR(f1[0], f2[0], 2e-3) << "train loss";
  EXPECT_NEAR(f1[1], f2[1], 2e-3) << "test loss";
  EXPECT_NEAR(f1[2], f2[2], 0.5) << "test accuracy, %";
  std::ifstream ckpt(temp_path("train2") + "/mlp.safetensors");
  EXPECT_TRUE(ckpt.good());
}

#ifdef EMBER_MPIRUN
namespace {
// How run_under_mpirun starts a job besides its scenario and size.
struct MpiJob {
  std::string arg;         // the scenario's argument, if any
  int timeout_ms = 20000;  // the process groups' timeout
  bool recovery = false;   // mpirun --enable-recovery: a rank's death does not end the job
};

// Runs `world` workers of `scenario` under mpirun with the mpi backend.
Exit run_under_mpirun(const std::string& scenario, int world, const MpiJob& job = {}) {
  const std::string out = temp_path("mpi_" + scenario + job.arg + ".log");
  const std::string port = std::to_string(free_port());
  std::vector<std::string> argv = {EMBER_MPIRUN, "--oversubscribe", "-np", std::to_string(world)};
  if (job.recovery) argv.push_back("--enable-recovery");
  const std::vector<std::string> vars = {
      "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port, "EMBER_DIST_BACKEND=mpi",
      "EMBER_TEST_TIMEOUT_MS=" + std::to_string(job.timeout_ms), "OMP_NUM_THREADS=1"};
  for (const std::string& var : vars) argv.insert(argv.end(), {"-x", var});
  argv.insert(argv.end(), {EMBER_DIST_WORKER, scenario});
  if (!job.arg.empty()) argv.push_back(job.arg);
  std::map<std::string, std::string> env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"},
                                            {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
                                            {"OMPI_MCA_btl", "self,tcp"},
                                            {"OMPI_MCA_btl_tcp_if_include", "lo"},
                                            {"OMPI_MCA_oob_tcp_if_include", "lo"}};
  // Note [MPI jobs under the sanitizers]: the ranks of the ASan pass check memory errors, not
  // leaks. Open MPI keeps allocations to the end and unloads the components that made them at
  // MPI_Finalize, so LeakSanitizer reports them with frames of no module, which no suppression
  // can name; the gloo jobs check the leaks of the core's distributed code.
  if (const char* asan = std::getenv("ASAN_OPTIONS"))
    env["ASAN_OPTIONS"] = std::string(asan) + ":detect_leaks=0";
  const pid_t pid = spawn(argv, env, out);
  return wait_all({pid}, {out}, 180)[0];
}
}  // namespace

// Every rank maps neither libmpi nor libnccl after discovery, and libmpi once its first process
// group exists (Note [Lazy MPI] in backends/mpi/lazy_mpi.cpp).
TEST(Mpi, DiscoveryLeavesLibmpiUnloadedUntilTheFirstProcessGroup) {
  const Exit e = run_under_mpirun("vendor_libraries", 2);
  EXPECT_EQ(e.status, 0) << e.output;
  const std::vector<std::string> discovered = lines_starting(e.output, "after discovery: ");
  EXPECT_EQ(discovered, std::vector<std::string>(2, "none")) << e.output;
  for (int r = 0; r < 2; ++r) {
    const std::vector<std::string> used =
        lines_starting(e.output, "after mpi on rank " + std::to_string(r) + " of 2: ");
    ASSERT_EQ(used.size(), 1u) << e.output;
    EXPECT_NE(used[0].find("libmpi.so"), std::string::npos) << e.output;
    EXPECT_EQ(used[0].find("libnccl"), std::string::npos) << e.output;
  }
}

TEST(Mpi, EveryOperationAndDtypeUnderMpirunOnTwoRanks) {
  const Exit e = run_under_mpirun("collectives", 2);
  EXPECT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("collectives ok on rank 1 of 2: 0 failures"), std::string::npos)
      << e.output;
}

TEST(Mpi, EveryOperationAndDtypeUnderMpirunOnThreeRanks) {
  const Exit e = run_under_mpirun("collectives", 3);
  EXPECT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("collectives ok on rank 2 of 3: 0 failures"), std::string::npos)
      << e.output;
}

// Note [Ranks agree before data moves]: ranks whose collectives differ in size, dtype or operation
// all fail at once, each naming every rank's call, and none returns (MPI itself would reduce the
// shorter length, or fail on one rank only).
TEST(Mpi, RanksThatMakeDifferentCollectivesFailOnEveryRankNamingEachCall) {
  struct Case {
    const char* scenario;
    const char* arg;
    int world;
    const char* calls;
  };
  const Case cases[] = {
      {"mismatched_sizes", "", 2,
       "rank 0: all_reduce (sum) of 4 float32; rank 1: all_reduce (sum) of 3 float32"},
      {"mismatched_sizes", "", 3,
       "rank 0: all_reduce (sum) of 4 float32; ranks 1, 2: all_reduce (sum) of 3 float32"},
      {"mismatched_calls", "dtype", 2,
       "rank 0: all_reduce (sum) of 4 float32; rank 1: all_reduce (sum) of 4 float64"},
      {"mismatched_calls", "op", 2,
       "rank 0: all_reduce (sum) of 4 float32; rank 1: broadcast from rank 0 of 4 float32"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.scenario) + " " + c.arg + " on " + std::to_string(c.world));
    const Exit e = run_under_mpirun(c.scenario, c.world, {c.arg});
    EXPECT_NE(e.status, 0) << e.output;
    EXPECT_EQ(e.output.find("a mismatched collective returned"), std::string::npos) << e.output;
    EXPECT_EQ(e.output.find("mismatched all_reduce returned"), std::string::npos) << e.output;
    const std::vector<std::string> caught = lines_starting(e.output, "caught: ");
    ASSERT_EQ(caught.size(), static_cast<size_t>(c.world)) << e.output;
    EXPECT_EQ(lines_starting(e.output, "kind: distributed").size(), caught.size()) << e.output;
    for (const std::string& line : caught) {
      EXPECT_NE(line.find(std::string("the ranks made different collectives, so nothing was "
                                      "sent: ") +
                          c.calls),
                std::string::npos)
          << line;
    }
  }
}

// A receive whose sender moved another dtype fails naming both (MPI would deliver the int32
// bytes as float32 values); the send itself completes. (The short timeout bounds the receiver's
// wait for the sender's note, Note [Naming the ranks that failed], which never comes.)
TEST(Mpi, AReceiveFromASenderOfAnotherDtypeFailsNamingBoth) {
  const Exit e = run_under_mpirun("mismatched_calls", 2, {"send", 2000});
  EXPECT_NE(e.output.find("rank 0: sent"), std::string::npos) << e.output;
  EXPECT_EQ(e.output.find("a mismatched recv returned"), std::string::npos) << e.output;
  const std::vector<std::string> caught = lines_starting(e.output, "caught: ");
  ASSERT_EQ(caught.size(), 1u) << e.output;
  EXPECT_EQ(lines_starting(e.output, "kind: distributed").size(), 1u) << e.output;
  EXPECT_NE(caught[0].find("recv from rank 0 (tag 5): the sender moved send of 4 int32, this "
                           "rank expected send of 4 float32"),
            std::string::npos)
      << caught[0];
}

// A rank that dies: plain mpirun ends the whole job at once (its own message names the rank, and
// the others are killed before they can report). Under --enable-recovery the others live on, but
// Open MPI 4.1 does not fail a non-blocking collective whose peer died, so they fail at the
// group's timeout, and the core's diagnosis names the rank that exited (backends/mpi/README.md).
TEST(Mpi, UnderRecoveryARankThatDiedIsNamedAtTheTimeout) {
  const Exit e = run_under_mpirun("killed_rank", 3, {"", 3000, /*recovery=*/true});
  const std::vector<std::string> caught = lines_starting(e.output, "caught: ");
  ASSERT_EQ(caught.size(), 2u) << e.output;
  for (const std::string& line : caught) {
    EXPECT_NE(line.find("did not complete within 3000 ms"), std::string::npos) << line;
    EXPECT_NE(line.find("rank 1 exited"), std::string::npos) << line;
  }
}

TEST(Mpi, DistributedDataParallelUnderMpirun) {
  const Exit e = run_under_mpirun("ddp", 2);
  EXPECT_EQ(e.status, 0) << e.output;
  EXPECT_NE(e.output.find("ddp on rank 0 of 2"), std::string::npos) << e.output;
}
#endif

// Note [Lazy NCCL] and Note [Lazy MPI]: the plugins open their vendor library on first use, so
// neither libnccl nor libmpi is a dependency of their files (directly or through another library).
TEST(VendorLibraries, TheCommunicationPluginsDoNotNeedNcclOrMpi) {
  std::vector<std::string> plugins;
#ifdef EMBER_MPI_PLUGIN
  plugins.push_back(EMBER_MPI_PLUGIN);
#endif
#ifdef EMBER_NCCL_PLUGIN
  plugins.push_back(EMBER_NCCL_PLUGIN);
#endif
  if (plugins.empty()) GTEST_SKIP() << "neither the mpi nor the nccl plugin is built here";
  for (const std::string& plugin : plugins) {
    ASSERT_TRUE(std::filesystem::exists(plugin)) << plugin;
    const ember::DependencyScan scan = ember::scan_dependencies(plugin);
    EXPECT_TRUE(scan.missing.empty()) << plugin << " misses " << scan.missing.front();
    ASSERT_FALSE(scan.found.empty()) << plugin << ": no DT_NEEDED read";
    for (const auto& [soname, path] : scan.found)
      EXPECT_FALSE(is_vendor_library(soname))
          << plugin << " needs " << soname << " (" << path << ")";
    for (const std::string& soname : scan.missing_names)
      EXPECT_FALSE(is_vendor_library(soname)) << plugin << " needs " << soname;
  }
}

// Discovery loads the mpi and nccl plugins (they report why they are unusable here) but maps
// neither vendor library into the process.
TEST(VendorLibraries, DiscoveryMapsNeitherNcclNorMpi) {
  const std::string out = temp_path("vendor_libraries.log");
  const std::vector<Exit> e = wait_all({spawn({EMBER_DIST_WORKER, "vendor_libraries"},
                                              {{"EMBER_DIST_BACKEND", ""},
                                               {"OMPI_COMM_WORLD_SIZE", ""},
                                               {"PMI_SIZE", ""},
                                               {"MV2_COMM_WORLD_SIZE", ""},
                                               {"PMIX_RANK", ""}},
                                              out)},
                                       {out}, 60);
  ASSERT_EQ(e[0].status, 0) << e[0].output;
  EXPECT_EQ(lines_starting(e[0].output, "before discovery: "), std::vector<std::string>{"none"})
      << e[0].output;
  EXPECT_EQ(lines_starting(e[0].output, "after discovery: "), std::vector<std::string>{"none"})
      << e[0].output;
#ifdef EMBER_MPI_PLUGIN
  EXPECT_EQ(lines_starting(e[0].output, "plugin mpi: "), std::vector<std::string>{"unusable"})
      << e[0].output;
#endif
#ifdef EMBER_NCCL_PLUGIN
  EXPECT_EQ(lines_starting(e[0].output, "plugin nccl: ").size(), 1u) << e[0].output;
#endif
}

#ifdef EMBER_MPI_MISSING_LIBRARY_PLUGIN
// The mpi plugin built to open a libmpi that does not exist (backends/mpi/CMakeLists.txt), named
// first so that it shadows the real one, in a process that looks started by mpirun: discovery is
// clean, and the first process group is a DistributedError naming the library and dlerror().
TEST(VendorLibraries, AnMpiLibraryThatCannotBeOpenedIsADistributedErrorAtFirstUse) {
  const std::string out = temp_path("mpi_missing_library.log");
  const std::vector<Exit> e =
      wait_all({spawn({EMBER_DIST_WORKER, "vendor_libraries"},
                      {{"EMBER_PLUGIN_PATH", EMBER_MPI_MISSING_LIBRARY_PLUGIN},
                       {"EMBER_DIST_BACKEND", "mpi"},
                       {"OMPI_COMM_WORLD_RANK", "0"},
                       {"OMPI_COMM_WORLD_SIZE", "1"},
                       {"RANK", ""},
                       {"WORLD_SIZE", ""},
                       {"MASTER_ADDR", "127.0.0.1"},
                       {"MASTER_PORT", std::to_string(free_port())},
                       {"EMBER_TEST_TIMEOUT_MS", "20000"}},
                      out)},
               {out}, 60);
  EXPECT_EQ(e[0].status, 3) << e[0].output;  // caught, not a crash
  EXPECT_EQ(lines_starting(e[0].output, "plugin mpi: "),
            (std::vector<std::string>{"loaded", "shadowed"}))
      << e[0].output;
  EXPECT_EQ(lines_starting(e[0].output, "after discovery: "), std::vector<std::string>{"none"})
      << e[0].output;
  const std::vector<std::string> error = lines_starting(e[0].output, "distributed error: ");
  ASSERT_EQ(error.size(), 1u) << e[0].output;
  EXPECT_NE(error[0].find("[mpi] cannot open libember-no-such-mpi.so.40: "
                          "libember-no-such-mpi.so.40: cannot open shared object file"),
            std::string::npos)
      << error[0];
  EXPECT_EQ(lines_starting(e[0].output, "after mpi failed: "), std::vector<std::string>{"none"})
      << e[0].output;
}
#endif

TEST(Plugins, CommunicationBackendsAreReportedWithTheirState) {
  const std::string out = temp_path("plugins.json");
  const std::vector<Exit> e =
      wait_all({spawn({EMBER_CLI, "plugins", "--json"},
                      {{"OMPI_COMM_WORLD_SIZE", ""}, {"PMI_SIZE", ""}}, out)},
               {out}, 60);
  ASSERT_EQ(e[0].status, 0) << e[0].output;
  EXPECT_NE(e[0].output.find("\"gloo (cpu, reference)\""), std::string::npos) << e[0].output;
#ifdef EMBER_MPIRUN
  EXPECT_NE(e[0].output.find("\"mpi (unusable: not started by mpirun or srun"), std::string::npos)
      << e[0].output;
#endif
}
