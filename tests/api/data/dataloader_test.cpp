// DataLoader: batching, epochs, shuffling, worker threads, failures and early stops.
#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <ember/ember.h>

#include "ember/data.h"
#include "tests/testing/tensor_helpers.h"

namespace ember::data {
namespace {

using Clock = std::chrono::steady_clock;

using testing::contains;

std::vector<int64_t> values_i64(const Tensor& t) {
  Tensor c = t.to(DType::Int64).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

/** x = [i, -i] and y = i for example i. */
std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor y = arange(n);
  Tensor x = empty({n, 2}, TensorOptions(DType::Int64));
  for (int64_t i = 0; i < n; ++i) {
    x.data_ptr<int64_t>()[2 * i] = i;
    x.data_ptr<int64_t>()[2 * i + 1] = -i;
  }
  return std::make_shared<TensorDataset>(std::vector<Tensor>{x, y});
}

/** Every batch of one epoch, as the y values of each. */
std::vector<std::vector<int64_t>> epoch_of(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (const std::vector<Tensor>& batch : loader) {
    EXPECT_EQ(batch.size(), 2u);
    std::vector<int64_t> x = values_i64(batch[0]), y = values_i64(batch[1]);
    EXPECT_EQ(x.size(), 2 * y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(x[2 * i], y[i]);
      EXPECT_EQ(x[2 * i + 1], -y[i]);
    }
    out.push_back(y);
  }
  return out;
}

/** Counts calls, sleeps a little in each, and throws for example `bad`. */
class Slow : public Dataset {
 public:
  Slow(int64_t n, int64_t bad = -1, int sleep_us = 0) : n_(n), bad_(bad), sleep_us_(sleep_us) {}
  int64_t size() const override { return n_; }
  std::vector<Tensor> get(int64_t i) const override {
    calls.fetch_add(1);
    if (sleep_us_) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us_));
    if (i == bad_) throw std::runtime_error("example " + std::to_string(i) + " is unreadable");
    return {tensor(i)};
  }
  mutable std::atomic<int64_t> calls{0};

 private:
  int64_t n_, bad_;
  int sleep_us_;
};

TEST(DataLoader, BatchesInOrderWithARaggedLastBatch) {
  DataLoader loader(numbered(10), {.batch_size = 3});
  EXPECT_EQ(loader.size(), 4);
  EXPECT_EQ(epoch_of(loader),
            (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
  DataLoader dropping(numbered(10), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(dropping.size(), 3);
  EXPECT_EQ(epoch_of(dropping).size(), 3u);
  DataLoader exact(numbered(9), {.batch_size = 3, .drop_last = true});
  EXPECT_EQ(exact.size(), 3);
  DataLoader big(numbered(4), {.batch_size = 100});
  EXPECT_EQ(epoch_of(big), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}}));
  DataLoader none(numbered(4), {.batch_size = 100, .drop_last = true});
  EXPECT_EQ(none.size(), 0);
  EXPECT_TRUE(epoch_of(none).empty());
}

TEST(DataLoader, EmptyDatasetHasNoBatches) {
  for (int64_t workers : {0, 3}) {
    DataLoader loader(std::make_shared<TensorDataset>(std::vector<Tensor>{empty({0, 3})}),
                      {.batch_size = 4, .shuffle = true, .num_workers = workers});
    EXPECT_EQ(loader.size(), 0);
    int n = 0;
    for (const auto& batch : loader) n += static_cast<int>(batch.size());
    EXPECT_EQ(n, 0);
  }
}

TEST(DataLoader, ShufflesEachEpochReproducibly) {
  DataLoader a(numbered(20), {.batch_size = 4, .shuffle = true, .seed = 5});
  DataLoader b(numbered(20), {.batch_size = 4, .shuffle = true, .seed = 5});
  DataLoader c(numbered(20), {.batch_size = 4, .shuffle = true, .seed = 6});
  std::vector<std::vector<int64_t>> previous;
  for (int epoch = 0; epoch < 3; ++epoch) {
    auto ea = epoch_of(a);
    EXPECT_EQ(ea, epoch_of(b));
    EXPECT_NE(ea, epoch_of(c));
    EXPECT_NE(ea, previous);
    std::vector<int64_t> all;
    for (const auto& batch : ea) all.insert(all.end(), batch.begin(), batch.end());
    std::vector<int64_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> iota(20);
    std::iota(iota.begin(), iota.end(), 0);
    EXPECT_EQ(sorted, iota);
    EXPECT_NE(all, iota);
    // The order is RandomSampler(seed)'s for this epoch.
    EXPECT_EQ(all, RandomSampler(5).indices(20, static_cast<uint64_t>(epoch)));
    previous = ea;
  }
  EXPECT_EQ(a.epochs_begun(), 3u);
}

TEST(DataLoader, SameBatchesForAnyNumberOfWorkers) {
  auto data = numbered(103);
  DataLoader reference(data, {.batch_size = 7, .shuffle = true, .seed = 11});
  std::vector<std::vector<std::vector<int64_t>>> expected = {epoch_of(reference),
                                                             epoch_of(reference)};
  for (int64_t workers : {1, 2, 3, 8, 20}) {
    for (int64_t prefetch : {1, 2, 5}) {
      SCOPED_TRACE(::testing::Message() << workers << " workers, prefetch " << prefetch);
      DataLoader loader(data, {.batch_size = 7,
                               .shuffle = true,
                               .num_workers = workers,
                               .prefetch_factor = prefetch,
                               .seed = 11});
      EXPECT_EQ(epoch_of(loader), expected[0]);
      EXPECT_EQ(epoch_of(loader), expected[1]);
    }
  }
}

TEST(DataLoader, WorkerFailureSurfacesAtTheBatchThatFailed) {
  for (int64_t workers : {0, 1, 4}) {
    SCOPED_TRACE(workers);
    auto ds = std::make_shared<Slow>(20, /*bad=*/7);
    DataLoader loader(ds, {.batch_size = 2, .num_workers = workers});
    std::vector<int64_t> got;
    std::string error;
    try {
      for (const std::vector<Tensor>& batch : loader) {
        for (int64_t v : values_i64(batch[0])) got.push_back(v);
      }
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(error, "example 7 is unreadable");
    // Iteration can go on past a failed batch; looking at it again rethrows.
    DataLoader::Iterator it = loader.begin();
    for (int i = 0; i < 3; ++i) ++it;
    EXPECT_THROW(*it, std::runtime_error);
    EXPECT_THROW(*it, std::runtime_error);
    ++it;
    EXPECT_EQ(values_i64((*it)[0]), (std::vector<int64_t>{8, 9}));
  }
}

TEST(DataLoader, BreakingOutJoinsWorkersPromptly) {
  auto ds = std::make_shared<Slow>(10000, -1, /*sleep_us=*/2000);
  DataLoader loader(ds, {.batch_size = 2, .num_workers = 4, .prefetch_factor = 2});
  auto start = Clock::now();
  int seen = 0;
  for (const auto& batch : loader) {
    EXPECT_EQ(batch[0].size(0), 2);
    if (++seen == 3) break;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  // Workers are gone: no more calls after the loop.
  const int64_t calls = ds->calls.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(ds->calls.load(), calls);
  // At most the 3 consumed batches, the window ahead (4 * 2) and one in hand per worker.
  EXPECT_LE(calls, 2 * (3 + 8 + 4));
}

TEST(DataLoader, PrefetchingIsBounded) {
  auto ds = std::make_shared<Slow>(1000);
  DataLoader loader(ds, {.batch_size = 1, .num_workers = 2, .prefetch_factor = 3});
  // Waits until the workers made `n` batches (or 10 s passed), then gives them time for more.
  auto settle = [&](int64_t n) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (ds->calls.load() < n && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return ds->calls.load();
  };
  DataLoader::Iterator it = loader.begin();
  EXPECT_EQ(values_i64((*it)[0]), std::vector<int64_t>{0});
  // The current batch plus num_workers * prefetch_factor ahead, no more.
  EXPECT_EQ(settle(1 + 2 * 3), 1 + 2 * 3);
  ++it;
  ++it;  // skipped without looking: still delivered in order
  EXPECT_EQ(values_i64((*it)[0]), std::vector<int64_t>{2});
  EXPECT_EQ(settle(3 + 2 * 3), 3 + 2 * 3);
}

TEST(DataLoader, DestroyingTheLoaderMidEpochDoesNotHang) {
  auto ds = std::make_shared<Slow>(1000, -1, /*sleep_us=*/500);
  auto loader =
      std::make_unique<DataLoader>(ds, DataLoaderOptions{.batch_size = 4, .num_workers = 3});
  {
    DataLoader::Iterator it = loader->begin();
    EXPECT_EQ(values_i64((*it)[0]), (std::vector<int64_t>{0, 1, 2, 3}));
    loader.reset();  // the epoch lives on with its iterator
    ++it;
    EXPECT_EQ(values_i64((*it)[0]), (std::vector<int64_t>{4, 5, 6, 7}));
  }
  // Starting many epochs and dropping them at once also joins cleanly.
  DataLoader again(ds, {.batch_size = 4, .num_workers = 3});
  for (int i = 0; i < 20; ++i) {
    DataLoader::Iterator it = again.begin();
    if (i % 2) {
      EXPECT_EQ((*it)[0].size(0), 4);
    }
  }
}

TEST(DataLoader, CustomSamplerOverridesShuffle) {
  class Reverse : public Sampler {
   public:
    std::vector<int64_t> indices(int64_t size, uint64_t) const override {
      std::vector<int64_t> out;
      for (int64_t i = size - 1; i >= 0; i -= 2) out.push_back(i);
      return out;
    }
  };
  DataLoader loader(numbered(7),
                    {.batch_size = 3, .shuffle = true, .sampler = std::make_shared<Reverse>()});
  EXPECT_EQ(loader.size(), 2);
  EXPECT_EQ(epoch_of(loader), (std::vector<std::vector<int64_t>>{{6, 4, 2}, {0}}));
}

TEST(DataLoader, RejectsBadOptions) {
  auto expect_error = [](auto fn, const std::string& part) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected " << part;
    } catch (const Error& e) {
      EXPECT_PRED2(contains, e.what(), part);
    }
  };
  auto ds = numbered(3);
  expect_error([&] { DataLoader(ds, {.batch_size = 0}); },
               "[data.DataLoader] batch_size must be >= 1, got 0");
  expect_error([&] { DataLoader(ds, {.num_workers = -1}); },
               "[data.DataLoader] num_workers must be >= 0, got -1");
  expect_error([&] { DataLoader(ds, {.num_workers = 2, .prefetch_factor = 0}); },
               "prefetch_factor must be >= 1");
  expect_error([&] { DataLoader(nullptr); }, "[data.DataLoader] the dataset is null");
  DataLoader loader(ds);
  DataLoader::Iterator it = loader.begin();
  for (int i = 0; i < 3; ++i) ++it;
  EXPECT_TRUE(it == loader.end());
  expect_error([&] { (void)*it; }, "past the last of 3 batches");
  expect_error([&] { (void)*DataLoader::Iterator(); }, "default-constructed iterator");
}

// Where no backend offers pinned memory (CI has no GPU) the loader warns and hands out the same
// batches in ordinary memory; with one (a GPU machine), the batches are pinned. The fixture
// device that offers pinned memory without a GPU is tested in tests/core/dispatch/.
TEST(DataLoader, PinMemoryPinsWhereABackendCanAndOtherwiseKeepsTheBatches) {
  init();
  const bool can_pin = pinned_memory_device_type() >= 0;
  auto ds = numbered(7);
  DataLoader plain(ds, {.batch_size = 3});
  DataLoader pinned(ds, {.batch_size = 3, .num_workers = 1, .pin_memory = true});
  EXPECT_EQ(epoch_of(pinned), epoch_of(plain));
  for (const std::vector<Tensor>& batch : pinned) {
    for (const Tensor& t : batch) EXPECT_EQ(t.is_pinned(), can_pin);
  }
  if (!can_pin) {
    try {
      (void)arange(3).pin_memory();
      ADD_FAILURE() << "pinned memory without a backend that offers it";
    } catch (const DeviceError& e) {
      EXPECT_PRED2(contains, e.what(),
                   "[pin_memory] no loaded backend with a device offers pinned host memory");
    }
  }
}

// Note [Resuming a DataLoader]: a loader restored from state() hands out the batches an
// uninterrupted one would, mid-epoch and at an epoch's end, with and without workers.
TEST(DataLoader, LoadStateContinuesWithTheSameBatches) {
  for (int64_t workers : {0, 2}) {
    const DataLoaderOptions opts{
        .batch_size = 3, .shuffle = true, .num_workers = workers, .seed = 11};
    DataLoader whole(numbered(20), opts);
    std::vector<std::vector<int64_t>> expected;
    for (int e = 0; e < 3; ++e) {
      for (const auto& b : epoch_of(whole)) expected.push_back(b);
    }
    DataLoader first(numbered(20), opts);
    EXPECT_EQ(first.state().epoch, 0u);
    EXPECT_EQ(first.state().batches, 0);
    std::vector<std::vector<int64_t>> got = epoch_of(first);  // epoch 0, all 7 batches
    int taken = 0;
    for (const auto& b : first) {  // epoch 1: 4 batches, then stop
      got.push_back(values_i64(b[1]));
      if (++taken == 4) break;
    }
    const LoaderState mid = first.state();
    EXPECT_EQ(mid.epoch, 1u);
    EXPECT_EQ(mid.batches, 3);  // the 4th was handed out but not passed
    got.pop_back();
    DataLoader second(numbered(20), opts);
    second.load_state(mid);
    for (const auto& b : epoch_of(second)) got.push_back(b);  // the rest of epoch 1
    const LoaderState end = second.state();
    EXPECT_EQ(end.epoch, 1u);
    EXPECT_EQ(end.batches, 7);
    DataLoader third(numbered(20), opts);
    third.load_state(end);  // a finished epoch: the next one starts
    for (const auto& b : epoch_of(third)) got.push_back(b);
    EXPECT_EQ(got, expected) << workers << " workers";
  }
  DataLoader loader(numbered(20), {.batch_size = 3});
  EXPECT_THROW(loader.load_state({0, 8}), Error);
  EXPECT_THROW(loader.load_state({0, -1}), Error);
}

}  // namespace
}  // namespace ember::data
