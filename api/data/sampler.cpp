// Sequential and seeded random orders.
#include "ember/data/sampler.h"

#include <numeric>
#include <utility>

#include "ember/distributed/process_group.h"
#include "ember/util/error.h"

namespace ember::data {

namespace {

// Note [Portable shuffles]
// std::shuffle and the std distributions are implementation-defined, so the same seed would give
// different orders with libstdc++ and libc++. The permutation is a Fisher-Yates shuffle driven by
// splitmix64 with Lemire's unbiased bounded draw: identical everywhere for a given (seed, epoch).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/** Uniform in [0, bound), bound > 0, without modulo bias. */
uint64_t bounded(uint64_t& state, uint64_t bound) {
  unsigned __int128 m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
  auto low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = -bound % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

std::vector<int64_t> iota(int64_t size, const char* op) {
  EMBER_CHECK(size >= 0, "[{}] dataset size must be >= 0, got {}", op, size);
  std::vector<int64_t> out(static_cast<size_t>(size));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

}  // namespace

std::vector<int64_t> SequentialSampler::indices(int64_t size, uint64_t) const {
  return iota(size, "data.SequentialSampler");
}

std::vector<int64_t> RandomSampler::indices(int64_t size, uint64_t epoch) const {
  std::vector<int64_t> out = iota(size, "data.RandomSampler");
  uint64_t mix = seed_;
  uint64_t state = splitmix64(mix) ^ (epoch * 0xd1b54a32d192ed03ull);
  for (size_t i = out.size(); i > 1; --i) {
    std::swap(out[i - 1], out[bounded(state, i)]);
  }
  return out;
}

DistributedSampler::DistributedSampler(int rank, int world_size, bool shuffle, uint64_t seed,
                                       bool drop_last)
    : rank_(rank), world_(world_size), shuffle_(shuffle), drop_last_(drop_last), seed_(seed) {
  if (world_ < 0) world_ = distributed::get_world_size();
  if (rank_ < 0) rank_ = distributed::get_rank();
  EMBER_CHECK(world_ >= 1 && rank_ >= 0 && rank_ < world_,
              "[data.DistributedSampler] rank {} is out of range for world size {}", rank_, world_);
}

int64_t DistributedSampler::num_samples(int64_t size) const {
  return drop_last_ ? size / world_ : (size + world_ - 1) / world_;
}

std::vector<int64_t> DistributedSampler::indices(int64_t size, uint64_t epoch) const {
  const uint64_t e = has_epoch_ ? epoch_ : epoch;
  std::vector<int64_t> all =
      shuffle_ ? RandomSampler(seed_).indices(size, e) : iota(size, "data.DistributedSampler");
  const int64_t per_rank = num_samples(size);
  const int64_t total = per_rank * world_;
  for (int64_t i = size; i < total && size > 0; ++i) all.push_back(all[(i - size) % size]);
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(per_rank));
  for (int64_t i = rank_; i < total && size > 0; i += world_) out.push_back(all[i]);
  return out;
}

}  // namespace ember::data
