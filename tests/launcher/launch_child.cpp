// A rank for launcher_tests: runs the actions named by its arguments, in order, with RANK from
// the environment `ember run` gives it.
//
//   env                  one line: RANK= WORLD_SIZE= LOCAL_RANK= ... MASTER_PORT= OMP_NUM_THREADS=
//   pid                  one line: pid=<this process's id>
//   lines K / errlines K K lines to stdout / stderr, each written in two pieces
//   partial TEXT         TEXT to stdout without a newline
//   exit-on R K          exit with status K on rank R
//   kill-on R SIG        kill itself with signal SIG on rank R
//   sleep S              sleep S seconds (fractions allowed)
//   sleep-on R S         sleep S seconds on rank R
//   ignore-term          ignore SIGTERM from now on
//   trap-term            on SIGTERM print "caught SIGTERM" and exit 0
//   ready                one line: ready
//   touch DIR            create the file DIR/<rank>
//   await DIR COUNT      wait (at most 20 s) until DIR holds COUNT files
//   hold-stdout S        start a process that keeps stdout open for S seconds; one line:
//                        holder=<its pid>
//   fds                  one line: fds: <every open descriptor above 2>
//   echo ARGS...         one line per remaining argument: arg=[<it>]; ends the actions
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

void put(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) std::_Exit(90);
    done += static_cast<size_t>(n);
  }
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

void on_term(int) {
  const char msg[] = "caught SIGTERM\n";
  [[maybe_unused]] const ssize_t n = ::write(1, msg, sizeof(msg) - 1);
  ::_exit(0);
}

void write_lines(int fd, int rank, int count, const char* what) {
  const std::string pad(60, 'x');
  for (int i = 0; i < count; ++i) {
    const std::string line = std::string(what) + " " + std::to_string(i) + " of rank " +
                             std::to_string(rank) + " " + pad + "\n";
    const size_t half = line.size() / 2;
    put(fd, line.substr(0, half));
    if (i % 16 == 0) ::sched_yield();
    put(fd, line.substr(half));
  }
}

int count_files(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    ::closedir(d);
  }
  return n;
}

std::string open_fds() {
  std::string list;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return "?";
  const int own = ::dirfd(d);
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd > 2 && fd != own) list += " " + std::to_string(fd);
  }
  ::closedir(d);
  return list;
}

}  // namespace

int main(int argc, char** argv) {
  const int rank = std::atoi(env_or("RANK", "-1").c_str());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "launch_child: %s needs a value\n", a.c_str());
        std::exit(91);
      }
      return argv[++i];
    };
    if (a == "env") {
      std::string line;
      for (const char* k : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                            "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS"}) {
        line += std::string(line.empty() ? "" : " ") + k + "=" + env_or(k, "<unset>");
      }
      put(1, line + "\n");
    } else if (a == "pid") {
      put(1, "pid=" + std::to_string(::getpid()) + "\n");
    } else if (a == "lines") {
      write_lines(1, rank, std::atoi(next().c_str()), "line");
    } else if (a == "errlines") {
      write_lines(2, rank, std::atoi(next().c_str()), "errline");
    } else if (a == "partial") {
      put(1, next());
    } else if (a == "exit-on") {
      const int r = std::atoi(next().c_str());
      const int k = std::atoi(next().c_str());
      if (r == rank) std::exit(k);
    } else if (a == "kill-on") {
      const int r = std::atoi(next().c_str());
      const int sig = std::atoi(next().c_str());
      if (r == rank) ::kill(::getpid(), sig);
    } else if (a == "sleep") {
      sleep_s(std::atof(next().c_str()));
    } else if (a == "sleep-on") {
      const int r = std::atoi(next().c_str());
      const double s = std::atof(next().c_str());
      if (r == rank) sleep_s(s);
    } else if (a == "ignore-term") {
      ::signal(SIGTERM, SIG_IGN);
    } else if (a == "trap-term") {
      ::signal(SIGTERM, on_term);
    } else if (a == "ready") {
      put(1, "ready\n");
    } else if (a == "touch") {
      const std::string file = next() + "/" + std::to_string(rank);
      const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
      if (fd < 0) std::exit(92);
      ::close(fd);
    } else if (a == "await") {
      const std::string dir = next();
      const int want = std::atoi(next().c_str());
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (count_files(dir) < want && std::chrono::steady_clock::now() < until) sleep_s(0.01);
    } else if (a == "hold-stdout") {
      const double s = std::atof(next().c_str());
      const pid_t holder = ::fork();
      if (holder == 0) {
        sleep_s(s);
        ::_exit(0);
      }
      put(1, "holder=" + std::to_string(holder) + "\n");
    } else if (a == "fds") {
      put(1, "fds:" + open_fds() + "\n");
    } else if (a == "echo") {
      for (++i; i < argc; ++i) put(1, std::string("arg=[") + argv[i] + "]\n");
    } else {
      std::fprintf(stderr, "launch_child: unknown action '%s'\n", a.c_str());
      return 93;
    }
  }
  return 0;
}
