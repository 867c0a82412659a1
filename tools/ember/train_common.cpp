#include "tools/ember/train_common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "core/util/file_writer.h"
#include "ember/dispatch/device_registry.h"

namespace ember::tools {
namespace {

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const auto total = static_cast<int64_t>(s + 0.5);
  return total >= 3600 ? fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
                       : fmt::format("{:02}:{:02}", total / 60, total % 60);
}

/** Keeps the header and the rows whose first column (the epoch) is at most `epoch`. */
void cut_csv(const std::string& path, int64_t epoch) {
  std::ifstream in(path);
  std::string line, kept;
  bool header = true;
  while (std::getline(in, line)) {
    if (header || std::strtoll(line.c_str(), nullptr, 10) <= epoch) kept += line + "\n";
    header = false;
  }
  in.close();
  ember::detail::write_file(path, kept, "train.resume");
}

void open_csv(std::ofstream& f, const std::string& path, bool append, const std::string& header) {
  const bool fresh =
      !append || !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  f.open(path, fresh ? std::ios::trunc : std::ios::app);
  EMBER_CHECK_IO(f.good(), "[train] cannot write {}", path);
  if (fresh) f << header << "\n";
}

}  // namespace

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void check_options(const TrainOptions& o) {
  EMBER_CHECK(o.task == "classify" || o.task == "charlm",
              "[train] unknown --task '{}' (classify, charlm)", o.task);
  EMBER_CHECK(o.epochs >= 1, "[train] --epochs must be at least 1: got {}", o.epochs);
  EMBER_CHECK(o.batch_size >= 1, "[train] --batch-size must be at least 1: got {}", o.batch_size);
  EMBER_CHECK(o.lr > 0, "[train] --lr must be positive: got {}", o.lr);
  EMBER_CHECK(o.limit >= 0 && o.test_limit >= 0, "[train] --limit must not be negative: got {}",
              std::min(o.limit, o.test_limit));
  EMBER_CHECK(o.optimizer == "sgd" || o.optimizer == "adam",
              "[train] unknown --optimizer '{}' (sgd, adam)", o.optimizer);
  EMBER_CHECK(o.lr_schedule == "none" || o.lr_schedule == "step" || o.lr_schedule == "cosine",
              "[train] unknown --lr-schedule '{}' (none, step, cosine)", o.lr_schedule);
  EMBER_CHECK(o.amp == "none" || o.amp == "bf16" || o.amp == "f16",
              "[train] unknown --amp '{}' (none, bf16, f16)", o.amp);
}

Device pick_device(const std::string& name, const char* command) {
  if (!name.empty()) {
    Device d(name);
    check_device(d, command);
    return d;
  }
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.name != "cpu" && e.name != "reference" && e.count > 0) return Device(e.name);
  }
  return Device::cpu();
}

Tensor to_device(const Tensor& x, Device device, MemoryFormat format) {
  const Tensor moved = x.to(device, /*non_blocking=*/true);
  return moved.dim() == 4 ? moved.contiguous(format) : moved;
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& o,
                                                 const std::vector<Tensor>& params) {
  if (o.optimizer == "sgd") {
    return std::make_unique<optim::SGD>(params,
                                        optim::SGDOptions{.lr = o.lr, .momentum = o.momentum});
  }
  return std::make_unique<optim::Adam>(params, optim::AdamOptions{.lr = o.lr});
}

std::unique_ptr<optim::LRScheduler> make_schedule(const TrainOptions& o, optim::Optimizer& opt) {
  if (o.lr_schedule == "step") {
    return std::make_unique<optim::StepLR>(opt, o.lr_step_size, o.lr_gamma);
  }
  if (o.lr_schedule == "cosine") return std::make_unique<optim::CosineAnnealingLR>(opt, o.epochs);
  return nullptr;
}

const std::string& CheckpointMeta::value(const std::string& key) const {
  const auto it = values.find(key);
  EMBER_CHECK(it != values.end(), "{}: not a {} checkpoint ('{}' missing)", where, kind, key);
  return it->second;
}

int64_t CheckpointMeta::integer(const std::string& key) const {
  const std::string& v = value(key);
  try {
    size_t used = 0;
    const int64_t n = std::stoll(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {
  }
  EMBER_CHECK(false, "{}: '{}' is '{}', not an integer", where, key, v);
  return 0;
}

// Note [Progress on terminals and in logs]
// On a terminal the bar redraws one line (at most ten times a second); when stdout is a file
// or a pipe (CI logs), carriage returns would make a mess, so it prints a plain line at every
// tenth of the epoch instead.
Progress::Progress(bool tty, int64_t epoch, int64_t epochs, int64_t total, std::string unit,
                   std::string metric)
    : tty_(tty),
      epoch_(epoch),
      epochs_(epochs),
      total_(total),
      unit_(std::move(unit)),
      metric_(std::move(metric)),
      start_(Clock::now()) {}

void Progress::update(int64_t done, double figure) {
  const double elapsed = seconds_since(start_);
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : INFINITY;
  if (tty_) {
    if (done < total_ && elapsed - last_draw_ < 0.1) return;
    last_draw_ = elapsed;
    constexpr int kBar = 28;
    const int filled = total_ > 0 ? static_cast<int>(kBar * done / total_) : kBar;
    std::string bar(static_cast<size_t>(filled), '=');
    if (filled < kBar) bar += '>' + std::string(static_cast<size_t>(kBar - filled - 1), ' ');
    fmt::print("\repoch {}/{} [{}] {:>6}/{} {:>7.0f} {}/s  {} {:.4f}  ETA {}   ", epoch_, epochs_,
               bar, done, total_, rate, unit_, metric_, figure, format_duration(eta));
    if (done >= total_) fmt::print("\n");
    std::fflush(stdout);
    return;
  }
  const int64_t tenth = total_ > 0 ? 10 * done / total_ : 10;
  if (tenth <= last_tenth_ || tenth == 0) return;
  last_tenth_ = tenth;
  fmt::print("epoch {}/{}  {:>6}/{}  {:.0f} {}/s  {} {:.4f}  ETA {}\n", epoch_, epochs_, done,
             total_, rate, unit_, metric_, figure, format_duration(eta));
  std::fflush(stdout);
}

MetricsFiles::MetricsFiles(const std::string& steps, const std::string& epochs,
                           const std::string& epoch_columns, bool resume, int64_t resume_epoch) {
  if (resume) {
    cut_csv(steps, resume_epoch);
    cut_csv(epochs, resume_epoch);
  }
  open_csv(steps_, steps, resume, "epoch,step,global_step,loss,lr,time_s");
  open_csv(epochs_, epochs, resume, "epoch," + epoch_columns);
}

void MetricsFiles::step(int64_t epoch, int64_t step, int64_t global_step, double loss, double lr,
                        double time_s) {
  steps_ << fmt::format("{},{},{},{},{},{:.3f}\n", epoch, step, global_step, loss, lr, time_s);
}

void MetricsFiles::epoch(int64_t epoch, std::initializer_list<double> figures, double time_s,
                         double rate) {
  epochs_ << epoch;
  for (double f : figures) epochs_ << fmt::format(",{}", f);
  epochs_ << fmt::format(",{:.3f},{:.1f}\n", time_s, rate);
  steps_.flush();
  epochs_.flush();
}

}  // namespace ember::tools
