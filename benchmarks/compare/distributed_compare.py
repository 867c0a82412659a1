"""Ember's distributed_bench beside PyTorch's torch.distributed (gloo), rounds alternating.

    python3 benchmarks/compare/distributed_compare.py EMBER_BIN_DIR TORCH_PYTHON [ROUNDS]

Each round runs both under `ember run --nproc-per-node 2` (one thread per rank), Ember first,
then PyTorch; the table has each workload's median over the rounds and the ratio of the medians
(PyTorch / Ember time: above 1, Ember is faster). Alternating keeps a drifting machine fair.
"""
import os
import re
import statistics
import subprocess
import sys

bin_dir, torch_python = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
here = os.path.dirname(os.path.abspath(__file__))
run = [os.path.join(bin_dir, "ember"), "run", "--nproc-per-node", "2"]
env = dict(os.environ, OMP_NUM_THREADS="1")

names = {"BM_AllReduce/1024": "all_reduce/1024", "BM_AllReduce/16384": "all_reduce/16384",
         "BM_AllReduce/262144": "all_reduce/262144", "BM_AllReduce/4194304": "all_reduce/4194304",
         "BM_AllReduce/67108864": "all_reduce/67108864", "BM_DdpMlpStep": "ddp_mlp_step",
         "BM_DdpResNet18Step": "ddp_resnet18_step"}
units = {"us": 1e-3, "ms": 1.0, "s": 1e3}
ember, torch = {}, {}
for r in range(rounds):
    out = subprocess.run(run + [os.path.join(bin_dir, "distributed_bench")], env=env,
                         capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"\[rank 0\] (BM_\w+(?:/\d+)?)\S*\s+([\d.]+) (us|ms|s) ", out):
        ember.setdefault(names[m.group(1)], []).append(float(m.group(2)) * units[m.group(3)])
    out = subprocess.run(run + [torch_python, os.path.join(here, "torch_distributed_bench.py")],
                         env=env, capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r"\[rank 0\] (\S+)\s+([\d.]+) ms", out):
        torch.setdefault(m.group(1), []).append(float(m.group(2)))
    print(f"round {r + 1}/{rounds} done", file=sys.stderr, flush=True)

print("| workload | Ember median | PyTorch median | PyTorch / Ember |")
print("|---|---|---|---|")
for key in names.values():
    if key not in ember:
        continue
    e = statistics.median(ember[key])
    t = statistics.median(torch[key]) if key in torch else float("nan")
    size = key.split("/")[1] if "/" in key else ""
    extra = ""
    if size:  # bus bandwidth with 2 ranks: 2 (n - 1) / n * bytes / time = bytes / time
        extra = f" ({int(size) / e / 1e6:.3f} / {int(size) / t / 1e6:.3f} GB/s bus)"
    print(f"| {key}{extra} | {e:.3f} ms | {t:.3f} ms | {t / e:.2f} |")
