"""Scripts that end while Ember is busy, run by test_exit_paths.py as `python exit_scenarios.py
<name>`: each must end with its expected status (SCENARIOS) promptly, without an abort.

Each scenario starts work that is still running (or alive) when the script ends, in the ways
training scripts end: falling off the end, or an exception escaping a loop.
"""

import sys
import threading
import time

import ember
from ember import nn
from ember.utils.data import DataLoader, Dataset


# Below the CPU backend's grain (32768 elements) an op runs on its calling thread: the scripts
# stay quick on a loaded machine, and each thread spends its time inside op calls.
SMALL = 20_000


class Heavy(Dataset):
    """Samples that take many op calls each, so workers are inside ops when the script ends."""

    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        x = ember.full((SMALL,), float(i))
        for _ in range(20):
            x = x * 1.0 + 0.0
        return x


class StuckAtZero(Dataset):
    """Sample 0 never comes (a dataset stuck on a dead file system); the others are quick."""

    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 0:
            time.sleep(3600)
        return ember.full((4,), float(i))


def _ops_forever(n=SMALL):
    x = ember.ones(n)
    while True:
        x = x * 1.0 + 0.0


def _backward_once():
    w = ember.full((64, 64), 0.01, requires_grad=True)
    y = w
    for _ in range(8):
        y = ember.tanh(y @ w)
    y.sum().backward()


def _backward_forever():
    while True:
        _backward_once()


def daemon_threads_in_ops():
    """Daemon threads inside op calls (the GIL released) when the interpreter finalizes, one of
    them in ops large enough for the OpenMP pool."""
    for n in (SMALL, SMALL, 100_000):
        threading.Thread(target=_ops_forever, args=(n,), daemon=True).start()
    time.sleep(0.05)


def thread_in_ops_joined_at_exit():
    """A non-daemon thread still running ops when the main thread ends: the interpreter waits
    for it, then exits."""

    def work():
        x = ember.ones(SMALL)
        for _ in range(1000):
            x = x * 1.0 + 0.0

    threading.Thread(target=work).start()


def dataloader_iterator_alive(mode="process"):
    """A DataLoader iterator (a global) whose workers are making batches at exit."""
    global it
    it = iter(DataLoader(Heavy(), batch_size=4, num_workers=4, worker_mode=mode))
    next(it)


def exception_escaping_a_dataloader_loop(mode="process"):
    """An exception escapes a loop over a DataLoader; the traceback keeps the iterator."""
    loader = DataLoader(Heavy(), batch_size=4, num_workers=4, worker_mode=mode)
    batches = iter(loader)
    for batch in batches:
        raise ValueError(f"bad batch of shape {tuple(batch.shape)}")


def dataloader_worker_stuck(mode="process"):
    """A worker stuck in the dataset: the timeout is raised, the iterator dropped as the except
    block ends (without waiting for the stuck worker), then the script ends."""
    try:
        next(iter(DataLoader(StuckAtZero(), batch_size=2, num_workers=2, timeout=0.2,
                             worker_mode=mode)))
    except RuntimeError as e:
        assert str(e) == "DataLoader timed out after 0.2 seconds", e


def backward_on_a_daemon_thread():
    """A daemon thread inside backward when the interpreter finalizes (its products' oneDNN
    primitives made first: Note [Op registries outlive exit] in core/dispatch/op.cpp)."""
    _backward_once()
    threading.Thread(target=_backward_forever, daemon=True).start()
    time.sleep(0.05)


def profiler_running():
    """A profiler recording (never stopped) at exit, while a thread the interpreter waits for
    still records ops."""
    global prof
    prof = ember.profiler.profile(record_shapes=True)
    prof.__enter__()

    def work():
        x = ember.ones(SMALL)
        for _ in range(500):
            with ember.profiler.record_function("step"):
                x = x * 1.0 + 0.0

    threading.Thread(target=work).start()
    with ember.profiler.record_function("main"):
        x = ember.ones(SMALL)
        for _ in range(20):
            x = x + 1


def hooks_alive():
    """Python hooks on tensors and modules, alive at exit, and run by backward on a thread the
    interpreter waits for (C++ calling into Python while the main thread is ending)."""
    global model, keep, graph
    model = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
    model.register_forward_hook(lambda m, args, out: out * 1.0)
    keep = [p.register_hook(lambda g: g * 1.0) for p in model.parameters()]
    graph = model(ember.ones(32, 64)).sum()  # a graph alive at exit, its hooks with it

    def train():
        x = ember.ones(32, 64)
        for _ in range(200):
            model(x).sum().backward()

    threading.Thread(target=train).start()


# name -> (what it runs, the exit status the script must end with). The scenarios with daemon
# threads inside op calls at finalization come last.
SCENARIOS = {
    "thread_in_ops_joined_at_exit": (thread_in_ops_joined_at_exit, 0),
    "dataloader_iterator_alive": (dataloader_iterator_alive, 0),
    "exception_escaping_a_dataloader_loop": (exception_escaping_a_dataloader_loop, 1),
    "dataloader_worker_stuck": (dataloader_worker_stuck, 0),
    # The same with worker threads.
    "dataloader_threads_alive": (lambda: dataloader_iterator_alive("thread"), 0),
    "exception_escaping_a_dataloader_thread_loop":
        (lambda: exception_escaping_a_dataloader_loop("thread"), 1),
    "dataloader_thread_stuck": (lambda: dataloader_worker_stuck("thread"), 0),
    "profiler_running": (profiler_running, 0),
    "hooks_alive": (hooks_alive, 0),
    "daemon_threads_in_ops": (daemon_threads_in_ops, 0),
    "backward_on_a_daemon_thread": (backward_on_a_daemon_thread, 0),
}

if __name__ == "__main__":
    SCENARIOS[sys.argv[1]][0]()
