#include "tools/ember/launch.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

extern char** environ;

namespace ember::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDefaultPort = 29500;
constexpr int kUsageError = 2;
constexpr int kExecFailed = 127;
constexpr int kTimedOut = 124;
constexpr size_t kMaxLine = 64 * 1024;
constexpr std::string_view kRankEnv[] = {"MASTER_ADDR", "MASTER_PORT", "RANK",
                                         "WORLD_SIZE",  "LOCAL_RANK",  "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK"};

// A file descriptor that closes itself; move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A pipe whose ends are both close-on-exec; false (errno set) when none could be made.
bool make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end = Fd(fds[0]);
  write_end = Fd(fds[1]);
  return true;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// "rank 3" or "ranks 0, 1, 2".
std::string ranks_phrase(const std::vector<int>& ranks) {
  if (ranks.empty()) return "no rank";
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

// Writes all of `data` to `fd`; gives up quietly when the reader has gone (EPIPE).
void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else if (!(n < 0 && errno == EINTR)) {
      return;
    }
  }
}

void say(std::string_view line) {
  write_all(STDERR_FILENO, fmt::format("ember run: {}\n", line));
}

int usage_error(std::string_view message) {
  write_all(STDERR_FILENO, fmt::format("[ember run] {}\n", message));
  return kUsageError;
}

// Returns 0 when execvp would find `program` as an executable file, else the errno it would
// report (ENOENT when no candidate exists, EACCES when one exists but cannot be executed).
int find_program(const std::string& program) {
  if (program.empty()) return ENOENT;
  auto check = [](const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EACCES;
    return ::access(path.c_str(), X_OK) == 0 ? 0 : errno;
  };
  if (program.find('/') != std::string::npos) return check(program);
  const char* env_path = std::getenv("PATH");
  std::string path = env_path ? env_path : "/bin:/usr/bin";  // glibc's default for execvp
  int result = ENOENT;
  size_t begin = 0;
  for (;;) {
    const size_t end = std::min(path.find(':', begin), path.size());
    const std::string dir = path.substr(begin, end - begin);
    const int e = check((dir.empty() ? std::string(".") : dir) + "/" + program);
    if (e == 0) return 0;
    if (e == EACCES) result = EACCES;
    if (end == path.size()) break;
    begin = end + 1;
  }
  return result;
}

// Note [A free port for one node]
// With one node every rank is local, so the launcher may choose MASTER_PORT itself: it binds
// port 0 on MASTER_ADDR, reads the port the kernel chose and closes the socket. Parallel runs
// (ctest -j) then do not all meet at 29500. Another process could take the port between the
// close and the moment rank 0 binds it; the window is short and the kernel hands out
// ephemeral ports in turn, so a collision needs bad luck, not just parallelism. With several
// nodes the port must be agreed beforehand, hence 29500 unless --master-port says otherwise.
int pick_free_port(const std::string& addr) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(addr.c_str(), "0", &hints, &found) != 0) return 0;
  int port = 0;
  for (addrinfo* ai = found; ai != nullptr && port == 0; ai = ai->ai_next) {
    Fd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s || ::bind(s.get(), ai->ai_addr, ai->ai_addrlen) != 0) continue;
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) continue;
    if (bound.ss_family == AF_INET) {
      port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else if (bound.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
  }
  ::freeaddrinfo(found);
  return port;
}

// Note [Launcher signals and process groups]
// Each rank runs in its own process group (setpgid in both parent and child, so the group
// exists whichever runs first). A Ctrl-C on a terminal goes to the foreground group, which
// holds only the launcher; the launcher forwards SIGINT, SIGTERM and SIGHUP to each rank's
// group, so a rank sees the signal once, and so do the processes a rank started itself.
// Ranks are background groups on the terminal: one that reads a terminal stdin is stopped by
// SIGTTIN (their stdout and stderr are pipes, never the terminal).
// The handlers only write the signal number into a non-blocking self-pipe, which the poll()
// loop reads with the ranks' output; SIGCHLD comes the same way, so there is no race between
// checking for exited ranks and going to sleep. All signals are blocked across fork(); the
// child sets the handled ones back to their default before unblocking, so a signal arriving
// before exec cannot run the launcher's handler in the child. A signal the launcher was
// started with ignored (nohup's SIGHUP, SIGINT in a background job) stays ignored, and the
// ranks inherit that. SIGPIPE is ignored while the launcher runs (a closed stdout must not
// kill it and orphan the ranks) and restored in the ranks. On Linux each rank also gets
// PR_SET_PDEATHSIG=SIGKILL, so a launcher killed by SIGKILL leaves no ranks behind.
int g_signal_pipe = -1;

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe, &byte, 1);
  errno = saved;
}

// Installs the launcher's handlers for as long as it lives; restores the old ones after.
class SignalScope {
 public:
  SignalScope() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return;
    read_ = Fd(fds[0]);
    write_ = Fd(fds[1]);
    g_signal_pipe = write_.get();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) {
      struct sigaction old {};
      ::sigaction(sig, nullptr, &old);
      if (sig != SIGCHLD && old.sa_handler == SIG_IGN) continue;
      ::sigaction(sig, &sa, &saved_[count_].action);
      saved_[count_++].sig = sig;
    }
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &saved_pipe_);
  }
  ~SignalScope() {
    for (int i = 0; i < count_; ++i) ::sigaction(saved_[i].sig, &saved_[i].action, nullptr);
    ::sigaction(SIGPIPE, &saved_pipe_, nullptr);
    g_signal_pipe = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  bool ok() const { return static_cast<bool>(read_); }
  int read_fd() const { return read_.get(); }

  // In a forked child: the launcher's handlers back to their defaults, SIGPIPE as it was.
  // Async-signal-safe.
  void reset_in_child() const {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int i = 0; i < count_; ++i) ::sigaction(saved_[i].sig, &dfl, nullptr);
    ::sigaction(SIGPIPE, saved_pipe_.sa_handler == SIG_IGN ? &saved_pipe_ : &dfl, nullptr);
  }

 private:
  struct Saved {
    int sig = 0;
    struct sigaction action {};
  };
  Fd read_;
  Fd write_;
  Saved saved_[4];
  int count_ = 0;
  struct sigaction saved_pipe_ {};
};

// Note [Launcher output is forwarded by whole lines]
// Each rank's stdout and stderr are pipes the launcher reads when poll() says so. Bytes wait in
// a per-stream buffer until a newline completes a line; every complete line is written to the
// launcher's own stdout or stderr, prefixed with "[rank R] ", by one writer (this thread), so
// lines of different ranks never mix. A rank's final line without a newline is written, with
// one added, once the rank has exited (or closed the stream). A "line" longer than kMaxLine is
// cut there, so a rank writing binary junk cannot make the launcher's memory grow without end.
// When a rank exits, what it wrote is already in the pipe: the launcher reads the pipe until it
// is empty and closes it, so a grandchild still holding the pipe open cannot keep the launcher
// waiting; its later output is lost.
struct Stream {
  Fd fd;
  std::string pending;
  int dst = STDOUT_FILENO;
  int rank = 0;
};

struct Rank {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
  Stream out;
  Stream err;
};

void forward_lines(Stream& s, bool final) {
  const std::string prefix = fmt::format("[rank {}] ", s.rank);
  std::string text;
  size_t begin = 0;
  for (;;) {
    const size_t nl = s.pending.find('\n', begin);
    const size_t left = s.pending.size() - begin;
    size_t len = 0;
    size_t used = 0;
    if (nl != std::string::npos && nl - begin <= kMaxLine) {
      len = nl - begin;
      used = len + 1;
    } else if (left >= kMaxLine) {
      len = used = kMaxLine;
    } else if (final && left > 0) {
      len = used = left;
    } else {
      break;
    }
    text += prefix;
    text.append(s.pending, begin, len);
    text += '\n';
    begin += used;
  }
  s.pending.erase(0, begin);
  if (!text.empty()) write_all(s.dst, text);
}

// Forwards the stream's last partial line and closes it.
void close_stream(Stream& s) {
  forward_lines(s, /*final=*/true);
  s.fd.reset();
}

// Reads from the stream once (`drain`: until the pipe is empty); at EOF or on an error
// forwards the partial line and closes the stream.
void pump(Stream& s, bool drain) {
  char buf[65536];
  while (s.fd) {
    const ssize_t n = ::read(s.fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close_stream(s);
      return;
    }
    s.pending.append(buf, static_cast<size_t>(n));
    forward_lines(s, /*final=*/false);
    if (!drain) return;
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  return fmt::format("killed by signal {} ({}){}", sig, signal_name(sig),
                     WCOREDUMP(status) ? ", core dumped" : "");
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Note [Exec failures reach the launcher through a pipe]
// run_launcher checks PROGRAM before starting anything, but exec can still fail (a script whose
// interpreter is missing, a file that changed). The child then writes errno to a close-on-exec
// pipe and exits 127; a successful exec closes the pipe, so the launcher's read returns 0 bytes.
// Reading it right after fork also means every started rank has really exec'd PROGRAM.
class Launcher {
 public:
  Launcher(const LaunchOptions& o, const SignalScope& signals) : o_(o), signals_(signals) {}

  // Starts every rank; returns false (after stopping those started) when one could not be.
  bool start(const std::vector<std::string>& env) {
    const int n = o_.nproc_per_node;
    for (int local = 0; local < n; ++local) {
      const int rank = o_.node_rank * n + local;
      std::vector<std::string> rank_env = env;
      rank_env.push_back(fmt::format("RANK={}", rank));
      rank_env.push_back(fmt::format("LOCAL_RANK={}", local));
      if (!start_one(rank, rank_env)) return false;
    }
    return true;
  }

  // Forwards output and signals until every rank has exited; returns the exit status.
  int supervise(Clock::time_point started) {
    const bool has_deadline = o_.timeout_s > 0;
    const auto deadline = started + to_duration(o_.timeout_s);
    std::vector<pollfd> fds;
    std::vector<Stream*> streams;
    while (std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; })) {
      const auto now = Clock::now();
      if (has_deadline && !stopping_ && now >= deadline) {
        say(fmt::format("timed out after {} s; stopped {}", o_.timeout_s,
                        ranks_phrase(running_ranks())));
        stop(kTimedOut, SIGTERM);
      }
      if (stopping_ && !killed_ && now >= kill_at_) {
        say(fmt::format("{} still running {} s after {}; sending SIGKILL",
                        ranks_phrase(running_ranks()), o_.grace_s, signal_name(stop_signal_)));
        signal_running(SIGKILL);
        killed_ = true;
      }
      int wait_ms = 1000;  // a safety net only: SIGCHLD and output wake the poll
      if (has_deadline && !stopping_) wait_ms = std::min(wait_ms, ms_until(deadline));
      if (stopping_ && !killed_) wait_ms = std::min(wait_ms, ms_until(kill_at_));

      fds.assign(1, pollfd{signals_.read_fd(), POLLIN, 0});
      streams.assign(1, nullptr);
      for (Rank& r : ranks_) {
        for (Stream* s : {&r.out, &r.err}) {
          if (!s->fd) continue;
          fds.push_back(pollfd{s->fd.get(), POLLIN, 0});
          streams.push_back(s);
        }
      }
      if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) {
        say(fmt::format("poll failed: {}", std::strerror(errno)));
        return 1;
      }
      if (fds[0].revents != 0) take_signals();
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents != 0) pump(*streams[i], /*drain=*/false);
      }
      reap();
    }
    return exit_code_;
  }

  // Stops what has started after a failure before supervising (Note [Stopping ranks]).
  int stop_started(Clock::time_point started) {
    stop(exit_code_, SIGTERM);
    supervise(started);
    return exit_code_;
  }

 private:
  static Clock::duration to_duration(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }

  static int ms_until(Clock::time_point t) {
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count() + 1;
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
  }

  bool start_one(int rank, const std::vector<std::string>& env) {
    Rank r;
    r.rank = rank;
    r.out.rank = r.err.rank = rank;
    r.err.dst = STDERR_FILENO;
    Fd out_w, err_w, exec_r, exec_w;
    if (!make_pipe(r.out.fd, out_w) || !make_pipe(r.err.fd, err_w) || !make_pipe(exec_r, exec_w)) {
      return start_failed(rank, fmt::format("cannot make a pipe: {}", std::strerror(errno)), 1);
    }
    ::fcntl(r.out.fd.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(r.err.fd.get(), F_SETFL, O_NONBLOCK);

    // Everything the child needs is ready before fork (Note [Launcher signals and process
    // groups]): after it, the child makes only async-signal-safe calls.
    std::vector<char*> argv;
    for (const std::string& a : o_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    [[maybe_unused]] const pid_t launcher = ::getpid();
    sigset_t all, old;
    sigfillset(&all);
    ::sigprocmask(SIG_SETMASK, &all, &old);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      signals_.reset_in_child();
#ifdef __linux__
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != launcher) ::_exit(kExecFailed);  // the launcher is already gone
#endif
      const auto attach = [](int fd, int target) {
        if (fd == target) return ::fcntl(fd, F_SETFD, 0) == 0;
        return ::dup2(fd, target) == target;  // dup2 clears close-on-exec on the copy
      };
      if (attach(out_w.get(), STDOUT_FILENO) && attach(err_w.get(), STDERR_FILENO)) {
        ::sigprocmask(SIG_SETMASK, &old, nullptr);
        environ = envp.data();
        ::execvp(argv[0], argv.data());
      }
      const int e = errno;
      [[maybe_unused]] const ssize_t n = ::write(exec_w.get(), &e, sizeof(e));
      ::_exit(kExecFailed);
    }
    const int fork_errno = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (pid < 0) {
      return start_failed(rank, fmt::format("fork failed: {}", std::strerror(fork_errno)), 1);
    }
    ::setpgid(pid, pid);  // may fail once the child has exec'd; it did so itself then
    out_w.reset();
    err_w.reset();
    exec_w.reset();
    int child_errno = 0;
    ssize_t n;
    while ((n = ::read(exec_r.get(), &child_errno, sizeof(child_errno))) < 0 && errno == EINTR) {
    }
    if (n == static_cast<ssize_t>(sizeof(child_errno))) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return start_failed(rank, std::strerror(child_errno), kExecFailed);
    }
    r.pid = pid;
    r.running = true;
    ranks_.push_back(std::move(r));
    return true;
  }

  bool start_failed(int rank, const std::string& why, int code) {
    write_all(STDERR_FILENO, fmt::format("[ember run] cannot start '{}' for rank {}: {}\n",
                                         o_.command[0], rank, why));
    exit_code_ = code;
    return false;
  }

  std::vector<int> running_ranks() const {
    std::vector<int> out;
    for (const Rank& r : ranks_) {
      if (r.running) out.push_back(r.rank);
    }
    return out;
  }

  void signal_running(int sig) {
    for (const Rank& r : ranks_) {
      if (!r.running) continue;
      if (::kill(-r.pid, sig) != 0) ::kill(r.pid, sig);
    }
  }

  // Note [Stopping ranks]
  // The first cause of stopping decides the exit status: a failing rank (its status, or
  // 128+signal), --timeout-s (124), a signal to the launcher (128+signal), a failed exec (127).
  // Stopping sends a signal to the groups of the ranks still running (SIGTERM, or the
  // launcher's own signal), waits --grace-s for them and then sends SIGKILL; the launcher
  // always waits for every rank, so it leaves no zombies. Ranks that exit while stopping are
  // not reported as failures: their deaths are the launcher's doing.
  void stop(int code, int sig) {
    if (!stopping_) {
      stopping_ = true;
      stop_signal_ = sig;
      exit_code_ = code;
      kill_at_ = Clock::now() + to_duration(o_.grace_s);
    }
    signal_running(sig);
  }

  void take_signals() {
    unsigned char buf[64];
    ssize_t n;
    while ((n = ::read(signals_.read_fd(), buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
      for (ssize_t i = 0; i < n; ++i) {
        const int sig = buf[i];
        if (sig == SIGCHLD) continue;  // reap() runs after every poll
        say(fmt::format("received {}; forwarding it to {}", signal_name(sig),
                        ranks_phrase(running_ranks())));
        stop(128 + sig, sig);
      }
    }
  }

  void reap() {
    for (Rank& r : ranks_) {
      if (!r.running) continue;
      int status = 0;
      pid_t got;
      while ((got = ::waitpid(r.pid, &status, WNOHANG)) < 0 && errno == EINTR) {
      }
      if (got == 0) continue;
      r.running = false;
      for (Stream* s : {&r.out, &r.err}) {
        pump(*s, /*drain=*/true);
        close_stream(*s);  // Note [Launcher output is forwarded by whole lines]
      }
      if (got < 0 || (WIFEXITED(status) && WEXITSTATUS(status) == 0) || stopping_) continue;
      say(fmt::format("rank {} (pid {}) failed: {}", r.rank, r.pid, describe_status(status)));
      stop(exit_code_of(status), SIGTERM);
    }
  }

  const LaunchOptions& o_;
  const SignalScope& signals_;
  std::vector<Rank> ranks_;
  bool stopping_ = false;
  bool killed_ = false;
  int stop_signal_ = SIGTERM;
  Clock::time_point kill_at_;
  int exit_code_ = 0;
};

// The launcher's environment without the variables it sets for each rank, plus those that
// are the same for every rank.
std::vector<std::string> common_env(const LaunchOptions& o, int port) {
  std::vector<std::string> env;
  bool has_omp = false;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view kv(*e);
    const std::string_view key = kv.substr(0, kv.find('='));
    if (key == "OMP_NUM_THREADS") has_omp = true;
    if (std::find(std::begin(kRankEnv), std::end(kRankEnv), key) != std::end(kRankEnv)) continue;
    env.emplace_back(kv);
  }
  env.push_back(fmt::format("MASTER_ADDR={}", o.master_addr));
  env.push_back(fmt::format("MASTER_PORT={}", port));
  env.push_back(fmt::format("WORLD_SIZE={}", o.nnodes * o.nproc_per_node));
  env.push_back(fmt::format("LOCAL_WORLD_SIZE={}", o.nproc_per_node));
  env.push_back(fmt::format("GROUP_RANK={}", o.node_rank));
  if (!has_omp) {
    env.emplace_back("OMP_NUM_THREADS=1");
    say("OMP_NUM_THREADS is not set: setting it to 1 for every rank so the ranks do not "
        "overload the machine (set it yourself to tune it)");
  }
  return env;
}

}  // namespace

int run_launcher(const LaunchOptions& o) {
  if (o.nproc_per_node < 1) {
    return usage_error(
        fmt::format("--nproc-per-node must be at least 1: got {}", o.nproc_per_node));
  }
  if (o.nnodes < 1)
    return usage_error(fmt::format("--nnodes must be at least 1: got {}", o.nnodes));
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return usage_error(
        fmt::format("--node-rank must be in [0, {}): got {} (nodes are numbered "
                    "from 0 to --nnodes - 1)",
                    o.nnodes, o.node_rank));
  }
  if (o.master_port < 0 || o.master_port > 65535) {
    return usage_error(fmt::format("--master-port must be in [1, 65535]: got {}", o.master_port));
  }
  if (!(o.timeout_s >= 0) || !(o.grace_s >= 0)) {
    return usage_error(fmt::format("--timeout-s and --grace-s cannot be negative: got {} and {}",
                                   o.timeout_s, o.grace_s));
  }
  if (static_cast<int64_t>(o.nnodes) * o.nproc_per_node > 1 << 20) {
    return usage_error(
        fmt::format("too many ranks: {} nodes x {} per node", o.nnodes, o.nproc_per_node));
  }
  if (o.command.empty()) {
    return usage_error(
        "no program given: nothing after the options (usage: ember run --nproc-per-node N "
        "[--] PROGRAM [ARGS...])");
  }
  if (const int e = find_program(o.command[0]); e != 0) {
    return usage_error(fmt::format(
        "cannot start '{}': {}{}", o.command[0], std::strerror(e),
        o.command[0].find('/') == std::string::npos ? " (searched the directories in PATH)" : ""));
  }

  int port = o.master_port;
  if (port == 0 && o.nnodes == 1) port = pick_free_port(o.master_addr);  // Note [A free port ...]
  if (port == 0) port = kDefaultPort;
  const std::vector<std::string> env = common_env(o, port);

  SignalScope signals;
  if (!signals.ok()) {
    write_all(STDERR_FILENO,
              fmt::format("[ember run] cannot make a pipe: {}\n", std::strerror(errno)));
    return 1;
  }
  Launcher launcher(o, signals);
  const auto started = Clock::now();
  if (!launcher.start(env)) return launcher.stop_started(started);
  return launcher.supervise(started);
}

// Note [ember run's command line]
// `ember run` is a CLI11 prefix command: after its own options, the first word that is not
// one of them is PROGRAM, and it and everything after it are left over untouched, even words
// like --nproc-per-node or --help. CLI11 2.1 does not accept `--` there (it hands `--` and
// the rest back to the main app, which rejects them), so main() cuts argv at the first `--`
// after `run` before CLI11 sees it. If CLI11 then leaves words over, that `--` came after
// PROGRAM and belongs to its arguments; if not, it separated the options from PROGRAM.
int launch_split_argv(int argc, char** argv, std::vector<std::string>& after_dashdash) {
  int i = 1;
  while (i < argc && argv[i][0] == '-') ++i;  // the main app's flags (-V) come before `run`
  if (i >= argc || std::string_view(argv[i]) != "run") return argc;
  for (int j = i + 1; j < argc; ++j) {
    if (std::string_view(argv[j]) == "--") {
      after_dashdash.assign(argv + j + 1, argv + argc);
      return j;
    }
  }
  return argc;
}

std::vector<std::string> launch_command(const std::vector<std::string>& remaining,
                                        const std::vector<std::string>& after_dashdash,
                                        bool split) {
  if (!split) return remaining;
  if (remaining.empty()) return after_dashdash;
  std::vector<std::string> command = remaining;
  command.emplace_back("--");
  command.insert(command.end(), after_dashdash.begin(), after_dashdash.end());
  return command;
}

}  // namespace ember::tools
