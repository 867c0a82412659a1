"""ONNX models on Ember beside onnxruntime and PyTorch, on the same machine in one run
(benchmarks/README.md, "ONNX models"): torchvision's ResNet-18, ResNet-50, MobileNetV3-large,
EfficientNet-B0, ConvNeXt-T and ViT-B/16, Transformers' BERT-base and GPT-2 small (random
weights, sequence 128), and a small transformer-style MLP block, exported by PyTorch's ONNX
exporters with a dynamic batch, timed as the median of several rounds after warm-up, the runtimes
taking turns round by round; Ember at optimization levels none and all, onnxruntime at its
default level (all) and with its optimizations disabled, PyTorch eager in inference mode.

    PYTHONPATH=build/release/python python benchmarks/python/onnx_compare.py \
        [--threads 1 2] [--models resnet50 bert ...] [--batches 1 32]

--batches replaces each model's own batch sizes (1, and 32 for the vision models or 8 for the
language models). Needs torch, torchvision, transformers, onnx and
onnxruntime importable beside ember.
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


class Logits(torch.nn.Module):
    """A Transformers model's first output (logits or hidden states) as a plain tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, return_dict=False)[0]


def language_model(kind):
    import transformers

    if kind == "bert":
        config = transformers.BertConfig(attn_implementation="eager")
        return Logits(transformers.BertModel(config, add_pooling_layer=False))
    config = transformers.GPT2Config(attn_implementation="eager", use_cache=False)
    return Logits(transformers.GPT2LMHeadModel(config))


# name -> (make the module, input of batch b, batch sizes, dynamo exporter)
MODELS = {
    "resnet18": (torchvision.models.resnet18, lambda b: torch.randn(b, 3, 224, 224), (1,), False),
    "resnet50": (torchvision.models.resnet50, lambda b: torch.randn(b, 3, 224, 224), (1, 32), False),
    "mobilenet_v3_large": (torchvision.models.mobilenet_v3_large, lambda b: torch.randn(b, 3, 224, 224),
                           (1, 32), False),
    "efficientnet_b0": (torchvision.models.efficientnet_b0, lambda b: torch.randn(b, 3, 224, 224),
                        (1, 32), False),
    "convnext_tiny": (torchvision.models.convnext_tiny, lambda b: torch.randn(b, 3, 224, 224), (1, 32),
                      False),
    "vit_b_16": (torchvision.models.vit_b_16, lambda b: torch.randn(b, 3, 224, 224), (1, 32), False),
    "bert": (lambda: language_model("bert"), lambda b: torch.randint(0, 30000, (b, 128)), (1, 8), False),
    # Transformers 5 builds GPT-2's causal mask with aten::diff, which only the dynamo exporter writes.
    "gpt2": (lambda: language_model("gpt2"), lambda b: torch.randint(0, 50000, (b, 128)), (1, 8), True),
    "gelu_mlp": (GeluMlp, lambda b: torch.randn(b, 64, 512), (1,), False),
}


def export(module, x, path, dynamo):
    """The model as ONNX with a dynamic batch (opset 17; 18 through the dynamo exporter)."""
    torch.onnx.export(module, (x,), path, dynamo=dynamo, opset_version=18 if dynamo else 17,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}},
                      external_data=False)


def iterations(seconds_per_call):
    """Calls per round so that a round takes about a quarter of a second."""
    return max(1, int(0.25 / max(seconds_per_call, 1e-6)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--batches", type=int, nargs="+", default=None)
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp())
    print("| model | batch | threads | ember none (ms) | ember all (ms) | onnxruntime all (ms) "
          "| onnxruntime disabled (ms) | pytorch eager (ms) | ember all / ort all | ember all / pytorch |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        make, example, batches, dynamo = MODELS[name]
        torch.manual_seed(0)
        module = make().eval()
        path = tmp / f"{name}.onnx"
        export(module, example(2), path, dynamo)
        sessions = {level: ember.onnx.load(path, optimization_level=level) for level in ("none", "all")}
        for batch in args.batches or batches:
            x = example(batch)
            xn = x.numpy()
            with torch.inference_mode():
                t0 = time.perf_counter()
                ref = module(x).numpy()
                iters = iterations(time.perf_counter() - t0)
            xe = ember.tensor(xn)
            for threads in args.threads:
                torch.set_num_threads(threads)
                ember.set_num_threads(threads)
                fns = {}
                for level, sess in sessions.items():
                    got = sess(xe).numpy()
                    assert np.allclose(got, ref, rtol=1e-3, atol=1e-3), (name, level, np.abs(got - ref).max())
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
                print(f"| {name} | {batch} | {threads} | {row['ember none']:.2f} | {row['ember all']:.2f} | "
                      f"{row['ort all']:.2f} | {row['ort disabled']:.2f} | {row['torch']:.2f} | "
                      f"{row['ember all'] / row['ort all']:.2f} | {row['ember all'] / row['torch']:.2f} |",
                      flush=True)


if __name__ == "__main__":
    main()
