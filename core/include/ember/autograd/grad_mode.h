// Grad mode, inference mode and anomaly mode: thread-local switches the op layer consults.
#pragma once

#include "ember/util/export.h"

namespace ember::autograd {

/** True if ops record autograd history on this thread (the default). */
EMBER_API bool is_grad_enabled();
/** Turns recording on or off for this thread. */
EMBER_API void set_grad_enabled(bool enabled);
/** True inside an InferenceMode scope on this thread. */
EMBER_API bool is_inference_mode();
/** True if anomaly detection is on (process-wide). */
EMBER_API bool is_anomaly_enabled();
/** Turns anomaly detection on or off (process-wide). */
EMBER_API void set_anomaly_enabled(bool enabled);

/** Sets grad mode for a scope and restores the previous value. */
class EMBER_API AutoGradMode {
 public:
  /** Enables or disables recording until destruction. */
  explicit AutoGradMode(bool enabled) : prev_(is_grad_enabled()) { set_grad_enabled(enabled); }
  ~AutoGradMode() { set_grad_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/** Disables recording for a scope, like torch.no_grad(). */
class EMBER_API NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};

/** Disables recording and marks the thread as in inference mode, like c10::InferenceMode: the
 *  tensors made inside are inference tensors (Note [Inference tensors] in grad_mode.cpp).
 *  InferenceMode(false) changes nothing. */
class EMBER_API InferenceMode {
 public:
  /** Enters inference mode until destruction (or does nothing if `enabled` is false). */
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool prev_grad_, prev_inference_;
};

/** Turns anomaly detection on for a scope: a NaN/Inf from backward names its forward op. */
class EMBER_API DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(is_anomaly_enabled()) { set_anomaly_enabled(true); }
  ~DetectAnomalyGuard() { set_anomaly_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace ember::autograd
