// Concurrency: ops and whole forward+backward passes from 8 threads at once give the
// single-threaded results bit for bit; a 4-worker DataLoader yields what the 0-worker one does;
// a tensor read by 8 threads at once stays intact; profilers start and stop while 8 threads run
// ops; eight threads share one linear weight while it is packed; eight threads racing to the first
// use of a fresh process discover the plugins once (plugin_probe, a child process). Kept small and
// deterministic: this binary is what the ThreadSanitizer pass builds and runs (tools/test.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <ember/ember.h>
#include <nlohmann/json.hpp>

#include "tests/plugin/plugin_test_util.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

constexpr int kThreads = 8;

/** A float32 tensor of `sizes` with deterministic values (no generator involved). */
Tensor pattern(IntList sizes, double phase, double scale = 1.0) {
  const int64_t n = shape_numel(sizes);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(scale * std::sin(0.37 * i + phase));
  return from_vector<float>(v, sizes, DType::Float32);
}

/** True if `a` and `b` have the same shape, dtype and bytes (NaN-safe, bit-for-bit). */
bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

/** Runs fn(t) on kThreads threads at once, t = 0..kThreads-1, and joins them. */
template <typename Fn>
void run_threads(Fn&& fn) {
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&fn, t] { fn(t); });
  for (auto& th : threads) th.join();
}

/** A bundle of op results on fixed inputs: elementwise, reductions, matmul, conv, softmax. */
std::vector<Tensor> op_results(double phase) {
  const Tensor x = pattern({4, 3, 8, 8}, phase);
  const Tensor w = pattern({5, 3, 3, 3}, phase + 1);
  const Tensor a = pattern({16, 24}, phase + 2), b = pattern({24, 12}, phase + 3);
  return {
      add(mul(a, 2.0), exp(a)),
      sum(x, {1, 2}),
      matmul(a, b),
      matmul(a.t().contiguous().t(), b.t().contiguous().t()),
      conv2d(x, w, {}, {1, 1}, {1, 1}),
      max_pool2d(x, {2, 2}),
      softmax(a, 1),
      cumsum(a, 0),
      std::get<0>(sort(a.narrow(1, 2, 9), 1)),
      cat({a, b.t()}, 0),
  };
}

TEST(Concurrency, OpsFromEightThreadsMatchTheSingleThreadedRun) {
  std::vector<std::vector<Tensor>> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(op_results(0.1 * t));
  std::vector<std::vector<Tensor>> got(kThreads);
  run_threads([&](int t) {
    for (int rep = 0; rep < 3; ++rep) got[t] = op_results(0.1 * t);
  });
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(got[t].size(), expected[t].size());
    for (size_t i = 0; i < got[t].size(); ++i) {
      EXPECT_TRUE(bitwise_equal(got[t][i], expected[t][i])) << "thread " << t << " result " << i;
    }
  }
}

// Note [Packed linear weights]: eight threads race through one weight's first sight, its
// packing and the reads of the packed copy (and of its slot's replacement after an in-place
// write); every result must equal the float64 product within float32 rounding.
TEST(Concurrency, EightThreadsShareOneLinearWeightWhileItIsPacked) {
  Tensor w = pattern({80, 96}, 0.5, 0.2);
  const Tensor b = pattern({80}, 1.5);
  std::vector<Tensor> xs;
  for (int t = 0; t < kThreads; ++t) xs.push_back(pattern({16, 96}, 0.1 * t));
  for (int round = 0; round < 2; ++round) {
    std::vector<std::vector<double>> want;
    for (int t = 0; t < kThreads; ++t) {
      const Tensor y =
          add(matmul(xs[t].to(DType::Float64), w.to(DType::Float64).t()), b.to(DType::Float64));
      want.push_back(testing::values(relu(y)));
    }
    std::vector<double> worst(kThreads, 0.0);
    run_threads([&](int t) {
      autograd::InferenceMode guard;
      for (int rep = 0; rep < 6; ++rep) {
        const std::vector<double> got =
            testing::values(fused_linear(xs[t], w, b, Activation::ReLU));
        for (size_t i = 0; i < got.size(); ++i)
          worst[t] = std::max(worst[t], std::abs(got[i] - want[t][i]) / (1 + std::abs(want[t][i])));
      }
    });
    for (int t = 0; t < kThreads; ++t)
      EXPECT_LT(worst[t], 1e-5) << "round " << round << ", thread " << t;
    add_(w, 0.25);  // a new version: the next round packs it again
  }
}

/** The loss and parameter gradients of one training step, each pass with its own graph. */
struct Grads {
  std::vector<Tensor> params;
  Tensor loss;
};

/** One step of a small CNN (conv, relu, pool, linear) or, without `conv`, of an MLP with
 *  layer norm; every call builds its own parameters and graph. */
Grads forward_backward(double phase, bool conv) {
  std::vector<Tensor> params;
  if (conv) {
    params = {pattern({4, 1, 3, 3}, phase, 0.5).requires_grad_(),
              pattern({4}, phase + 1).requires_grad_()};
  } else {
    params = {pattern({64, 64}, phase, 0.1).requires_grad_(),
              pattern({64}, phase + 1).requires_grad_()};
  }
  params.push_back(pattern({10, 64}, phase + 2, 0.1).requires_grad_());
  params.push_back(pattern({10}, phase + 3).requires_grad_());
  const Tensor x = pattern({6, 1, 8, 8}, phase + 4);
  const Tensor target = from_vector<int64_t>({1, 3, 5, 7, 9, 0}, {6}, DType::Int64);
  Tensor h;
  if (conv) {
    h = relu(conv2d(x, params[0], params[1], {1, 1}, {1, 1}));
    h = max_pool2d(h, {2, 2}).flatten(1);
  } else {
    h = layer_norm(tanh(linear(x.flatten(1), params[0], params[1])), {64});
  }
  Tensor logits = linear(h, params[2], params[3]);
  Tensor loss = cross_entropy(logits, target);
  loss.backward();
  return {params, loss};
}

/** Runs forward_backward on kThreads threads at once and compares with a serial run. */
void expect_parallel_passes_match(bool conv) {
  std::vector<Grads> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(forward_backward(0.2 * t, conv));
  std::vector<Grads> got(kThreads);
  run_threads([&](int t) {
    for (int rep = 0; rep < 3; ++rep) got[t] = forward_backward(0.2 * t, conv);
  });
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(bitwise_equal(got[t].loss, expected[t].loss)) << "thread " << t;
    for (size_t i = 0; i < got[t].params.size(); ++i) {
      ASSERT_TRUE(got[t].params[i].grad().defined()) << "thread " << t << " param " << i;
      EXPECT_TRUE(bitwise_equal(got[t].params[i].grad(), expected[t].params[i].grad()))
          << "thread " << t << " param " << i;
    }
  }
}

// Note [Loading while computing]: load_plugin rewrites kernel slots that running ops read. Eight
// threads add tensors while the main thread loads a plugin whose "add" outranks the CPU
// backend's; every result stays right and, under ThreadSanitizer, no access races.
TEST(Concurrency, LoadingAPluginWhileOpsRun) {
  const Tensor a = pattern({64}, 0.1), b = pattern({64}, 0.7);
  const Tensor want = add(a, b);
  std::atomic<bool> loaded{false};
  std::atomic<int> wrong{0}, after{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      // Until a few adds have run after the load (or a bound, should it never happen).
      for (int i = 0; i < 20000 && after.load() < 100; ++i) {
        if (!bitwise_equal(add(a, b), want)) ++wrong;
        if (loaded.load()) ++after;
      }
    });
  }
  const PluginRecord rec = load_plugin(EMBER_HOT_PLUGIN);
  loaded = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(after.load(), 0);
}

TEST(Concurrency, IndependentForwardBackwardPassesMatchBitForBit) {
  expect_parallel_passes_match(/*conv=*/false);
}

// Convolution runs through cached oneDNN primitives shared by every thread; before each execution
// had its own scratchpad (Note [oneDNN from many threads] in backends/cpu/ops/matmul.cpp), this
// hung in conv2d's weight gradient.
TEST(Concurrency, ConvForwardBackwardFromEightThreads) {
  expect_parallel_passes_match(/*conv=*/true);
}

TEST(Concurrency, FourWorkerDataLoaderEqualsTheInlineOne) {
  const Tensor xs = pattern({103, 3}, 0.5);
  const Tensor ys = arange(103);
  auto ds = std::make_shared<data::TensorDataset>(std::vector<Tensor>{xs, ys});
  auto batches = [&](int64_t workers) {
    data::DataLoader loader(ds,
                            {.batch_size = 8, .shuffle = true, .num_workers = workers, .seed = 11});
    std::vector<std::vector<Tensor>> out;
    for (int epoch = 0; epoch < 2; ++epoch) {
      for (const std::vector<Tensor>& batch : loader) out.push_back(batch);
    }
    return out;
  };
  const auto inline_batches = batches(0);
  const auto worker_batches = batches(4);
  ASSERT_EQ(inline_batches.size(), 2u * 13u);
  ASSERT_EQ(worker_batches.size(), inline_batches.size());
  for (size_t i = 0; i < inline_batches.size(); ++i) {
    ASSERT_EQ(worker_batches[i].size(), 2u);
    for (size_t f = 0; f < 2; ++f) {
      EXPECT_TRUE(bitwise_equal(worker_batches[i][f], inline_batches[i][f]))
          << "batch " << i << " field " << f;
    }
  }
}

TEST(Concurrency, ATensorSharedReadOnlyAcrossEightThreadsStaysIntact) {
  const Tensor shared = pattern({32, 48}, 0.7);
  const std::vector<double> before = testing::values(shared);
  const uint32_t version = shared.version();
  const Tensor want_sum = sum(shared, {0});
  const Tensor want_mm = matmul(shared, shared.t());
  const Tensor want_view = shared.t().contiguous();
  std::vector<int> ok(kThreads, 0);
  run_threads([&](int t) {
    bool good = true;
    for (int rep = 0; rep < 4; ++rep) {
      good &= bitwise_equal(sum(shared, {0}), want_sum);
      good &= bitwise_equal(matmul(shared, shared.t()), want_mm);
      good &= bitwise_equal(shared.t().contiguous(), want_view);
      Tensor copy = shared.clone();  // writing a private copy never touches the shared one
      mul_(copy, static_cast<double>(t + 2));
      good &= bitwise_equal(shared.narrow(0, t, 4).reshape({-1}),
                            shared.reshape({-1}).narrow(0, t * 48, 4 * 48));
    }
    ok[t] = good ? 1 : 0;
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(ok[t], 1) << "thread " << t;
  EXPECT_EQ(testing::values(shared), before);
  EXPECT_EQ(shared.version(), version);
}

// The profiler's buffers (Note [Per-thread event buffers] in core/profiler/profiler.cpp): eight
// threads run ops inside ranges of their own while the main thread starts and stops profilers;
// every profile holds whole events only, each inside its parent on its own thread.
TEST(Concurrency, ProfilersStartAndStopWhileEightThreadsRunOps) {
  const Tensor a = pattern({8}, 0.1), b = pattern({8}, 0.2);
  std::atomic<bool> done{false};
  std::atomic<int64_t> finished{0};  // ops completed by the workers
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&] {
      while (!done.load()) {
        profiler::RecordFunction range("work");
        const Tensor c = add(a, b);
        finished.fetch_add(1);
      }
    });
  }
  for (int round = 0; round < 10; ++round) {
    profiler::Profiler prof;
    prof.start();
    // Long enough for some op to run wholly inside the profile.
    const int64_t until = finished.load() + 2 * kThreads;
    while (finished.load() < until) std::this_thread::yield();
    prof.stop();
    const std::vector<profiler::EventRecord>& events = prof.events();
    int64_t adds = 0;
    for (const profiler::EventRecord& e : events) {
      ASSERT_TRUE(e.name == "work" || e.name == "add" || e.name == "cpu::add") << e.name;
      EXPECT_LE(e.start_ns, e.end_ns);
      adds += e.name == "add";
      if (e.parent < 0) continue;
      const profiler::EventRecord& p = events[e.parent];
      EXPECT_EQ(p.thread, e.thread);
      EXPECT_LE(p.start_ns, e.start_ns);
      EXPECT_GE(p.end_ns, e.end_ns);
      EXPECT_EQ(p.name, e.name == "cpu::add" ? "add" : "work");
    }
    EXPECT_GT(adds, 0) << "round " << round;
  }
  done = true;
  for (std::thread& t : workers) t.join();
  EXPECT_FALSE(profiler::is_enabled());
}

TEST(Concurrency, EightThreadsOneDiscoveryIdenticalReports) {
  for (int round = 0; round < 3; ++round) {
    test::RunResult r = test::run_probe("", "--concurrent 8");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out)["concurrent"];
    EXPECT_EQ(j["identical"], true);
    EXPECT_EQ(j["discoveries"], 1);
    for (const auto& s : j["sums"]) EXPECT_EQ(s, 2.0);
  }
}

}  // namespace
}  // namespace ember
