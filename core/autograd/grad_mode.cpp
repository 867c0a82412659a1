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

// Note [Inference tensors]
// InferenceMode is NoGradGuard plus a promise that nothing made inside will meet autograd, as in
// PyTorch. Storages allocated inside are inference storages and every tensor on one (views made
// later included) is an inference tensor: its in-place writes bump no version counter, and it
// may not reach autograd afterwards. Outside inference mode, an op that autograd records with an
// inference tensor among its inputs fails (record_impl in record.cpp), as do an in-place write to
// one (check_writable) and requires_grad_(true) on one; using it without recording (under
// NoGradGuard, or with no input that requires grad) is allowed and gives normal tensors, and
// clone() outside inference mode gives a normal tensor. Normal tensors keep their rules inside
// inference mode: an in-place write to one bumps its version as before.
InferenceMode::InferenceMode(bool enabled)
    : prev_grad_(t_grad_enabled), prev_inference_(t_inference) {
  if (!enabled) return;
  t_grad_enabled = false;
  t_inference = true;
}
InferenceMode::~InferenceMode() {
  t_grad_enabled = prev_grad_;
  t_inference = prev_inference_;
}

}  // namespace ember::autograd
