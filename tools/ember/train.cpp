#include "tools/ember/train.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <ember/data.h>
#include <ember/distributed.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/optim.h>
#include <fmt/format.h>

#include "ember/dispatch/device_registry.h"
#include "tools/ember/plot.h"

namespace ember::tools {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const auto total = static_cast<int64_t>(s + 0.5);
  return total >= 3600 ? fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60)
                       : fmt::format("{:02}:{:02}", total / 60, total % 60);
}

// Note [Progress on terminals and in logs]
// On a terminal the bar redraws one line (at most ten times a second); when stdout is a file
// or a pipe (CI logs), carriage returns would make a mess, so it prints a plain line at every
// tenth of the epoch instead.
class Progress {
 public:
  Progress(bool tty, int64_t epoch, int64_t epochs, int64_t total)
      : tty_(tty), epoch_(epoch), epochs_(epochs), total_(total), start_(Clock::now()) {}

  void update(int64_t done, double loss) {
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
      fmt::print("\repoch {}/{} [{}] {:>6}/{} {:>7.0f} samples/s  loss {:.4f}  ETA {}   ", epoch_,
                 epochs_, bar, done, total_, rate, loss, format_duration(eta));
      if (done >= total_) fmt::print("\n");
      std::fflush(stdout);
      return;
    }
    const int64_t tenth = total_ > 0 ? 10 * done / total_ : 10;
    if (tenth <= last_tenth_ || tenth == 0) return;
    last_tenth_ = tenth;
    fmt::print("epoch {}/{}  {:>6}/{}  {:.0f} samples/s  loss {:.4f}  ETA {}\n", epoch_, epochs_,
               done, total_, rate, loss, format_duration(eta));
    std::fflush(stdout);
  }

 private:
  bool tty_;
  int64_t epoch_, epochs_, total_;
  Clock::time_point start_;
  double last_draw_ = -1;
  int64_t last_tenth_ = 0;
};

// The best device unless one is named: a non-CPU device type with devices, else the CPU.
Device pick_device(const std::string& name) {
  if (!name.empty()) {
    Device d(name);
    check_device(d, "train");
    return d;
  }
  for (const DeviceTypeEntry& e : device_types()) {
    if (e.name != "cpu" && e.name != "reference" && e.count > 0) return Device(e.name);
  }
  return Device::cpu();
}

std::optional<int64_t> limit_or_all(int64_t n) {
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

struct Evaluation {
  double loss = 0, accuracy = 0;
};

Evaluation evaluate(nn::Module& model, data::DataLoader& loader, Device device) {
  autograd::NoGradGuard no_grad;
  model.eval();
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  for (const std::vector<Tensor>& batch : loader) {
    const Tensor x = batch[0].to(device, /*non_blocking=*/true);
    const Tensor y = batch[1].to(device, /*non_blocking=*/true);
    const Tensor logits = model(x);
    loss_sum += cross_entropy(logits, y, {}, -100, Reduction::Sum).item();
    correct += sum(eq(argmax(logits, 1), y)).item<int64_t>();
    seen += y.size(0);
  }
  model.train();
  if (seen == 0) return {};
  return {loss_sum / static_cast<double>(seen),
          static_cast<double>(correct) / static_cast<double>(seen)};
}

}  // namespace

double train(const TrainOptions& o) {
  EMBER_CHECK(o.epochs >= 1, "[train] --epochs must be at least 1: got {}", o.epochs);
  EMBER_CHECK(o.batch_size >= 1, "[train] --batch-size must be at least 1: got {}", o.batch_size);
  EMBER_CHECK(o.lr > 0, "[train] --lr must be positive: got {}", o.lr);
  EMBER_CHECK(o.limit >= 0 && o.test_limit >= 0, "[train] --limit must not be negative: got {}",
              std::min(o.limit, o.test_limit));
  EMBER_CHECK(o.optimizer == "sgd" || o.optimizer == "adam",
              "[train] unknown --optimizer '{}' (sgd, adam)", o.optimizer);
  init();
  if (o.threads > 0) set_num_threads(o.threads);
  manual_seed(o.seed);
  const Device device = pick_device(o.device);
  // Note [Data-parallel training]
  // Under `ember run` (WORLD_SIZE set) every rank trains a replica wrapped in
  // DistributedDataParallel on its share of each epoch (DistributedSampler, same seed): the
  // global batch is --batch-size, each rank takes batch-size / world of it, so the steps are
  // those of one process with the whole batch. Rank 0 evaluates, prints and writes the
  // checkpoint and the curve; the epoch's training figures are summed over the ranks.
  const char* world_env = std::getenv("WORLD_SIZE");
  const bool distributed = world_env && std::atoi(world_env) > 1;
  int rank = 0, world = 1;
  if (distributed) {
    distributed::init_process_group();
    rank = distributed::get_rank();
    world = distributed::get_world_size();
  }
  EMBER_CHECK(o.batch_size % world == 0,
              "[train] --batch-size {} does not split over {} processes (use a multiple of {})",
              o.batch_size, world, world);
  const bool lead = rank == 0;

  const std::string root = data::find_fashion_mnist(o.data);
  auto train_set = std::make_shared<data::MNIST>(root, /*train=*/true, limit_or_all(o.limit));
  auto test_set = std::make_shared<data::MNIST>(root, /*train=*/false, limit_or_all(o.test_limit));
  // On an accelerator, batches come in pinned memory and move without blocking, so the copy of
  // one batch overlaps the work queued for the one before (Note [Non-blocking copies]).
  const bool accelerator = !device_type(device.type).table.host_accessible;
  data::DataLoader train_loader(
      train_set, {.batch_size = o.batch_size / world,
                  .shuffle = true,
                  .num_workers = o.workers,
                  .seed = o.seed,
                  .sampler = distributed ? std::make_shared<data::DistributedSampler>(rank, world,
                                                                                      true, o.seed)
                                         : nullptr,
                  .pin_memory = accelerator});
  data::DataLoader test_loader(
      test_set, {.batch_size = 1000, .num_workers = o.workers, .pin_memory = accelerator});

  std::shared_ptr<nn::Sequential> model = models::by_name(o.model);
  model->to(device);
  std::shared_ptr<nn::Module> replica = model;
  if (distributed) replica = std::make_shared<nn::DistributedDataParallel>(model);
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "sgd") {
    opt = std::make_unique<optim::SGD>(model->parameters(),
                                       optim::SGDOptions{.lr = o.lr, .momentum = o.momentum});
  } else {
    opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = o.lr});
  }

  const bool tty = lead && o.progress && isatty(fileno(stdout));
  const int64_t n_train = train_set->size();
  if (lead) {
    fmt::print(
        "ember train: {} ({} parameters) on {}, {} threads{}; Fashion-MNIST from {}: {} train, "
        "{} test; {} lr {} batch {}\n",
        o.model, model->num_parameters(), device, get_num_threads(),
        distributed ? fmt::format(" x {} processes", world) : "", root, n_train, test_set->size(),
        o.optimizer, o.lr, o.batch_size);
    std::fflush(stdout);
  }

  Series step_loss{"train loss (per 50 steps)", "#1f77b4", {}};
  Series test_loss{"test loss", "#d62728", {}};
  Series test_acc{"test accuracy", "#2ca02c", {}};
  Series train_acc{"train accuracy", "#9467bd", {}};
  Evaluation last;
  std::filesystem::create_directories(o.out);
  const std::string ckpt = (std::filesystem::path(o.out) / (o.model + ".safetensors")).string();
  const std::string curve = (std::filesystem::path(o.out) / (o.model + "-curve.svg")).string();

  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    Progress progress(tty, epoch, o.epochs, n_train);
    const Clock::time_point t0 = Clock::now();
    double loss_sum = 0, window_sum = 0;
    int64_t seen = 0, correct = 0, window = 0, step = 0;
    for (const std::vector<Tensor>& batch : train_loader) {
      const Tensor x = batch[0].to(device, /*non_blocking=*/true);
      const Tensor y = batch[1].to(device, /*non_blocking=*/true);
      const Tensor logits = (*replica)(x);
      const Tensor loss = cross_entropy(logits, y);
      opt->zero_grad();
      loss.backward();
      opt->step();
      const double l = loss.item();
      const int64_t b = y.size(0);
      {
        autograd::NoGradGuard no_grad;
        correct += sum(eq(argmax(logits, 1), y)).item<int64_t>();
      }
      loss_sum += l * static_cast<double>(b);
      seen += b;
      window_sum += l;
      ++step;
      if (++window == 50) {
        step_loss.points.emplace_back(static_cast<double>(epoch - 1) +
                                          static_cast<double>(seen) / static_cast<double>(n_train),
                                      window_sum / 50);
        window = 0;
        window_sum = 0;
      }
      if (lead) progress.update(seen * world, loss_sum / static_cast<double>(seen));
    }
    if (distributed) {  // the epoch's figures over every rank's share
      Tensor totals = from_vector(
          std::vector<double>{loss_sum, static_cast<double>(seen), static_cast<double>(correct)},
          {3}, TensorOptions(DType::Float64));
      distributed::default_group().all_reduce(totals);
      const double* p = totals.data_ptr<double>();
      loss_sum = p[0], seen = static_cast<int64_t>(p[1]), correct = static_cast<int64_t>(p[2]);
    }
    const double train_s = seconds_since(t0);
    if (!lead) continue;
    last = evaluate(*model, test_loader, device);
    const double train_loss = seen ? loss_sum / static_cast<double>(seen) : 0.0;
    test_loss.points.emplace_back(static_cast<double>(epoch), last.loss);
    test_acc.points.emplace_back(static_cast<double>(epoch), last.accuracy);
    train_acc.points.emplace_back(
        static_cast<double>(epoch),
        seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0);
    fmt::print(
        "epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%, {:.1f} s "
        "({:.0f} samples/s)\n",
        epoch, o.epochs, train_loss, last.loss, 100 * last.accuracy, train_s,
        static_cast<double>(seen) / train_s);
    std::fflush(stdout);

    io::save(ckpt, model->state_dict(),
             {{"model", o.model},
              {"epoch", std::to_string(epoch)},
              {"test_accuracy", fmt::format("{:.4f}", last.accuracy)}});
    write_svg(curve, {Chart{"Loss", "epoch", "cross entropy", {step_loss, test_loss}},
                      Chart{"Accuracy", "epoch", "fraction correct", {train_acc, test_acc}}});
  }
  if (lead) fmt::print("checkpoint: {}\ncurve: {}\n", ckpt, curve);
  if (distributed) {
    distributed::default_group().barrier();  // the others wait for rank 0's files
    distributed::destroy_process_group();
  }
  return last.accuracy;
}

}  // namespace ember::tools
