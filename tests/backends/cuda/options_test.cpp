// The CUDA backend's options (backends/cuda/options.cpp): keys, values and messages, on the CPU.
#include "backends/cuda/options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
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
  for (const char* key :
       {"matmul.allow_tf32", "cudnn.allow_tf32", "cudnn.benchmark", "cudnn.enabled"}) {
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
  set_option(nullptr, "cudnn.enabled", "0", error, sizeof(error));
  EXPECT_FALSE(options().cudnn_enabled.load());
  set_option(nullptr, "cudnn.enabled", "1", error, sizeof(error));
  EXPECT_TRUE(options().cudnn_enabled.load());
}

TEST(CudaOptions, CudnnIsOnUnlessTheEnvironmentSaysZero) {
  const char* env = std::getenv("EMBER_CUDNN_ENABLED");
  EXPECT_EQ(get("cudnn.enabled"), env && std::string(env) == "0" ? "0" : "1");
}

TEST(CudaOptions, CudnnFallbacksIsAReadOnlyCounter) {
  const uint64_t before = options().cudnn_fallbacks.load();
  EXPECT_EQ(get("cudnn.fallbacks"), std::to_string(before));
  options().cudnn_fallbacks.fetch_add(41);
  EXPECT_EQ(get("cudnn.fallbacks"), std::to_string(before + 41));
  char error[256] = {0};
  EXPECT_EQ(set_option(nullptr, "cudnn.fallbacks", "0", error, sizeof(error)), EMBER_ERR_INVALID);
  EXPECT_NE(std::string(error).find("counter"), std::string::npos) << error;
  EXPECT_EQ(options().cudnn_fallbacks.load(), before + 41);
}

// The test hook that makes convolutions split small batches (Note [Convolutions in batch
// chunks]): INT_MAX, cuDNN's limit, by default.
TEST(CudaOptions, ConvMaxElementsTakesACountUpToIntMax) {
  EXPECT_EQ(get("testing.conv_max_elements"), "2147483647");
  char error[256] = {0};
  ASSERT_EQ(set_option(nullptr, "testing.conv_max_elements", "1000", error, sizeof(error)),
            EMBER_OK)
      << error;
  EXPECT_EQ(options().conv_max_elements.load(), 1000);
  EXPECT_EQ(get("testing.conv_max_elements"), "1000");
  for (const char* bad : {"0", "-5", "2147483648", "12x", ""}) {
    EXPECT_EQ(set_option(nullptr, "testing.conv_max_elements", bad, error, sizeof(error)),
              EMBER_ERR_INVALID)
        << bad;
    EXPECT_NE(std::string(error).find("takes a count in [1, 2147483647]"), std::string::npos)
        << error;
  }
  EXPECT_EQ(options().conv_max_elements.load(), 1000);
  ASSERT_EQ(set_option(nullptr, "testing.conv_max_elements", "2147483647", error, sizeof(error)),
            EMBER_OK);
}

TEST(CudaOptions, UnknownKeysAndBadValuesAreRejectedWithAReason) {
  char error[256] = {0};
  EXPECT_EQ(set_option(nullptr, "cudnn.fast", "1", error, sizeof(error)), EMBER_ERR_INVALID);
  EXPECT_NE(std::string(error).find("unknown option 'cudnn.fast'"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find("cudnn.benchmark"), std::string::npos) << error;
  EXPECT_NE(std::string(error).find("cudnn.enabled"), std::string::npos) << error;
  EXPECT_EQ(set_option(nullptr, "cudnn.benchmark", "maybe", error, sizeof(error)),
            EMBER_ERR_INVALID);
  EXPECT_NE(std::string(error).find("got 'maybe'"), std::string::npos) << error;
  char value[16];
  EXPECT_EQ(get_option(nullptr, "nope", value, sizeof(value)), EMBER_ERR_INVALID);
}

}  // namespace
}  // namespace ember::cuda
