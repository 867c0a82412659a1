"""ember.compile beside eager Ember, PyTorch eager and torch.compile, on the same machine in one
run (benchmarks/README.md, "Compiled functions"): the same model code runs on both libraries
(passed in as `lib`), inference at small batch, median of several rounds after warm-up. The first
call (the capture, or torch.compile's compilation) is timed apart.

    PYTHONPATH=build/release/python python benchmarks/python/compile_compare.py [--threads 1]

PyTorch is used where it is importable; --no-torch-compile skips torch.compile (its first call
compiles C++ for a minute or more).
"""

import argparse
import statistics
import time


def median_us(fn, x, iterations, rounds):
    for _ in range(3):
        fn(x)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn(x)
        times.append((time.perf_counter() - t0) / iterations * 1e6)
    return statistics.median(times)


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10)), (8, 64), 500


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(32, 10)), (1, 3, 32, 32), 300


def encoder(lib):
    return lib.nn.TransformerEncoderLayer(128, 4, 256, dropout=0.0, batch_first=True), \
        (1, 16, 128), 300


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-torch-compile", action="store_true")
    args = ap.parse_args()
    import ember
    libs = [("ember", ember)]
    try:
        import torch
        libs.append(("torch", torch))
        torch.set_num_threads(args.threads)
    except ImportError:
        pass
    ember.set_num_threads(args.threads)
    print("| model | ember eager (us) | ember.compile (us) | capture (ms) | torch eager (us) "
          "| torch.compile (us) | compile (s) | ember.compile / torch.compile |")
    print("|---|---|---|---|---|---|---|---|")
    for make in (mlp, cnn, encoder):
        row = {}
        for name, lib in libs:
            model, shape, iters = make(lib)
            model = model.eval()
            x = lib.randn(*shape)
            with lib.no_grad():
                row[f"{name} eager"] = median_us(model, x, iters, args.rounds)
                if name == "torch" and args.no_torch_compile:
                    continue
                t0 = time.perf_counter()
                fast = lib.compile(model)
                fast(x)
                row[f"{name} first"] = time.perf_counter() - t0
                row[f"{name} compiled"] = median_us(fast, x, iters, args.rounds)
                if name == "ember":
                    assert fast.report()["replays"] > 0, fast.report()
        get = lambda k: row.get(k, float("nan"))  # noqa: E731
        print(f"| {make.__name__} | {get('ember eager'):.1f} | {get('ember compiled'):.1f} | "
              f"{get('ember first') * 1e3:.1f} | {get('torch eager'):.1f} | "
              f"{get('torch compiled'):.1f} | {get('torch first'):.1f} | "
              f"{get('torch compiled') / get('ember compiled'):.2f}x |", flush=True)


if __name__ == "__main__":
    main()
