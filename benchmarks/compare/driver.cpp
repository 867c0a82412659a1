// The comparison driver (`compare_ember table --torch <compare_torch>`): every workload runs in
// fresh processes, Ember and PyTorch alternating, and one table is printed at the end.
#include "benchmarks/compare/driver.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "benchmarks/compare/workloads.h"

namespace compare {
namespace {

// Note [Alternating fresh processes]: each (workload, threads) row runs `rounds` times; a round
// starts one process per side in a fixed order (Ember, PyTorch as it comes, PyTorch tuned), so
// a slow spell of a shared machine hits both sides instead of one. A process warms up, takes
// its samples and exits; the row's number is the median of all samples of that side, and its
// memory is the largest ru_maxrss (from wait4) among that side's processes. The ResNet-18 row's
// processes do nothing else, so their peak RSS is the peak of a training step; the ResNet-50
// batch-1 inference rows' the peak of a model set up for inference and its forward passes.

// Note [Spawning from a small process]: posix_spawn shares the parent's address space until
// exec, and Linux carries that address space's high-water RSS into the child's ru_maxrss. The
// driver therefore never allocates much itself (the bandwidth arrays live in a child started
// with --limits), so a child's ru_maxrss is its own peak.

/** What one side process gave back. */
struct Outcome {
  bool ok = false;
  std::vector<double> samples;
  double maxrss_mib = 0;
  std::string text;
};

/** The sides of a row. */
enum Side { kEmber, kTorch, kTorchTuned, kSides };
const char* const kSideNames[kSides] = {"Ember", "PyTorch", "PyTorch tuned"};

/** Runs `args` with `env`, capturing stdout; returns the parsed samples and peak RSS. */
Outcome run_process(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  Outcome out;
  int fds[2];
  if (pipe(fds) != 0) return out;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    out.text = std::string("cannot start ") + args[0] + ": " + std::strerror(rc);
    return out;
  }
  char buf[4096];
  for (ssize_t k; (k = read(fds[0], buf, sizeof buf)) != 0;) {
    if (k > 0) out.text.append(buf, static_cast<size_t>(k));
  }
  close(fds[0]);
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
  }
  out.maxrss_mib = static_cast<double>(ru.ru_maxrss) / 1024.0;
  std::istringstream in(out.text);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("samples ")) continue;
    std::istringstream vals(line.substr(8));
    for (double v; vals >> v;) out.samples.push_back(v);
  }
  out.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && !out.samples.empty();
  return out;
}

/** This process's environment without the variables that set threads or malloc behaviour. */
std::vector<std::string> clean_env() {
  static const char* const drop[] = {"OMP_NUM_THREADS=", "MKL_NUM_THREADS=", "EMBER_NUM_THREADS=",
                                     "GLIBC_TUNABLES=", "EMBER_COMPARE_TUNED="};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    if (std::none_of(std::begin(drop), std::end(drop),
                     [&](const char* d) { return s.starts_with(d); })) {
      env.push_back(s);
    }
  }
  return env;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/** A duration with a readable unit ("-" when unknown). */
std::string fmt_time(double s) {
  if (!std::isfinite(s)) return "-";
  char b[32];
  if (s < 1e-6) {
    std::snprintf(b, sizeof b, "%.0f ns", s * 1e9);
  } else if (s < 1e-3) {
    std::snprintf(b, sizeof b, "%.2f us", s * 1e6);
  } else if (s < 1) {
    std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(b, sizeof b, "%.2f s", s);
  }
  return b;
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

/** One row of the table, already formatted. */
struct Row {
  std::string label, threads, ember, torch, tuned, ratio, rate_e, rate_t, limit, rss;
};

void print_table(const std::vector<Row>& rows) {
  const Row head{"workload",  "thr",        "Ember",    "PyTorch", "PyT tuned",
                 "Ember/PyT", "Ember rate", "PyT rate", "limit",   "peak RSS MiB E/PyT/tuned"};
  std::vector<Row> all = {head};
  all.insert(all.end(), rows.begin(), rows.end());
  auto fields = [](Row& r) {
    return std::vector<std::string*>{&r.label, &r.threads, &r.ember,  &r.torch, &r.tuned,
                                     &r.ratio, &r.rate_e,  &r.rate_t, &r.limit, &r.rss};
  };
  std::vector<size_t> width(10, 0);
  for (Row& r : all) {
    const auto f = fields(r);
    for (size_t i = 0; i < f.size(); ++i) width[i] = std::max(width[i], f[i]->size());
  }
  for (size_t k = 0; k < all.size(); ++k) {
    const auto f = fields(all[k]);
    std::string line = "|";
    for (size_t i = 0; i < f.size(); ++i) {
      const std::string& s = *f[i];
      const std::string pad(width[i] - s.size(), ' ');
      line += " " + (i == 0 ? s + pad : pad + s) + " |";
    }
    std::printf("%s\n", line.c_str());
    if (k == 0) {
      std::string rule = "|";
      for (size_t i = 0; i < f.size(); ++i) {
        rule += i == 0 ? std::string(width[i] + 1, '-') + " |"
                       : " " + std::string(width[i], '-') + ":|";
      }
      std::printf("%s\n", rule.c_str());
    }
  }
}

/** The label of the extra row that repeats a workload's peak RSS, or null for none. */
const char* peak_rss_label(std::string_view name) {
  if (name == "resnet18_step") return "peak RSS of the ResNet-18 step process (MiB)";
  if (name == "resnet50_inf_b1") return "peak RSS of the ResNet-50 b1 inference process (MiB)";
  if (name == "resnet50_inf_b1_cl") return "same, channels-last (MiB)";
  return nullptr;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("model name")) return line.substr(line.find(':') + 2);
  }
  return "unknown CPU";
}

}  // namespace

int print_limits() {
  const char* isa = "";
  double fma[3], copy[3], triad[3];
  for (int t : {1, 2}) {
    fma[t] = fma_peak_gflops(t, &isa);
    copy[t] = stream_gbs(t, false);
    triad[t] = stream_gbs(t, true);
  }
  std::printf("%s %g %g %g %g %g %g\n", isa, fma[1], fma[2], copy[1], copy[2], triad[1], triad[2]);
  return 0;
}

int drive(int argc, char** argv) {
  std::string torch_path, only;
  int rounds = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--torch" && i + 1 < argc) {
      torch_path = argv[++i];
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--only" && i + 1 < argc) {
      only = "," + std::string(argv[++i]) + ",";
    } else {
      std::fprintf(stderr, "compare_ember table: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const std::string self = "/proc/self/exe";
  char exe[4096] = {};
  if (readlink(self.c_str(), exe, sizeof exe - 1) <= 0) return 2;
  const std::vector<std::string> env = clean_env();

  std::string torch_version = "not built";
  if (!torch_path.empty()) {
    Outcome v = run_process({torch_path, "--version"}, env);
    torch_version = v.text.empty() ? "failed to start" : v.text.substr(0, v.text.find('\n'));
  }

  // Machine limits first, while nothing else of ours runs, in a child: see Note [Spawning
  // from a small process].
  std::fprintf(stderr, "[compare] measuring FMA peak and STREAM bandwidth\n");
  std::string isa = "?";
  std::map<int, double> fma, copy, triad;
  {
    std::istringstream in(run_process({exe, "--limits"}, env).text);
    in >> isa >> fma[1] >> fma[2] >> copy[1] >> copy[2] >> triad[1] >> triad[2];
  }
  std::vector<Row> rows;
  for (int t : {1, 2}) {
    rows.push_back({"machine: fp32 FMA peak (" + isa + ")", std::to_string(t), "-", "-", "-", "-",
                    "-", "-", fmt("%.1f GFLOP/s", fma[t]), "-"});
  }
  for (int t : {1, 2}) {
    rows.push_back({"machine: STREAM copy / triad, 16M floats", std::to_string(t), "-", "-", "-",
                    "-", "-", "-", fmt("%.1f", copy[t]) + " / " + fmt("%.1f GB/s", triad[t]), "-"});
  }

  for (const Workload& w : workloads()) {
    // --only names workloads, or "inference" for every inference row.
    const bool listed =
        only.find("," + std::string(w.name) + ",") != std::string::npos ||
        (only.find(",inference,") != std::string::npos && inference_spec(w.name).batch > 0);
    if (!only.empty() && !listed) continue;
    for (int t : w.threaded ? std::vector<int>{1, 2} : std::vector<int>{1}) {
      std::vector<double> samples[kSides];
      double rss[kSides] = {NAN, NAN, NAN};
      for (int r = 0; r < rounds; ++r) {
        for (int side = 0; side < kSides; ++side) {
          if (side != kEmber && torch_path.empty()) continue;
          std::vector<std::string> e = env;
          if (side == kTorchTuned) {
            // Note [PyTorch tuned]: huge pages for malloc'd tensors and OpenMP's pool sized
            // exactly, the settings PyTorch's performance guide recommends on CPUs.
            e.push_back("GLIBC_TUNABLES=glibc.malloc.hugetlb=1");
            e.push_back("OMP_NUM_THREADS=" + std::to_string(t));
            e.push_back("MKL_NUM_THREADS=" + std::to_string(t));
            // The inference rows: batch norms folded by hand (Note [Inference workloads]).
            e.push_back("EMBER_COMPARE_TUNED=1");
          }
          const std::string prog = side == kEmber ? std::string(exe) : torch_path;
          std::fprintf(stderr, "[compare] %-14s threads=%d round %d/%d: %s\n", w.name, t, r + 1,
                       rounds, kSideNames[side]);
          Outcome o = run_process({prog, w.name, std::to_string(t)}, e);
          if (!o.ok) {
            std::fprintf(stderr, "[compare]   %s failed:\n%s\n", kSideNames[side], o.text.c_str());
            continue;
          }
          samples[side].insert(samples[side].end(), o.samples.begin(), o.samples.end());
          rss[side] = std::isnan(rss[side]) ? o.maxrss_mib : std::max(rss[side], o.maxrss_mib);
        }
      }
      const double me = median(samples[kEmber]);
      const double mt = median(samples[kTorch]), mtt = median(samples[kTorchTuned]);
      const double best = std::isnan(mt) ? mtt : std::isnan(mtt) ? mt : std::min(mt, mtt);
      Row row{w.label,
              std::to_string(t),
              fmt_time(me),
              fmt_time(mt),
              fmt_time(mtt),
              fmt("%.2f", me / best),
              "-",
              "-",
              "-",
              fmt("%.0f", rss[kEmber]) + " / " + fmt("%.0f", rss[kTorch]) + " / " +
                  fmt("%.0f", rss[kTorchTuned])};
      if (w.items > 0) {
        // Images per second, and the FLOP rate's share of the FMA peak where FLOPs are known.
        auto rate = [&](double s) {
          const double per_s = static_cast<double>(w.items) / s;
          return fmt(per_s < 100 ? "%.1f img/s" : "%.0f img/s", per_s) +
                 (w.flop > 0 ? fmt(" (%.0f%%)", 100 * w.flop / s / 1e9 / fma[t]) : "");
        };
        row.rate_e = rate(me);
        row.rate_t = rate(best);
        row.limit = w.flop > 0 ? "of FMA peak" : "-";
      } else if (w.flop > 0 || w.bytes > 0) {
        const bool f = w.flop > 0;
        const double per = f ? w.flop : w.bytes;
        const double lim = w.limit == Limit::FmaPeak      ? fma[t]
                           : w.limit == Limit::StreamCopy ? copy[t]
                                                          : triad[t];
        auto rate = [&](double s) {
          const double r = per / s / 1e9;
          return fmt(f ? "%.1f GFLOP/s" : "%.1f GB/s", r) + fmt(" (%.0f%%)", 100 * r / lim);
        };
        row.rate_e = rate(me);
        row.rate_t = rate(best);
        row.limit = w.limit == Limit::FmaPeak      ? "of FMA peak"
                    : w.limit == Limit::StreamCopy ? "of copy"
                                                   : "of triad";
      }
      rows.push_back(row);
      if (const char* label = peak_rss_label(w.name)) {
        rows.push_back({label, std::to_string(t), fmt("%.0f", rss[kEmber]),
                        fmt("%.0f", rss[kTorch]), fmt("%.0f", rss[kTorchTuned]),
                        fmt("%.2f", rss[kEmber] / std::min(rss[kTorch], rss[kTorchTuned])), "-",
                        "-", "-", "-"});
      }
    }
  }

  std::printf("\nEmber vs PyTorch %s (libtorch), %s, %ld CPUs; %d round(s) per row, alternating\n",
              torch_version.c_str(), cpu_model().c_str(), sysconf(_SC_NPROCESSORS_ONLN), rounds);
  std::printf(
      "Times are medians (lower is better); Ember/PyT = Ember time / the better PyTorch "
      "time (> 1: Ember slower).\n");
  std::printf(
      "PyTorch tuned = GLIBC_TUNABLES=glibc.malloc.hugetlb=1, OMP_NUM_THREADS and "
      "MKL_NUM_THREADS = threads; both sides also call set_num_threads(threads).\n");
  std::printf(
      "Inference rows: Ember folds batch norms and activations (nn::fuse_for_inference), PyTorch "
      "tuned also folds batch norms into the convolutions.\n");
  std::printf(
      "Rates use the better PyTorch time; (%%) is the fraction of the machine limit at "
      "the same thread count.\n");
  std::printf("(*) LeNet-5: %lld steps per sample, scaled to the %lld batches of an epoch.\n\n",
              static_cast<long long>(kLeNetStepsPerSample), static_cast<long long>(kLeNetBatches));
  print_table(rows);
  return 0;
}

}  // namespace compare
