#include "tools/ember/train.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include <ember/amp.h>
#include <ember/data.h>
#include <ember/distributed.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/optim.h>
#include <fmt/format.h>

#include "ember/dispatch/device_registry.h"
#include "tools/ember/plot.h"
#include "tools/ember/train_common.h"

namespace ember::tools {
namespace {

std::optional<int64_t> limit_or_all(int64_t n) {
  return n > 0 ? std::optional<int64_t>(n) : std::nullopt;
}

struct Evaluation {
  double loss = 0, accuracy = 0;
};

Evaluation evaluate(nn::Module& model, data::DataLoader& loader, Device device,
                    std::optional<DType> amp_dtype, MemoryFormat format) {
  autograd::InferenceMode inference;  // Note [Inference tensors]: nothing here meets autograd
  const amp::autocast mixed(device_type(device.type).name, amp_dtype, amp_dtype.has_value());
  model.eval();
  double loss_sum = 0;
  int64_t correct = 0, seen = 0;
  for (const std::vector<Tensor>& batch : loader) {
    const Tensor x = to_device(batch[0], device, format);
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

// Note [Exact resume]
// `<out>/<model>-train.safetensors`, written atomically at the end of every epoch, holds all
// that the next epoch depends on: the model's parameters and buffers ("model."), the optimizer's
// state and hyperparameters ("optimizer."), the LR scheduler's position ("scheduler."), the
// default random generators of the CPU and the training device ("rng.<device>"), the data
// loader's position (metadata loader_epoch and loader_batches, Note [Resuming a DataLoader]),
// the epoch and step counts and the curves drawn so far ("curve."). `--resume` rebuilds the
// run from the same options, then loads all of it, so epoch k+1 computes exactly what an
// uninterrupted run's epoch k+1 computes: with one CPU thread the losses agree bit for bit.
// The metrics files are cut back to the checkpoint's epoch and continued.
constexpr const char* kTrainFormat = "ember-train-v1";

/** Tensors of `dict` under `prefix`, with the prefix removed. */
StateDict with_prefix_removed(const StateDict& dict, const std::string& prefix) {
  StateDict out;
  for (const auto& [k, v] : dict) {
    if (k.rfind(prefix, 0) == 0) out.emplace(k.substr(prefix.size()), v);
  }
  return out;
}

/** A series' points as a float64 [n, 2] tensor. */
Tensor series_tensor(const Series& s) {
  std::vector<double> v;
  for (const auto& [x, y] : s.points) v.insert(v.end(), {x, y});
  return from_vector(v, {static_cast<int64_t>(s.points.size()), 2},
                     TensorOptions(DType::Float64, Device::cpu()));
}

/** The points of a [n, 2] tensor saved by series_tensor. */
std::vector<std::pair<double, double>> series_points(const Tensor& t) {
  EMBER_CHECK(t.dim() == 2 && t.size(1) == 2,
              "[train] --resume: a curve in the checkpoint has shape {}, not [n, 2]",
              shape_str(t.sizes()));
  const Tensor h = t.to(Device::cpu()).to(DType::Float64).contiguous();
  std::vector<std::pair<double, double>> out;
  for (int64_t i = 0; i < h.size(0); ++i) {
    out.emplace_back(h.data_ptr<double>()[2 * i], h.data_ptr<double>()[2 * i + 1]);
  }
  return out;
}

}  // namespace

double train(const TrainOptions& options) {
  check_options(options);
  TrainOptions o = options;
  if (o.model.empty()) o.model = o.task == "charlm" ? "gpt" : "cnn";
  if (o.task == "charlm") return train_charlm(o);
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

  std::shared_ptr<nn::Module> model = models::by_name(o.model);
  model->to(device);
  // --channels-last: convolution weights (and below, every batch of images) in NHWC, so the
  // convolutions and the layers between them run in that layout (Note [Channels-last tensors]).
  const MemoryFormat format =
      o.channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  model->to(format);
  std::shared_ptr<nn::Module> replica = model;
  if (distributed) replica = std::make_shared<nn::DistributedDataParallel>(model);
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(o, model->parameters());
  // Note [Mixed precision in ember train]: --amp bf16|f16 runs the forward pass and the loss
  // under autocast (the evaluation too), with loss scaling for float16; the parameters, their
  // gradients and the optimizer stay float32.
  const bool amp_on = o.amp != "none";
  const DType amp_dtype = o.amp == "f16" ? DType::Float16 : DType::BFloat16;
  amp::GradScaler scaler({.enabled = o.amp == "f16"});
  std::unique_ptr<optim::LRScheduler> schedule = make_schedule(o, *opt);

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
  const auto out_file = [&](const char* suffix) {
    return (std::filesystem::path(o.out) / (o.model + suffix)).string();
  };
  const std::string train_ckpt = out_file("-train.safetensors");
  const std::string steps_csv = out_file("-steps.csv"), epochs_csv = out_file("-epochs.csv");
  const std::string rng_key = "rng." + fmt::format("{}", device);

  int64_t first_epoch = 1, global_step = 0;
  if (!o.resume.empty()) {  // Note [Exact resume]
    const StateDict saved = io::load(o.resume);
    const CheckpointMeta meta{io::load_metadata(o.resume), "[train] --resume " + o.resume,
                              "training"};
    EMBER_CHECK(meta.value("format") == kTrainFormat, "[train] --resume {}: format '{}' is not {}",
                o.resume, meta.value("format"), kTrainFormat);
    for (const auto& [key, now] : {std::pair<std::string, std::string>{"model", o.model},
                                   {"optimizer", o.optimizer},
                                   {"lr_schedule", o.lr_schedule},
                                   {"amp", o.amp},
                                   {"batch_size", std::to_string(o.batch_size)},
                                   {"seed", std::to_string(o.seed)}}) {
      const std::string& then = meta.value(key);
      EMBER_CHECK(then == now,
                  "[train] --resume {}: the run was made with --{} {}, not {} (resume with the "
                  "same options)",
                  o.resume,
                  key == "batch_size"    ? "batch-size"
                  : key == "lr_schedule" ? "lr-schedule"
                                         : key,
                  then, now);
    }
    model->load_state_dict(with_prefix_removed(saved, "model."));
    opt->load_state_dict(with_prefix_removed(saved, "optimizer."));
    if (schedule) schedule->load_state_dict(with_prefix_removed(saved, "scheduler."));
    if (o.amp == "f16") scaler.load_state_dict(with_prefix_removed(saved, "scaler."));
    default_generator().set_state(saved.at("rng.cpu"));
    if (device != Device::cpu() && saved.count(rng_key)) {
      default_generator(device).set_state(saved.at(rng_key));
    }
    const int64_t done = meta.integer("epoch");
    train_loader.load_state(
        {static_cast<uint64_t>(meta.integer("loader_epoch")), meta.integer("loader_batches")});
    global_step = meta.integer("global_step");
    for (Series* series : {&step_loss, &test_loss, &test_acc, &train_acc}) {
      auto it = saved.find("curve." + series->label);
      if (it != saved.end()) series->points = series_points(it->second);
    }
    first_epoch = done + 1;
    if (lead) {
      fmt::print("resuming from {} after epoch {}\n", o.resume, done);
      std::fflush(stdout);
    }
  }
  // Note [Training metrics as CSV]
  // Beside the curve, <model>-steps.csv has one row per step (epoch, step in the epoch, global
  // step, loss, lr, seconds since the run began) and <model>-epochs.csv one row per epoch
  // (training and test loss and accuracy, lr, seconds, samples/s), for plotting and comparing
  // runs elsewhere. Numbers are written in their shortest exact form; a resumed run keeps the
  // rows up to its checkpoint and continues the files.
  std::optional<MetricsFiles> metrics;
  if (lead)
    metrics.emplace(steps_csv, epochs_csv,
                    "train_loss,train_accuracy,test_loss,test_accuracy,lr,time_s,samples_per_s",
                    !o.resume.empty(), first_epoch - 1);
  const Clock::time_point run_start = Clock::now();
  // --profile: the first --profile-steps steps (rank 0's), each a "train_step" range, then a
  // Chrome trace and the table of ops by self time.
  std::optional<profiler::Profiler> prof;
  int64_t profiled_steps = 0;
  const auto finish_profile = [&] {
    prof->stop();
    prof->export_chrome_trace(o.profile);
    fmt::print("{}", prof->key_averages().table(profiler::SortBy::SelfCpuTotal, 20));
    fmt::print("profile of {} steps written to {}\n", profiled_steps, o.profile);
    std::fflush(stdout);
    prof.reset();
  };
  if (!o.profile.empty() && lead) {
    prof.emplace();
    prof->start();
  }

  for (int64_t epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    Progress progress(tty, epoch, o.epochs, n_train);
    const Clock::time_point t0 = Clock::now();
    double loss_sum = 0, window_sum = 0;
    int64_t seen = 0, correct = 0, window = 0, step = 0;
    for (const std::vector<Tensor>& batch : train_loader) {
      std::optional<profiler::RecordFunction> step_range;
      if (prof) step_range.emplace("train_step");
      const Tensor x = to_device(batch[0], device, format);
      const Tensor y = batch[1].to(device, /*non_blocking=*/true);
      Tensor logits, loss;
      {
        const amp::autocast mixed(device_type(device.type).name, amp_dtype, amp_on);
        logits = (*replica)(x);
        loss = cross_entropy(logits, y);
      }
      opt->zero_grad();
      scaler.scale(loss).backward();
      scaler.step(*opt);
      scaler.update();
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
      ++global_step;
      if (metrics) {
        metrics->step(epoch, step, global_step, l, opt->param_groups()[0].lr(),
                      seconds_since(run_start));
      }
      if (++window == 50) {
        step_loss.points.emplace_back(static_cast<double>(epoch - 1) +
                                          static_cast<double>(seen) / static_cast<double>(n_train),
                                      window_sum / 50);
        window = 0;
        window_sum = 0;
      }
      if (lead) progress.update(seen * world, loss_sum / static_cast<double>(seen));
      step_range.reset();
      if (prof && ++profiled_steps == o.profile_steps) finish_profile();
    }
    if (distributed) {  // the epoch's figures over every rank's share
      Tensor totals = from_vector(
          std::vector<double>{loss_sum, static_cast<double>(seen), static_cast<double>(correct)},
          {3}, TensorOptions(DType::Float64, Device::cpu()));
      distributed::default_group().all_reduce(totals);
      const double* p = totals.data_ptr<double>();
      loss_sum = p[0], seen = static_cast<int64_t>(p[1]), correct = static_cast<int64_t>(p[2]);
    }
    const double train_s = seconds_since(t0);
    const double epoch_lr = opt->param_groups()[0].lr();
    if (schedule) schedule->step();
    if (!lead) continue;
    last = evaluate(*model, test_loader, device,
                    amp_on ? std::optional<DType>(amp_dtype) : std::nullopt, format);
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

    metrics->epoch(
        epoch,
        {train_loss, seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0,
         last.loss, last.accuracy, epoch_lr},
        seconds_since(run_start), static_cast<double>(seen) / train_s);

    io::save(ckpt, model->state_dict(),
             {{"model", o.model},
              {"epoch", std::to_string(epoch)},
              {"test_accuracy", fmt::format("{:.4f}", last.accuracy)}});
    StateDict state;
    for (const auto& [k, v] : model->state_dict()) state.emplace("model." + k, v);
    for (const auto& [k, v] : opt->state_dict()) state.emplace("optimizer." + k, v);
    if (schedule) {
      for (const auto& [k, v] : schedule->state_dict()) state.emplace("scheduler." + k, v);
    }
    if (o.amp == "f16") {
      for (const auto& [k, v] : scaler.state_dict()) state.emplace("scaler." + k, v);
    }
    state.emplace("rng.cpu", default_generator().get_state());
    if (device != Device::cpu()) state.emplace(rng_key, default_generator(device).get_state());
    for (const Series* series : {&step_loss, &test_loss, &test_acc, &train_acc}) {
      state.emplace("curve." + series->label, series_tensor(*series));
    }
    const data::LoaderState position = train_loader.state();
    io::save(train_ckpt, state,
             {{"format", kTrainFormat},
              {"model", o.model},
              {"optimizer", o.optimizer},
              {"lr_schedule", o.lr_schedule},
              {"amp", o.amp},
              {"batch_size", std::to_string(o.batch_size)},
              {"seed", std::to_string(o.seed)},
              {"epoch", std::to_string(epoch)},
              {"global_step", std::to_string(global_step)},
              {"loader_epoch", std::to_string(position.epoch)},
              {"loader_batches", std::to_string(position.batches)}});
    write_svg(curve, {Chart{"Loss", "epoch", "cross entropy", {step_loss, test_loss}},
                      Chart{"Accuracy", "epoch", "fraction correct", {train_acc, test_acc}}});
  }
  if (prof) finish_profile();  // a run shorter than --profile-steps
  if (lead) {
    fmt::print("checkpoint: {}\ncurve: {}\nmetrics: {}, {}\nresume with: --resume {}\n", ckpt,
               curve, steps_csv, epochs_csv, train_ckpt);
  }
  if (distributed) {
    distributed::default_group().barrier();  // the others wait for rank 0's files
    distributed::destroy_process_group();
  }
  return last.accuracy;
}

}  // namespace ember::tools
