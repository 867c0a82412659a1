#!/usr/bin/env python3
"""Merges cuda_bench's Google Benchmark JSON with torch_cuda_bench.py's JSON into one markdown
table: workload, Ember, PyTorch, and Ember's advantage (> 1: Ember faster or cheaper).

usage: gpu_table.py EMBER_JSON [TORCH_JSON]
"""
import json
import sys


def ember_rows(path):
    with open(path) as f:
        bench = json.load(f)
    rows = {}
    for b in bench.get("benchmarks", []):
        name, label = b["name"], b.get("label", "")
        if b.get("error_occurred"):
            rows[name] = ("error", b.get("error_message", ""), "")
            continue
        if name.startswith("BM_CudaMatmul"):
            rows[f"matmul 8192 {label}"] = (b["TFLOP/s"], "TFLOP/s", "higher")
        elif name.startswith("BM_CudaConv2d"):
            rows[f"conv {label}"] = (b["TFLOP/s"], "TFLOP/s", "higher")
        elif name.startswith("BM_CudaLayer"):
            rows[label] = (b["GB/s"], "GB/s", "higher")
        elif name.startswith("BM_CudaBandwidth"):
            rows[f"bandwidth {label}"] = (b["GB/s"], "GB/s", "higher")
        elif name.startswith("BM_CudaAllocFree"):
            size = name.split("/")[1]
            rows[f"alloc {size} B"] = (b["cpu_time"], "ns", "lower")
        elif name.startswith("BM_CudaRnn"):
            rows[label] = (b["seq/s"], "sequences/s", "higher")
        elif name.startswith("BM_CudaResNetTrain"):
            rows[f"train {label}"] = (b["images/s"], "images/s", "higher")
        elif name.startswith("BM_CudaFirstVsSteadyStep"):
            rows["first_ms resnet50"] = (b["first_ms"], "ms", "lower")
            rows["steady_ms resnet50"] = (b["steady_ms"], "ms", "lower")
            rows["cudaMalloc first / steady step"] = (
                f"{b['first_cudaMalloc']:.0f} / {b['steady_cudaMalloc']:.0f}", "calls", "")
    return rows


def torch_key(key):
    if key.startswith("matmul"):
        return key
    if key.startswith("conv"):
        return "conv " + key.split(" ", 1)[1]
    for impl in (" cudnn", " own"):  # both of Ember's layer implementations face PyTorch's
        if key.endswith(impl):
            return key[: -len(impl)]
    return key


def main():
    ember = ember_rows(sys.argv[1])
    torch = {}
    if len(sys.argv) > 2:
        try:
            with open(sys.argv[2]) as f:
                torch = json.load(f)
        except (OSError, ValueError) as e:
            torch = {"error": str(e)}
    head = f"PyTorch {torch.get('torch_version', '(not run)')}"
    print(f"| workload | Ember | {head} | unit | Ember advantage |")
    print("|---|---|---|---|---|")
    for key, (value, unit, better) in ember.items():
        if value == "error":
            print(f"| {key} | error: {unit} | | | |")
            continue
        theirs = torch.get(torch_key(key))
        shown = f"{value:.4g}" if isinstance(value, float) else str(value)
        if isinstance(theirs, (int, float)) and isinstance(value, float) and value > 0:
            adv = value / theirs if better == "higher" else theirs / value
            print(f"| {key} | {shown} | {theirs:.4g} | {unit} | {adv:.2f}x |")
        else:
            print(f"| {key} | {shown} | | {unit} | |")
    if "error" in torch:
        print(f"\nPyTorch side: {torch['error']}")


if __name__ == "__main__":
    main()
