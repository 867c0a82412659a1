// A process that exits while other threads are inside ops, backward or the profiler exits
// cleanly (Note [Op registries outlive exit] in core/dispatch/op.cpp).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <ember/ember.h>

namespace ember {
namespace {

// Each child process starts these threads, lets them run a moment, and calls exit(0), which
// runs the static destructors while the threads are still calling ops.
[[noreturn]] void ops_forever() {
  Tensor x = ones({20'000});
  for (;;) x = add(mul(x, 1.0), 0.0);
}

void backward_once() {
  Tensor w = full({32, 32}, 0.01).requires_grad_(true);
  Tensor y = w;
  for (int i = 0; i < 4; ++i) y = tanh(matmul(y, w));
  sum(y).backward();
}

[[noreturn]] void backward_forever() {
  for (;;) backward_once();
}

[[noreturn]] void child() {
  static profiler::Profiler* prof = new profiler::Profiler();  // recording when the child exits
  prof->start();
  for (auto fn : {ops_forever, ops_forever, backward_forever}) std::thread(fn).detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::exit(0);
}

/** The child's exit status (128 + signal if a signal ended it), or -1 if it hung (killed). */
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

TEST(Exit, WhileOtherThreadsRunOpsBackwardAndTheProfiler) {
  // A race with the static destructors: one exit proves little, so 40 of them.
  // The plugins loaded and the products' oneDNN primitives cached before the children are
  // made: a primitive made while the process exits would meet oneDNN's own cache destroyed by
  // its static destructor, which is oneDNN's to keep (Note [Op registries outlive exit]).
  backward_once();
  for (int run = 0; run < 40; ++run) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) child();
    const int status = wait_for(pid, std::chrono::seconds(30));
    ASSERT_EQ(status, 0) << "run " << run << ": the process ended with "
                         << (status == -1 ? std::string("a hang")
                                          : "status " + std::to_string(status) +
                                                " (128 + signal for a signal)");
  }
}

}  // namespace
}  // namespace ember
