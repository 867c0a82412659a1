// What the two tasks of `ember train` (image classification and the character-level language
// model) share: the device choice, the progress line, the optimizer and schedule switches and
// the metrics files.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <ember/ember.h>
#include <ember/io.h>
#include <ember/optim.h>

#include "tools/ember/train.h"

namespace ember::tools {

/** The clock of the progress lines and the metrics. */
using Clock = std::chrono::steady_clock;

/** Seconds from `t0` to now. */
double seconds_since(Clock::time_point t0);

/** Refuses options out of range or unknown (--epochs, --batch-size, --lr, --limit, --task,
 *  --optimizer, --lr-schedule, --amp) before anything is loaded. */
void check_options(const TrainOptions& o);

/** `ember train --task charlm` (tools/ember/charlm.cpp); returns the last validation bits per
 *  character. */
double train_charlm(const TrainOptions& o);

/** The device `--device` names (checked, errors tagged with `command`), or the best one: a
 *  non-CPU device type with devices, else the CPU. */
Device pick_device(const std::string& name, const char* command = "train");

/** A batch of inputs moved to `device` without blocking, images (4-d) in `format`. */
Tensor to_device(const Tensor& x, Device device, MemoryFormat format);

/** The optimizer --optimizer and --lr (and --momentum) ask for, over `params`. */
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& o,
                                                 const std::vector<Tensor>& params);

/** The LR schedule --lr-schedule asks for, or null for none. */
std::unique_ptr<optim::LRScheduler> make_schedule(const TrainOptions& o, optim::Optimizer& opt);

/** The metadata of a checkpoint being read back, with errors that name the file. */
struct CheckpointMeta {
  io::Metadata values;  ///< the file's metadata
  std::string where;    ///< the errors' prefix: "[train] --resume PATH", "[generate] PATH"
  std::string kind;     ///< what a file without a key is not: "training", "character-level model"
  /** The value of `key`, or "<where>: not a <kind> checkpoint ('<key>' missing)". */
  const std::string& value(const std::string& key) const;
  /** value(key) as an integer, or "<where>: '<key>' is '<value>', not an integer". */
  int64_t integer(const std::string& key) const;
};

/** One epoch's progress: a redrawn bar on a terminal, a line per tenth of the epoch otherwise
 *  (Note [Progress on terminals and in logs]). */
class Progress {
 public:
  /** Epoch `epoch` of `epochs` over `total` units, counted as `unit` ("samples", "chars");
   *  the running figure is shown as `metric` ("loss", "bits/char"). */
  Progress(bool tty, int64_t epoch, int64_t epochs, int64_t total, std::string unit = "samples",
           std::string metric = "loss");
  /** `done` units so far, with the running figure. */
  void update(int64_t done, double figure);

 private:
  bool tty_;
  int64_t epoch_, epochs_, total_;
  std::string unit_, metric_;
  Clock::time_point start_;
  double last_draw_ = -1;
  int64_t last_tenth_ = 0;
};

/** The metrics files beside the curve (Note [Training metrics as CSV]). */
class MetricsFiles {
 public:
  /** Opens `steps` and `epochs` (the latter's columns after "epoch" are `epoch_columns`,
   *  ending with the time and the rate); on a resume keeps their rows up to `resume_epoch`. */
  MetricsFiles(const std::string& steps, const std::string& epochs,
               const std::string& epoch_columns, bool resume, int64_t resume_epoch);
  /** One training step. */
  void step(int64_t epoch, int64_t step, int64_t global_step, double loss, double lr,
            double time_s);
  /** One epoch: its figures, then the seconds since the run began and the rate; flushed with
   *  the steps before it. */
  void epoch(int64_t epoch, std::initializer_list<double> figures, double time_s, double rate);

 private:
  std::ofstream steps_, epochs_;
};

}  // namespace ember::tools
