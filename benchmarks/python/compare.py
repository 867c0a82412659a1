"""Ember beside PyTorch from Python, on the same machine in one run (benchmarks/README.md,
"From Python"): the per-op overhead of `a + b` on one-element tensors, backward() of a small
graph, and training steps of an MLP and a CNN written in Python. Each figure is the median of
several rounds; the same code runs on both libraries, which are passed in as `lib`.

    PYTHONPATH=build/release/python python benchmarks/python/compare.py [--threads 1 2] [--rounds 7]

PyTorch is used where it is importable.
"""

import argparse
import statistics
import time


def bench(fn, iterations, rounds):
    """Median seconds per iteration of fn over `rounds` rounds (after one warm-up round)."""
    fn()
    times = []
    for _ in range(rounds + 1):
        t0 = time.perf_counter()
        for _ in range(iterations):
            fn()
        times.append((time.perf_counter() - t0) / iterations)
    return statistics.median(times[1:])


def add_overhead(lib):
    a, b = lib.ones(1), lib.ones(1)
    return lambda: a + b


def small_backward(lib):
    x = lib.ones(16, requires_grad=True)

    def step():
        y = ((x * 2).sin() * x).sum()
        y.backward()

    return step


def training_step(lib, model, x, y):
    """One SGD-with-momentum step of model on (x, y) with cross entropy, as a closure."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        loss = lib.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def mlp_step(lib, batch=64):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 256)
            self.fc2 = nn.Linear(256, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            return self.fc3(lib.relu(self.fc2(lib.relu(self.fc1(x)))))

    return training_step(lib, MLP(), lib.randn(batch, 784), lib.randint(0, 10, (batch,)))


def cnn_step(lib, batch=64):
    nn = lib.nn

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2))
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
                                      nn.Linear(128, 10))

        def forward(self, x):
            return self.head(self.features(x))

    return training_step(lib, CNN(), lib.randn(batch, 1, 28, 28), lib.randint(0, 10, (batch,)))


WORKLOADS = [
    ("a + b, 1 element (per op)", add_overhead, 200_000, 1e6, "us"),
    ("backward of a 4-op graph", small_backward, 20_000, 1e6, "us"),
    ("MLP 784-256-128-10 step, batch 64", mlp_step, 200, 1e3, "ms"),
    ("CNN (2 conv+BN) step, batch 64", cnn_step, 20, 1e3, "ms"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    libs = {}
    try:
        import torch
        libs["torch"] = torch
    except ImportError:
        pass
    import ember
    libs = {"ember": ember, **libs}
    print(f"ember {ember.__version__}" + (f", torch {libs['torch'].__version__}" if "torch" in libs else ", no torch"))
    header = f"| workload | threads | {' | '.join(libs)} |" + (" ember / torch |" if "torch" in libs else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, make, iterations, scale, unit in WORKLOADS:
        for threads in args.threads:
            row = {}
            for lib_name, lib in libs.items():
                lib.set_num_threads(threads)
                lib.manual_seed(0)
                row[lib_name] = bench(make(lib), iterations, args.rounds) * scale
            cells = " | ".join(f"{row[n]:.3g} {unit}" for n in libs)
            ratio = f" {row['ember'] / row['torch']:.2f} |" if "torch" in row else ""
            print(f"| {name} | {threads} | {cells} |{ratio}", flush=True)


if __name__ == "__main__":
    main()
