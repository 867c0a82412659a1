// `ember run`: starts the ranks of a distributed job on this node, like torchrun's launcher.
#pragma once

#include <string>
#include <vector>

namespace ember::tools {

/** Everything `ember run` can be told on its command line. */
struct LaunchOptions {
  int nproc_per_node = 1;                 ///< ranks started on this node
  int nnodes = 1;                         ///< nodes in the job
  int node_rank = 0;                      ///< this node's index in [0, nnodes)
  std::string master_addr = "127.0.0.1";  ///< MASTER_ADDR for every rank
  int master_port = 0;                    ///< 0: 29500, or a free port when nnodes is 1
  double timeout_s = 0;                   ///< stop the ranks after this long (0: never)
  double grace_s = 5;                     ///< from SIGTERM to SIGKILL when stopping ranks
  std::vector<std::string> command;       ///< PROGRAM and its arguments, passed through untouched
};

/** Starts the ranks, forwards their output and signals; returns the launcher's exit status. */
int run_launcher(const LaunchOptions& options);

/** Splits argv at the `--` after `run` (Note [ember run's command line]); returns CLI11's argc. */
int launch_split_argv(int argc, char** argv, std::vector<std::string>& after_dashdash);

/** PROGRAM ARGS... from what CLI11 left over and what followed the `--` split off before it. */
std::vector<std::string> launch_command(const std::vector<std::string>& remaining,
                                        const std::vector<std::string>& after_dashdash, bool split);

}  // namespace ember::tools
