// fork() after parallel ops: the child computes on its one thread instead of waiting for the
// parent's OpenMP pool (Note [Forked children run on one thread] in backends/cpu/plugin.cpp).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <ember/ember.h>

namespace ember {
namespace {

// What the child checks, each with the exit status it fails with.
enum ChildFailure {
  kThreads = 10,  // get_num_threads() is not 1, or set_num_threads raised it
  kAdd,           // elementwise add over 2e6 elements
  kSum,           // a reduction over 2e6 elements
  kMatmul,        // a product larger than one thread's grain (oneDNN)
  kConv,          // a convolution of the parent's geometry (oneDNN, a cached primitive)
  kSoftmax,       // a softmax over many rows (oneDNN)
  kThrew,         // an op threw
};

double scalar(const Tensor& t) {
  return t.to(DType::Float64).item();
}

// The ops every check runs, each large enough to take several threads in the parent.
Tensor big_ones() {
  return ones({2'000'000});
}
Tensor conv_input() {
  return ones({8, 16, 32, 32});
}
Tensor conv_weight() {
  return ones({32, 16, 3, 3});
}

/** 0 when every parallel op gives its exact value, else a ChildFailure; in the child (`child`),
 *  also that it runs on one thread, before and after asking for more. */
int run_checks(bool child) {
  try {
    for (int round = 0; round < (child ? 2 : 1); ++round) {
      // The second round after asking for more threads: the child keeps one.
      if (round == 1) set_num_threads(4);
      const Tensor added = add(big_ones(), 1.0);
      if (scalar(added.narrow(0, 1'999'999, 1).reshape({})) != 2.0) return kAdd;
      if (scalar(sum(added)) != 4'000'000.0) return kSum;
      const Tensor product = matmul(ones({600, 700}), ones({700, 500}));
      if (scalar(product.narrow(0, 599, 1).narrow(1, 499, 1).reshape({})) != 700.0) return kMatmul;
      if (scalar(sum(product)) != 700.0 * 600 * 500) return kMatmul;
      const Tensor y = conv2d(conv_input(), conv_weight());
      if (scalar(sum(y)) != 144.0 * 8 * 32 * 30 * 30) return kConv;
      const Tensor s = softmax(zeros({4096, 64}), -1);
      if (scalar(sum(s)) != 4096.0) return kSoftmax;
      if (child && get_num_threads() != 1) return kThreads;
    }
  } catch (...) {
    return kThrew;
  }
  return 0;
}

/** The child's exit status, or -1 if it ran past `limit` (then it is killed). */
int wait_for(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// A pool of several threads, whatever the machine has; no more than it has where it has several
// (oneDNN's ops on more threads than cores upset LeakSanitizer at exit in the ASan pass).
int pool_threads() {
  return std::max(2, get_num_threads());
}

TEST(Fork, ChildRunsParallelOpsOnItsOneThreadAfterTheParentUsedThePool) {
  const int before = get_num_threads();
  const int threads = pool_threads();
  set_num_threads(threads);
  // The same ops in the parent: the pool starts, and the convolution's primitive is cached.
  ASSERT_EQ(run_checks(/*child=*/false), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) ::_exit(run_checks(/*child=*/true));
  const int status = wait_for(pid, std::chrono::seconds(60));
  set_num_threads(before);
  EXPECT_NE(status, -1) << "the forked child hung in a parallel op";
  if (status != -1) {
    EXPECT_EQ(status, 0) << "the forked child failed check " << status << " (ChildFailure)";
  }
  // The parent keeps its threads.
  set_num_threads(threads);
  EXPECT_EQ(get_num_threads(), threads);
  set_num_threads(before);
}

TEST(Fork, ChildOfAThreadThatRanParallelOpsRunsThemToo) {
  // fork() from a thread other than the main one, after that thread used its own pool.
  int status = -2;
  const int threads = pool_threads();
  std::thread forker([&] {
    set_num_threads(threads);
    (void)sum(add(big_ones(), 1.0));
    (void)conv2d(conv_input(), conv_weight());
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(run_checks(/*child=*/true));
    status = pid < 0 ? -3 : wait_for(pid, std::chrono::seconds(60));
  });
  forker.join();
  EXPECT_NE(status, -1) << "the forked child hung in a parallel op";
  if (status != -1) {
    EXPECT_EQ(status, 0) << "the forked child failed check " << status << " (ChildFailure)";
  }
}

}  // namespace
}  // namespace ember
