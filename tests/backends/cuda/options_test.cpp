// The CUDA backend's options (backends/cuda/options.cpp): keys, values and messages, on the CPU.
#include "backends/cuda/options.h"

#include <gtest/gtest.h>

#include <string>

#include "ember/plugin_abi.h"

namespace ember::cuda {
namespace {

std::string get(const char* key) {
  char value[16] = {0};
  EXPECT_EQ(get_option(nullptr, key, value, sizeof(value)), EMBER_OK) << key;
  return value;
}

TEST(CudaOptions, EveryKeyTurnsOnAndOffAndReadsBack) {
  char error[256] = {0};
  for (const char* key : {"matmul.allow_tf32", "cudnn.allow_tf32", "cudnn.benchmark"}) {
    const std::string before = get(key);
    for (const char* on : {"1", "true", "on"}) {
      ASSERT_EQ(set_option(nullptr, key, on, error, sizeof(error)), EMBER_OK) << error;
      EXPECT_EQ(get(key), "1") << key << "=" << on;
    }
    for (const char* off : {"0", "false", "off"}) {
      ASSERT_EQ(set_option(nullptr, key, off, error, sizeof(error)), EMBER_OK) << error;
      EXPECT_EQ(get(key), "0") << key << "=" << off;
    }
    set_option(nullptr, key, before.c_str(), error, sizeof(error));
  }
  // The switches the kernels read follow the options.
  set_option(nullptr, "cudnn.benchmark", "1", error, sizeof(error));
  EXPECT_TRUE(options().cudnn_benchmark.load());
  set_option(nullptr, "cudnn.benchmark", "0", error, sizeof(error));
  EXPECT_FALSE(options().cudnn_benchmark.load());
}

TEST(CudaOptions, UnknownKeysAndBadValuesAreRejectedWithAReason) {
  char error[256] = {0};
  EXPECT_EQ(set_option(nullptr, "cudnn.fast", "1", error, sizeof(error)), EMBER_ERR_INVALID);
  EXPECT_NE(std::string(error).find("unknown option 'cudnn.fast'"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find("cudnn.benchmark"), std::string::npos) << error;
  EXPECT_EQ(set_option(nullptr, "cudnn.benchmark", "maybe", error, sizeof(error)),
            EMBER_ERR_INVALID);
  EXPECT_NE(std::string(error).find("got 'maybe'"), std::string::npos) << error;
  char value[16];
  EXPECT_EQ(get_option(nullptr, "nope", value, sizeof(value)), EMBER_ERR_INVALID);
}

}  // namespace
}  // namespace ember::cuda
