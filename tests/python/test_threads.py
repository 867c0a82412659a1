"""The GIL is released inside kernels and backward: Python threads run while Ember computes, and
Python callbacks reached from C++ (hooks, Functions, Python modules in C++ containers) take it
back safely from any thread."""

import threading
import time

import ember
from ember import nn


def _loop_rate():
    """Iterations per second of the counting loop below, run alone."""
    count, end = 0, time.perf_counter() + 0.1
    while time.perf_counter() < end:
        count += 1
    return count / 0.1


def _python_progress_during(work):
    """How many Python loop iterations the main thread made while `work` ran in another thread,
    and how long `work` took."""
    done = threading.Event()
    span = []

    def run():
        t0 = time.perf_counter()
        work()
        span.append(time.perf_counter() - t0)
        done.set()

    thread = threading.Thread(target=run)
    count = 0
    thread.start()
    while not done.is_set():
        count += 1
        time.perf_counter()  # the same loop body as _loop_rate's
    thread.join()
    return count, span[0]


def test_python_threads_run_during_a_long_kernel():
    # One long call: had it kept the GIL, the main thread's loop would stand still until it
    # returned. Released, the loop runs at a good fraction of its speed alone (the kernel runs
    # on one thread here, leaving the other core to Python).
    previous = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        rate = _loop_rate()
        a = ember.randn(2048, 2048)
        count, seconds = _python_progress_during(lambda: ember.matmul(a, a))
    finally:
        ember.set_num_threads(previous)
    assert seconds > 0.05, "the work must take long enough to observe"
    assert count > 0.1 * rate * seconds, (count, rate, seconds)


def test_python_threads_run_during_backward():
    x = ember.randn(1024, 1024, requires_grad=True)
    w = ember.randn(1024, 1024, requires_grad=True)

    def work():
        y = x
        for _ in range(6):
            y = ember.tanh(y @ w)
        y.sum().backward()

    previous = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        rate = _loop_rate()
        count, seconds = _python_progress_during(work)
    finally:
        ember.set_num_threads(previous)
    assert count > 0.1 * rate * seconds, (count, rate, seconds)


def test_callbacks_from_cpp_threads_take_the_gil():
    class Scale(nn.Module):
        def forward(self, x):
            return x * 2

    model = nn.Sequential(nn.Linear(8, 8), Scale(), nn.ReLU())
    hook_calls = []
    errors = []

    def train(seed):
        try:
            g = ember.Generator().manual_seed(seed)
            for _ in range(20):
                x = ember.randn(4, 8, generator=g, requires_grad=True)
                y = model(x)
                y.register_hook(lambda grad: hook_calls.append(1) or grad)
                y.sum().backward()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=train, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(hook_calls) == 80


# A daemon thread still inside Ember when the main thread exits: an op with the GIL released,
# a backward calling Python hooks and a custom Function, a Python module run by a C++
# container. Before the exit gate (Note [Threads at interpreter exit]) such a process aborted
# ("terminate called without an active exception") when the thread took the GIL back.
_EXIT_SCRIPT = r"""
import sys, threading, time
import ember
from ember import nn

class Double(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2

class Scale(nn.Module):
    def forward(self, x):
        return x * 0.5

started = threading.Barrier(5)

def loop(kind):
    a = ember.randn(128, 128, requires_grad=True)
    model = nn.Sequential(nn.Linear(128, 128), Scale(), nn.ReLU())
    model.register_forward_hook(lambda m, i, o: None)
    started.wait()
    while True:
        if kind == 0:
            (a @ a).sum()
        elif kind == 1:
            y = a @ a
            y.register_hook(lambda g: g * 1)
            y.sum().backward()
        elif kind == 2:
            Double.apply(model(a)).sum().backward()
        else:
            with ember.no_grad():
                model(a)

for kind in range(4):
    threading.Thread(target=loop, args=(kind,), daemon=True).start()
started.wait()
time.sleep(float(sys.argv[1]))
print("main exits")
"""


def test_daemon_threads_inside_ember_do_not_abort_the_interpreter_exit():
    import subprocess
    import sys

    from helpers import worker_env

    for i, delay in enumerate((0.0, 0.05, 0.2, 0.01, 0.1, 0.3)):
        r = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(delay)], env=worker_env(),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "main exits" in r.stdout, (i, r.returncode, r.stderr[-2000:])
        assert "terminate called" not in r.stderr, r.stderr[-2000:]
