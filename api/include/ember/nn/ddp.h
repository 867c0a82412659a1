// DistributedDataParallel: one model replica per process, gradients averaged across the
// process group in buckets while backward still runs.
#pragma once

#include <memory>
#include <optional>

#include "ember/distributed/process_group.h"
#include "ember/nn/module.h"

namespace ember::nn {

/** Settings of DistributedDataParallel (PyTorch's names and defaults). */
struct DDPOptions {
  double bucket_cap_mb = 25;            // gradients are all-reduced in buckets of about this size
  bool find_unused_parameters = false;  // allow parameters that get no gradient in a backward
  bool broadcast_buffers = true;        // rank 0's buffers (BatchNorm statistics) before forward
};

/** Wraps a module for data-parallel training: the replicas start equal (rank 0's parameters and
 *  buffers are broadcast) and stay equal, because every backward leaves the average of all
 *  ranks' gradients in each parameter's .grad (Note [Gradient buckets]). */
class DistributedDataParallel : public Module {
 public:
  struct State;
  /** Wraps `module` (registered as the child "module") for the default process group, or `pg`. */
  explicit DistributedDataParallel(std::shared_ptr<Module> module, DDPOptions options = {},
                                   std::optional<distributed::ProcessGroup> pg = std::nullopt);
  ~DistributedDataParallel() override;
  /** The wrapped module's forward (after broadcasting buffers, if asked to). */
  Tensor forward(const Tensor& input) override;
  /** What forward does before running the module: rank 0's buffers are broadcast if
   *  broadcast_buffers is set and this module is training (for callers that run the wrapped
   *  module themselves, with other arguments than one tensor). */
  void sync_buffers();
  /** The wrapped module. */
  const std::shared_ptr<Module>& module() const { return module_; }
  /** Number of gradient buckets (for tests and tuning). */
  size_t num_buckets() const;

  /** While alive, backward passes accumulate gradients locally with no communication; the next
   *  backward after it ends averages the accumulated gradients (gradient accumulation). */
  class NoSync {
   public:
    /** Made by no_sync(). */
    explicit NoSync(std::shared_ptr<State> state);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    std::shared_ptr<State> state_;
  };
  /** Turns gradient synchronization off until the returned guard is destroyed. */
  [[nodiscard]] NoSync no_sync();

 private:
  std::shared_ptr<Module> module_;
  std::shared_ptr<State> state_;
};

}  // namespace ember::nn
