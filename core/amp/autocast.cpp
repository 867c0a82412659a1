#include "ember/amp/autocast.h"

#include <array>

#include "ember/dispatch/device_registry.h"
#include "ember/util/error.h"

namespace ember::amp {
namespace detail {

std::atomic<int> g_scopes{0};

namespace {

constexpr int kMaxTypes = 64;

// Note [Autocast]
// As torch.autocast: a thread-local state per device type (on, and its lower-precision dtype)
// that scopes set and restore. An op covered by autocast starts with EMBER_AUTOCAST, which, when
// autocast is on for the device of its first tensor, calls the op again with its floating
// tensor arguments cast by the op's policy, autocast suspended meanwhile (the ops it calls are
// not cast again, as PyTorch excludes its autocast key inside them):
//  - Lower (matmul, mm, bmm, linear, fused_linear, conv1d, conv2d, conv3d, conv2d_relu,
//    conv_transpose2d, scaled_dot_product_attention, lstm_layer, gru_layer, rnn_layer): to the
//    autocast dtype;
//  - Float32 (softmax, log_softmax, batch/layer/group norm, the losses, sum, mean, prod,
//    cumsum, cumprod): float16 and bfloat16 to float32, so the result is float32;
//  - Promote (cat, stack): to the widest floating dtype among the inputs.
// Other ops run on what they get, and mixed dtypes promote as always (a bfloat16 conv output
// plus a float32 residual is float32). The casts are ordinary differentiable ops, so gradients
// come back to float32 parameters in float32. When no autocast scope is alive anywhere, an op
// pays one relaxed load and one branch.
struct State {
  std::array<bool, kMaxTypes> enabled{};
  std::array<DType, kMaxTypes> dtype{};
  int suspended = 0;
};
thread_local State t_state;

DType default_dtype(int16_t type) {
  return type == kCpuType ? DType::BFloat16 : DType::Float16;
}

int16_t type_of(std::string_view device_type) {
  const int16_t type = find_device_type(device_type);
  EMBER_CHECK(type >= 0, "[autocast] unknown device type '{}' (no backend registered it)",
              device_type);
  EMBER_CHECK(type < kMaxTypes, "[autocast] device type id {} is beyond the {} autocast tracks",
              type, kMaxTypes);
  return type;
}

bool enabled(int16_t type) {
  return type >= 0 && type < kMaxTypes && t_state.enabled[type];
}

}  // namespace

bool active_for(const Tensor& t) {
  return t.defined() && t_state.suspended == 0 && enabled(t.device().type);
}

std::optional<DType> target_dtype(const Tensor& t, Policy policy, DType widest) {
  if (!is_floating(t.dtype()) || !enabled(t.device().type)) return std::nullopt;
  switch (policy) {
    case Policy::Lower:
      return t_state.dtype[t.device().type];
    case Policy::Float32:
      return t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16
                 ? std::optional<DType>(DType::Float32)
                 : std::nullopt;
    case Policy::Promote:
      return widest;
  }
  return std::nullopt;
}

DType widest_floating(const std::vector<Tensor>& tensors) {
  std::optional<DType> widest;
  for (const Tensor& t : tensors) {
    if (!t.defined() || !is_floating(t.dtype())) continue;
    widest = widest ? promote_types(*widest, t.dtype()) : t.dtype();
  }
  return widest.value_or(DType::Float32);
}

Suspend::Suspend() {
  ++t_state.suspended;
}
Suspend::~Suspend() {
  --t_state.suspended;
}

}  // namespace detail

autocast::autocast(std::string_view device_type, std::optional<DType> dtype, bool enabled)
    : type_(detail::type_of(device_type)) {
  const DType low = dtype.value_or(detail::default_dtype(type_));
  EMBER_CHECK_TYPE(low == DType::Float16 || low == DType::BFloat16,
                   "[autocast] the autocast dtype must be float16 or bfloat16: got {}", low);
  was_enabled_ = detail::t_state.enabled[type_];
  was_dtype_ = detail::t_state.dtype[type_];
  detail::t_state.enabled[type_] = enabled;
  detail::t_state.dtype[type_] = low;
  detail::g_scopes.fetch_add(1, std::memory_order_relaxed);
}

autocast::~autocast() {
  detail::t_state.enabled[type_] = was_enabled_;
  detail::t_state.dtype[type_] = was_dtype_;
  detail::g_scopes.fetch_sub(1, std::memory_order_relaxed);
}

bool is_autocast_enabled(std::string_view device_type) {
  return detail::enabled(detail::type_of(device_type));
}

DType get_autocast_dtype(std::string_view device_type) {
  const int16_t type = detail::type_of(device_type);
  return detail::t_state.enabled[type] ? detail::t_state.dtype[type] : detail::default_dtype(type);
}

}  // namespace ember::amp
