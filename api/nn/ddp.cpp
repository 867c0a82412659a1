#include "ember/nn/ddp.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ember/autograd/engine.h"
#include "ember/autograd/grad_mode.h"
#include "ember/ops/factory.h"
#include "ember/util/error.h"

namespace ember::nn {

// Note [Gradient buckets]
// Parameters that require grad are grouped, in reverse order of registration (roughly the order
// backward produces their gradients), into buckets of about bucket_cap_mb, one dtype and device
// per bucket, each with one flat buffer. A post-accumulate hook on each parameter copies its
// .grad into its slot; when a bucket's last slot is filled, the bucket's all-reduce (an average)
// starts asynchronously while backward goes on computing earlier layers' gradients. Buckets are
// started in index order on every rank (a bucket that fills early waits for the ones before it),
// so all ranks issue the same collectives in the same order. A callback queued for the end of
// backward starts what is left (zeros for unused parameters, with find_unused_parameters), waits
// for every bucket and copies the averages back into .grad. Under no_sync() the hooks do
// nothing: gradients accumulate in .grad, and the next synchronized backward averages the sum.
struct DistributedDataParallel::State {
  struct Slot {
    Tensor param;  // holds the parameter alive as long as the state is
    size_t bucket = 0;
    int64_t offset = 0;
  };
  struct Bucket {
    Tensor flat;
    std::vector<size_t> slots;
    size_t pending = 0;
    bool started = false;
    std::optional<distributed::Work> work;
  };
  distributed::ProcessGroup pg;
  DDPOptions options;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::vector<bool> ready;  // by slot, in this backward
  size_t next_bucket = 0;   // buckets are started in this order
  bool callback_queued = false;
  bool sync = true;
  std::mutex mu;  // hooks of one backward may run on several threads

  explicit State(distributed::ProcessGroup group) : pg(std::move(group)) {}

  void reset() {
    for (Bucket& b : buckets) {
      b.pending = b.slots.size();
      b.started = false;
      b.work.reset();
    }
    std::fill(ready.begin(), ready.end(), false);
    next_bucket = 0;
    callback_queued = false;
  }

  void start_ready_buckets() {
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      Bucket& b = buckets[next_bucket++];
      b.work = pg.all_reduce_async(b.flat, distributed::ReduceOp::Avg);
      b.started = true;
    }
  }

  void mark_ready(size_t i, const Tensor& grad) {
    Slot& s = slots[i];
    Bucket& b = buckets[s.bucket];
    Tensor part = b.flat.narrow(0, s.offset, s.param.numel());
    if (grad.defined())
      part.copy_(grad.reshape({-1}));
    else
      part.fill_(0);
    ready[i] = true;
    --b.pending;
    start_ready_buckets();
  }

  void on_gradient(size_t i) {
    std::lock_guard lock(mu);
    if (!sync) return;
    autograd::NoGradGuard no_grad;
    if (!callback_queued) {
      callback_queued = true;
      std::weak_ptr<State> weak = self;
      autograd::queue_callback([weak] {
        if (auto s = weak.lock()) s->finish();
      });
    }
    EMBER_CHECK(!ready[i],
                "[DistributedDataParallel] parameter {} got a gradient twice in one backward "
                "(a parameter used in a loop or shared needs its gradient only once per step)",
                i);
    mark_ready(i, slots[i].param.grad());
  }

  void finish() {
    std::lock_guard lock(mu);
    try {
      finish_locked();
    } catch (...) {  // a failed collective: the next backward starts afresh
      for (Bucket& b : buckets) {
        try {
          if (b.work) b.work->wait();
        } catch (...) {  // already failing with the first error
        }
      }
      reset();
      throw;
    }
  }

  void finish_locked() {
    autograd::NoGradGuard no_grad;
    std::vector<size_t> unused;
    for (size_t i = 0; i < slots.size(); ++i)
      if (!ready[i]) unused.push_back(i);
    if (!unused.empty() && !options.find_unused_parameters) {
      throw ValueError(fmt::format(
          "[DistributedDataParallel] {} parameter(s) received no gradient in this backward "
          "(slots {}): every rank would wait for them (pass find_unused_parameters=true if parts "
          "of the model are skipped on purpose)",
          unused.size(), fmt::join(unused, ", ")));
    }
    for (size_t i : unused) mark_ready(i, Tensor());
    for (Bucket& b : buckets) {
      if (b.work) b.work->wait();
    }
    for (Slot& s : slots) {
      Tensor avg =
          buckets[s.bucket].flat.narrow(0, s.offset, s.param.numel()).view(s.param.sizes());
      autograd::AutogradMeta* meta = s.param.autograd_meta();
      if (meta->grad.defined())
        meta->grad.copy_(avg);
      else
        meta->grad = avg.clone();
    }
    reset();
  }

  std::weak_ptr<State> self;
};

namespace {

// Broadcasts `tensors` from rank 0 with one collective per dtype and device: PyTorch's
// coalesced broadcast. A model's buffers are many small tensors (three per BatchNorm), and each
// collective costs a round trip.
void broadcast_coalesced(const distributed::ProcessGroup& pg, const std::vector<Tensor>& tensors) {
  autograd::NoGradGuard no_grad;
  std::map<std::pair<int, std::string>, std::vector<Tensor>> groups;
  for (const Tensor& t : tensors)
    groups[{static_cast<int>(t.dtype()), t.device().str()}].push_back(t);
  for (auto& [key, group] : groups) {
    int64_t total = 0;
    for (const Tensor& t : group) total += t.numel();
    Tensor flat = empty({total}, TensorOptions(group[0].dtype(), group[0].device()));
    int64_t at = 0;
    for (const Tensor& t : group) {
      flat.narrow(0, at, t.numel()).copy_(t.reshape({-1}));
      at += t.numel();
    }
    pg.broadcast(flat, 0);
    at = 0;
    for (const Tensor& t : group) {
      Tensor target = t;
      target.copy_(flat.narrow(0, at, t.numel()).view(t.sizes()));
      at += t.numel();
    }
  }
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module, DDPOptions options,
                                                 std::optional<distributed::ProcessGroup> pg)
    : Module("DistributedDataParallel"), module_(std::move(module)) {
  EMBER_CHECK(module_ != nullptr, "[DistributedDataParallel] the module is null");
  EMBER_CHECK(options.bucket_cap_mb > 0, "[DistributedDataParallel] bucket_cap_mb must be > 0: {}",
              options.bucket_cap_mb);
  register_module("module", module_);
  state_ = std::make_shared<State>(pg ? *pg : distributed::default_group());
  state_->self = state_;
  state_->options = options;
  State& st = *state_;

  // The replicas start from rank 0's parameters and buffers.
  std::vector<Tensor> state = module_->parameters();
  for (const Tensor& b : module_->buffers()) state.push_back(b);
  broadcast_coalesced(st.pg, state);

  std::vector<Tensor> params;
  for (const Tensor& p : module_->parameters())
    if (p.requires_grad()) params.push_back(p);
  const auto cap = static_cast<int64_t>(options.bucket_cap_mb * 1024 * 1024);
  std::map<std::pair<int, std::string>, size_t> open;  // (dtype, device) -> bucket being filled
  std::vector<int64_t> filled;
  for (size_t k = params.size(); k-- > 0;) {
    const Tensor& p = params[k];
    const auto key = std::make_pair(static_cast<int>(p.dtype()), p.device().str());
    auto it = open.find(key);
    if (it == open.end() || filled[it->second] * static_cast<int64_t>(p.element_size()) >= cap) {
      st.buckets.emplace_back();
      filled.push_back(0);
      it = open.insert_or_assign(key, st.buckets.size() - 1).first;
    }
    const size_t b = it->second;
    st.slots.push_back({p, b, filled[b]});
    st.buckets[b].slots.push_back(st.slots.size() - 1);
    filled[b] += p.numel();
  }
  for (size_t b = 0; b < st.buckets.size(); ++b) {
    const Tensor& first = st.slots[st.buckets[b].slots.front()].param;
    st.buckets[b].flat = zeros({filled[b]}, TensorOptions(first.dtype(), first.device()));
  }
  st.ready.assign(st.slots.size(), false);
  st.reset();
  for (size_t i = 0; i < st.slots.size(); ++i) {
    std::weak_ptr<State> weak = state_;
    st.slots[i].param.register_post_accumulate_grad_hook([weak, i](const Tensor&) {
      if (auto s = weak.lock()) s->on_gradient(i);
    });
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

void DistributedDataParallel::sync_buffers() {
  if (state_->options.broadcast_buffers && is_training()) {
    const std::vector<Tensor> buffers = module_->buffers();
    if (!buffers.empty()) broadcast_coalesced(state_->pg, buffers);
  }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  sync_buffers();
  return (*module_)(input);
}

size_t DistributedDataParallel::num_buckets() const {
  return state_->buckets.size();
}

DistributedDataParallel::NoSync::NoSync(std::shared_ptr<State> state) : state_(std::move(state)) {
  std::lock_guard lock(state_->mu);
  state_->sync = false;
}

DistributedDataParallel::NoSync::~NoSync() {
  std::lock_guard lock(state_->mu);
  state_->sync = true;
}

DistributedDataParallel::NoSync DistributedDataParallel::no_sync() {
  return NoSync(state_);
}

}  // namespace ember::nn
