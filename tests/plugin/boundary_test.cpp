// Note [One boundary for every plugin entry point]: a kernel of each backend that throws, or runs
// out of memory, inside the plugin comes back as a clean ember::Error naming the op, the device
// and the cause, and the process lives on. EMBER_TESTING_KERNEL_FAULT makes the SDK's guard of
// the named op's kernels throw (it is read once per plugin, so each case is a child process);
// the GPU suite does the same for the CUDA backend.
#include <gtest/gtest.h>

#include <string>

#include "tests/plugin/plugin_test_util.h"

namespace ember {
namespace {

using test::has;

struct Fault {
  std::string device, fault, expect;
};

TEST(PluginBoundary, KernelsThatThrowOrRunOutOfMemoryGiveCleanErrors) {
  for (const Fault& f : {Fault{"cpu", "oom", "out of host memory (std::bad_alloc)"},
                         Fault{"cpu", "throw", "unexpected exception: fault injected"},
                         Fault{"reference", "oom", "out of host memory (std::bad_alloc)"},
                         Fault{"reference", "throw", "unexpected exception: fault injected"}}) {
    SCOPED_TRACE(f.device + " " + f.fault);
    const test::RunResult r = test::run_cli("EMBER_TESTING_KERNEL_FAULT=matmul:" + f.fault,
                                            "conformance --device " + f.device + " --filter matmul");
    EXPECT_EQ(r.signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // the cases fail; the process does not
    EXPECT_TRUE(has(r.out, "[matmul] " + f.device)) << r.out;
    EXPECT_TRUE(has(r.out, f.expect)) << r.out;
  }
  // Without the fault the same run passes, so the errors above came from the guard.
  const test::RunResult ok = test::run_cli("", "conformance --device cpu --filter matmul");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

}  // namespace
}  // namespace ember
