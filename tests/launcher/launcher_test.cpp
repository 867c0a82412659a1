// `ember run` (tools/ember/launch.cpp), run as a subprocess: the environment of each rank,
// forwarded output, arguments passed through, failures, signals, the timeout and bad options.
// The ranks are launch_child, whose arguments say what each does.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/testing/build_paths.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using Args = std::vector<std::string>;

const std::string kChild = EMBER_LAUNCH_CHILD;

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

struct Result {
  int status = -1;  // the exit status, or 1000 + signal when `ember run` itself was killed
  std::string out;
  std::string err;
  double seconds = 0;
};

// One `ember run ARGS...` in a child process with stdout and stderr captured. The environment
// is the test's, without OMP_NUM_THREADS, plus `env`. Every wait is bounded: after 25 s the
// launcher is killed (its ranks follow it: PR_SET_PDEATHSIG) and the test fails.
class Launch {
 public:
  explicit Launch(const Args& args, const Args& env = {}) {
    std::vector<std::string> envs;
    for (char** e = environ; *e; ++e) {
      if (std::strncmp(*e, "OMP_NUM_THREADS=", 16) != 0) envs.emplace_back(*e);
    }
    envs.insert(envs.end(), env.begin(), env.end());
    Args argv_s{"ember", "run"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv, envp;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out[2], err[2];
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // only the launcher's own descriptors
    // Default signal handling and mask, even when the test runs as a background job (which
    // ignores SIGINT): the launcher keeps ignored signals ignored.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t sigs;
    sigemptyset(&sigs);
    posix_spawnattr_setsigmask(&attr, &sigs);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&sigs, sig);
    posix_spawnattr_setsigdefault(&attr, &sigs);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    started_ = Clock::now();
    const int rc = ::posix_spawn(&pid_, EMBER_CLI, &fa, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    ::close(err[1]);
    out_fd_ = out[0];
    err_fd_ = err[0];
    EXPECT_EQ(rc, 0) << "cannot start " << EMBER_CLI << ": " << std::strerror(rc);
    if (rc != 0) pid_ = -1;
  }
  ~Launch() {
    if (pid_ > 0) finish();
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  // Reads output until stdout holds `count` copies of `needle`; false after `timeout_s`.
  bool wait_for(const std::string& needle, size_t count, double timeout_s) {
    const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (count_of(res_.out, needle) < count) {
      if (Clock::now() >= until || !pump(100)) return false;
    }
    return true;
  }

  void signal(int sig) { ASSERT_EQ(::kill(pid_, sig), 0); }

  // Reads everything and waits for `ember run` to exit.
  Result finish() {
    const auto until = started_ + std::chrono::seconds(25);
    while (pump(100)) {
      if (Clock::now() >= until) {
        ADD_FAILURE() << "ember run still running after 25 s; killing it";
        ::kill(pid_, SIGKILL);
        break;
      }
    }
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    res_.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    res_.status = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
    ::close(out_fd_);
    ::close(err_fd_);
    return res_;
  }

 private:
  // Polls both pipes for up to `ms`; false once both are at EOF.
  bool pump(int ms) {
    pollfd p[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    if (out_eof_) p[0].fd = -1;
    if (err_eof_) p[1].fd = -1;
    if (out_eof_ && err_eof_) return false;
    if (::poll(p, 2, ms) <= 0) return true;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (p[i].revents == 0) continue;
      const ssize_t n = ::read(p[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? res_.out : res_.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_eof_ : err_eof_) = true;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  bool out_eof_ = false;
  bool err_eof_ = false;
  Clock::time_point started_;
  Result res_;
};

Result run(const Args& args, const Args& env = {}) {
  return Launch(args, env).finish();
}

Args with_child(Args options, const Args& actions) {
  options.push_back(kChild);
  options.insert(options.end(), actions.begin(), actions.end());
  return options;
}

// A fresh directory under the test temp dir; removed with the object.
struct TempDir {
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "ember-launch-XXXXXX";
    path = ::mkdtemp(tmpl.data()) ? tmpl : "";
    EXPECT_FALSE(path.empty());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

// Parses the `env` lines of launch_child: rank of the prefix -> (variable -> value).
std::map<int, std::map<std::string, std::string>> env_by_rank(const Result& r) {
  std::map<int, std::map<std::string, std::string>> by;
  const std::regex line(R"(^\[rank (\d+)\] (RANK=.*)$)");
  for (const std::string& l : lines_of(r.out)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    const int rank = std::stoi(m[1]);
    EXPECT_EQ(by.count(rank), 0u) << "rank " << rank << " twice:\n" << r.out;
    std::istringstream kv(m[2]);
    for (std::string item; kv >> item;) {
      by[rank][item.substr(0, item.find('='))] = item.substr(item.find('=') + 1);
    }
  }
  return by;
}

bool pid_gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::vector<pid_t> pids_of(const Result& r) {
  std::vector<pid_t> pids;
  const std::regex line(R"(^\[rank \d+\] pid=(\d+)$)");
  for (const std::string& l : lines_of(r.out)) {
    std::smatch m;
    if (std::regex_match(l, m, line)) pids.push_back(std::stoi(m[1]));
  }
  return pids;
}

TEST(Launcher, EachRankGetsItsEnvironment) {
  const Result r = run(with_child({"--nproc-per-node", "3"}, {"env"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto by = env_by_rank(r);
  ASSERT_EQ(by.size(), 3u) << r.out;
  std::set<std::string> ports;
  for (const auto& [rank, env] : by) {
    EXPECT_EQ(env.at("RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("WORLD_SIZE"), "3");
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "3");
    EXPECT_EQ(env.at("GROUP_RANK"), "0");
    EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(env.at("OMP_NUM_THREADS"), "1");
    ports.insert(env.at("MASTER_PORT"));
  }
  std::set<int> ranks;
  for (const auto& [rank, env] : by) ranks.insert(rank);
  EXPECT_EQ(ranks, std::set<int>({0, 1, 2}));
  // One node and no --master-port: a free port chosen by the kernel, the same for all ranks.
  ASSERT_EQ(ports.size(), 1u);
  const int port = std::stoi(*ports.begin());
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
  EXPECT_NE(port, 29500);
  EXPECT_TRUE(has(r.err, "ember run: OMP_NUM_THREADS is not set: setting it to 1")) << r.err;
  EXPECT_EQ(count_of(r.err, "OMP_NUM_THREADS"), 1u) << r.err;
}

TEST(Launcher, SecondNodeRanksFollowTheFirstNodes) {
  const Result r = run(with_child(
      {"--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "3", "--master-addr", "10.1.2.3"},
      {"env"}));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto by = env_by_rank(r);
  ASSERT_EQ(by.size(), 3u) << r.out;
  int expected = 3;
  for (const auto& [rank, env] : by) {
    EXPECT_EQ(rank, expected++);
    EXPECT_EQ(env.at("RANK"), std::to_string(rank));
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(rank - 3));
    EXPECT_EQ(env.at("WORLD_SIZE"), "6");
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "3");
    EXPECT_EQ(env.at("GROUP_RANK"), "1");
    EXPECT_EQ(env.at("MASTER_ADDR"), "10.1.2.3");
    EXPECT_EQ(env.at("MASTER_PORT"), "29500");  // several nodes: the agreed default
  }
}

TEST(Launcher, GivenPortAndOmpThreadsAreKept) {
  const Result r = run(with_child({"--nproc-per-node", "2", "--master-port", "23456"}, {"env"}),
                       {"OMP_NUM_THREADS=4", "RANK=77"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto by = env_by_rank(r);
  ASSERT_EQ(by.size(), 2u) << r.out;
  for (const auto& [rank, env] : by) {
    EXPECT_EQ(env.at("RANK"), std::to_string(rank));  // the launcher's RANK is replaced
    EXPECT_EQ(env.at("MASTER_PORT"), "23456");
    EXPECT_EQ(env.at("OMP_NUM_THREADS"), "4");
  }
  EXPECT_FALSE(has(r.err, "OMP_NUM_THREADS")) << r.err;
}

TEST(Launcher, LinesArePrefixedAndNeverInterleaved) {
  constexpr int kRanks = 4, kLines = 3000, kErrLines = 300;
  const Result r =
      run(with_child({"--nproc-per-node", std::to_string(kRanks)},
                     {"lines", std::to_string(kLines), "errlines", std::to_string(kErrLines)}));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string pad(60, 'x');
  for (const auto& [text, what, count] :
       {std::tuple{r.out, "line", kLines}, std::tuple{r.err, "errline", kErrLines}}) {
    const std::regex line(std::string(R"(^\[rank (\d)\] )") + what + R"( (\d+) of rank (\d) )" +
                          pad + "$");
    std::map<int, int> next;
    int bad = 0;
    for (const std::string& l : lines_of(text)) {
      if (l.starts_with("ember run: ")) continue;  // the launcher's own note
      std::smatch m;
      if (!std::regex_match(l, m, line) || m[1] != m[3] ||
          std::stoi(m[2]) != next[std::stoi(m[1])]++) {
        if (++bad <= 3) ADD_FAILURE() << "unexpected " << what << ": '" << l << "'";
      }
    }
    EXPECT_EQ(bad, 0);
    ASSERT_EQ(next.size(), static_cast<size_t>(kRanks)) << what;
    for (const auto& [rank, n] : next) EXPECT_EQ(n, count) << what << " of rank " << rank;
  }
}

TEST(Launcher, FinalPartialLineIsFlushedWithPrefix) {
  const Result r =
      run(with_child({"--nproc-per-node", "2"}, {"lines", "1", "partial", "no newline"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "[rank 0] no newline\n")) << r.out;
  EXPECT_TRUE(has(r.out, "[rank 1] no newline\n")) << r.out;
  EXPECT_EQ(count_of(r.out, "\n"), 4u) << r.out;
}

TEST(Launcher, RankExitIsNotDelayedByAProcessHoldingItsOutput) {
  // The rank's own process keeps its stdout open: the launcher must not wait for EOF, and the
  // partial line is still forwarded when the rank exits.
  const Result r = run(with_child({}, {"hold-stdout", "10", "partial", "last words"}));
  std::smatch holder;
  if (std::regex_search(r.out, holder, std::regex(R"(holder=(\d+))"))) {
    ::kill(std::stoi(holder[1]), SIGKILL);
  }
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_TRUE(has(r.out, "[rank 0] last words\n")) << r.out;
  EXPECT_EQ(holder.size(), 2u) << r.out;
}

TEST(Launcher, ArgumentsPassThroughUntouched) {
  const Args passed{"-x", "--nproc-per-node", "5",         "--help",
                    "--", "--timeout-s=1",    "two words", ""};
  auto expect_echo = [&](const Result& r, int ranks) {
    ASSERT_EQ(r.status, 0) << r.err;
    for (int rank = 0; rank < ranks; ++rank) {
      std::string want;
      for (const std::string& a : passed) {
        want += "[rank " + std::to_string(rank) + "] arg=[" + a + "]\n";
      }
      std::string got;
      for (const std::string& l : lines_of(r.out)) {
        if (l.starts_with("[rank " + std::to_string(rank) + "]")) got += l + "\n";
      }
      EXPECT_EQ(got, want);
    }
  };
  Args echo{"echo"};
  echo.insert(echo.end(), passed.begin(), passed.end());
  expect_echo(run(with_child({"--nproc-per-node", "2"}, echo)), 2);
  // `--` between the launcher's options and PROGRAM.
  expect_echo(run(with_child({"--nproc-per-node", "2", "--"}, echo)), 2);
  expect_echo(run(with_child({"--"}, echo)), 1);
}

TEST(Launcher, FailingRankSetsTheStatusAndStopsTheOthers) {
  // Ranks 0 and 2 would sleep 60 s; SIGTERM must end them well within the 5 s grace.
  const Result r = run(with_child({"--nproc-per-node", "3"}, {"pid", "sleep-on", "1", "0.3",
                                                              "exit-on", "1", "3", "sleep", "60"}));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(ember run: rank 1 \(pid \d+\) failed: exit status 3)")))
      << r.err;
  EXPECT_LT(r.seconds, 4.0) << r.err;
  EXPECT_FALSE(has(r.err, "SIGKILL")) << r.err;
  const std::vector<pid_t> pids = pids_of(r);
  EXPECT_EQ(pids.size(), 3u) << r.out;
  for (pid_t pid : pids) EXPECT_TRUE(pid_gone(pid)) << "pid " << pid << " is still there";
}

TEST(Launcher, RankKilledBySignalGives128PlusSignal) {
  const Result r =
      run(with_child({"--nproc-per-node", "2"}, {"pid", "kill-on", "0", "9", "sleep", "60"}));
  EXPECT_EQ(r.status, 137) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex(R"(ember run: rank 0 \(pid \d+\) failed: killed by signal 9 \(SIGKILL\))")))
      << r.err;
  EXPECT_LT(r.seconds, 4.0) << r.err;
  for (pid_t pid : pids_of(r)) EXPECT_TRUE(pid_gone(pid)) << "pid " << pid << " is still there";
}

TEST(Launcher, RankIgnoringSigtermIsKilledAfterTheGracePeriod) {
  TempDir dir;
  // Both ranks ignore SIGTERM before rank 0 fails (the files say so); rank 1 then needs SIGKILL.
  const Result r = run(with_child({"--nproc-per-node", "2", "--grace-s", "1"},
                                  {"pid", "ignore-term", "touch", dir.path, "await", dir.path, "2",
                                   "exit-on", "0", "5", "sleep", "60"}));
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_TRUE(has(r.err, "failed: exit status 5")) << r.err;
  EXPECT_TRUE(has(r.err, "ember run: rank 1 still running 1 s after SIGTERM; sending SIGKILL"))
      << r.err;
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 5.0);
  for (pid_t pid : pids_of(r)) EXPECT_TRUE(pid_gone(pid)) << "pid " << pid << " is still there";
}

TEST(Launcher, SignalsToTheLauncherAreForwardedToEveryRank) {
  for (const auto& [sig, name] : {std::pair{SIGTERM, "SIGTERM"}, std::pair{SIGINT, "SIGINT"}}) {
    Launch l(with_child({"--nproc-per-node", "3"}, {"trap-term", "ready", "sleep", "60"}));
    if (sig == SIGINT) {
      // SIGINT is forwarded as SIGINT, which launch_child does not catch: each rank dies of it.
      ASSERT_TRUE(l.wait_for("] ready", 3, 10));
      l.signal(sig);
      const Result r = l.finish();
      EXPECT_EQ(r.status, 130) << r.err;
      EXPECT_TRUE(has(r.err, "ember run: received SIGINT; forwarding it to ranks 0, 1, 2"))
          << r.err;
      EXPECT_FALSE(has(r.err, "failed")) << r.err;  // deaths the launcher caused are no failures
      EXPECT_LT(r.seconds, 4.0);
      continue;
    }
    ASSERT_TRUE(l.wait_for("] ready", 3, 10));
    l.signal(sig);
    const Result r = l.finish();
    EXPECT_EQ(r.status, 143) << r.err;
    for (int rank = 0; rank < 3; ++rank) {
      EXPECT_TRUE(has(r.out, "[rank " + std::to_string(rank) + "] caught " + name)) << r.out;
    }
    EXPECT_TRUE(has(r.err, std::string("ember run: received ") + name)) << r.err;
    EXPECT_LT(r.seconds, 4.0);
  }
}

TEST(Launcher, TimeoutStopsTheRanksWith124) {
  const Result r =
      run(with_child({"--nproc-per-node", "2", "--timeout-s", "1"}, {"pid", "sleep", "60"}));
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_TRUE(has(r.err, "ember run: timed out after 1 s; stopped ranks 0, 1")) << r.err;
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 4.0);
  for (pid_t pid : pids_of(r)) EXPECT_TRUE(pid_gone(pid)) << "pid " << pid << " is still there";
}

TEST(Launcher, NoDescriptorLeaksIntoTheRanks) {
  const Result r = run(with_child({"--nproc-per-node", "2"}, {"fds"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "[rank 0] fds:\n")) << r.out;
  EXPECT_TRUE(has(r.out, "[rank 1] fds:\n")) << r.out;
}

TEST(Launcher, BadOptionsAreRejectedBeforeAnythingStarts) {
  TempDir dir;
  const std::string not_executable = dir.path + "/not-executable";
  std::ofstream(not_executable) << "#!/bin/sh\n";
  const std::vector<std::pair<Args, std::string>> cases = {
      {{"--nproc-per-node", "0", kChild}, "[ember run] --nproc-per-node must be at least 1: got 0"},
      {{"--nnodes", "0", kChild}, "[ember run] --nnodes must be at least 1: got 0"},
      {{"--nnodes", "2", "--node-rank", "2", kChild},
       "[ember run] --node-rank must be in [0, 2): got 2"},
      {{"--node-rank=-1", kChild}, "[ember run] --node-rank must be in [0, 1): got -1"},
      {{"--master-port", "70000", kChild}, "[ember run] --master-port must be in [1, 65535]"},
      {{"--timeout-s=-1", kChild}, "[ember run] --timeout-s and --grace-s cannot be negative"},
      {{}, "[ember run] no program given"},
      {{"--nproc-per-node", "2", "--"}, "[ember run] no program given"},
      {{"definitely-not-a-program-1f3a"},
       "[ember run] cannot start 'definitely-not-a-program-1f3a': No such file or directory"},
      {{"/nonexistent/dir/prog"},
       "[ember run] cannot start '/nonexistent/dir/prog': No such file or directory"},
      {{not_executable}, "[ember run] cannot start '" + not_executable + "': Permission denied"},
      {{dir.path}, "[ember run] cannot start '" + dir.path + "': Permission denied"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.status, 2) << message << "\n" << r.err;
    EXPECT_TRUE(has(r.err, message) && r.err.starts_with("[ember run] ")) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;  // one line, and no rank started
    EXPECT_EQ(r.out, "");
  }
}

TEST(Launcher, ExecFailingInTheChildGives127) {
  TempDir dir;
  const std::string script = dir.path + "/missing-interpreter";
  std::ofstream(script) << "#!/nonexistent/interpreter\n";
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  const Result r = run({"--nproc-per-node", "2", script});
  EXPECT_EQ(r.status, 127) << r.err;
  EXPECT_TRUE(
      has(r.err, "[ember run] cannot start '" + script + "' for rank 0: No such file or directory"))
      << r.err;
  EXPECT_FALSE(has(r.err, "[rank ")) << r.err;
  EXPECT_EQ(r.out, "");
}

}  // namespace
