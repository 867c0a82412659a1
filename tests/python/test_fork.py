"""os.fork() and multiprocessing's fork start method after parallel ops: the child computes on
one thread instead of waiting forever for the parent's OpenMP pool (Note [Forked children run on
one thread] in backends/cpu/plugin.cpp)."""

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

import ember
from ember.nn import functional as F

# Each op is large enough to split over the threads (more than 32768 elements).
N = 2_000_000


def _parallel_ops():
    """Elementwise, a reduction, a product, a convolution (oneDNN) and a solve (LAPACK), with
    their exact values computed by hand: (name, got, expected)."""
    added = ember.ones(N) + 1
    product = ember.ones(600, 700) @ ember.ones(700, 500)
    conv = F.conv2d(ember.ones(8, 16, 32, 32), ember.ones(32, 16, 3, 3))
    return [
        ("add", float(added[N - 1]), 2.0),
        ("sum", float(added.sum()), 2.0 * N),
        ("matmul", float(product.sum()), 700.0 * 600 * 500),
        ("conv2d", float(conv.sum()), 144.0 * 8 * 32 * 30 * 30),
        ("softmax", float(F.softmax(ember.zeros(4096, 64), dim=-1).sum()), 4096.0),
        # LAPACK's solve (OpenBLAS on the same OpenMP pool: Note [LAPACK in the CPU backend]).
        ("linalg.solve", float(ember.linalg.solve(2 * ember.eye(400, dtype=ember.float64),
                                                  ember.ones(400, 8, dtype=ember.float64)).sum()),
         1600.0),
    ]


def _child_status():
    """What a child checks: 0 when every op has its value and the child runs on one thread."""
    for name, got, expected in _parallel_ops():
        if got != expected:
            print(f"{name}: {got} != {expected}", flush=True)
            return 2
    ember.set_num_threads(4)  # the child keeps its one thread
    if ember.get_num_threads() != 1:
        print(f"threads: {ember.get_num_threads()}", flush=True)
        return 3
    return 0 if all(got == expected for _, got, expected in _parallel_ops()) else 4


@pytest.fixture
def pool_in_use():
    """Several OpenMP threads (at least two, at most the machine's where it has several), used by
    every kind of op before the test forks; yields their number."""
    previous = ember.get_num_threads()
    threads = max(2, previous)
    ember.set_num_threads(threads)
    for name, got, expected in _parallel_ops():
        assert got == expected, name
    yield threads
    ember.set_num_threads(previous)


def _wait(pid, seconds=60.0):
    """The child's exit status; kills it and fails if it runs past `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in a parallel op")
        time.sleep(0.005)


def test_os_fork_after_parallel_ops(pool_in_use):
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _child_status()
        finally:
            os._exit(code)
    assert _wait(pid) == 0
    # The parent keeps its threads.
    assert ember.get_num_threads() == pool_in_use


def _mp_worker(queue):
    queue.put([got for _, got, _ in _parallel_ops()] + [ember.get_num_threads()])


def test_multiprocessing_fork_after_parallel_ops(pool_in_use):
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=_mp_worker, args=(queue,))
    p.start()
    p.join(60)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail("the multiprocessing child hung in a parallel op")
    assert p.exitcode == 0
    got = queue.get(timeout=10)
    np.testing.assert_array_equal(got[:-1], [e for _, _, e in _parallel_ops()])
    assert got[-1] == 1


def test_multiprocessing_pool_of_forked_workers(pool_in_use):
    with multiprocessing.get_context("fork").Pool(2) as pool:
        result = pool.map_async(_pool_task, range(4))
        values = result.get(timeout=60)
    assert values == [float(2 * N + k) for k in range(4)]


def _pool_task(k):
    return float((ember.ones(N) + 1).sum()) + k
