// `ember train --task charlm`: a small GPT learns a text file character by character;
// `ember generate`: it writes more of the same.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <ember/amp.h>
#include <ember/ember.h>
#include <ember/io.h>
#include <ember/models.h>
#include <ember/optim.h>
#include <fmt/format.h>
#include <unistd.h>

#include "tools/ember/plot.h"
#include "tools/ember/train.h"
#include "tools/ember/train_common.h"

namespace ember::tools {
namespace {

// Note [Characters are bytes]
// The model's alphabet is the distinct bytes of the text, in byte order: a plain ASCII text
// (the King James Bible of the README) is one token per character, and any other file still
// trains, a multi-byte UTF-8 character becoming several tokens. The alphabet is saved in the
// checkpoint's metadata as hex ("vocab"), with the model's sizes, so `ember generate` needs
// nothing but the checkpoint.
constexpr const char* kTask = "charlm";

std::string to_hex(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  return out;
}

std::string from_hex(const std::string& hex, const std::string& path) {
  EMBER_CHECK(hex.size() % 2 == 0 && !hex.empty() && hex.size() <= 512,
              "[generate] {}: the 'vocab' metadata is not a hex alphabet of 1 to 256 bytes", path);
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const auto digit = [&](char c) {
      EMBER_CHECK(std::isxdigit(static_cast<unsigned char>(c)),
                  "[generate] {}: the 'vocab' metadata has '{}', not a hex digit", path, c);
      return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    };
    out += static_cast<char>(digit(hex[i]) * 16 + digit(hex[i + 1]));
  }
  return out;
}

/** The whole file at `path` (a pipe too), or an error naming it. */
std::string read_text(const std::string& path) {
  EMBER_CHECK(!path.empty(),
              "[train] --task charlm needs --text FILE (for example the King James Bible: "
              "`bible -f gen1:1-rev22:21 > kjv.txt` with Debian's bible-kjv)");
  EMBER_CHECK_IO(!std::filesystem::is_directory(path), "[train] --text {} is a directory", path);
  std::ifstream f(path, std::ios::binary);
  EMBER_CHECK_IO(f.good(), "[train] cannot read --text {}", path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EMBER_CHECK_IO(!f.bad(), "[train] reading --text {} failed", path);
  return s;
}

/** Token ids [windows, block] and their targets (the next characters) from `starts`. */
std::pair<Tensor, Tensor> windows(const std::vector<int64_t>& tokens,
                                  const std::vector<int64_t>& starts, int64_t block) {
  const auto n = static_cast<int64_t>(starts.size());
  Tensor x = empty({n, block}, TensorOptions(DType::Int64, Device::cpu()));
  Tensor y = empty({n, block}, TensorOptions(DType::Int64, Device::cpu()));
  int64_t* px = x.data_ptr<int64_t>();
  int64_t* py = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* src = tokens.data() + starts[static_cast<size_t>(i)];
    std::copy(src, src + block, px + i * block);
    std::copy(src + 1, src + block + 1, py + i * block);
  }
  return {x, y};
}

/** What the autocast scopes of a run are: --amp's dtype on the training device, or off. */
struct Mixed {
  std::string device_type;
  DType dtype;
  bool enabled;
};

/** Mean cross entropy in bits of logits [N, T, V] against targets [N, T]. */
Tensor bits(const Tensor& logits, const Tensor& y, Reduction reduction = Reduction::Mean) {
  return div(cross_entropy(logits.flatten(0, 1), y.flatten(), {}, -100, reduction), std::log(2.0));
}

/** Validation bits per character: every whole window of the held-out text, in batches. */
double evaluate(models::GPT& model, const std::vector<int64_t>& val, int64_t count, int64_t batch,
                Device device, const Mixed& m) {
  autograd::InferenceMode inference;  // Note [Inference tensors]: nothing here meets autograd
  model.eval();
  const int64_t block = model.options.block_size;
  double total = 0;
  for (int64_t first = 0; first < count; first += batch) {
    std::vector<int64_t> starts;
    for (int64_t w = first; w < std::min(count, first + batch); ++w) starts.push_back(w * block);
    const auto [x, y] = windows(val, starts, block);
    const amp::autocast mixed(m.device_type, m.dtype, m.enabled);
    total += bits(model(x.to(device)), y.to(device), Reduction::Sum).item();
  }
  model.train();
  return total / static_cast<double>(count * block);
}

}  // namespace

double train_charlm(const TrainOptions& o) {
  EMBER_CHECK(o.model == "gpt", "[train] --task charlm trains --model gpt: got '{}'", o.model);
  EMBER_CHECK(o.block_size >= 1, "[train] --block-size must be at least 1: got {}", o.block_size);
  EMBER_CHECK(o.resume.empty() && o.profile.empty() && o.nproc <= 1 && !std::getenv("WORLD_SIZE"),
              "[train] --resume, --profile and --nproc are for --task classify only");
  std::string text = read_text(o.text);
  if (o.limit > 0 && static_cast<int64_t>(text.size()) > o.limit) {
    text.resize(static_cast<size_t>(o.limit));
  }
  const auto n = static_cast<int64_t>(text.size());
  const int64_t block = o.block_size;
  // The last tenth is held out (at least one window of it).
  const int64_t n_val = std::max(block + 1, n / 10);
  const int64_t n_train = n - n_val;
  EMBER_CHECK(n_train >= block + 1,
              "[train] --text {}: {} characters are too few for --block-size {} (at least {} are "
              "needed: a window to train on and one to validate on)",
              o.text, n, block, 2 * (block + 1));

  init();
  if (o.threads > 0) set_num_threads(o.threads);
  manual_seed(o.seed);
  const Device device = pick_device(o.device);

  bool present[256] = {};
  for (unsigned char c : text) present[c] = true;
  std::string vocab;
  int64_t id_of[256] = {};
  for (int c = 0; c < 256; ++c) {
    if (present[c]) {
      id_of[c] = static_cast<int64_t>(vocab.size());
      vocab += static_cast<char>(c);
    }
  }
  std::vector<int64_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = id_of[static_cast<unsigned char>(text[i])];
  const std::vector<int64_t> train_tokens(tokens.begin(), tokens.begin() + n_train);
  const std::vector<int64_t> val_tokens(tokens.begin() + n_train, tokens.end());
  int64_t val_windows = (n_val - 1) / block;
  if (o.test_limit > 0)
    val_windows = std::min(val_windows, std::max<int64_t>(1, o.test_limit / block));

  const auto vocab_size = static_cast<int64_t>(vocab.size());
  auto model = models::gpt({.vocab_size = vocab_size, .block_size = block});
  model->to(device);
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(o, model->parameters());
  std::unique_ptr<optim::LRScheduler> schedule = make_schedule(o, *opt);
  const bool amp_on = o.amp != "none";
  const Mixed mixed_options{device_type(device.type).name,
                            o.amp == "f16" ? DType::Float16 : DType::BFloat16, amp_on};
  amp::GradScaler scaler({.enabled = o.amp == "f16"});

  const int64_t chars_per_step = o.batch_size * block;
  const int64_t steps = std::max<int64_t>(1, n_train / chars_per_step);
  fmt::print(
      "ember train --task charlm: gpt ({} parameters) on {}, {} threads; {}: {} characters, "
      "alphabet of {}, {} for validation; block {} batch {}, {} steps per epoch; {} lr {}\n",
      model->num_parameters(), device, get_num_threads(), o.text, n, vocab_size, n_val, block,
      o.batch_size, steps, o.optimizer, o.lr);
  const double before =
      evaluate(*model, val_tokens, val_windows, o.batch_size, device, mixed_options);
  fmt::print("before training: validation {:.3f} bits/char (log2 of the alphabet: {:.3f})\n",
             before, std::log2(static_cast<double>(vocab_size)));
  std::fflush(stdout);

  std::filesystem::create_directories(o.out);
  const auto out_file = [&](const char* suffix) {
    return (std::filesystem::path(o.out) / (o.model + suffix)).string();
  };
  const std::string ckpt = out_file(".safetensors"), curve = out_file("-curve.svg");
  MetricsFiles metrics(out_file("-steps.csv"), out_file("-epochs.csv"),
                       "train_bits_per_char,validation_bits_per_char,lr,time_s,chars_per_s", false,
                       0);
  Series train_curve{"train bits/char (per 50 steps)", "#1f77b4", {}};
  Series val_curve{"validation bits/char", "#d62728", {{0.0, before}}};
  const bool tty = o.progress && isatty(fileno(stdout));
  const Clock::time_point run_start = Clock::now();
  double last = before;
  int64_t global_step = 0;
  for (int64_t epoch = 1; epoch <= o.epochs; ++epoch) {
    Progress progress(tty, epoch, o.epochs, steps * chars_per_step, "chars", "bits/char");
    const Clock::time_point t0 = Clock::now();
    double sum = 0, window_sum = 0;
    int64_t window = 0;
    for (int64_t step = 1; step <= steps; ++step) {
      const Tensor offsets =
          randint(0, n_train - block, {o.batch_size}, {DType::Int64, Device::cpu()});
      const int64_t* po = offsets.data_ptr<int64_t>();
      const auto [x, y] = windows(train_tokens, std::vector<int64_t>(po, po + o.batch_size), block);
      Tensor loss;
      {
        const amp::autocast mixed(mixed_options.device_type, mixed_options.dtype,
                                  mixed_options.enabled);
        loss = bits((*model)(x.to(device, true)), y.to(device, true));
      }
      opt->zero_grad();
      scaler.scale(loss).backward();
      scaler.step(*opt);
      scaler.update();
      const double b = loss.item();
      sum += b;
      window_sum += b;
      metrics.step(epoch, step, ++global_step, b, opt->param_groups()[0].lr(),
                   seconds_since(run_start));
      if (++window == 50) {
        train_curve.points.emplace_back(
            static_cast<double>(epoch - 1) + static_cast<double>(step) / static_cast<double>(steps),
            window_sum / 50);
        window = 0;
        window_sum = 0;
      }
      progress.update(step * chars_per_step, sum / static_cast<double>(step));
    }
    const double train_s = seconds_since(t0);
    const double epoch_lr = opt->param_groups()[0].lr();
    if (schedule) schedule->step();
    last = evaluate(*model, val_tokens, val_windows, o.batch_size, device, mixed_options);
    val_curve.points.emplace_back(static_cast<double>(epoch), last);
    const double train_bits = sum / static_cast<double>(steps);
    const double rate = static_cast<double>(steps * chars_per_step) / train_s;
    fmt::print(
        "epoch {}/{}: train {:.3f} bits/char, validation {:.3f} bits/char, {:.1f} s ({:.0f} "
        "chars/s)\n",
        epoch, o.epochs, train_bits, last, train_s, rate);
    std::fflush(stdout);
    metrics.epoch(epoch, {train_bits, last, epoch_lr}, seconds_since(run_start), rate);
    io::save(ckpt, model->state_dict(),
             {{"model", o.model},
              {"task", kTask},
              {"vocab", to_hex(vocab)},
              {"block_size", std::to_string(model->options.block_size)},
              {"dim", std::to_string(model->options.dim)},
              {"depth", std::to_string(model->options.depth)},
              {"heads", std::to_string(model->options.heads)},
              {"epoch", std::to_string(epoch)},
              {"validation_bits_per_char", fmt::format("{:.4f}", last)}});
    write_svg(curve, {Chart{"Bits per character", "epoch", "bits/char", {train_curve, val_curve}}});
  }
  fmt::print("checkpoint: {}\ncurve: {}\nsample with: ember generate {}\n", ckpt, curve, ckpt);
  return last;
}

void generate(const GenerateOptions& o) {
  EMBER_CHECK(o.length >= 0, "[generate] --length must not be negative: got {}", o.length);
  init();
  if (o.threads > 0) set_num_threads(o.threads);
  const CheckpointMeta meta{io::load_metadata(o.checkpoint), "[generate] " + o.checkpoint,
                            "character-level model"};
  EMBER_CHECK(meta.values.count("task") && meta.values.at("task") == kTask,
              "[generate] {} is not a character-level model (make one with `ember train --task "
              "charlm --text FILE`)",
              o.checkpoint);
  const std::string vocab = from_hex(meta.value("vocab"), o.checkpoint);
  auto model = models::gpt({.vocab_size = static_cast<int64_t>(vocab.size()),
                            .block_size = meta.integer("block_size"),
                            .dim = meta.integer("dim"),
                            .depth = meta.integer("depth"),
                            .heads = meta.integer("heads"),
                            .dropout = 0.0});
  model->load_state_dict(io::load(o.checkpoint));
  const Device device = pick_device(o.device);
  model->to(device);

  std::string prompt = o.prompt;
  if (prompt.empty()) prompt = vocab.find('\n') != std::string::npos ? "\n" : vocab.substr(0, 1);
  std::vector<int64_t> ids;
  for (unsigned char c : prompt) {
    const size_t at = vocab.find(static_cast<char>(c));
    EMBER_CHECK(at != std::string::npos,
                "[generate] the prompt has a character the model never saw: byte 0x{:02x}{} (its "
                "alphabet has {} characters)",
                c, std::isprint(c) ? fmt::format(" '{}'", static_cast<char>(c)) : "", vocab.size());
    ids.push_back(static_cast<int64_t>(at));
  }
  Generator gen(o.seed);
  const Tensor idx = from_vector(ids, {1, static_cast<int64_t>(ids.size())},
                                 TensorOptions(DType::Int64, Device::cpu()));
  const Tensor out =
      model->generate(idx.to(device), o.length, o.temperature, o.top_k, &gen).to(Device::cpu());
  std::string text;
  const int64_t* p = out.contiguous().data_ptr<int64_t>();
  for (int64_t i = 0; i < out.size(1); ++i) text += vocab.at(static_cast<size_t>(p[i]));
  fmt::print("{}\n", text);
  std::fflush(stdout);
}

}  // namespace ember::tools
