// The profiler (core/include/ember/profiler/profiler.h): what is recorded for ops, kernels,
// backward nodes and user ranges, their nesting, self and total times, threads, the Chrome trace
// and the table. Every assertion follows from the structure of the program profiled, never from
// how long something took. (Device timing runs against the queue device in stream_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ember/ember.h>

#include "tests/testing/special_files.h"
#include "tests/testing/tensor_helpers.h"

namespace ember {
namespace {

using profiler::Category;
using profiler::EventRecord;
using profiler::KeyAverages;
using profiler::Profiler;
using profiler::SortBy;
using json = nlohmann::json;
using testing::contains;
using testing::error_of;

int64_t count(const std::vector<EventRecord>& events, std::string_view name) {
  return std::count_if(events.begin(), events.end(),
                       [&](const EventRecord& e) { return e.name == name; });
}

// True if some range enclosing `e` (on its thread) is a backward node.
bool in_backward(const std::vector<EventRecord>& events, const EventRecord& e) {
  for (int64_t p = e.parent; p >= 0; p = events[p].parent) {
    if (events[p].category == Category::Backward) return true;
  }
  return false;
}

// Three adds, two matmuls and a sum, then backward. Every leaf and every constant is used once,
// so backward adds no gradients together: its adds are none and its matmuls two per matmul.
struct Mlp {
  Tensor x = randn({4, 8}).requires_grad_(true);
  Tensor w1 = randn({8, 8}).requires_grad_(true);
  Tensor w2 = randn({8, 2}).requires_grad_(true);
  Tensor c1 = randn({4, 8}), c2 = randn({4, 8}), c3 = randn({4, 2});

  Tensor forward() const {
    Tensor h = add(x, c1);
    h = matmul(h, w1);
    h = add(h, c2);
    h = matmul(h, w2);
    h = add(h, c3);
    return sum(h);
  }
};

const std::vector<EventRecord>& profile_mlp(Profiler& prof) {
  Mlp m;
  prof.start();
  Tensor loss = m.forward();
  loss.backward();
  prof.stop();
  return prof.events();
}

TEST(Profiler, RecordsEveryOpKernelAndBackwardNodeOnce) {
  Profiler prof;
  const std::vector<EventRecord>& events = profile_mlp(prof);
  int64_t forward_adds = 0, forward_matmuls = 0, backward_matmuls = 0;
  for (const EventRecord& e : events) {
    if (e.category != Category::Op) continue;
    if (e.name == "add" && !in_backward(events, e)) ++forward_adds;
    if (e.name == "matmul") ++(in_backward(events, e) ? backward_matmuls : forward_matmuls);
  }
  EXPECT_EQ(forward_adds, 3);
  EXPECT_EQ(forward_matmuls, 2);
  EXPECT_EQ(backward_matmuls, 4);  // dA = dC B^T and dB = A^T dC for each
  EXPECT_EQ(count(events, "add"), 3);
  EXPECT_EQ(count(events, "cpu::add"), 3);
  EXPECT_EQ(count(events, "matmul"), 6);
  EXPECT_EQ(count(events, "cpu::matmul"), 6);
  EXPECT_EQ(count(events, "sum"), 1);
  EXPECT_EQ(count(events, "AddBackward"), 3);
  EXPECT_EQ(count(events, "MatmulBackward"), 2);
  EXPECT_EQ(count(events, "SumBackward"), 1);
  EXPECT_EQ(count(events, "AccumulateGrad"), 3);  // x, w1, w2

  const KeyAverages avg = prof.key_averages();
  ASSERT_NE(avg.find("add"), nullptr);
  EXPECT_EQ(avg.find("add")->count, 3);
  EXPECT_EQ(avg.find("cpu::add")->count, 3);
  EXPECT_EQ(avg.find("matmul")->count, 6);
  EXPECT_EQ(avg.find("MatmulBackward")->count, 2);
  EXPECT_EQ(avg.find("AddBackward")->count, 3);
  EXPECT_EQ(avg.find("AddBackward")->category, Category::Backward);
  EXPECT_EQ(avg.find("cpu::add")->category, Category::Kernel);
  int64_t rows = 0;
  for (const auto& r : avg.rows) rows += r.count;
  EXPECT_EQ(rows, static_cast<int64_t>(events.size()));
}

TEST(Profiler, RecordsShapesDtypeDeviceAndTheBackwardNodesForwardOp) {
  Profiler prof;
  const std::vector<EventRecord>& events = profile_mlp(prof);
  std::vector<Shape> matmul_shapes;
  for (const EventRecord& e : events) {
    EXPECT_GE(e.end_ns, e.start_ns);
    EXPECT_EQ(e.thread, events.front().thread);
    if (e.category == Category::UserRange) continue;
    ASSERT_TRUE(e.dtype.has_value()) << e.name;
    EXPECT_EQ(*e.dtype, DType::Float32) << e.name;
    EXPECT_EQ(*e.device, Device::cpu()) << e.name;
    EXPECT_EQ(e.stream, 0u) << e.name;  // the CPU has no streams
    EXPECT_FALSE(e.has_device_time) << e.name;
    if (e.name == "matmul" && !in_backward(events, e)) {
      ASSERT_EQ(e.input_shapes.size(), 2u);
      matmul_shapes.push_back(e.input_shapes[0]);
      matmul_shapes.push_back(e.input_shapes[1]);
    }
    if (e.name == "MatmulBackward") {
      EXPECT_EQ(e.forward_op, "matmul");
      ASSERT_EQ(e.input_shapes.size(), 1u);  // the gradient of its one output
    }
  }
  EXPECT_EQ(matmul_shapes, (std::vector<Shape>{{4, 8}, {8, 8}, {4, 8}, {8, 2}}));
  // Events come in start order.
  EXPECT_TRUE(std::is_sorted(events.begin(), events.end(),
                             [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));
}

TEST(Profiler, KernelsNestInsideTheirOpAndOpsInsideBackwardNodes) {
  Profiler prof;
  const std::vector<EventRecord>& events = profile_mlp(prof);
  int64_t kernels = 0;
  for (const EventRecord& e : events) {
    if (e.parent < 0) continue;
    const EventRecord& p = events[e.parent];
    EXPECT_LT(e.parent, &e - events.data());  // a parent comes first
    EXPECT_EQ(p.thread, e.thread);
    EXPECT_LE(p.start_ns, e.start_ns) << e.name << " in " << p.name;
    EXPECT_GE(p.end_ns, e.end_ns) << e.name << " in " << p.name;
    if (e.name == "cpu::add" || e.name == "cpu::matmul") {
      ++kernels;
      EXPECT_EQ(p.category, Category::Op);
      EXPECT_EQ("cpu::" + p.name, e.name);  // add's kernel inside add, matmul's inside matmul
    }
  }
  EXPECT_EQ(kernels, 9);
  for (const EventRecord& e : events) {
    if (e.category == Category::Backward) {
      EXPECT_EQ(e.parent, -1) << e.name;
    }
    if (e.name == "matmul" && in_backward(events, e)) {
      EXPECT_EQ(events[e.parent].name, "MatmulBackward");
    }
  }
}

TEST(Profiler, ACompositeOpHoldsTheOpsAndKernelsItRuns) {
  // norm(x) is sqrt(sum(x * x)): three public ops, each with its kernel, inside the norm range.
  const Tensor x = randn({2, 3});
  Profiler prof;
  prof.start();
  const Tensor y = norm(x);
  prof.stop();
  const std::vector<EventRecord>& events = prof.events();
  std::vector<std::string> tree;
  for (const EventRecord& e : events) {
    std::string path = e.name;
    for (int64_t p = e.parent; p >= 0; p = events[p].parent) path = events[p].name + "/" + path;
    tree.push_back(path);
  }
  EXPECT_EQ(tree,
            (std::vector<std::string>{"norm", "norm/mul", "norm/mul/cpu::mul", "norm/sum",
                                      "norm/sum/cpu::sum", "norm/sqrt", "norm/sqrt/cpu::sqrt"}));
  const KeyAverages avg = prof.key_averages();
  EXPECT_EQ(avg.find("norm")->cpu_total_ns, events[0].duration_ns());
  EXPECT_EQ(avg.find("norm")->self_cpu_ns, events[0].duration_ns() - events[1].duration_ns() -
                                               events[3].duration_ns() - events[5].duration_ns());
}

TEST(Profiler, SelfTimeIsTotalMinusTheRangesInside) {
  Profiler prof;
  const std::vector<EventRecord>& events = profile_mlp(prof);
  std::vector<int64_t> inside(events.size(), 0);
  for (const EventRecord& e : events) {
    if (e.parent >= 0) inside[e.parent] += e.duration_ns();
  }
  int64_t roots = 0, self = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const EventRecord& e = events[i];
    EXPECT_LE(e.self_ns, e.duration_ns()) << e.name;
    EXPECT_GE(e.duration_ns(), inside[i]) << e.name;  // a parent holds all its children
    EXPECT_EQ(e.self_ns, e.duration_ns() - inside[i]) << e.name;
    if (e.parent < 0) roots += e.duration_ns();
    self += e.self_ns;
  }
  EXPECT_EQ(self, roots);  // self times partition the time of the outermost ranges

  const KeyAverages avg = prof.key_averages();
  int64_t row_self = 0;
  for (const auto& r : avg.rows) {
    EXPECT_LE(r.self_cpu_ns, r.cpu_total_ns) << r.name;
    EXPECT_EQ(r.device_total_ns, 0) << r.name;
    row_self += r.self_cpu_ns;
  }
  EXPECT_EQ(row_self, roots);
  EXPECT_EQ(avg.self_cpu_total_ns, roots);
  // An op's total holds its kernel's total.
  EXPECT_GE(avg.find("matmul")->cpu_total_ns, avg.find("cpu::matmul")->cpu_total_ns);
  EXPECT_GE(avg.find("MatmulBackward")->cpu_total_ns, 0);
}

TEST(Profiler, RecordsNothingWhileNoProfilerRuns) {
  Mlp m;
  EXPECT_FALSE(profiler::is_enabled());
  { Tensor unprofiled = m.forward(); }
  Profiler prof;
  EXPECT_FALSE(prof.running());
  EXPECT_TRUE(prof.events().empty());
  prof.start();
  EXPECT_TRUE(profiler::is_enabled());
  Tensor y = add(m.c1, m.c2);
  prof.stop();
  EXPECT_FALSE(profiler::is_enabled());
  ASSERT_EQ(prof.events().size(), 2u);  // add and its kernel
  {
    Tensor after = m.forward();
    after.backward();
    profiler::RecordFunction r("not recorded");
  }
  EXPECT_EQ(prof.events().size(), 2u);
  // A second run starts afresh.
  prof.start();
  prof.stop();
  EXPECT_TRUE(prof.events().empty());
  prof.stop();  // stopping a stopped profiler does nothing
}

TEST(Profiler, OneProfilerRecordsAtATime) {
  Profiler a, b;
  a.start();
  EXPECT_THROW(b.start(), ValueError);
  EXPECT_PRED2(contains, error_of<ValueError>([&] { a.start(); }),
               "[profiler.start] a profiler is already recording (this one)");
  EXPECT_THROW(a.events(), ValueError);  // while recording
  a.stop();
  b.start();
  b.stop();
  {
    Profiler c;
    profiler::ProfileScope scope(c);
    EXPECT_TRUE(c.running());
  }
  EXPECT_FALSE(profiler::is_enabled());
}

TEST(Profiler, UserRangesNestAroundOps) {
  Tensor a = ones({3}), b = ones({3});
  Profiler prof;
  {
    profiler::ProfileScope scope(prof);
    profiler::RecordFunction outer("outer");
    {
      auto inner = profiler::record_function("inner");
      Tensor c = add(a, b);
    }
    Tensor d = mul(a, b);
  }
  const std::vector<EventRecord>& events = prof.events();
  ASSERT_EQ(events.size(), 6u);
  std::map<std::string, const EventRecord*> by_name;
  for (const EventRecord& e : events) by_name[e.name] = &e;
  const auto parent_name = [&](const std::string& n) -> std::string {
    const int64_t p = by_name.at(n)->parent;
    return p < 0 ? "" : events[p].name;
  };
  EXPECT_EQ(by_name.at("outer")->category, Category::UserRange);
  EXPECT_FALSE(by_name.at("outer")->dtype.has_value());
  EXPECT_EQ(parent_name("outer"), "");
  EXPECT_EQ(parent_name("inner"), "outer");
  EXPECT_EQ(parent_name("add"), "inner");
  EXPECT_EQ(parent_name("cpu::add"), "add");
  EXPECT_EQ(parent_name("mul"), "outer");
  EXPECT_EQ(parent_name("cpu::mul"), "mul");
}

TEST(Profiler, CountsTheBytesOfStoragesMadeAndFreedInARange) {
  Tensor a = ones({4, 4}), b = ones({4, 4});  // float32: 64 bytes each
  Profiler prof;
  prof.start();
  {
    profiler::RecordFunction scope("scope");
    Tensor c = add(a, b);
  }
  prof.stop();
  const KeyAverages avg = prof.key_averages();
  EXPECT_EQ(avg.find("scope")->bytes_allocated, 64);
  EXPECT_EQ(avg.find("scope")->bytes_freed, 64);  // c died inside
  EXPECT_EQ(avg.find("scope")->self_bytes_allocated, 0);
  EXPECT_EQ(avg.find("scope")->self_bytes_freed, 64);
  EXPECT_EQ(avg.find("add")->bytes_allocated, 64);
  EXPECT_EQ(avg.find("add")->self_bytes_allocated, 64);
  EXPECT_EQ(avg.find("add")->bytes_freed, 0);
  EXPECT_EQ(avg.find("cpu::add")->bytes_allocated, 0);  // outputs exist before the kernel

  Profiler off({.profile_memory = false});
  off.start();
  { Tensor c = add(a, b); }
  off.stop();
  EXPECT_EQ(off.key_averages().find("add")->bytes_allocated, 0);
  EXPECT_EQ(off.key_averages().table().find("Mem"), std::string::npos);
}

TEST(Profiler, RecordsEveryThreadInItsOwnBuffer) {
  constexpr int kThreads = 4, kAdds = 50;
  Tensor a = ones({2}), b = ones({2});
  Profiler prof;
  prof.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      profiler::RecordFunction r("worker " + std::to_string(t));
      for (int i = 0; i < kAdds; ++i) Tensor c = add(a, b);
    });
  }
  for (std::thread& t : threads) t.join();
  prof.stop();
  const std::vector<EventRecord>& events = prof.events();
  EXPECT_EQ(count(events, "add"), kThreads * kAdds);
  EXPECT_EQ(count(events, "cpu::add"), kThreads * kAdds);
  std::map<uint64_t, std::string> worker_of_thread;
  for (const EventRecord& e : events) {
    if (e.category == Category::UserRange) worker_of_thread[e.thread] = e.name;
  }
  ASSERT_EQ(worker_of_thread.size(), static_cast<size_t>(kThreads));  // distinct threads
  std::map<std::string, int64_t> adds_per_worker;
  for (const EventRecord& e : events) {
    if (e.name != "add") continue;
    ASSERT_GE(e.parent, 0);
    const EventRecord& w = events[e.parent];
    EXPECT_EQ(w.thread, e.thread);
    EXPECT_EQ(w.name, worker_of_thread.at(e.thread));
    ++adds_per_worker[w.name];
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(adds_per_worker["worker " + std::to_string(t)], kAdds);
  }
}

TEST(Profiler, ManyEventsOnOneThreadAreAllKept) {
  // More events than one chunk of a thread's buffer holds.
  Tensor a = ones({1}), b = ones({1});
  Profiler prof({.record_shapes = false});
  prof.start();
  for (int i = 0; i < 3000; ++i) Tensor c = add(a, b);
  prof.stop();
  EXPECT_EQ(count(prof.events(), "add"), 3000);
  EXPECT_TRUE(prof.events().front().input_shapes.empty());
}

TEST(Profiler, TableSortsByTheChosenColumnAndKeepsTheRowLimit) {
  Profiler prof;
  profile_mlp(prof);
  const KeyAverages avg = prof.key_averages();
  for (SortBy by : {SortBy::SelfCpuTotal, SortBy::CpuTotal, SortBy::Count}) {
    const std::vector<profiler::KeyAverage> rows = avg.sorted(by);
    ASSERT_EQ(rows.size(), avg.rows.size());
    for (size_t i = 1; i < rows.size(); ++i) {
      const auto key = [by](const profiler::KeyAverage& r) {
        return by == SortBy::SelfCpuTotal ? r.self_cpu_ns
               : by == SortBy::CpuTotal   ? r.cpu_total_ns
                                          : r.count;
      };
      EXPECT_GE(key(rows[i - 1]), key(rows[i]));
    }
    // The table lists the same names in the same order, cut at the row limit.
    const std::string table = avg.table(by, 5);
    std::istringstream lines(table);
    std::string line;
    std::vector<std::string> names;
    int rules = 0;
    while (std::getline(lines, line)) {
      if (line.rfind("---", 0) == 0) {
        ++rules;
      } else if (rules == 2) {
        std::istringstream words(line);
        std::string name;
        words >> name;
        names.push_back(name);
      }
    }
    ASSERT_EQ(names.size(), 5u) << table;
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], rows[i].name) << table;
    EXPECT_NE(table.find("Self CPU time total:"), std::string::npos);
  }
  // By count: matmul and its kernel (6 each), then add and its kernel (3 each), ties by name.
  const std::vector<profiler::KeyAverage> by_count = avg.sorted(SortBy::Count);
  EXPECT_EQ(by_count[0].name, "cpu::matmul");
  EXPECT_EQ(by_count[1].name, "matmul");
  const std::string header = avg.table(SortBy::SelfCpuTotal, 1);
  for (const char* column : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                             "CPU time avg", "Mem", "Self Mem", "# of Calls"}) {
    EXPECT_NE(header.find(column), std::string::npos) << column;
  }
  EXPECT_EQ(header.find("Device"), std::string::npos);  // nothing ran on a timed device
  EXPECT_EQ(header.find("Input Shapes"), std::string::npos);
  // The six matmuls have five pairs of shapes: dA = dC B^T of the first is [4, 8] x [8, 8],
  // as its forward.
  const KeyAverages by_shapes = prof.key_averages(/*group_by_input_shapes=*/true);
  std::map<std::string, int64_t> matmul_rows;
  for (const auto& r : by_shapes.rows) {
    if (r.name == "matmul") matmul_rows[r.input_shapes] = r.count;
  }
  EXPECT_EQ(matmul_rows, (std::map<std::string, int64_t>{{"[[4, 8], [8, 8]]", 2},
                                                         {"[[4, 8], [8, 2]]", 1},
                                                         {"[[4, 2], [2, 8]]", 1},
                                                         {"[[8, 4], [4, 2]]", 1},
                                                         {"[[8, 4], [4, 8]]", 1}}));
  EXPECT_NE(by_shapes.table().find("Input Shapes"), std::string::npos);
  EXPECT_NE(by_shapes.table().find("[[4, 8], [8, 8]]"), std::string::npos);
}

TEST(Profiler, ChromeTraceIsValidJsonWithTheEventsNested) {
  Profiler prof;
  profile_mlp(prof);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ember_profiler_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  prof.export_chrome_trace(path);
  prof.export_chrome_trace(path);                                             // replaces it
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);  // no temporaries
  std::ifstream in(path);
  const json trace = json::parse(in);  // throws if not valid JSON
  std::filesystem::remove_all(dir);

  ASSERT_TRUE(trace.at("traceEvents").is_array());
  std::vector<json> complete;
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    if (e["ph"] == "X") complete.push_back(e);
  }
  ASSERT_EQ(complete.size(), prof.events().size());
  std::map<std::string, int64_t> names;
  std::set<std::string> cats;
  for (const json& e : complete) {
    for (const char* field : {"name", "cat", "ts", "dur", "pid", "tid", "args"}) {
      ASSERT_TRUE(e.contains(field)) << field << " in " << e.dump();
    }
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    ++names[e["name"].get<std::string>()];
    cats.insert(e["cat"].get<std::string>());
    const json& args = e["args"];
    EXPECT_TRUE(args.contains("bytes allocated"));
    if (e["cat"] == "kernel" || e["cat"] == "cpu_op") {
      EXPECT_EQ(args.at("dtype"), "float32");
      EXPECT_EQ(args.at("device"), "cpu");
      EXPECT_TRUE(args.at("Input Dims").is_array());
    }
  }
  EXPECT_EQ(names["add"], 3);
  EXPECT_EQ(names["cpu::add"], 3);
  EXPECT_EQ(names["matmul"], 6);
  EXPECT_EQ(names["MatmulBackward"], 2);
  EXPECT_EQ(names["AddBackward"], 3);
  EXPECT_EQ(cats, (std::set<std::string>{"cpu_op", "kernel", "backward"}));
  // Each kernel of add and matmul lies inside an op of its name on the same thread (fill,
  // from ones_like for backward's first gradient, is a kernel of no differentiable op).
  constexpr double kUs = 1e-3;  // the trace is in microseconds, rounded
  for (const json& k : complete) {
    if (k["name"] != "cpu::add" && k["name"] != "cpu::matmul") continue;
    const double ts = k["ts"], end = ts + k["dur"].get<double>();
    const bool inside = std::any_of(complete.begin(), complete.end(), [&](const json& op) {
      return op["cat"] == "cpu_op" && "cpu::" + op["name"].get<std::string>() == k["name"] &&
             op["tid"] == k["tid"] && op["ts"].get<double>() <= ts + kUs &&
             op["ts"].get<double>() + op["dur"].get<double>() + kUs >= end;
    });
    EXPECT_TRUE(inside) << k.dump();
  }
}

TEST(Profiler, ExportThroughASymlinkOrAFifoKeepsThem) {
  // Note [Writing files] in core/util/file_writer.cpp: the trace goes where the path points.
  Profiler prof;
  profile_mlp(prof);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ember_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string real = (dir / "run.json").string(), link = (dir / "trace.json").string();
  std::filesystem::create_symlink("run.json", link);
  prof.export_chrome_trace(link);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  std::ifstream in(real);
  EXPECT_EQ(json::parse(in).at("traceEvents").size(),
            json::parse(prof.chrome_trace()).at("traceEvents").size());
  const std::string fifo = (dir / "pipe").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  testing::FifoReader reader(fifo);
  prof.export_chrome_trace(fifo);
  EXPECT_TRUE(std::filesystem::is_fifo(fifo));
  EXPECT_TRUE(reader.bytes() == prof.chrome_trace());
  std::filesystem::remove_all(dir);
}

TEST(Profiler, ExportToAnUnwritablePlaceIsAnIoError) {
  Profiler prof;
  prof.start();
  prof.stop();
  EXPECT_PRED2(contains,
               error_of<IoError>([&] { prof.export_chrome_trace("/nonexistent-dir/trace.json"); }),
               "[profiler.export_chrome_trace] /nonexistent-dir/trace.json: cannot create a "
               "temporary file");
}

}  // namespace
}  // namespace ember
