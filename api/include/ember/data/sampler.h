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

}  // namespace ember::data
