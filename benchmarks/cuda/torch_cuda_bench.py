#!/usr/bin/env python3
"""PyTorch on the GPU, the same workloads as benchmarks/cuda_bench.cpp, for the side-by-side
table of tools/gpu-check.sh. Prints one JSON object: workload name -> value (see UNITS).

Settings match Ember's: TF32 off unless the workload names it, cudnn.benchmark on for the
convolution and ResNet workloads, float32 ResNets at 3x224x224, batch 64, SGD with momentum.
Device work is timed with CUDA events; the median of the timed repetitions is reported.
"""
import json
import statistics
import sys
import time

import torch

UNITS = {
    "matmul": "TFLOP/s", "conv": "TFLOP/s", "bandwidth": "GB/s", "alloc": "ns",
    "batch_norm": "GB/s", "softmax": "GB/s", "avg_pool2d": "GB/s",
    "lstm": "sequences/s", "gru": "sequences/s", "train": "images/s", "first_ms": "ms",
    "steady_ms": "ms",
}


def timed_ms(fn, reps):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch sees no CUDA device"}))
        return 1
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out = {"torch_version": torch.__version__, "device": torch.cuda.get_device_name(0)}

    n = 8192
    for label, dtype, tf32 in (("float32", torch.float32, False), ("tf32", torch.float32, True),
                               ("bfloat16", torch.bfloat16, False)):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        a = torch.randn(n, n, device=dev, dtype=dtype)
        b = torch.randn(n, n, device=dev, dtype=dtype)
        ms = timed_ms(lambda: a @ b, 10)
        out[f"matmul {n} {label}"] = 2 * n ** 3 / (ms / 1e3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False

    torch.backends.cudnn.benchmark = True
    x = torch.randn(64, 64, 56, 56, device=dev)
    w = torch.randn(64, 64, 3, 3, device=dev)
    flop = 2.0 * 64 * 64 * 56 * 56 * 64 * 9
    ms = timed_ms(lambda: torch.nn.functional.conv2d(x, w, padding=1), 20)
    out["conv forward"] = flop / (ms / 1e3) / 1e12
    xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()

    def fwd_bwd():
        torch.nn.functional.conv2d(xg, wg, padding=1).sum().backward()
        xg.grad = None
        wg.grad = None
    ms = timed_ms(fwd_bwd, 20)
    out["conv forward+backward"] = 3 * flop / (ms / 1e3) / 1e12

    torch.backends.cudnn.benchmark = False
    act = 64 * 64 * 56 * 56 * 4
    xl = torch.randn(64, 64, 56, 56, device=dev, requires_grad=True)
    bn = torch.nn.BatchNorm2d(64).to(dev)
    dy = torch.randn(64, 64, 56, 56, device=dev)
    dp = torch.randn(64, 64, 28, 28, device=dev)

    def bn_step():
        bn(xl).backward(dy)
        xl.grad = None
        bn.zero_grad(set_to_none=True)

    def pool_step():
        torch.nn.functional.avg_pool2d(xl, 2).backward(dp)
        xl.grad = None
    for label, fn, tensors in (("batch_norm fwd+bwd", bn_step, 5.0),
                               ("softmax", lambda: torch.softmax(xl.detach(), 1), 2.0),
                               ("avg_pool2d fwd+bwd", pool_step, 2.5)):
        ms = timed_ms(fn, 20)
        out[label] = tensors * act / (ms / 1e3) / 1e9
    del xl, bn, dy, dp
    torch.backends.cudnn.benchmark = True

    m = 1 << 28
    a = torch.randn(m, device=dev)
    b = torch.randn(m, device=dev)
    dst = torch.empty_like(a)
    nbytes = a.numel() * 4
    for label, fn, tensors in (("device copy", lambda: dst.copy_(a), 2),
                               ("copy kernel", lambda: a.clone(), 2),
                               ("add", lambda: a + b, 3), ("mul scalar", lambda: a * 1.5, 2),
                               ("relu", lambda: torch.relu(a), 2)):
        ms = timed_ms(fn, 20)
        out[f"bandwidth {label}"] = tensors * nbytes / (ms / 1e3) / 1e9
    del a, b, dst

    for size in (1 << 10, 1 << 20, 64 << 20):
        torch.empty(size // 4, device=dev)
        reps = 20000
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.empty(size // 4, device=dev)
        out[f"alloc {size} B"] = (time.perf_counter() - t0) / reps * 1e9

    torch.backends.cudnn.benchmark = False
    xr = torch.randn(128, 64, 256, device=dev)
    for label, cls in (("lstm fwd+bwd", torch.nn.LSTM), ("gru fwd+bwd", torch.nn.GRU)):
        rnn = cls(256, 512, num_layers=2).to(dev)

        def rnn_step():
            rnn(xr)[0].sum().backward()
            rnn.zero_grad(set_to_none=True)
        ms = timed_ms(rnn_step, 20)
        out[label] = 64 / (ms / 1e3)
        del rnn
    del xr
    torch.backends.cudnn.benchmark = True

    import torchvision
    for depth in (18, 50):
        model = getattr(torchvision.models, f"resnet{depth}")(num_classes=1000).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        xb = torch.randn(64, 3, 224, 224, device=dev)
        yb = torch.randint(0, 1000, (64,), device=dev)

        def step():
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        ms = timed_ms(step, 10)
        out[f"train resnet{depth}"] = 64 / (ms / 1e3)
        del model, opt

    torch.backends.cudnn.benchmark = False
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    xb = torch.randn(32, 3, 224, 224, device=dev)
    yb = torch.randint(0, 1000, (32,), device=dev)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(11):
        start.record()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    out["first_ms resnet50"] = times[0]
    out["steady_ms resnet50"] = statistics.median(times[1:])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
