// Samplers: the order in which an epoch visits a dataset's examples.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::data {

/** Chooses the order of examples for each epoch. */
class Sampler {
 public:
  virtual ~Sampler() = default;
  /** The indices (a permutation of 0..size-1, or any list of them) epoch `epoch` visits. */
  virtual std::vector<int64_t> indices(int64_t size, uint64_t epoch) const = 0;
};

/** 0, 1, ..., size-1 every epoch. */
class SequentialSampler : public Sampler {
 public:
  /** 0, 1, ..., size-1. */
  std::vector<int64_t> indices(int64_t size, uint64_t epoch) const override;
};

/** A fresh random permutation each epoch, reproducible from (seed, epoch) on any platform. */
class RandomSampler : public Sampler {
 public:
  /** A sampler whose permutations depend only on `seed` and the epoch. */
  explicit RandomSampler(uint64_t seed = 0) : seed_(seed) {}
  /** The permutation for `epoch`. */
  std::vector<int64_t> indices(int64_t size, uint64_t epoch) const override;
  /** The seed. */
  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

/** This rank's share of each epoch's order: every rank draws the same (seeded) permutation and
 *  takes every world_size-th index from position `rank`; all ranks get equally many. */
class DistributedSampler : public Sampler {
 public:
  /** A sampler for `rank` of `world_size` (-1: the default process group's); `shuffle` draws a
   *  new permutation each epoch from `seed`; `drop_last` drops the tail that does not divide
   *  evenly, otherwise the order is padded with its own first indices (as PyTorch does). */
  explicit DistributedSampler(int rank = -1, int world_size = -1, bool shuffle = true,
                              uint64_t seed = 0, bool drop_last = false);
  /** This rank's indices for `epoch` (or for the epoch set_epoch gave, if it was called). */
  std::vector<int64_t> indices(int64_t size, uint64_t epoch) const override;
  /** Fixes the epoch used from now on (PyTorch's set_epoch; the DataLoader's count otherwise). */
  void set_epoch(uint64_t epoch) { epoch_ = epoch, has_epoch_ = true; }
  /** Number of indices one rank gets from a dataset of `size`. */
  int64_t num_samples(int64_t size) const;
  /** This sampler's rank. */
  int rank() const { return rank_; }
  /** Number of ranks sharing the data. */
  int world_size() const { return world_; }

 private:
  int rank_, world_;
  bool shuffle_, drop_last_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
  bool has_epoch_ = false;
};

}  // namespace ember::data
