// The comparison driver: runs each workload in fresh processes of compare_ember and
// compare_torch, alternating the two, and prints one table with the machine's limits.
#pragma once

namespace compare {

/** Runs the comparison; argv[0] is "table", then --torch PATH, --rounds N, --only a,b (workload
 *  names, or "inference" for all inference rows). */
int drive(int argc, char** argv);

/** Prints "<isa> <fma 1t> <fma 2t> <copy 1t> <copy 2t> <triad 1t> <triad 2t>" (--limits). */
int print_limits();

/** fp32 FMA peak in GFLOP/s over `threads` threads; `isa` receives "AVX-512" or "AVX2". */
double fma_peak_gflops(int threads, const char** isa);

/** STREAM-like bandwidth in GB/s over 16M floats: copy (c = a) when !triad, else a = b + s*c. */
double stream_gbs(int threads, bool triad);

}  // namespace compare
