#include "ember/autograd/grad_mode.h"

#include <atomic>

namespace ember::autograd {
namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_inference = false;
std::atomic<bool> g_anomaly{false};
}  // namespace

bool is_grad_enabled() {
  return t_grad_enabled;
}
void set_grad_enabled(bool enabled) {
  t_grad_enabled = enabled;
}
bool is_inference_mode() {
  return t_inference;
}
bool is_anomaly_enabled() {
  return g_anomaly.load(std::memory_order_relaxed);
}
void set_anomaly_enabled(bool enabled) {
  g_anomaly.store(enabled, std::memory_order_relaxed);
}

InferenceMode::InferenceMode() : prev_grad_(t_grad_enabled), prev_inference_(t_inference) {
  t_grad_enabled = false;
  t_inference = true;
}
InferenceMode::~InferenceMode() {
  t_grad_enabled = prev_grad_;
  t_inference = prev_inference_;
}

}  // namespace ember::autograd
