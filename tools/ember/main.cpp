// The `ember` command: devices, plugins, ops, conformance, train, generate, predict, inspect,
// bench, run, convert, --version.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <ember/ember.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/io/open_file.h"
#include "core/plugin/elf_check.h"
#include "ember/dispatch/device_registry.h"
#include "tools/ember/conformance.h"
#include "tools/ember/launch.h"
#include "tools/ember/onnx_cli.h"
#include "tools/ember/predict.h"
#include "tools/ember/train.h"

namespace {

int cmd_devices() {
  ember::init();
  fmt::print("{:<12} {:<8} {:<10} {}\n", "TYPE", "COUNT", "PLUGIN", "DETAILS");
  for (const ember::DeviceTypeEntry& e : ember::device_types()) {
    std::string details;
    if (e.count == 0) {
      details = e.unusable_reason;
    } else if (e.plugin == "core") {
      details = "host memory only, no kernels (no CPU backend installed: ember-backend-cpu)";
    } else if (e.table.device_props) {
      ember_device_props props{};
      if (e.table.device_props(e.table.ctx, 0, &props) == EMBER_OK) {
        details = fmt::format("{}, {} cores, {:.1f} GiB", props.name, props.num_cores,
                              static_cast<double>(props.total_memory) / (1 << 30));
      }
    }
    fmt::print("{:<12} {:<8} {:<10} {}\n", e.name, e.count, e.plugin, details);
  }
  fmt::print("\nbest device: {}\n", ember::best_device());
  return 0;
}

// `ember --version`: Ember's version, the plugin ABI this core speaks (Note [Version
// compatibility]) and the version of every plugin that loaded.
int cmd_version() {
  fmt::print("ember {}\n", EMBER_VERSION_STRING);
  if (std::string(ember::version()) != EMBER_VERSION_STRING) {
    fmt::print("  running with libember_core {}\n", ember::version());
  }
  fmt::print("plugin ABI {}.{} (loads plugins of ABI {}.x that need at most {}.{})\n",
             EMBER_ABI_MAJOR, EMBER_ABI_MINOR, EMBER_ABI_MAJOR, EMBER_ABI_MAJOR, EMBER_ABI_MINOR);
  const ember::PluginReport r = ember::plugin_report();
  for (const auto& d : r.search_path) {
    if (d.source == "core library dir") fmt::print("plugin directory {}\n", d.dir);
  }
  for (const auto& p : r.plugins) {
    if (p.outcome != ember::PluginOutcome::Loaded && p.outcome != ember::PluginOutcome::Unusable) {
      continue;
    }
    fmt::print("plugin {} {} (needs ABI {}{}) {}\n", p.name, p.version, p.abi,
               p.outcome == ember::PluginOutcome::Unusable ? ", 0 devices" : "", p.file);
  }
  return 0;
}

int cmd_plugins(bool json, bool verbose) {
  const ember::PluginReport r = ember::plugin_report();
  if (json) {
    std::cout << ember::plugin_report_json(r) << "\n";
    return 0;
  }
  fmt::print("Search path:\n");
  for (const auto& d : r.search_path) {
    if (verbose) {
      fmt::print("  {}  ({}; {})\n", d.dir, d.source,
                 d.exists ? fmt::format("{} candidate file(s)", d.candidates) : "does not exist");
    } else {
      fmt::print("  {}  ({})\n", d.dir, d.source);
    }
  }
  if (verbose) {
    fmt::print("Controls: {}\n", fmt::join(r.controls, ", "));
    fmt::print("Best device: {}\n", ember::best_device());
  }
  fmt::print("\n{:<10} {:<9} {:<5} {:<19} {}\n", "NAME", "VERSION", "ABI", "OUTCOME", "FILE");
  for (const auto& p : r.plugins) {
    fmt::print("{:<10} {:<9} {:<5} {:<19} {}\n", p.name.empty() ? "-" : p.name,
               p.version.empty() ? "-" : p.version, p.abi.empty() ? "-" : p.abi,
               ember::outcome_name(p.outcome), p.file);
    if (!p.reason.empty()) fmt::print("{:>47}{}\n", "reason: ", p.reason);
    if (!p.warning.empty()) fmt::print("{:>47}{}\n", "warning: ", p.warning);
    if (verbose && !p.build_info.empty()) fmt::print("{:>47}{}\n", "build: ", p.build_info);
    if (!p.devices.empty()) fmt::print("{:>47}{}\n", "devices: ", fmt::join(p.devices, ", "));
    if (!p.communication.empty())
      fmt::print("{:>47}{}\n", "communication: ", fmt::join(p.communication, ", "));
    if (verbose) {
      for (const auto& k : p.kernels) fmt::print("{:>47}{}\n", "kernel: ", k);
    } else if (!p.ops.empty()) {
      fmt::print("{:>47}{} ops\n", "kernels: ", p.ops.size());
    }
  }
  for (const auto& c : r.conflicts) fmt::print("conflict: {}\n", c);
  return 0;
}

// `ember __load-one <file>` (hidden): loads one file with autoload, strict mode and required
// devices off, and prints its record as JSON. The doctor runs it in a child process.
int cmd_load_one(const std::string& file) {
  ::unsetenv("EMBER_PLUGIN_PATH");
  ember::PluginOptions opts;
  opts.autoload = false;
  opts.strict = false;
  opts.require_device = "";
  ember::init(opts);
  const ember::PluginRecord rec = ember::load_plugin(file);
  nlohmann::json j{{"file", rec.file},
                   {"name", rec.name},
                   {"outcome", ember::outcome_name(rec.outcome)},
                   {"reason", rec.reason},
                   {"devices", rec.devices},
                   {"build_info", rec.build_info}};
  std::cout << j.dump() << "\n";
  return 0;
}

struct ChildResult {
  int status = 0;
  bool timed_out = false;
  std::string out;
};

// Runs this executable with `args` in a child process; captures stdout; kills it after
// `timeout_s` seconds.
ChildResult run_self(const std::vector<std::string>& args, int timeout_s) {
  ChildResult res;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start a child process: {}", std::strerror(rc)));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  char buf[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          deadline - std::chrono::steady_clock::now())
                                          .count());
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      res.timed_out = true;
      break;
    }
    if (::poll(&p, 1, left) <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    res.out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  while (::waitpid(pid, &res.status, 0) < 0 && errno == EINTR) {
  }
  return res;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

// Note [The doctor loads in a child]
// A plugin can crash the process that loads it (a null dereference in a static initialiser,
// an abort in a vendor library's constructor) before the loader gets a say. The doctor loads
// each candidate in a child process running this executable, so a crash becomes a line of the
// report, and it lists every missing shared library from the ELF files themselves (dlopen
// stops at the first).
int cmd_doctor(std::vector<std::string> paths, bool json) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  if (paths.empty()) {
    files = ember::plugin_candidates();
  } else {
    for (const std::string& p : paths) {
      std::error_code ec;
      if (fs::is_directory(p, ec) && !fs::path(p).filename().string().starts_with("libember")) {
        std::vector<std::string> in_dir;
        for (const auto& e : fs::directory_iterator(p, ec)) {
          const std::string n = e.path().filename().string();
          if (n.starts_with("libember") && n.find(".so") != std::string::npos)
            in_dir.push_back(e.path().string());
        }
        std::sort(in_dir.begin(), in_dir.end());
        files.insert(files.end(), in_dir.begin(), in_dir.end());
      } else {
        files.push_back(fs::absolute(p, ec).lexically_normal().string());
      }
    }
  }
  nlohmann::json all = nlohmann::json::array();
  int problems = 0;
  for (const std::string& f : files) {
    const ChildResult c = run_self({"ember", "__load-one", f}, 60);
    nlohmann::json rec{{"file", f}};
    if (c.timed_out) {
      rec["outcome"] = "crashed";
      rec["reason"] = "hung during load, killed after 60 s";
    } else if (WIFSIGNALED(c.status)) {
      rec["outcome"] = "crashed";
      rec["reason"] = fmt::format("{} during load", signal_name(WTERMSIG(c.status)));
    } else {
      try {
        const nlohmann::json child = nlohmann::json::parse(c.out);
        rec.update(child);
        rec["file"] = f;
      } catch (const std::exception&) {
        rec["outcome"] = "crashed";
        rec["reason"] = fmt::format("the loading process exited with status {} and no report",
                                    WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1);
      }
    }
    const ember::DependencyScan deps = ember::scan_dependencies(f);
    rec["missing_libraries"] = deps.missing;
    const std::string outcome = rec.value("outcome", "");
    if (!(outcome == "loaded" || outcome == "unusable" || outcome == "shadowed" ||
          outcome == "disabled") ||
        !deps.missing.empty()) {
      ++problems;
    }
    all.push_back(rec);
  }
  if (json) {
    std::cout << all.dump(2) << "\n";
  } else {
    for (const auto& r : all) {
      fmt::print("{}\n  {}{}{}\n", r["file"].get<std::string>(), r.value("outcome", ""),
                 r.value("reason", "").empty() ? "" : ": ", r.value("reason", ""));
      for (const auto& m : r["missing_libraries"])
        fmt::print("  missing library: {}\n", m.get<std::string>());
      for (const auto& d : r.value("devices", nlohmann::json::array()))
        fmt::print("  device: {}\n", d.get<std::string>());
    }
    fmt::print("{} candidate(s) checked, {} with problems\n", all.size(), problems);
  }
  return problems == 0 ? 0 : 1;
}

int cmd_ops(bool json) {
  const std::vector<ember::OpInfo> ops = ember::list_ops();
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& op : ops) {
      nlohmann::json kernels = nlohmann::json::object();
      for (const auto& [dev, dtypes] : op.kernels) {
        std::vector<std::string> names;
        for (ember::DType d : dtypes) names.emplace_back(ember::dtype_name(d));
        kernels[dev] = names;
      }
      nlohmann::json entry{{"name", op.name}, {"kernels", kernels}};
      if (!op.schema.empty()) entry["schema"] = op.schema;
      j.push_back(entry);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  for (const auto& op : ops) {
    std::string where;
    for (const auto& [dev, dtypes] : op.kernels) {
      std::vector<std::string_view> names;
      for (ember::DType d : dtypes) names.push_back(ember::dtype_name(d));
      where += fmt::format("{}{} [{}]", where.empty() ? "" : "; ", dev, fmt::join(names, ", "));
    }
    fmt::print("{:<16} {}\n", op.name, where.empty() ? "(no kernels)" : where);
    if (!op.schema.empty()) fmt::print("{:<16} {}\n", "", op.schema);
  }
  return 0;
}

// `ember convert IN OUT`: the tensors of a torch.save file (or a safetensors file) as a
// safetensors file. A checkpoint's nested names are flattened with dots and its other values
// (epoch, hyper-parameters) become the file's metadata (Note [Nested torch.save files]).
int cmd_convert(const std::string& in, const std::string& out) {
  unsigned char head[16] = {};
  const int fd = ember::io::detail::open_regular_file(in, "io.load");
  const ssize_t got = ::pread(fd, head, sizeof(head), 0);
  ::close(fd);
  ember::io::TorchFile f;
  const bool torch = got > 0 && ember::io::is_torch_file(head, static_cast<size_t>(got));
  if (torch) {
    f = ember::io::load_torch(in);
  } else {
    f.tensors = ember::io::load(in);
    f.values = ember::io::load_metadata(in);
  }
  ember::io::save(out, f.tensors, f.values);
  int64_t bytes = 0;
  for (const auto& [name, t] : f.tensors) bytes += t.nbytes();
  fmt::print("{} ({}) -> {}: {} tensors, {} bytes, {} other values as metadata\n", in,
             torch ? "torch.save" : "safetensors", out, f.tensors.size(), bytes, f.values.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ember: an eager deep-learning runtime with plugin backends"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("-V,--version", version,
               "Print Ember's version, its plugin ABI and the loaded plugins' versions");
  bool json = false;
  auto* devices = app.add_subcommand("devices", "List device types and devices");
  auto* plugins =
      app.add_subcommand("plugins", "Show plugin discovery: every candidate and its outcome");
  plugins->add_flag("--json", json, "Machine-readable report");
  bool verbose = false;
  plugins->add_flag("-v,--verbose", verbose,
                    "Also build info, kernels per op, search-dir details and controls");
  auto* doctor = plugins->add_subcommand(
      "doctor", "Load each candidate in a child process; report crashes and all missing libraries");
  std::vector<std::string> doctor_paths;
  doctor->add_option("paths", doctor_paths, "Plugin files or directories (default: discovery's)");
  doctor->add_flag("--json", json, "Machine-readable report");
  std::string load_one_file;
  auto* load_one = app.add_subcommand("__load-one", "")->group("");
  load_one->add_option("file", load_one_file)->required();
  auto* ops = app.add_subcommand("ops", "List ops and the device types/dtypes with kernels");
  ops->add_flag("--json", json, "Machine-readable list");
  ember::conformance::Options conf;
  auto* conformance = app.add_subcommand(
      "conformance",
      "Compare a backend with the reference backend, op by op (values and gradients)");
  conformance->add_option("--device", conf.devices,
                          "Device type(s) to check (default: every loaded one but reference)");
  conformance->add_option("--filter", conf.filter, "Only cases whose name contains this");
  conformance->add_flag("--all", conf.all,
                        "Every case must be claimed (a complete backend), not only those whose "
                        "ops the device has");
  conformance->add_flag("!--no-grad", conf.grad, "Compare values only, not gradients");
  conformance->add_flag("-v,--verbose", conf.verbose, "List passing and unclaimed cases too");
  ember::tools::TrainOptions t;
  auto* train = app.add_subcommand(
      "train",
      "Train a model on Fashion-MNIST (or a GPT on a text file); save a checkpoint and curves");
  train
      ->add_option("--task", t.task,
                   "classify (Fashion-MNIST) or charlm (a character-level GPT on --text)")
      ->capture_default_str();
  train->add_option("--model", t.model,
                    "classify: lenet, cnn (LeNet-sized with batch norm; the default), mlp, "
                    "resnet18, resnet50, vit; charlm: gpt");
  train->add_option("--text", t.text, "charlm: the plain-text file to learn");
  train->add_option("--block-size", t.block_size, "charlm: characters of context")
      ->capture_default_str();
  train->add_option("--device", t.device, "cpu, cuda, cuda:1, ... (default: the best available)");
  train->add_option("--data", t.data,
                    "Fashion-MNIST directory (default: $EMBER_DATA_DIR or the "
                    "dataset-fashion-mnist package)");
  train->add_option("--out", t.out, "Directory for the checkpoint and the curve")
      ->capture_default_str();
  train->add_option("--optimizer", t.optimizer, "sgd (with momentum) or adam")
      ->capture_default_str();
  train->add_option("--epochs", t.epochs, "Passes over the training set")->capture_default_str();
  train->add_option("--batch-size", t.batch_size, "Examples per step")->capture_default_str();
  train->add_option("--lr", t.lr, "Learning rate")->capture_default_str();
  train->add_option("--momentum", t.momentum, "SGD momentum")->capture_default_str();
  train->add_option("--limit", t.limit, "Train on the first N examples only (0: all)");
  train->add_option("--test-limit", t.test_limit, "Evaluate on the first N examples only (0: all)");
  train->add_option("--seed", t.seed, "Seed for initialisation and shuffling")
      ->capture_default_str();
  train->add_option("--threads", t.threads, "CPU threads (0: all cores)");
  train->add_option("--workers", t.workers, "Data-loader threads")->capture_default_str();
  train->add_flag("!--no-progress", t.progress, "Plain lines instead of a progress bar");
  train
      ->add_option("--nproc", t.nproc,
                   "Train data-parallel in this many processes (started with `ember run`)")
      ->capture_default_str();
  train->add_option("--lr-schedule", t.lr_schedule, "none, step or cosine (over --epochs)")
      ->check(CLI::IsMember({"none", "step", "cosine"}))
      ->capture_default_str();
  train->add_option("--lr-step-size", t.lr_step_size, "step: epochs between decays")
      ->capture_default_str();
  train->add_option("--lr-gamma", t.lr_gamma, "step: the factor of each decay")
      ->capture_default_str();
  train->add_option("--profile", t.profile,
                    "Profile the first steps: a Chrome trace here and a table of the ops");
  train->add_option("--profile-steps", t.profile_steps, "Steps --profile records")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  train->add_option("--amp", t.amp, "Mixed precision: none, bf16 or f16 (with loss scaling)")
      ->check(CLI::IsMember({"none", "bf16", "f16"}))
      ->capture_default_str();
  train->add_flag("--channels-last", t.channels_last,
                  "Images and convolution weights in the channels-last (NHWC) memory format");
  train->add_option(
      "--resume", t.resume,
      "Continue exactly from a training checkpoint (<out>/<model>-train.safetensors)");
  ember::tools::GenerateOptions g;
  auto* generate = app.add_subcommand(
      "generate", "Sample text from a character-level GPT (ember train --task charlm)");
  generate->add_option("checkpoint", g.checkpoint, "<out>/gpt.safetensors of ember train")
      ->required();
  generate->add_option("--prompt", g.prompt, "Text to continue (default: a new line)");
  generate->add_option("--length", g.length, "Characters to generate")->capture_default_str();
  generate->add_option("--temperature", g.temperature, "Softmax temperature")
      ->capture_default_str();
  generate->add_option("--top-k", g.top_k, "Sample from the k likeliest characters (0: all)")
      ->capture_default_str();
  generate->add_option("--seed", g.seed, "Seed of the sampling")->capture_default_str();
  generate->add_option("--device", g.device, "cpu, cuda, ... (default: the best available)");
  generate->add_option("--threads", g.threads, "CPU threads (0: all cores)");
  ember::tools::PredictOptions p;
  auto* predict = app.add_subcommand(
      "predict",
      "Classify 28x28 greyscale images (IDX files, PGM images) with a checkpoint of ember train "
      "or a torch.save file: top-k classes, accuracy when labels are known, throughput");
  predict->add_option("checkpoint", p.checkpoint,
                      "<out>/<model>.safetensors of ember train, a .pt/.pth state dict, or an "
                      ".onnx model (or give that as --model)");
  predict->add_option("inputs", p.inputs,
                      "IDX images files (gzipped or not) and PGM images (P5, P2) (default: the "
                      "Fashion-MNIST test set)");
  predict->add_option("--model", p.model,
                      "lenet, cnn, mlp, resnet18, resnet50 or vit (default: the checkpoint's), or "
                      "an .onnx model file taking [N, 1, 28, 28] or [N, 784] images");
  predict->add_option("--labels", p.labels,
                      "IDX labels of the IDX input (default: *-labels-idx1-ubyte[.gz] beside it)");
  predict->add_option("--data", p.data,
                      "Fashion-MNIST directory when no inputs are given (default: "
                      "$EMBER_DATA_DIR or the dataset-fashion-mnist package)");
  predict->add_option("--device", p.device, "cpu, cuda, cuda:1, ... (default: the best available)");
  predict->add_option("--threads", p.threads, "CPU threads (0: all cores)");
  predict->add_option("--batch-size", p.batch_size, "Images per forward pass")
      ->capture_default_str();
  predict->add_flag("--channels-last", p.channels_last,
                    "Images and convolution weights in the channels-last (NHWC) memory format");
  predict->add_option("--amp", p.amp, "Autocast: none, bf16 or f16")->capture_default_str();
  predict->add_flag("!--no-fuse", p.fuse,
                    "Keep batch norms as they are instead of folding them into the layer before");
  predict->add_option("--top-k", p.top_k, "Classes listed per image, likeliest first")
      ->capture_default_str();
  predict->add_option("--limit", p.limit, "Only the first N images (0: all)");
  predict->add_option("--show", p.show,
                      "A line for each of the first N images (default: each PGM image, no IDX "
                      "image)");
  bool quiet = false;
  predict->add_flag("-q,--quiet", quiet, "Only the summary, no line per image");
  ember::tools::InspectOptions ins;
  auto* inspect = app.add_subcommand(
      "inspect",
      "List an ONNX model's inputs, outputs, weights and op counts, and which loaded device runs "
      "each node");
  inspect->add_option("model", ins.model, "The .onnx file")->required();
  inspect->add_option("--dim", ins.dims, "NAME=SIZE for a symbolic dim (others are 1)");
  inspect->add_flag("!--no-run", ins.run_nodes,
                    "Only read the model; do not run its nodes on each device");
  ember::tools::BenchOptions b;
  auto* bench = app.add_subcommand(
      "bench",
      "Time an ONNX model on random inputs, as onnxruntime_perf_test: latency percentiles, "
      "throughput, peak memory");
  bench->add_option("model", b.model, "The .onnx file")->required();
  bench->add_option("--device", b.device, "cpu, cuda, cuda:1, ... (default: the best available)");
  bench->add_option("--batch", b.batch, "Size of each input's symbolic first dim")
      ->capture_default_str();
  bench->add_option("--dim", b.dims, "NAME=SIZE for another symbolic dim (others are 1)");
  bench->add_option("--threads", b.threads, "CPU threads (0: Ember's default)");
  bench->add_option("--runs", b.runs, "Timed runs")->capture_default_str();
  bench->add_option("--warmup", b.warmup, "Untimed runs first")->capture_default_str();
  bench->add_option("--optimization-level", b.level, "none, basic, extended or all")
      ->capture_default_str();
  bench->add_flag("!--no-memory-plan", b.plan,
                  "Run node by node instead of replaying a memory plan");
  std::string convert_in, convert_out;
  auto* convert = app.add_subcommand(
      "convert",
      "Write the tensors of a PyTorch torch.save file (.pt, .pth) or a safetensors file to a "
      "safetensors file");
  convert->add_option("input", convert_in, "A torch.save or safetensors file")->required();
  convert->add_option("output", convert_out, "The safetensors file to write")->required();
  ember::tools::LaunchOptions launch;
  auto* run = app.add_subcommand(
      "run",
      "Start the ranks of a distributed job on this node, like torchrun: ember run "
      "--nproc-per-node N [--] PROGRAM [ARGS...]");
  run->prefix_command();  // PROGRAM and everything after it are passed through untouched
  run->add_option("--nproc-per-node", launch.nproc_per_node, "Ranks to start on this node")
      ->capture_default_str();
  run->add_option("--nnodes", launch.nnodes, "Nodes in the job")->capture_default_str();
  run->add_option("--node-rank", launch.node_rank, "This node's index in [0, nnodes)")
      ->capture_default_str();
  run->add_option("--master-addr", launch.master_addr, "MASTER_ADDR for every rank")
      ->capture_default_str();
  run->add_option("--master-port", launch.master_port,
                  "MASTER_PORT (default: a free port with one node, else 29500)");
  run->add_option("--timeout-s", launch.timeout_s, "Stop the ranks after this long (0: never)")
      ->capture_default_str();
  run->add_option("--grace-s", launch.grace_s, "From SIGTERM to SIGKILL when stopping ranks")
      ->capture_default_str();
  std::vector<std::string> launch_tail;  // Note [ember run's command line]
  const int cli_argc = ember::tools::launch_split_argv(argc, argv, launch_tail);
  CLI11_PARSE(app, cli_argc, argv);
  if (!version && app.get_subcommands().empty()) {
    std::cerr << app.help() << "a command is required\n";
    return 106;  // CLI11's RequiredError, as before --version allowed no command
  }
  try {
    if (version) return cmd_version();
    if (*devices) return cmd_devices();
    if (*load_one) return cmd_load_one(load_one_file);
    if (*doctor) return cmd_doctor(doctor_paths, json);
    if (*plugins) return cmd_plugins(json, verbose);
    if (*ops) return cmd_ops(json);
    if (*conformance) return ember::conformance::run_cli(conf);
    if (*convert) return cmd_convert(convert_in, convert_out);
    if (*inspect) {
      ember::tools::inspect(ins);
      return 0;
    }
    if (*bench) {
      ember::tools::bench(b);
      return 0;
    }
    if (*predict) {
      if (quiet) p.show = 0;
      if (p.model.ends_with(".onnx")) {  // --model FILE.onnx: a positional is then an input
        if (!p.checkpoint.empty()) p.inputs.insert(p.inputs.begin(), p.checkpoint);
        p.checkpoint = p.model;
      }
      if (p.checkpoint.empty()) {
        fmt::print(stderr, "ember: [predict] a checkpoint or an .onnx model is required\n");
        return 106;
      }
      ember::tools::predict(p);
      return 0;
    }
    if (*generate) {
      ember::tools::generate(g);
      return 0;
    }
    if (*run) {
      launch.command =
          ember::tools::launch_command(run->remaining(), launch_tail, cli_argc != argc);
      return ember::tools::run_launcher(launch);
    }
    if (*train) {
      // Note [ember train --nproc]: the command starts itself again under the launcher; the
      // ranks see WORLD_SIZE and train data-parallel.
      if (t.nproc > 1 && !std::getenv("WORLD_SIZE")) {
        launch.nproc_per_node = t.nproc;
        launch.command.assign(argv, argv + argc);
        launch.command[0] = "/proc/self/exe";
        return ember::tools::run_launcher(launch);
      }
      ember::tools::train(t);
      return 0;
    }
  } catch (const ember::Error& e) {
    fmt::print(stderr, "ember: {}\n", e.what());
    return 1;
  }
  return 0;
}
