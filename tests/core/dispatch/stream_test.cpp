// Streams, events, pinned memory and non-blocking copies (ABI 1.3,
// core/include/ember/dispatch/stream.h) against the "queue" fixture device
// (queue_device_plugin.cpp), whose asynchronous copies wait in their stream until something waits
// for them; and the same API on the CPU, which has no streams.
#include <ember/ember.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "tests/testing/build_paths.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using testing::contains;
using testing::error_of;

Device queue() {
  static const Device d = [] {
    init();
    const PluginRecord rec = load_plugin(EMBER_QUEUE_PLUGIN);
    EXPECT_EQ(rec.outcome, PluginOutcome::Loaded) << rec.reason;
    return Device("queue");
  }();
  return d;
}

long long count(const std::string& what) {
  return std::stoll(backend_option("queue", "count." + what));
}

int64_t pending() {
  return std::stoll(backend_option("queue", "pending"));
}

void reset_counts() {
  set_backend_option("queue", "reset", "1");
}

Tensor values(int64_t n) {
  return arange(0, n, 1, TensorOptions(DType::Float32));
}

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  const Tensor x = a.to(Device::cpu()).contiguous(), y = b.to(Device::cpu()).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(x.data_ptr<float>()[i], y.data_ptr<float>()[i]) << "at " << i;
  }
}

TEST(CpuStream, IsNullAlwaysIdleAndHasNoPoolOrEvents) {
  init();
  const Stream s = current_stream(Device::cpu());
  EXPECT_EQ(s.handle(), nullptr);
  EXPECT_EQ(s, default_stream(Device::cpu()));
  EXPECT_TRUE(s.query());
  s.synchronize();
  { StreamGuard guard(s); }
  EXPECT_THROW(stream_from_pool(Device::cpu()), NotImplementedError);
  EXPECT_PRED2(contains, error_of<NotImplementedError>([] { Event e(Device::cpu()); }),
               "[Event] device type 'cpu' has no events");
  int dummy = 0;
  EXPECT_THROW(set_current_stream(Stream(Device::cpu(), &dummy)), TypeError);
}

TEST(QueueDevice, ANameWithoutAnIndexMeansTheThreadsCurrentDevice) {
  const Device q = queue();
  EXPECT_EQ(q.index, 0);
  EXPECT_EQ(current_device_index(q.type), 0);
  {
    DeviceGuard guard(Device("queue:1"));
    EXPECT_EQ(Device("queue").index, 1);
    EXPECT_EQ(Device("queue:0").index, 0);  // an explicit index wins
    int16_t elsewhere = -1;
    std::thread([&] { elsewhere = Device("queue").index; }).join();
    EXPECT_EQ(elsewhere, 0);
    EXPECT_EQ(empty({3}, TensorOptions(DType::Float32, Device("queue"))).device().index, 1);
  }
  EXPECT_EQ(Device("queue").index, 0);
  EXPECT_THROW(set_current_device(Device(q.type, 2)), DeviceError);  // it has two devices
  EXPECT_EQ(Device("queue").index, 0);
}

TEST(QueueStream, PoolStreamsBecomeCurrentForTheCallingThreadOnly) {
  const Device q = queue();
  const Stream def = default_stream(q);
  EXPECT_NE(def.handle(), nullptr);
  EXPECT_EQ(current_stream(q), def);
  const Stream s = stream_from_pool(q);
  EXPECT_NE(s, def);
  {
    StreamGuard guard(s);
    EXPECT_EQ(current_stream(q), s);
    Stream seen_elsewhere;
    std::thread([&] { seen_elsewhere = current_stream(q); }).join();
    EXPECT_EQ(seen_elsewhere, def);
  }
  EXPECT_EQ(current_stream(q), def);
  int bogus = 0;
  EXPECT_PRED2(contains, error_of<ValueError>([&] { set_current_stream(Stream(q, &bogus)); }),
               "[set_current_stream] queue:0 failed: ");
}

TEST(QueueStream, NonBlockingCopyFromPinnedMemoryIsQueuedUntilWaitedFor) {
  const Device q = queue();
  reset_counts();
  const Tensor x = values(1000);
  const Tensor p = x.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_FALSE(x.is_pinned());
  EXPECT_EQ(p.pin_memory().data_ptr(), p.data_ptr());  // already pinned: the same tensor
  EXPECT_EQ(count("host_alloc"), 1);
  const Tensor d = p.to(q, /*non_blocking=*/true);
  EXPECT_EQ(count("copy_async"), 1);
  EXPECT_EQ(pending(), 1);
  EXPECT_FALSE(current_stream(q).query());
  expect_equal(d, x);  // the blocking copy back runs after the queued one
  EXPECT_EQ(pending(), 0);
  EXPECT_TRUE(current_stream(q).query());
}

TEST(QueueStream, DroppingThePinnedSourceOfAQueuedCopyIsSafe) {
  const Device q = queue();
  reset_counts();
  const Tensor x = values(4096);
  Tensor d;
  {
    const Tensor p = x.pin_memory();
    d = p.to(q, /*non_blocking=*/true);
  }  // the core frees the pinned block while the copy is still queued
  EXPECT_EQ(count("host_free"), 1);
  EXPECT_EQ(count("host_free_deferred"), 1);
  EXPECT_EQ(count("host_free_mismatch"), 0);  // base pointer and size as host_alloc gave them
  synchronize(q);
  expect_equal(d, x);
}

TEST(QueueStream, NonBlockingCopyToTheHostLandsInPinnedMemory) {
  const Device q = queue();
  const Tensor x = values(777);
  const Tensor d = x.to(q);
  reset_counts();
  const Tensor h = d.to(Device::cpu(), /*non_blocking=*/true);
  EXPECT_TRUE(h.is_pinned());
  EXPECT_EQ(count("copy_async"), 1);
  EXPECT_EQ(pending(), 1);
  current_stream(q).synchronize();
  EXPECT_EQ(pending(), 0);
  expect_equal(h, x);
  // Blocking copies to the host stay in ordinary memory.
  EXPECT_FALSE(d.to(Device::cpu()).is_pinned());
}

TEST(QueueStream, NonBlockingCopyFromPageableMemoryCompletesAtOnce) {
  const Device q = queue();
  const Tensor x = values(100);
  const Tensor d = x.to(q, /*non_blocking=*/true);
  EXPECT_EQ(pending(), 0);
  expect_equal(d, x);
}

TEST(QueueEvent, MarksQueuedWorkAndTimesIt) {
  const Device q = queue();
  const Stream s = stream_from_pool(q);
  StreamGuard guard(s);
  const Tensor p = values(64).pin_memory();
  Event start(q, /*enable_timing=*/true), end(q, /*enable_timing=*/true);
  EXPECT_TRUE(end.query());  // never recorded
  start.record();
  const Tensor d1 = p.to(q, true), d2 = p.to(q, true), d3 = p.to(q, true);
  end.record(s);
  EXPECT_FALSE(end.query());
  end.synchronize();
  EXPECT_TRUE(end.query());
  EXPECT_DOUBLE_EQ(start.elapsed_ms(end), 3.0);  // the fixture counts 1 ms per queued copy
  Event untimed(q);
  untimed.record();
  EXPECT_THROW(start.elapsed_ms(untimed), ValueError);
  Event moved = std::move(untimed);
  EXPECT_THROW(untimed.query(), TypeError);
  EXPECT_TRUE(moved.query());
  // An event records only streams of its own device.
  EXPECT_THROW(start.record(current_stream(Device::cpu())), TypeError);
}

// The profiler times kernels on a device with timing events (Note [Device time in the host's
// time base] in core/profiler/profiler.cpp): the fixture's neg kernel queues one item on the
// current stream, which its events count as 1 ms.
TEST(QueueProfiler, TimesKernelsOnTheDeviceWithEventPairs) {
  const Device q = queue();
  const Stream s = stream_from_pool(q);
  StreamGuard guard(s);
  const Tensor x = values(8).to(q);
  const long long live = count("event_live");
  profiler::Profiler prof;
  prof.start();
  const Tensor y = neg(x), z = neg(y);
  EXPECT_EQ(pending(), 2);  // queued, not run: the profiler does not wait while ops run
  prof.stop();              // waits for the timed kernels
  EXPECT_EQ(pending(), 0);
  EXPECT_EQ(count("event_live"), live);  // every event the profiler made is destroyed
  expect_equal(z, values(8));

  std::vector<const profiler::EventRecord*> kernels;
  for (const profiler::EventRecord& e : prof.events()) {
    if (e.name != "queue::neg") continue;
    kernels.push_back(&e);
    EXPECT_EQ(e.category, profiler::Category::Kernel);
    EXPECT_EQ(*e.device, q);
    EXPECT_EQ(e.stream, reinterpret_cast<uintptr_t>(s.handle()));
    ASSERT_TRUE(e.has_device_time);
    EXPECT_EQ(e.device_ns(), 1'000'000);
    EXPECT_EQ(e.device_total_ns, 1'000'000);
    ASSERT_GE(e.parent, 0);
    const profiler::EventRecord& op = prof.events()[e.parent];
    EXPECT_EQ(op.name, "neg");
    EXPECT_FALSE(op.has_device_time);
    EXPECT_EQ(op.device_total_ns, 1'000'000);  // its kernel's
  }
  ASSERT_EQ(kernels.size(), 2u);
  // One after the other on the stream's timeline.
  EXPECT_EQ(kernels[1]->device_start_ns - kernels[0]->device_start_ns, 1'000'000);

  const profiler::KeyAverages avg = prof.key_averages();
  EXPECT_TRUE(avg.has_device_time);
  EXPECT_EQ(avg.find("queue::neg")->self_device_ns, 2'000'000);
  EXPECT_EQ(avg.find("neg")->device_total_ns, 2'000'000);
  EXPECT_EQ(avg.find("neg")->self_device_ns, 0);
  EXPECT_EQ(avg.self_device_total_ns, 2'000'000);
  EXPECT_EQ(avg.sorted(profiler::SortBy::SelfDeviceTotal).front().name, "queue::neg");
  const std::string table = avg.table(profiler::SortBy::DeviceTotal);
  EXPECT_NE(table.find("Self Device"), std::string::npos) << table;
  EXPECT_NE(table.find("Self Device time total: 2.000ms"), std::string::npos) << table;

  // In the trace each timed kernel has a device interval of 1000 us and a flow to it.
  const std::string trace = prof.chrome_trace();
  const auto occurrences = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = trace.find(what); at != std::string::npos; at = trace.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences(R"("cat":"device")"), 2u);
  EXPECT_EQ(occurrences(R"("dur":1000.0)"), 2u);
  EXPECT_EQ(occurrences(R"("ph":"s")"), 2u);
  EXPECT_EQ(occurrences(R"("ph":"f")"), 2u);
  EXPECT_EQ(occurrences(R"("name":"queue:0")"), 1u);  // the device's row
}

TEST(QueueProfiler, DeviceTimingOffMakesNoEvents) {
  const Device q = queue();
  const Tensor x = values(8).to(q);
  const long long live = count("event_live");
  profiler::Profiler prof({.device_timing = false});
  prof.start();
  const Tensor y = neg(x);
  EXPECT_EQ(count("event_live"), live);
  prof.stop();
  expect_equal(y, neg(values(8)));
  int64_t kernels = 0;
  for (const profiler::EventRecord& e : prof.events()) {
    if (e.name != "queue::neg") continue;
    ++kernels;
    EXPECT_FALSE(e.has_device_time);
    EXPECT_NE(e.stream, 0u);  // the stream is recorded all the same
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_FALSE(prof.key_averages().has_device_time);
}

TEST(QueueEvent, EventsAreDestroyedWithTheirOwner) {
  const Device q = queue();
  const long long before = count("event_live");
  {
    Event a(q), b(q);
    EXPECT_EQ(count("event_live"), before + 2);
    b = std::move(a);  // b's own event is destroyed here
    EXPECT_EQ(count("event_live"), before + 1);
  }
  EXPECT_EQ(count("event_live"), before);
}

TEST(QueueStream, AStreamWaitsForAnotherStreamsWork) {
  const Device q = queue();
  reset_counts();
  const Stream producer = stream_from_pool(q), consumer = stream_from_pool(q);
  ASSERT_NE(producer, consumer);
  const Tensor p = values(32).pin_memory();
  Tensor d;
  {
    StreamGuard guard(producer);
    d = p.to(q, true);
  }
  EXPECT_FALSE(producer.query());
  consumer.wait(producer);
  EXPECT_EQ(count("stream_wait_event"), 1);
  EXPECT_TRUE(producer.query());  // the fixture honours the dependency by running the producer
  expect_equal(d, values(32));
}

TEST(QueueStream, RecordStreamNamesTheStorageNotTheView) {
  const Device q = queue();
  const Tensor d = values(100).to(q);
  const Tensor view = d.slice(0, 10, 20);
  const Stream s = stream_from_pool(q);
  view.record_stream(s);
  const std::string last = backend_option("queue", "last_record_stream");
  EXPECT_EQ(last.substr(0, last.find(' ')), fmt::format("{}", d.storage()->data()));
  EXPECT_NE(last.substr(last.find(' ') + 1), "0");      // a pool stream, not the default
  EXPECT_THROW(values(4).record_stream(s), TypeError);  // a CPU tensor, a queue stream
}

TEST(QueueDevice, OutOfMemoryCarriesTheBackendsReason) {
  const Device q = queue();
  EXPECT_PRED2(contains, error_of<OutOfMemoryError>([&] {
                 (void)empty({int64_t{1} << 31}, TensorOptions(DType::Float32, q));
               }),
               "[allocate] out of memory on queue:0: could not allocate 8589934592 bytes: queue: "
               "8589934592 bytes requested, 1073741824 is the limit");
}

TEST(BackendOptions, UnknownKeysTypesAndBackendsWithoutOptionsAreErrors) {
  (void)queue();
  EXPECT_PRED2(contains, error_of<ValueError>([] { set_backend_option("queue", "nope", "1"); }),
               "[set_backend_option] queue nope=1: unknown option 'nope'");
  EXPECT_THROW(backend_option("queue", "nope"), ValueError);
  EXPECT_THROW(set_backend_option("no_such_type", "a", "b"), DeviceError);
  EXPECT_THROW(backend_option("cpu", "a"), NotImplementedError);
}

TEST(PinMemory, RejectsTensorsItCannotPin) {
  const Device q = queue();
  EXPECT_THROW(values(4).to(q).pin_memory(), TypeError);
  EXPECT_THROW(values(4).requires_grad_(true).pin_memory(), TypeError);
  EXPECT_THROW(empty({4}, TensorOptions(DType::Float32, q).pinned_memory()), TypeError);
  const Tensor e = empty({3, 5}, TensorOptions(DType::Float64).pinned_memory());
  EXPECT_TRUE(e.is_pinned());
  EXPECT_EQ(e.device(), Device::cpu());
  // A strided source is packed into a contiguous pinned copy.
  const Tensor t = values(12).reshape({3, 4}).transpose(0, 1);
  const Tensor p = t.pin_memory();
  EXPECT_TRUE(p.is_contiguous());
  expect_equal(p, t);
}

TEST(PinMemory, DataLoaderHandsOutPinnedBatches) {
  (void)queue();
  auto ds = std::make_shared<data::TensorDataset>(
      std::vector<Tensor>{values(40).reshape({10, 4}), arange(10)});
  data::DataLoader loader(ds, {.batch_size = 4, .num_workers = 2, .pin_memory = true});
  int64_t rows = 0;
  for (const std::vector<Tensor>& batch : loader) {
    for (const Tensor& t : batch) EXPECT_TRUE(t.is_pinned());
    rows += batch[0].size(0);
  }
  EXPECT_EQ(rows, 10);
}

// A device whose backend lacks the optional factorizations (as CUDA does today: Note [Devices
// without the factorizations] in core/ops/linalg_decomp.cpp) gets an error naming the linalg op,
// the device and what to do, from every op made of them.
TEST(QueueDevice, LinalgWithoutTheFactorizationsSaysWhatIsMissing) {
  const Device q = queue();
  const Tensor a = empty({2, 3, 3}, TensorOptions(DType::Float32, q));
  EXPECT_EQ(error_of<NotImplementedError>([&] { linalg::inv(a); }),
            "[linalg.inv] not available on device queue:0: its backend has no "
            "linalg_lu_factor kernel for float32 (the factorizations run on the cpu and "
            "reference backends; move the input there with .to(\"cpu\"))");
  EXPECT_THROW(linalg::det(a), NotImplementedError);
  EXPECT_THROW(linalg::cholesky(a), NotImplementedError);
  EXPECT_THROW(linalg::qr(a), NotImplementedError);
  // svd is asked before the finiteness check, which needs kernels of its own.
  EXPECT_PRED2(contains, error_of<NotImplementedError>([&] { linalg::svd(a); }),
               "[linalg.svd] not available on device queue:0");
}

}  // namespace
}  // namespace ember
