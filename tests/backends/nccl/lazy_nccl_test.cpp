// The lazily loaded NCCL table (backends/nccl/lazy_nccl.h, Note [Lazy NCCL]): nothing is loaded
// until the first request, which resolves every entry point of the NCCL the build found, once;
// a library that cannot be opened, or is not NCCL, is an error naming it. Needs the NCCL library
// but no GPU (nothing here initializes NCCL).
#include "backends/nccl/lazy_nccl.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace ember::nccl_backend {
namespace {

TEST(LazyNccl, NothingIsLoadedBeforeTheFirstRequestThenEveryEntryPointResolvesOnce) {
  EXPECT_EQ(nccl_api_if_loaded(), nullptr);
  EXPECT_EQ(std::string(nccl_library_name()), "libnccl.so." + std::to_string(NCCL_MAJOR));
  EXPECT_FALSE(std::string(nccl_library_dir()).empty());
  // Concurrent first requests load once and all see the same table.
  std::vector<const NcclApi*> seen(8, nullptr);
  std::vector<int32_t> status(8, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      char error[256] = {0};
      status[i] = nccl_api(&seen[i], error, sizeof(error));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(status[i], EMBER_OK);
    EXPECT_EQ(seen[i], seen[0]);
  }
  const NcclApi* api = seen[0];
  EXPECT_EQ(nccl_api_if_loaded(), api);
  // This test links libnccl too, so the loaded soname is that library: each entry is the very
  // function its name says (a table entry resolved under another name would differ).
  EXPECT_EQ(api->get_error_string, &::ncclGetErrorString);
  EXPECT_EQ(api->get_last_error, &::ncclGetLastError);
  EXPECT_EQ(api->get_unique_id, &::ncclGetUniqueId);
  EXPECT_EQ(api->comm_init_rank_config, &::ncclCommInitRankConfig);
  EXPECT_EQ(api->comm_get_async_error, &::ncclCommGetAsyncError);
  EXPECT_EQ(api->comm_finalize, &::ncclCommFinalize);
  EXPECT_EQ(api->comm_destroy, &::ncclCommDestroy);
  EXPECT_EQ(api->comm_abort, &::ncclCommAbort);
  EXPECT_EQ(api->all_reduce, &::ncclAllReduce);
  EXPECT_EQ(api->broadcast, &::ncclBroadcast);
  EXPECT_EQ(api->all_gather, &::ncclAllGather);
  EXPECT_EQ(api->reduce_scatter, &::ncclReduceScatter);
  EXPECT_EQ(api->send, &::ncclSend);
  EXPECT_EQ(api->recv, &::ncclRecv);
  EXPECT_EQ(api->group_start, &::ncclGroupStart);
  EXPECT_EQ(api->group_end, &::ncclGroupEnd);
  EXPECT_EQ(std::string(api->get_error_string(ncclInvalidArgument)).rfind("invalid argument", 0),
            0u);
}

TEST(LazyNccl, ALibraryThatCannotBeOpenedIsNamedWithEveryDlerror) {
  NcclApi api{};
  char error[1024] = {0};
  const int32_t s =
      nccl_load("libember-no-such-nccl.so.2", "/nonexistent-ember-dir", &api, error, sizeof(error));
  EXPECT_EQ(s, EMBER_ERR_PEER);  // raised by the core as a DistributedError
  const std::string message = error;
  EXPECT_EQ(message.rfind("[nccl] cannot open libember-no-such-nccl.so.2: ", 0), 0u) << message;
  EXPECT_NE(message.find("libember-no-such-nccl.so.2: cannot open shared object file"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("/nonexistent-ember-dir/libember-no-such-nccl.so.2: cannot open"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("LD_LIBRARY_PATH"), std::string::npos) << message;
  EXPECT_EQ(api.all_reduce, nullptr);
}

TEST(LazyNccl, ALibraryThatIsNotNcclIsNamedWithTheMissingFunction) {
  NcclApi api{};
  char error[1024] = {0};
  EXPECT_EQ(nccl_load("libc.so.6", "", &api, error, sizeof(error)), EMBER_ERR_PEER);
  const std::string message = error;
  EXPECT_EQ(message.rfind("[nccl] libc.so.6 is not a usable NCCL: ", 0), 0u) << message;
  EXPECT_NE(message.find("ncclGetErrorString"), std::string::npos) << message;
  EXPECT_NE(message.find("2.14"), std::string::npos) << message;
}

}  // namespace
}  // namespace ember::nccl_backend
