// The CUDA backend's runtime on a GPU: random numbers against the host path, integer matmul, the
// caching allocator (steady state without cudaMalloc, split and merge, the out-of-memory
// message, empty_cache, record_stream), streams and events, pinned memory and non-blocking
// copies, the TF32, cudnn.benchmark and cudnn.enabled options, index errors reported at the next
// synchronization, the caller's current device kept, convolutions over a split batch, the example
// extension's kernels on wide inputs, and a short Fashion-MNIST training run. Every test skips
// with the reason where no CUDA device exists (CI has none).
#include <cuda_runtime_api.h>
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/backends/cuda/gpu_test_util.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using namespace gpu_test;

const DType kFloating[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

using testing::contains;

TEST(CudaRuntime, RandomNumbersEqualTheHostPathBitForBit) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloating) {
    Generator a(77), b(77);
    EXPECT_EQ(max_rel_diff(rand({4099}, {d, g}, &a), rand({4099}, d, &b)), 0.0)
        << fmt::format("rand {}", d);
    // Box-Muller goes through the device's log/cos/sin: the last bit may differ.
    EXPECT_LE(max_rel_diff(randn({1001}, {d, g}, &a), randn({1001}, d, &b)),
              d == DType::Float64 ? 1e-13 : tol_for(d))
        << fmt::format("randn {}", d);
    const Tensor x = ones({5000}, d);
    EXPECT_EQ(max_rel_diff(dropout(x.to(g), 0.4, true, &a), dropout(x, 0.4, true, &b)), 0.0)
        << fmt::format("dropout {}", d);
    EXPECT_EQ(a.philox_reserve(0), b.philox_reserve(0));
  }
  // Every device's default generator starts from the last manual_seed.
  manual_seed(3);
  const Tensor on_gpu = rand({64}, {DType::Float32, g});
  manual_seed(3);
  EXPECT_EQ(max_rel_diff(on_gpu, rand({64})), 0.0);
}

TEST(CudaRuntime, IntegerMatmulWrapsAsTheCpuDoes) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Int64, DType::Int32, DType::Int8, DType::UInt8}) {
    const int64_t lo = d == DType::UInt8 ? 0 : -60;
    const Tensor a = randint(lo, 60, {2, 17, 33}).to(d);
    const Tensor b = randint(lo, 60, {33, 9}).to(d);
    const Tensor bt = randint(lo, 60, {9, 33}).to(d).transpose(0, 1);  // strided operand
    EXPECT_EQ(max_rel_diff(matmul(a.to(g), b.to(g)), matmul(a, b)), 0.0) << fmt::format("{}", d);
    EXPECT_EQ(max_rel_diff(matmul(a.to(g), bt.to(g)), matmul(a, bt)), 0.0) << fmt::format("{}", d);
  }
  // Products beyond 2^63 wrap modulo 2^64 on both.
  const Tensor big = full({4, 4}, int64_t{3} << 61, DType::Int64);
  EXPECT_EQ(max_rel_diff(matmul(big.to(g), big.to(g)), matmul(big, big)), 0.0);
}

TEST(CudaRuntime, SteadyStateAllocationsNeverReachTheDriver) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  auto round = [&] {
    for (int64_t n : {int64_t{250}, int64_t{300000}, int64_t{5} << 20}) {
      Tensor t = empty({n}, {DType::Float32, g});
      Tensor u = empty({n / 2 + 1}, {DType::Float32, g});
    }
  };
  for (int i = 0; i < 3; ++i) round();
  const ember_memory_stats before = memory_stats(g);
  for (int i = 0; i < 200; ++i) round();
  const ember_memory_stats after = memory_stats(g);
  EXPECT_EQ(after.num_os_allocs, before.num_os_allocs) << "cudaMalloc in steady state";
  EXPECT_GE(after.num_allocs, before.num_allocs + 1200);
  EXPECT_EQ(after.allocated, before.allocated);
}

TEST(CudaRuntime, SmallBlocksSplitOneSegmentAndMergeWhenFreed) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  synchronize(g);
  empty_cache(g);
  const ember_memory_stats s0 = memory_stats(g);
  Tensor a = empty({100 * 1024}, {DType::Float32, g});  // 400 KiB each: small pool
  Tensor b = empty({100 * 1024}, {DType::Float32, g});
  const ember_memory_stats s1 = memory_stats(g);
  EXPECT_EQ(s1.reserved - s0.reserved, 2u << 20) << "one 2 MiB segment for both";
  const auto pa = reinterpret_cast<uintptr_t>(a.data_ptr());
  const auto pb = reinterpret_cast<uintptr_t>(b.data_ptr());
  EXPECT_LT(pa > pb ? pa - pb : pb - pa, uintptr_t{2} << 20);
  EXPECT_GE(s1.peak_allocated, s1.allocated);
  a = Tensor();
  b = Tensor();
  // Freed neighbours merged: a 1 MiB request fits the same segment.
  Tensor c = empty({256 * 1024}, {DType::Float32, g});
  const ember_memory_stats s2 = memory_stats(g);
  EXPECT_EQ(s2.reserved, s1.reserved);
  EXPECT_EQ(s2.num_os_allocs, s1.num_os_allocs);
}

TEST(CudaRuntime, OutOfMemoryStatesRequestedAllocatedReservedAndFree) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  try {
    (void)empty({int64_t{1} << 40}, {DType::Float32, g});  // 4 TiB
    FAIL() << "4 TiB fit on the device";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    for (const char* part :
         {"[allocate] out of memory on cuda:0", "tried to allocate 4096.00 GiB",
          "allocated by tensors", "reserved by the allocator", "free on the device"}) {
      EXPECT_PRED2(contains, m, part);
    }
  }
  EXPECT_EQ(max_rel_diff(add(ones({8}, {DType::Float32, g}), 1), full({8}, 2.0)), 0.0);
}

TEST(CudaRuntime, EmptyCacheReturnsFreeSegments) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  Tensor x = empty({16 << 20}, {DType::Float32, g});  // 64 MiB: a segment of its own
  const uint64_t held = memory_stats(g).reserved;
  x = Tensor();
  EXPECT_EQ(memory_stats(g).reserved, held) << "freed memory stays cached";
  synchronize(g);
  empty_cache(g);
  EXPECT_LE(memory_stats(g).reserved + (64u << 20), held);
}

TEST(CudaRuntime, RecordStreamKeepsABlockFromReuseWhileAnotherStreamReadsIt) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  synchronize(g);
  empty_cache(g);  // no cached 16 MiB block but x's, so the reuse below is x's block or none
  const Stream side = stream_from_pool(g);
  Tensor x = randn({2048, 2048}, {DType::Float32, g});
  synchronize(g);
  std::vector<Tensor> keep;
  {
    StreamGuard guard(side);
    for (int i = 0; i < 40; ++i) keep.push_back(matmul(x, x));  // ~0.7 TFLOP queued on `side`
    x.record_stream(side);
  }
  void* const addr = x.data_ptr();
  x = Tensor();  // freed while `side` may still read it
  Tensor y = empty({2048, 2048}, {DType::Float32, g});
  ASSERT_FALSE(side.query()) << "the side stream finished before the check; give it more work";
  EXPECT_NE(y.data_ptr(), addr) << "a block still read by another stream was handed out";
  side.synchronize();
  Tensor z = empty({2048, 2048}, {DType::Float32, g});
  EXPECT_EQ(z.data_ptr(), addr) << "the block should be reusable once the side stream is done";
}

TEST(CudaRuntime, EventsOrderStreamsAndTimeWork) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  const Stream s1 = stream_from_pool(g), s2 = stream_from_pool(g, /*high_priority=*/true);
  ASSERT_NE(s1, s2);
  EXPECT_EQ(current_stream(g), default_stream(g));
  const Tensor x = randn({1024, 1024}, {DType::Float32, g});
  synchronize(g);
  Tensor a, b;
  Event start(g, /*enable_timing=*/true), end(g, /*enable_timing=*/true);
  {
    StreamGuard guard(s1);
    EXPECT_EQ(current_stream(g), s1);
    start.record();
    a = matmul(x, x);
    for (int i = 0; i < 5; ++i) a = matmul(a, x);
    end.record();
  }
  s2.wait(end);
  {
    StreamGuard guard(s2);
    a.record_stream(s2);
    b = add(a, 1.0);
  }
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_GT(start.elapsed_ms(end), 0.0);
  s2.synchronize();
  EXPECT_TRUE(s2.query());
  EXPECT_LE(max_rel_diff(b, add(a, 1.0)), 1e-6);
}

// Note [Library handles per stream]: threads driving matmuls and convolutions on streams of
// their own, at the same time, each get the results the CPU gets (a shared cuBLAS workspace
// would let concurrent GEMMs overwrite each other's partial sums).
TEST(CudaRuntime, ConcurrentStreamsRunLibraryCallsOnTheirOwnHandles) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  constexpr int kThreadsUsed = 4;
  std::vector<Tensor> a, w, want_mm, want_conv;
  for (int t = 0; t < kThreadsUsed; ++t) {
    a.push_back(randn({512, 2048}));
    w.push_back(randn({8, 4, 3, 3}));
  }
  for (int t = 0; t < kThreadsUsed; ++t) {
    want_mm.push_back(matmul(a[t], a[t].t()));
    want_conv.push_back(conv2d(a[t].view({16, 4, 128, 128}), w[t], {}, {1, 1}, {1, 1}));
  }
  std::vector<Tensor> got_mm(kThreadsUsed), got_conv(kThreadsUsed);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreadsUsed; ++t) {
    threads.emplace_back([&, t] {
      const StreamGuard guard(stream_from_pool(g));
      const Tensor x = a[t].to(g), k = w[t].to(g);
      for (int i = 0; i < 20; ++i) {
        got_mm[t] = matmul(x, x.t());
        got_conv[t] = conv2d(x.view({16, 4, 128, 128}), k, {}, {1, 1}, {1, 1});
      }
      current_stream(g).synchronize();
    });
  }
  for (std::thread& th : threads) th.join();
  // Two float32 GEMMs with K = 2048 summed in different orders differ by up to about 2e-4 of
  // (1 + |y|) (the CPU's alone is 1e-4 from the exact product; the first H200 run saw 1.1e-4);
  // overwritten partial sums would be off by O(1).
  for (int t = 0; t < kThreadsUsed; ++t) {
    EXPECT_LE(max_rel_diff(got_mm[t], want_mm[t]), 1e-3) << "thread " << t;
    EXPECT_LE(max_rel_diff(got_conv[t], want_conv[t]), 1e-4) << "thread " << t;
  }
}

TEST(CudaRuntime, PinnedMemoryAndNonBlockingCopies) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  ASSERT_GE(pinned_memory_device_type(), 0);
  const Tensor x = randn({1 << 20});
  const Tensor p = x.pin_memory();
  ASSERT_TRUE(p.is_pinned());
  const Tensor d = p.to(g, /*non_blocking=*/true);
  EXPECT_EQ(max_rel_diff(d, x), 0.0);
  const Tensor h = d.to(Device::cpu(), /*non_blocking=*/true);
  EXPECT_TRUE(h.is_pinned());
  synchronize(g);
  EXPECT_EQ(max_rel_diff(h, x), 0.0);
  // Pinned blocks are cached: a freed one comes back for the next request of its size.
  void* first = nullptr;
  {
    const Tensor q = empty({1 << 18}, TensorOptions(DType::Float32).pinned_memory());
    first = q.data_ptr();
  }
  EXPECT_EQ(empty({1 << 18}, TensorOptions(DType::Float32).pinned_memory()).data_ptr(), first);
  // Sources dropped while their copies are queued: no block is reused before its copy ran, so
  // every copy sees its own values.
  std::vector<Tensor> copies;
  for (int i = 0; i < 32; ++i) {
    const Tensor src = full({1 << 16}, static_cast<double>(i)).pin_memory();
    copies.push_back(src.to(g, /*non_blocking=*/true));
  }
  synchronize(g);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(max_rel_diff(copies[static_cast<size_t>(i)], full({1 << 16}, static_cast<double>(i))),
              0.0)
        << i;
  }
}

TEST(CudaRuntime, Tf32IsOffByDefaultAndSwitchable) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  EXPECT_EQ(backend_option("cuda", "matmul.allow_tf32"), "0");
  const Tensor a = randn({256, 4096}), b = randn({4096, 256});
  const Tensor want = matmul(a.to(DType::Float64), b.to(DType::Float64));
  const double exact = max_rel_diff(matmul(a.to(g), b.to(g)), want);
  double tf32 = 0;
  {
    OptionGuard on("matmul.allow_tf32", "1");
    tf32 = max_rel_diff(matmul(a.to(g), b.to(g)), want);
  }
  // Measured against the CPU's float32 product, which carries about 1e-4 of (1 + |y|) here
  // (the first H200 run: cuBLAS float32 4.8e-5, TF32 4.1e-2). TF32 rounds each operand to 10
  // mantissa bits: about 2^-11 per product, sqrt(4096) = 64 of them adding up, a few 1e-2.
  const double cpu = max_rel_diff(matmul(a, b), want);
  EXPECT_LT(exact, 2 * cpu);
  EXPECT_GT(tf32, 10 * cpu) << "TF32 (10-bit mantissas) should show in a 4096-long dot product";
  EXPECT_LT(tf32, 0.1);
  EXPECT_THROW(set_backend_option("cuda", "matmul.allow_tf32", "maybe"), ValueError);
}

// Note [cuDNN where own kernels exist too]: the common cases of batch norm, softmax and average
// pooling run through cuDNN (no fallback counted); the cases outside cuDNN's meaning decline
// to the own kernels and are counted; with cudnn.enabled off nothing is counted.
TEST(CudaRuntime, CudnnRunsBatchNormSoftmaxAndAveragePoolingInTheCommonCases) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : kFloating) {
    const Tensor x = randn({8, 16, 14, 14}, {d, g});
    const Tensor w = ones({16}, {d, g}).requires_grad_(true), b = zeros({16}, {d, g});
    Tensor rm = zeros({16}, {d, g}), rv = ones({16}, {d, g});
    const uint64_t before = cudnn_fallbacks();
    {
      const Tensor xg = x.detach().requires_grad_(true);
      const Tensor y = batch_norm(xg, w, b, rm, rv, /*training=*/true);
      const Tensor p = avg_pool2d(y, {2, 2});
      const Tensor q = adaptive_avg_pool2d(y, {7, 7});
      const Tensor s = add(sum(log_softmax(p.flatten(1), 1)), sum(softmax(q, 1)));
      s.backward();
      autograd::NoGradGuard no_grad;
      (void)batch_norm(x, w, b, rm, rv, /*training=*/false);
      synchronize(g);
    }
    const uint64_t common = cudnn_fallbacks() - before;
    std::printf("[ cudnn    ] %s: %llu fallbacks in the common cases\n",
                fmt::format("{}", d).c_str(), static_cast<unsigned long long>(common));
    // bfloat16 support differs between cuDNN builds; the own kernels cover it either way.
    if (d != DType::BFloat16) {
      EXPECT_EQ(common, 0u) << fmt::format("{}", d);
    }

    // Outside cuDNN's meaning: a strided softmax input, a ceil-mode window, uneven adaptive
    // windows, the eval-mode backward.
    const uint64_t start = cudnn_fallbacks();
    (void)softmax(x.transpose(1, 3), 1);
    (void)avg_pool2d(x, {3, 3}, {2, 2}, {0, 0}, /*ceil_mode=*/true);
    (void)adaptive_avg_pool2d(x, {5, 5});
    {
      const Tensor xg = x.detach().requires_grad_(true);
      sum(batch_norm(xg, w, b, rm, rv, /*training=*/false)).backward();
    }
    EXPECT_GE(cudnn_fallbacks() - start, 4u) << fmt::format("{}", d);

    OptionGuard off("cudnn.enabled", "0");
    const uint64_t disabled = cudnn_fallbacks();
    (void)batch_norm(x, w, b, rm, rv, /*training=*/true);
    (void)softmax(x, 1);
    (void)avg_pool2d(x, {2, 2});
    EXPECT_EQ(cudnn_fallbacks(), disabled) << "a disabled cuDNN path is not a fallback";
  }
}

TEST(CudaRuntime, CudnnBenchmarkModeAgreesWithTheHeuristicChoice) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  const Tensor x = randn({4, 16, 23, 29}), w = randn({24, 16, 3, 3});
  const Tensor want = conv2d(x, w, {}, {1, 1}, {1, 1});
  OptionGuard on("cudnn.benchmark", "1");
  EXPECT_EQ(backend_option("cuda", "cudnn.benchmark"), "1");
  const Tensor gx = x.to(g).requires_grad_(true), gw = w.to(g).requires_grad_(true);
  const Tensor y = conv2d(gx, gw, {}, {1, 1}, {1, 1});
  EXPECT_LE(max_rel_diff(y, want), 1e-4);
  sum(y).backward();
  const Tensor cx = x.detach().requires_grad_(true), cw = w.detach().requires_grad_(true);
  sum(conv2d(cx, cw, {}, {1, 1}, {1, 1})).backward();
  EXPECT_LE(max_rel_diff(gx.grad(), cx.grad()), 1e-4);
  EXPECT_LE(max_rel_diff(gw.grad(), cw.grad()), 1e-3);
}

// Note [Index errors reported at the next synchronization]: a bad index costs the op no host
// wait; the next synchronization point (synchronize, a copy to the host, a stream or event
// synchronize) raises an IndexError naming the op, the first bad index and the size, once; the
// kernels skip the bad elements, so the CUDA context stays usable and later work is correct.
TEST(CudaRuntime, IndexErrorsSurfaceAtTheNextSynchronizationAndTheProcessGoesOn) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  synchronize(g);
  const Tensor x = randn({4, 5}).to(g);
  const Tensor good = full({3}, 2, {DType::Int64}).to(g);
  auto expect_index_error = [](const auto& sync, const std::string& part) {
    try {
      sync();
      ADD_FAILURE() << "no error for an out-of-range index; expected " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Index) << e.what();
      EXPECT_PRED2(contains, std::string(e.what()), part);
      EXPECT_PRED2(contains, std::string(e.what()), "at the next synchronization");
    }
  };
  // index_select, at synchronize.
  (void)index_select(x, 0, full({3}, 7, {DType::Int64}).to(g));
  expect_index_error([&] { synchronize(g); },
                     "[index_select] index 7 is out of bounds for dimension 0 with size 4");
  synchronize(g);  // reported once
  // The process goes on: the same op with good indices, checked on the host.
  EXPECT_EQ(max_rel_diff(index_select(x, 0, good),
                         index_select(x.to(Device::cpu()), 0, good.to(Device::cpu()))),
            0.0);
  // gather, at a copy to the host; the first of two bad ops is the one reported.
  const Tensor bad_gather = full({4, 2}, -1, {DType::Int64}).to(g);
  (void)gather(x, 1, bad_gather);
  (void)scatter_add(zeros({4, 5}, {DType::Float32, g}), 0, full({1, 5}, 9, {DType::Int64}).to(g),
                    ones({1, 5}, {DType::Float32, g}));
  expect_index_error([&] { (void)x.to(Device::cpu()); },
                     "[gather] index -1 is out of bounds for dimension 1 with size 5");
  synchronize(g);  // the scatter_add's report came while the gather's was pending: dropped
  // scatter_add alone, at a stream synchronize; then at an event synchronize.
  (void)scatter_add(zeros({4, 5}, {DType::Float32, g}), 0, full({1, 5}, 9, {DType::Int64}).to(g),
                    ones({1, 5}, {DType::Float32, g}));
  expect_index_error([&] { current_stream(g).synchronize(); },
                     "[scatter_add] index 9 is out of bounds for dimension 0 with size 4");
  (void)scatter(zeros({4, 5}, {DType::Float32, g}), 1, full({1, 2}, 5, {DType::Int64}).to(g),
                ones({1, 2}, {DType::Float32, g}));
  Event done(g);
  done.record();
  expect_index_error([&] { done.synchronize(); },
                     "[scatter] index 5 is out of bounds for dimension 1 with size 5");
  // Still usable: a matmul and a convolution compute the CPU's results.
  const Tensor a = randn({64, 64});
  EXPECT_LE(max_rel_diff(matmul(a.to(g), a.to(g)), matmul(a, a)), 1e-4);
  synchronize(g);
}

// Note [Device guards]: after an Ember op, copy, synchronize or allocation the calling thread's
// CUDA device is the one it had set, whichever device Ember worked on.
// Note [Class targets stay on the device] (core/ops/loss.cpp): cross_entropy on the GPU reads
// no target on the host, gives the CPU's losses and gradients, and a class out of range is
// the gather's error at the next synchronization.
TEST(CudaRuntime, CrossEntropyKeepsItsTargetsOnTheDevice) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  const Tensor x = randn({64, 10});
  const Tensor t = randint(0, 10, {64});
  const Tensor t_ignored = where(lt(t, 2), full({64}, -100, {DType::Int64}), t);
  const Tensor w = rand({10});
  for (const Tensor& target : {t, t_ignored}) {
    for (const Tensor& weight : {Tensor(), w}) {
      for (double eps : {0.0, 0.1}) {
        Tensor xc = x.clone().requires_grad_(true), xg = x.to(g).requires_grad_(true);
        const Tensor lc = cross_entropy(xc, target, weight, -100, Reduction::Mean, eps);
        const Tensor lg = cross_entropy(xg, target.to(g), weight.defined() ? weight.to(g) : weight,
                                        -100, Reduction::Mean, eps);
        lc.backward();
        lg.backward();
        EXPECT_LT(max_rel_diff(lg, lc), 1e-5);
        EXPECT_LT(max_rel_diff(xg.grad(), xc.grad()), 1e-5);
      }
    }
  }
  synchronize(g);
  (void)cross_entropy(x.to(g), full({64}, 12, {DType::Int64}).to(g));
  try {
    synchronize(g);
    ADD_FAILURE() << "no error for a class out of range";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index) << e.what();
    EXPECT_PRED2(contains, std::string(e.what()), "[gather] index 12");
  }
}

TEST(CudaRuntime, EmberCallsLeaveTheCallersCurrentDevice) {
  EMBER_REQUIRE_CUDA();
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  n = std::min(n, 4);
  for (int caller = 0; caller < n; ++caller) {
    for (int used = 0; used < n; ++used) {
      ASSERT_EQ(cudaSetDevice(caller), cudaSuccess);
      const Device g(fmt::format("cuda:{}", used));
      const Tensor x = randn({8, 3, 12, 12}).to(g);  // allocation and a copy from the host
      const Tensor w = randn({4, 3, 3, 3}).to(g);
      Tensor y = relu(conv2d(x, w, {}, {1, 1}, {1, 1}));  // an own kernel and cuDNN
      y = index_select(matmul(y.flatten(1), y.flatten(1).t()), 0,
                       full({2}, 1, {DType::Int64}).to(g));  // cuBLAS, an index kernel
      (void)y.to(Device::cpu());                             // a copy to the host
      synchronize(g);
      empty_cache(g);
      int now = -1;
      ASSERT_EQ(cudaGetDevice(&now), cudaSuccess);
      EXPECT_EQ(now, caller) << "Ember worked on cuda:" << used;
    }
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

// Note [Convolutions in batch chunks]: with the limit lowered by the test hook, a batch runs in
// chunks and gives the unsplit results: the forward pass and the input gradient chunk by chunk,
// the weight gradient accumulated over the chunks (also when cudnn.benchmark times the
// algorithms of both chunk sizes first); a sample over the limit is an error naming it.
TEST(CudaRuntime, ConvolutionsOverASplitBatchEqualTheUnsplitOnes) {
  EMBER_REQUIRE_CUDA();
  const Device g("cuda");
  for (DType d : {DType::Float32, DType::Float64}) {
    const double tol = d == DType::Float64 ? 1e-12 : 1e-5;
    const Tensor x = randn({7, 3, 10, 10}).to(d).to(g);  // 300 elements per input sample
    const Tensor w = randn({4, 3, 3, 3}).to(d).to(g);    // 400 per output sample (padding 1)
    const Tensor b = randn({4}).to(d).to(g);
    auto run = [&](int64_t stride) {
      const Tensor xl = x.detach().requires_grad_(true), wl = w.detach().requires_grad_(true);
      const Tensor y = conv2d(xl, wl, b, {stride, stride}, {1, 1});
      sum(mul(y, y)).backward();
      return std::vector<Tensor>{y.detach(), xl.grad(), wl.grad()};
    };
    for (int64_t stride : {1, 2}) {
      const std::vector<Tensor> whole = run(stride);
      for (const char* benchmark : {"0", "1"}) {
        OptionGuard bench("cudnn.benchmark", benchmark);
        OptionGuard limit("testing.conv_max_elements", "1000");  // 2 samples per call: 2+2+2+1
        const std::vector<Tensor> split = run(stride);
        const std::string what = fmt::format("{} stride {} benchmark {}", d, stride, benchmark);
        EXPECT_LE(max_rel_diff(split[0], whole[0]), tol) << "y " << what;
        EXPECT_LE(max_rel_diff(split[1], whole[1]), tol) << "dx " << what;
        EXPECT_LE(max_rel_diff(split[2], whole[2]), tol * 10) << "dw " << what;
      }
    }
  }
  OptionGuard limit("testing.conv_max_elements", "299");
  try {
    (void)conv2d(randn({2, 3, 10, 10}).to(g), randn({4, 3, 3, 3}).to(g));
    ADD_FAILURE() << "a sample over the limit ran";
  } catch (const Error& e) {
    EXPECT_PRED2(contains, std::string(e.what()),
                 "[conv2d] one sample is too large for cuDNN: input [2, 3, 10, 10] has 300");
  }
}

#ifdef EMBER_EXAMPLE_PLUGIN
// The example extension: EMBER_TEST_EXAMPLE_PLUGIN where a bundle of tools/gpu-check.sh put it,
// else the build tree's.
std::string example_plugin_path() {
  const char* env = std::getenv("EMBER_TEST_EXAMPLE_PLUGIN");
  return env && *env ? env : EMBER_EXAMPLE_PLUGIN;
}

// The example extension's grad_bias kernel on more columns than one grid covers (65535 blocks of
// 256 threads): every column, the last ones included, is the sum of its grad_x column.
TEST(CudaRuntime, ExampleGradBiasCoversColumnsBeyondOneGrid) {
  EMBER_REQUIRE_CUDA();
  const std::string path = example_plugin_path();
  if (!std::ifstream(path).good()) GTEST_SKIP() << "the example extension is not at " << path;
  static const PluginRecord rec = load_plugin(path);  // once per process
  ASSERT_NE(find_op_schema("myext::fused_bias_gelu_backward"), nullptr)
      << "the example extension did not load from " << path;
  (void)rec;
  const Device g("cuda");
  const int64_t cols = int64_t{65535} * 256 + 4099, rows = 3;
  const Tensor x = randn({rows, cols}, {DType::Float32, g});
  const Tensor bias = randn({cols}, {DType::Float32, g});
  const Tensor grad = randn({rows, cols}, {DType::Float32, g});
  std::vector<Tensor> out;
  try {
    out = call("myext::fused_bias_gelu_backward", {grad, x, bias});
  } catch (const NotImplementedError& e) {
    GTEST_SKIP() << "the example was built without its CUDA kernels: " << e.what();
  }
  ASSERT_EQ(out.size(), 2u);
  const Tensor want = sum(out[0].to(DType::Float64), {0});
  const int64_t tail = 8192;  // the columns past the first grid, and some before
  EXPECT_LE(max_rel_diff(out[1].slice(0, cols - tail, cols), want.slice(0, cols - tail, cols)),
            1e-6);
  EXPECT_LE(max_rel_diff(out[1], want), 1e-6);
}
#endif

// The default CNN of `ember train` on Fashion-MNIST, on the GPU, with pinned batches and
// non-blocking copies: the loss falls, test accuracy passes 80% after 400 steps, and after the
// first steps no allocation reaches cudaMalloc (the paper's caching-allocator claim).
TEST(CudaRuntime, TrainsTheFashionMnistCnn) {
  EMBER_REQUIRE_CUDA();
  std::string root;
  try {
    root = data::find_fashion_mnist();
  } catch (const IoError& e) {
    GTEST_SKIP() << e.what();
  }
  const Device g("cuda");
  manual_seed(1);
  auto train = std::make_shared<data::MNIST>(root, /*train=*/true, 25600);
  auto test = std::make_shared<data::MNIST>(root, /*train=*/false, 2000);
  data::DataLoader loader(
      train, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 1, .pin_memory = true});
  auto model = models::fashion_cnn();
  model->to(g);
  optim::SGD opt(model->parameters(), {.lr = 0.05, .momentum = 0.9});
  double first_loss = 0, last_loss = 0;
  uint64_t os_allocs_after_warmup = 0;
  int step = 0;
  for (const std::vector<Tensor>& batch : loader) {
    const Tensor x = batch[0].to(g, /*non_blocking=*/true);
    const Tensor y = batch[1].to(g, /*non_blocking=*/true);
    Tensor loss = cross_entropy((*model)(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (step == 0) first_loss = loss.item();
    if (step == 20) os_allocs_after_warmup = memory_stats(g).num_os_allocs;
    last_loss = loss.item();
    ++step;
  }
  EXPECT_EQ(step, 400);
  EXPECT_LT(last_loss, first_loss * 0.5);
  EXPECT_EQ(memory_stats(g).num_os_allocs, os_allocs_after_warmup) << "cudaMalloc after warm-up";
  model->eval();
  autograd::NoGradGuard no_grad;
  data::DataLoader test_loader(test, {.batch_size = 500});
  int64_t correct = 0;
  for (const std::vector<Tensor>& batch : test_loader) {
    const Tensor pred = argmax((*model)(batch[0].to(g)), 1).to(Device::cpu());
    correct += sum(eq(pred, batch[1])).item<int64_t>();
  }
  EXPECT_GE(static_cast<double>(correct) / 2000.0, 0.80);
}

}  // namespace
}  // namespace ember
