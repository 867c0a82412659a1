// DataLoader: an epoch's batch plan, consumed in order while workers produce batches ahead.
#include "ember/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "core/util/log.h"
#include "ember/dispatch/device_registry.h"

namespace ember::data {

namespace detail {

// Note [Ordered prefetching]
// Workers claim batches in increasing order from a shared counter, but only within a window of
// `capacity` batches past the consumer's position; finished batches wait in `ready` keyed by
// their number, and the consumer takes exactly the one it is at. So the output order (and every
// batch) is the same for any number of workers, at most `capacity` batches are made ahead, and a
// failure is delivered at the batch that failed. Destroying the epoch (the last iterator goes
// away, e.g. on `break`) sets `stop`; workers finish the batch in hand, then exit, and are joined.
struct Epoch {
  /** A batch, or the exception that making it threw. */
  struct Result {
    std::vector<Tensor> batch;
    std::exception_ptr error;
  };

  std::shared_ptr<Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t num_batches = 0;
  int64_t capacity = 0;
  bool pin = false;  // copy every batch into pinned memory

  // Consumer side: the batch it is at and, once fetched, that batch.
  int64_t position = 0;                          // written under `mu` when there are workers
  std::shared_ptr<std::atomic<int64_t>> passed;  // the loader's view of `position`
  int64_t held = -1;
  Result current;

  // Shared with workers.
  std::mutex mu;
  std::condition_variable work_cv, ready_cv;
  int64_t next_claim = 0;
  bool stop = false;
  std::map<int64_t, Result> ready;
  std::vector<std::thread> workers;

  ~Epoch() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    work_cv.notify_all();
    for (std::thread& t : workers) t.join();
  }

  std::vector<int64_t> batch_indices(int64_t b) const {
    const auto begin = order.begin() + b * batch_size;
    const auto end =
        order.begin() + std::min<int64_t>((b + 1) * batch_size, static_cast<int64_t>(order.size()));
    return {begin, end};
  }

  Result make(int64_t b) const {
    Result r;
    try {
      r.batch = dataset->get_batch(batch_indices(b));
      if (pin) {
        for (Tensor& t : r.batch) t = t.pin_memory();
      }
    } catch (...) {
      r.error = std::current_exception();
    }
    return r;
  }

  void work() {
    for (;;) {
      int64_t b = 0;
      {
        std::unique_lock<std::mutex> lock(mu);
        work_cv.wait(lock, [&] {
          return stop || next_claim >= num_batches || next_claim <= position + capacity;
        });
        if (stop || next_claim >= num_batches) return;
        b = next_claim++;
      }
      Result r = make(b);
      {
        std::lock_guard<std::mutex> lock(mu);
        if (b >= position) ready.emplace(b, std::move(r));
      }
      ready_cv.notify_all();
    }
  }

  const std::vector<Tensor>& fetch() {
    EMBER_CHECK(position < num_batches,
                "[data.DataLoader] dereferenced an iterator past the last of {} batches",
                num_batches);
    if (held != position) {
      if (workers.empty()) {
        current = make(position);
      } else {
        std::unique_lock<std::mutex> lock(mu);
        ready_cv.wait(lock, [&] { return ready.count(position) > 0; });
        auto it = ready.find(position);
        current = std::move(it->second);
        ready.erase(it);
      }
      held = position;
    }
    if (current.error) std::rethrow_exception(current.error);
    return current.batch;
  }

  void advance() {
    if (position >= num_batches) return;
    current = Result();
    passed->fetch_add(1, std::memory_order_relaxed);
    if (workers.empty()) {
      ++position;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++position;
      // Batches skipped without being looked at are dropped.
      ready.erase(ready.begin(), ready.lower_bound(position));
    }
    work_cv.notify_all();
  }
};

}  // namespace detail

const std::vector<Tensor>& DataLoader::Iterator::operator*() const {
  EMBER_CHECK(epoch_ != nullptr, "[data.DataLoader] dereferenced a default-constructed iterator");
  return epoch_->fetch();
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (epoch_) epoch_->advance();
  return *this;
}

bool DataLoader::Iterator::operator==(std::default_sentinel_t) const {
  return !epoch_ || epoch_->position >= epoch_->num_batches;
}

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  EMBER_CHECK(dataset_ != nullptr, "[data.DataLoader] the dataset is null");
  EMBER_CHECK(options_.batch_size >= 1, "[data.DataLoader] batch_size must be >= 1, got {}",
              options_.batch_size);
  EMBER_CHECK(options_.num_workers >= 0, "[data.DataLoader] num_workers must be >= 0, got {}",
              options_.num_workers);
  EMBER_CHECK(options_.num_workers == 0 || options_.prefetch_factor >= 1,
              "[data.DataLoader] prefetch_factor must be >= 1 with workers, got {}",
              options_.prefetch_factor);
  if (options_.sampler) {
    sampler_ = options_.sampler;
  } else if (options_.shuffle) {
    sampler_ = std::make_shared<RandomSampler>(options_.seed);
  } else {
    sampler_ = std::make_shared<SequentialSampler>();
  }
  if (options_.pin_memory) {
    pin_ = pinned_memory_device_type() >= 0;
    if (!pin_) {
      static std::once_flag warned;
      std::call_once(warned, [] {
        log_message(LogLevel::Warning,
                    "[data.DataLoader] pin_memory=true but no loaded backend with a device offers "
                    "pinned memory (no GPU?): batches stay in ordinary memory");
      });
    }
  }
}

static int64_t batches_for(int64_t examples, int64_t batch_size, bool drop_last) {
  return drop_last ? examples / batch_size : (examples + batch_size - 1) / batch_size;
}

int64_t DataLoader::size() const {
  const int64_t examples =
      options_.sampler ? static_cast<int64_t>(sampler_->indices(dataset_->size(), epoch_).size())
                       : dataset_->size();
  return batches_for(examples, options_.batch_size, options_.drop_last);
}

// Note [Resuming a DataLoader]
// An epoch's order depends only on the sampler and the epoch's index (RandomSampler draws from
// (seed, epoch)), and its batches are consecutive slices of that order. So where a loader stands
// is two numbers, the epoch last begun and the batches of it passed, and a loader continues
// exactly by drawing that epoch's order again and leaving out the batches already passed.
LoaderState DataLoader::state() const {
  if (epoch_ == 0) return {};
  return {epoch_ - 1, current_skip_ + (passed_ ? passed_->load(std::memory_order_relaxed) : 0)};
}

void DataLoader::load_state(const LoaderState& state) {
  EMBER_CHECK(state.batches >= 0, "[data.DataLoader] load_state: negative batch count {}",
              state.batches);
  const int64_t in_epoch =
      batches_for(static_cast<int64_t>(sampler_->indices(dataset_->size(), state.epoch).size()),
                  options_.batch_size, options_.drop_last);
  EMBER_CHECK(state.batches <= in_epoch,
              "[data.DataLoader] load_state: epoch {} has {} batches, not the {} passed (a "
              "different dataset or batch size?)",
              state.epoch, in_epoch, state.batches);
  const bool finished = state.batches == in_epoch;
  epoch_ = finished ? state.epoch + 1 : state.epoch;
  skip_ = finished ? 0 : state.batches;
  current_skip_ = 0;
  passed_.reset();
}

DataLoader::Iterator DataLoader::begin() {
  auto epoch = std::make_shared<detail::Epoch>();
  epoch->dataset = dataset_;
  epoch->order = sampler_->indices(dataset_->size(), epoch_++);
  const auto left_out = static_cast<std::ptrdiff_t>(
      std::min<int64_t>(skip_ * options_.batch_size, static_cast<int64_t>(epoch->order.size())));
  epoch->order.erase(epoch->order.begin(), epoch->order.begin() + left_out);
  current_skip_ = std::exchange(skip_, 0);
  passed_ = std::make_shared<std::atomic<int64_t>>(0);
  epoch->passed = passed_;
  epoch->batch_size = options_.batch_size;
  epoch->num_batches = batches_for(static_cast<int64_t>(epoch->order.size()), options_.batch_size,
                                   options_.drop_last);
  epoch->capacity = options_.num_workers * options_.prefetch_factor;
  epoch->pin = pin_;
  const int64_t threads = std::min(options_.num_workers, epoch->num_batches);
  for (int64_t w = 0; w < threads; ++w) {
    epoch->workers.emplace_back([e = epoch.get()] { e->work(); });
  }
  return Iterator(std::move(epoch));
}

}  // namespace ember::data
