#include "backends/cuda/options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ember/plugin_abi.h"

namespace ember::cuda {
namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

struct Entry {
  const char* key;
  std::atomic<bool> Options::*field;
};

constexpr Entry kEntries[] = {
    {"matmul.allow_tf32", &Options::matmul_allow_tf32},
    {"cudnn.allow_tf32", &Options::cudnn_allow_tf32},
    {"cudnn.benchmark", &Options::cudnn_benchmark},
    {"cudnn.enabled", &Options::cudnn_enabled},
};

constexpr const char* kFallbacks = "cudnn.fallbacks";
constexpr const char* kConvMaxElements = "testing.conv_max_elements";

const Entry* find(const char* key) {
  for (const Entry& e : kEntries) {
    if (key && std::strcmp(e.key, key) == 0) return &e;
  }
  return nullptr;
}

// 1 for on, 0 for off, -1 for anything else.
int parse(const char* v) {
  if (!v) return -1;
  for (const char* on : {"1", "true", "on"}) {
    if (std::strcmp(v, on) == 0) return 1;
  }
  for (const char* off : {"0", "false", "off"}) {
    if (std::strcmp(v, off) == 0) return 0;
  }
  return -1;
}

}  // namespace

Options& options() {
  static Options* o = [] {
    auto* opts = new Options();  // Note [Per-device state is never destroyed]
    const bool tf32 = env_is("EMBER_CUDA_ALLOW_TF32", "1");
    opts->matmul_allow_tf32 = tf32;
    opts->cudnn_allow_tf32 = tf32;
    opts->cudnn_benchmark = env_is("EMBER_CUDNN_BENCHMARK", "1");
    opts->cudnn_enabled = !env_is("EMBER_CUDNN_ENABLED", "0");
    return opts;
  }();
  return *o;
}

int32_t set_option(void*, const char* key, const char* value, char* error, size_t cap) {
  if (key && std::strcmp(key, kConvMaxElements) == 0) {
    char* end = nullptr;
    const long long n = value ? std::strtoll(value, &end, 10) : 0;
    if (!value || end == value || *end != '\0' || n < 1 || n > Options::kConvMaxElements) {
      std::snprintf(error, cap, "option %s takes a count in [1, %lld]: got '%s'", key,
                    static_cast<long long>(Options::kConvMaxElements), value ? value : "(null)");
      return EMBER_ERR_INVALID;
    }
    options().conv_max_elements.store(n, std::memory_order_relaxed);
    return EMBER_OK;
  }
  const Entry* e = find(key);
  if (!e && key && std::strcmp(key, kFallbacks) == 0) {
    std::snprintf(error, cap, "option %s is a counter and cannot be set", key);
    return EMBER_ERR_INVALID;
  }
  if (!e) {
    std::snprintf(error, cap,
                  "unknown option '%s' (the cuda backend has matmul.allow_tf32, cudnn.allow_tf32, "
                  "cudnn.benchmark, cudnn.enabled, the counter cudnn.fallbacks, and the test "
                  "hook testing.conv_max_elements)",
                  key ? key : "(null)");
    return EMBER_ERR_INVALID;
  }
  const int on = parse(value);
  if (on < 0) {
    std::snprintf(error, cap, "option %s takes 1/true/on or 0/false/off: got '%s'", key,
                  value ? value : "(null)");
    return EMBER_ERR_INVALID;
  }
  (options().*(e->field)).store(on == 1, std::memory_order_relaxed);
  return EMBER_OK;
}

int32_t get_option(void*, const char* key, char* value, size_t cap) {
  if (key && std::strcmp(key, kConvMaxElements) == 0) {
    std::snprintf(
        value, cap, "%lld",
        static_cast<long long>(options().conv_max_elements.load(std::memory_order_relaxed)));
    return EMBER_OK;
  }
  if (key && std::strcmp(key, kFallbacks) == 0) {
    std::snprintf(
        value, cap, "%llu",
        static_cast<unsigned long long>(options().cudnn_fallbacks.load(std::memory_order_relaxed)));
    return EMBER_OK;
  }
  const Entry* e = find(key);
  if (!e) return EMBER_ERR_INVALID;
  std::snprintf(value, cap, "%d", (options().*(e->field)).load(std::memory_order_relaxed) ? 1 : 0);
  return EMBER_OK;
}

}  // namespace ember::cuda
