"""ONNX models on Ember beside onnxruntime and PyTorch, on the same machine in one run
(benchmarks/README.md, "ONNX models"): torchvision's ResNet-18 and ResNet-50 and a small
transformer-style MLP block, exported by PyTorch's ONNX exporter, at batch 1, timed as the median
of several rounds after warm-up, the runtimes taking turns round by round; Ember at optimization
levels none and all, onnxruntime at its default level (all) and with its optimizations disabled,
PyTorch eager in inference mode.

    PYTHONPATH=build/release/python python benchmarks/python/onnx_compare.py [--threads 1 2]

Needs torch, torchvision, onnx and onnxruntime importable beside ember.
"""

import argparse
import statistics
import tempfile
import time
import pathlib

import numpy as np
import onnxruntime as ort
import torch
import torchvision

import ember


def median_ms(fns, iterations, rounds):
    """The median per-call time of each function, the functions taking turns round by round, so
    that load from other processes falls on all of them alike."""
    for fn in fns.values():
        for _ in range(3):
            fn()
    times = {label: [] for label in fns}
    for _ in range(rounds):
        for label, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(iterations):
                fn()
            times[label].append((time.perf_counter() - t0) / iterations * 1e3)
    return {label: statistics.median(t) for label, t in times.items()}


class GeluMlp(torch.nn.Module):
    """A transformer's feed-forward block: LayerNorm, Linear, GELU (erf), Linear, residual."""

    def __init__(self, d=512):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up, self.down = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


def models():
    torch.manual_seed(0)
    return [
        ("resnet18", torchvision.models.resnet18().eval(), (1, 3, 224, 224), 20),
        ("resnet50", torchvision.models.resnet50().eval(), (1, 3, 224, 224), 5),
        ("gelu_mlp", GeluMlp().eval(), (1, 64, 512), 50),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp())
    print("| model | threads | ember none (ms) | ember all (ms) | onnxruntime all (ms) "
          "| onnxruntime disabled (ms) | pytorch eager (ms) | ember all / ort all |")
    print("|---|---|---|---|---|---|---|---|")
    for name, module, shape, iters in models():
        path = tmp / f"{name}.onnx"
        x = torch.randn(*shape)
        torch.onnx.export(module, (x,), path, dynamo=False, opset_version=17,
                          input_names=["x"], output_names=["y"])
        xn = x.numpy()
        with torch.inference_mode():
            ref = module(x).numpy()
        for threads in args.threads:
            torch.set_num_threads(threads)
            ember.set_num_threads(threads)
            fns = {}
            xe = ember.tensor(xn)
            for level in ("none", "all"):
                sess = ember.onnx.load(path, optimization_level=level)
                got = sess(xe).numpy()
                assert np.allclose(got, ref, rtol=1e-3, atol=1e-3), (name, level)
                fns[f"ember {level}"] = lambda sess=sess: sess(xe)
            for label, level in (("ort all", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                                 ("ort disabled", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
                so = ort.SessionOptions()
                so.graph_optimization_level = level
                so.intra_op_num_threads = threads
                so.inter_op_num_threads = 1
                s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
                fns[label] = lambda s=s: s.run(None, {"x": xn})

            def torch_call():
                with torch.inference_mode():
                    return module(x)

            fns["torch"] = torch_call
            row = median_ms(fns, iters, args.rounds)
            print(f"| {name} | {threads} | {row['ember none']:.2f} | {row['ember all']:.2f} | "
                  f"{row['ort all']:.2f} | {row['ort disabled']:.2f} | {row['torch']:.2f} | "
                  f"{row['ort all'] / row['ember all']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
