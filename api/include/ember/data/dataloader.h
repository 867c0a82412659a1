// DataLoader: batches of a Dataset, one epoch per iteration, produced ahead by worker threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <iterator>
#include <memory>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/sampler.h"
#include "ember/tensor/tensor.h"

namespace ember::data {

/** How a DataLoader batches and orders a dataset. */
struct DataLoaderOptions {
  /** Examples per batch (the last batch may be smaller unless drop_last). */
  int64_t batch_size = 1;
  /** Visit examples in a new random order each epoch (RandomSampler(seed)). */
  bool shuffle = false;
  /** Drop the last batch if it is smaller than batch_size. */
  bool drop_last = false;
  /** Background threads making batches; 0 makes them on the consuming thread. */
  int64_t num_workers = 0;
  /** Batches each worker may have ready ahead of the consumer. */
  int64_t prefetch_factor = 2;
  /** Seed of the shuffling sampler. */
  uint64_t seed = 0;
  /** A custom order; overrides shuffle and seed when set. */
  std::shared_ptr<Sampler> sampler = nullptr;
  /** Hand out batches in pinned host memory (made by the workers), so that
   *  `to(device, true)` (non_blocking) copies them asynchronously. Without a backend that
   *  offers pinned memory (no GPU) the loader warns once and hands out ordinary tensors. */
  bool pin_memory = false;
};

namespace detail {
struct Epoch;
}  // namespace detail

/** Where a DataLoader stands, to resume a run exactly (Note [Resuming a DataLoader]). */
struct LoaderState {
  /** The epoch last begun (its index: 0 for the first). */
  uint64_t epoch = 0;
  /** Batches of that epoch already handed out and passed. */
  int64_t batches = 0;
};

/** Iterates a dataset in batches: `for (const std::vector<Tensor>& batch : loader)`. */
class DataLoader {
 public:
  /** Input iterator over one epoch's batches; copies share the epoch. */
  class Iterator {
   public:
    /** A batch: one stacked tensor per field of the dataset. */
    using value_type = std::vector<Tensor>;
    /** Required of iterators; distances are not meaningful here. */
    using difference_type = std::ptrdiff_t;
    /** What operator* returns. */
    using reference = const value_type&;
    /** Single pass. */
    using iterator_category = std::input_iterator_tag;

    /** An iterator over no epoch (equal to end()). */
    Iterator() = default;
    /** The current batch; rethrows here if producing it failed. */
    const std::vector<Tensor>& operator*() const;
    /** The current batch's address. */
    const std::vector<Tensor>* operator->() const { return &**this; }
    /** Moves to the next batch. */
    Iterator& operator++();
    /** Moves to the next batch (input iterators return nothing useful). */
    void operator++(int) { ++*this; }
    /** True once every batch of the epoch was passed. */
    bool operator==(std::default_sentinel_t) const;

   private:
    friend class DataLoader;
    explicit Iterator(std::shared_ptr<detail::Epoch> epoch) : epoch_(std::move(epoch)) {}
    std::shared_ptr<detail::Epoch> epoch_;
  };

  /** A loader over `dataset`; throws on a null dataset or bad options. */
  explicit DataLoader(std::shared_ptr<Dataset> dataset, DataLoaderOptions options = {});
  /** Starts a new epoch (stopping nothing else: each epoch's workers live with its iterators). */
  Iterator begin();
  /** The end of any epoch. */
  std::default_sentinel_t end() const { return {}; }
  /** Number of batches in an epoch. */
  int64_t size() const;
  /** Number of epochs begun so far. */
  uint64_t epochs_begun() const { return epoch_; }
  /** The epoch last begun and how many of its batches were passed ({0, 0} before the first). */
  LoaderState state() const;
  /** Makes the next begin() continue from `state`: the rest of that epoch, or the next epoch when
   *  it was finished; the batches are those an uninterrupted run would have seen. */
  void load_state(const LoaderState& state);
  /** The dataset. */
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }
  /** The options. */
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  std::shared_ptr<Sampler> sampler_;
  uint64_t epoch_ = 0;
  bool pin_ = false;          // options_.pin_memory and a backend offers pinned memory
  int64_t skip_ = 0;          // batches the next begin() leaves out (load_state)
  int64_t current_skip_ = 0;  // those the current epoch left out
  std::shared_ptr<std::atomic<int64_t>> passed_;  // batches the current epoch passed
};

}  // namespace ember::data
