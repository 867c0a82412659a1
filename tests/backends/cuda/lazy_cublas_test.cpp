// The lazily loaded cuBLAS table (backends/cuda/lazy_cublas.h, Note [Lazy cuBLAS]): nothing is
// loaded until the first request, which resolves every entry point of the toolkit's libcublas.
// Needs the CUDA libraries but no GPU.
#include "backends/cuda/lazy_cublas.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace ember::cuda {
namespace {

TEST(LazyCublas, NothingIsLoadedBeforeTheFirstRequestThenEveryEntryPointResolves) {
  EXPECT_EQ(cublas_api_if_loaded(), nullptr);
  EXPECT_EQ(std::string(cublas_library_name()), "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  // Concurrent first requests load once and all see the same table.
  std::vector<const CublasApi*> seen(8, nullptr);
  std::vector<Status> status(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { status[i] = cublas_api("matmul", &seen[i]); });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i].message;
    EXPECT_EQ(seen[i], seen[0]);
  }
  const CublasApi* api = seen[0];
  EXPECT_EQ(cublas_api_if_loaded(), api);
  EXPECT_NE(api->create, nullptr);
  EXPECT_NE(api->set_stream, nullptr);
  EXPECT_NE(api->set_math_mode, nullptr);
  EXPECT_NE(api->gemm_strided_batched_ex, nullptr);
  EXPECT_EQ(std::string(api->status_name(CUBLAS_STATUS_NOT_INITIALIZED)),
            "CUBLAS_STATUS_NOT_INITIALIZED");
  // A failing cuBLAS status is reported with cuBLAS' own name for it.
  const Status s = cublas_failure(CUBLAS_STATUS_ALLOC_FAILED, "cublasCreate_v2(&h)", "x.cpp", 3);
  EXPECT_EQ(s.code, EMBER_ERR_OUT_OF_MEMORY);
  EXPECT_NE(s.message.find("cublasCreate_v2 failed"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("CUBLAS_STATUS_ALLOC_FAILED"), std::string::npos) << s.message;
}

}  // namespace
}  // namespace ember::cuda
