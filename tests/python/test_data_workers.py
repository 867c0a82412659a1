"""The DataLoader's worker processes (Note [Worker processes] in ember/utils/data/dataloader.py):
batches made in other processes and sent through shared memory, in the order of num_workers=0,
under each start method; failures in and of workers; shutdown leaving no process, fd or segment
behind. What worker processes and threads share is tested in test_data.py, ember.multiprocessing
in test_multiprocessing.py."""

import gc
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from helpers import worker_env

METHODS = [m for m in ("fork", "spawn", "forkserver") if m in mp.get_all_start_methods()]


class Samples(Dataset):
    """Sample i is (i, i * i, the pid of the process that made it); raises Boom at `fail_at`,
    dies (SIGKILL) at `die_at`, sleeps `delay` seconds at `slow_at`."""

    def __init__(self, n, fail_at=None, die_at=None, slow_at=None, delay=0.0):
        self.n, self.fail_at, self.die_at = n, fail_at, die_at
        self.slow_at, self.delay = slow_at, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise Boom(f"sample {i}")
        if i == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if i == self.slow_at:
            time.sleep(self.delay)
        return i, i * i, os.getpid()


class Boom(Exception):
    """The exception a test dataset raises."""


class Stream(IterableDataset):
    """0..n-1, split between workers by get_worker_info(); each item with the worker's id."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        return iter((i, info.id, info.num_workers, os.getpid())
                    for i in range(info.id, self.n, info.num_workers))


class InitRecorder(Dataset):
    """Sample i is (i, what worker_init_fn recorded in this process, the pid)."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        return i, _INIT[0], _INIT[1], os.getpid()


PARENT = os.getpid()
_INIT = [-1, 0]  # [the worker id worker_init_fn got, how many times it ran] in this process


def record_init(worker_id):
    _INIT[0] = worker_id
    _INIT[1] += 1


def _alive(pid):
    """True while `pid` is a process that is neither gone nor a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_gone(pids, seconds=10.0):
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, f"worker processes still alive: {pids}"
        time.sleep(0.02)


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def _shm_entries():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def _batches(loader):
    return [(b[0].tolist(), b[1].tolist()) for b in loader]


# ------------------------------------------------------------------------------------------------
# Batches, order, start methods


@pytest.mark.parametrize("method", METHODS)
def test_worker_processes_make_the_batches_of_num_workers_0_in_order(method):
    ds = Samples(50)
    ember.manual_seed(3)
    expected = [_batches(DataLoader(ds, batch_size=4, shuffle=True)) for _ in range(2)]
    ember.manual_seed(3)
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2,
                        multiprocessing_context=method)
    pids = set()
    for epoch in range(2):
        got = []
        for i, sq, pid in loader:
            got.append((i.tolist(), sq.tolist()))
            pids.update(pid.tolist())
        assert got == expected[epoch]
    assert PARENT not in pids and 2 <= len(pids) <= 4  # two workers per epoch


def test_a_context_object_and_a_generator_are_taken():
    ds = Samples(30)
    g = ember.Generator().manual_seed(7)
    expected = _batches(DataLoader(ds, batch_size=5, shuffle=True, generator=g))
    g.manual_seed(7)
    loader = DataLoader(ds, batch_size=5, shuffle=True, generator=g, num_workers=3,
                        multiprocessing_context=mp.get_context("fork"))
    assert _batches(loader) == expected


def test_native_datasets_and_tensor_samples_come_through_shared_memory():
    x = np.random.default_rng(0).standard_normal((40, 3, 5)).astype(np.float32)
    y = np.arange(40) % 7
    ds = TensorDataset(ember.tensor(x), ember.tensor(y))
    for method in ("fork", "spawn"):
        loader = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context=method)
        batches = list(loader)
        assert len(batches) == 5
        for b, (xb, yb) in enumerate(batches):
            np.testing.assert_array_equal(xb.numpy(), x[8 * b:8 * b + 8])
            np.testing.assert_array_equal(yb.numpy(), y[8 * b:8 * b + 8])
            assert xb.dtype == ember.float32 and yb.dtype == ember.int64
            assert xb.is_shared() and yb.is_shared()


def _mapped_file_of(address):
    """The name of the file mapped at `address` in this process (/proc/self/maps)."""
    with open("/proc/self/maps") as f:
        for line in f:
            span, _, _, _, _, *name = line.split(maxsplit=5)
            lo, hi = (int(v, 16) for v in span.split("-"))
            if lo <= address < hi:
                return name[0].strip() if name else ""
    return None


def test_a_batch_is_a_tensor_over_the_workers_shared_memory_not_a_copy():
    loader = DataLoader(Samples(8), batch_size=4, num_workers=1)
    i, _, _ = next(iter(loader))
    assert i.is_shared()
    # The tensor's elements lie in the memfd the worker filled (mapped here, never copied).
    assert _mapped_file_of(i.data_ptr()).startswith("/memfd:ember-tensor")
    assert not ember.arange(4).is_shared()


def _many_tensors(samples):
    return [ember.full((2,), float(i)) for i in range(300)] + [ember.tensor(samples)]


def test_a_batch_of_more_tensors_than_one_message_passes_fds_for():
    # The kernel passes at most 253 fds in one message; a batch of 301 tensors takes two.
    loader = DataLoader(Samples(6), batch_size=3, num_workers=2, collate_fn=_many_tensors)
    for b, batch in enumerate(loader):
        assert len(batch) == 301 and all(t.is_shared() for t in batch)
        assert [t[1].item() for t in batch[:300]] == [float(i) for i in range(300)]
        assert batch[300][:, 0].tolist() == [3 * b, 3 * b + 1, 3 * b + 2]


def test_iterable_datasets_are_sharded_through_get_worker_info():
    loader = DataLoader(Stream(20), batch_size=3, num_workers=3)
    batches = list(loader)
    items = [(i, w, n, pid) for b in batches for i, w, n, pid in zip(*(t.tolist() for t in b))]
    assert sorted(i for i, _, _, _ in items) == list(range(20))
    assert {n for _, _, n, _ in items} == {3}
    for i, w, _, _ in items:
        assert i % 3 == w  # worker w yields w, w+3, ...
    by_worker = {}
    for _, w, _, pid in items:
        by_worker.setdefault(w, set()).add(pid)
    assert all(len(p) == 1 for p in by_worker.values())  # one process per worker id
    assert len({next(iter(p)) for p in by_worker.values()} | {PARENT}) == 4
    # PyTorch's order: one batch of each active worker in turn.
    firsts = [b[1].tolist()[0] for b in batches]
    assert firsts == [0, 1, 2, 0, 1, 2, 0, 1]


def test_worker_init_fn_and_persistent_workers():
    loader = DataLoader(InitRecorder(), batch_size=4, num_workers=2, worker_init_fn=record_init)
    for _ in range(2):
        seen = [(i, w, runs, pid) for b in loader for i, w, runs, pid in
                zip(*(t.tolist() for t in b))]
        assert {runs for _, _, runs, _ in seen} == {1}
        assert {w for _, w, _, _ in seen} == {0, 1}
    assert _INIT == [-1, 0]  # nothing ran in this process
    loader = DataLoader(InitRecorder(), batch_size=4, num_workers=2, worker_init_fn=record_init,
                        persistent_workers=True)
    pids = []
    for epoch in range(3):
        seen = [(w, runs, pid) for b in loader for _, w, runs, pid in
                zip(*(t.tolist() for t in b))]
        assert {runs for _, runs, _ in seen} == {1}, epoch  # once per worker, not per epoch
        pids.append({pid for _, _, pid in seen})
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    # An epoch left early: the next one starts at its first batch.
    it = iter(loader)
    next(it)
    assert [b[0].tolist() for b in loader][0] == [0, 1, 2, 3]
    workers = list(pids[0])
    del loader, it
    gc.collect()
    _wait_gone(workers)


def test_workers_are_seeded_and_run_ops_on_one_thread():
    class Draws(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            info = get_worker_info()
            return ember.rand(()).item(), info.seed, ember.get_num_threads()

    ember.manual_seed(5)
    a = [b for b in DataLoader(Draws(), batch_size=1, num_workers=2,
                               multiprocessing_context="fork")]
    ember.manual_seed(5)
    b = [b for b in DataLoader(Draws(), batch_size=1, num_workers=2,
                               multiprocessing_context="fork")]
    assert [x[0].item() for x in a] == [x[0].item() for x in b]  # the base seed decides
    seeds = [x[1].item() for x in a]
    assert seeds[1] == seeds[0] + 1  # batches 0 and 1: workers 0 and 1, seeds base + id
    assert {x[2].item() for x in a} == {1}


def test_prefetch_factor_bounds_the_tasks_out():
    loader = DataLoader(Samples(100), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(loader)
    assert it._send_idx == 6  # num_workers * prefetch_factor
    next(it)
    assert it._send_idx - it._rcvd_idx == 6
    del it


def test_pin_memory_with_worker_processes():
    kw = dict(batch_size=5, num_workers=2)
    if ember._C.data._pin_memory_available():
        assert all(t.is_pinned() for b in DataLoader(Samples(20), pin_memory=True, **kw)
                   for t in b)
    else:
        with pytest.warns(UserWarning, match="pin_memory"):
            batches = _batches(DataLoader(Samples(20), pin_memory=True, **kw))
        assert batches == _batches(DataLoader(Samples(20), batch_size=5))


# ------------------------------------------------------------------------------------------------
# Failures


def test_an_exception_carries_the_workers_traceback():
    loader = DataLoader(Samples(40, fail_at=13), batch_size=4, num_workers=2)
    it = iter(loader)
    for b in range(3):
        assert next(it)[0].tolist() == list(range(4 * b, 4 * b + 4))
    with pytest.raises(Boom) as info:
        next(it)
    text = str(info.value)
    assert text.startswith("Caught Boom in DataLoader worker process 1.")
    assert "Original Traceback (most recent call last):" in text
    assert "in __getitem__" in text and "raise Boom(f\"sample {i}\")" in text
    assert text.rstrip().endswith("Boom: sample 13")
    assert next(it)[0].tolist() == [16, 17, 18, 19]  # the loader goes on, as PyTorch's does


def test_exceptions_the_consumer_cannot_rebuild_become_runtime_errors():
    class Local(Exception):
        pass

    class Raises(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            if i == 0:
                raise KeyError("no such sample")
            raise Local("a class defined in a function")

    it = iter(DataLoader(Raises(), batch_size=1, num_workers=1, multiprocessing_context="fork"))
    with pytest.raises(KeyError) as info:
        next(it)
    assert "Caught KeyError" in str(info.value) and "KeyError: 'no such sample'" in str(info.value)
    with pytest.raises(RuntimeError, match="(?s)Caught RuntimeError.*Local: a class defined"):
        next(it)
    with pytest.raises(Boom, match="init"):
        next(iter(DataLoader(Samples(8), batch_size=2, num_workers=2, worker_init_fn=_bad_init)))


def _bad_init(worker_id):
    raise Boom("init")


def test_a_killed_worker_raises_promptly_and_the_others_are_stopped():
    loader = DataLoader(Samples(40, die_at=9), batch_size=2, num_workers=3)
    it = iter(loader)
    pids = [p.pid for p in it._workers]
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly "
                                           r"\(killed by signal 9: SIGKILL\)"):
        for _ in it:
            pass
    assert time.monotonic() - t0 < 5.0
    _wait_gone(pids)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        next(it)  # the iterator stays failed


def test_a_worker_killed_from_outside_is_seen_without_a_timeout():
    it = iter(DataLoader(Samples(40, slow_at=6, delay=30), batch_size=2, num_workers=2))
    next(it)
    victim = it._workers[1].pid  # it holds batch 3 (sample 6), stuck for 30 s
    os.kill(victim, signal.SIGKILL)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"DataLoader worker \(pid {victim}\) exited"):
        for _ in range(20):
            next(it)
    assert time.monotonic() - t0 < 5.0


def test_a_timeout_stops_a_stuck_worker():
    it = iter(DataLoader(Samples(8, slow_at=0, delay=60), batch_size=1, num_workers=2,
                         timeout=0.3))
    pids = [p.pid for p in it._workers]
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(it)
    del it
    assert time.monotonic() - t0 < 5.0  # the stuck worker is terminated, not waited for
    _wait_gone(pids, 5.0)


def test_an_unpicklable_dataset_under_spawn_says_what_to_do():
    class Local(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return i

    with pytest.raises(Exception) as info:
        iter(DataLoader(Local(), batch_size=2, num_workers=1, multiprocessing_context="spawn"))
    assert "worker_mode='thread'" in "".join(getattr(info.value, "__notes__", []))
    # Threads take the same dataset.
    assert [b.tolist() for b in DataLoader(Local(), batch_size=2, num_workers=1,
                                           worker_mode="thread")] == [[0, 1], [2, 3]]


def test_invalid_worker_options_are_refused():
    ds = Samples(4)
    with pytest.raises(ValueError, match="multiprocessing_context can only be used"):
        DataLoader(ds, multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="multiprocessing_context can only be used"):
        DataLoader(ds, num_workers=1, worker_mode="thread", multiprocessing_context="fork")
    with pytest.raises(ValueError, match="valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="telepathy")
    with pytest.raises(TypeError, match="context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)
    with pytest.raises(ValueError, match="worker_mode"):
        DataLoader(ds, num_workers=1, worker_mode="fiber")


# ------------------------------------------------------------------------------------------------
# Shutdown: no process, file descriptor or shared-memory segment outlives the iterator


def test_break_and_del_leave_nothing_behind():
    gc.collect()
    fds, shm = _open_fds(), _shm_entries()
    loader = DataLoader(Samples(200), batch_size=2, num_workers=3)
    for _ in range(2):
        it = iter(loader)
        pids = [p.pid for p in it._workers]
        for b, _ in enumerate(it):
            if b == 5:
                break
        del it  # the loop's iterator is this one; dropping it stops the workers
        _wait_gone(pids)
    kept = list(DataLoader(Samples(400), batch_size=1, num_workers=2))  # 400 batches alive
    assert len(kept) == 400 and _open_fds() < fds + 16  # received batches hold no fd (1200)
    del kept
    gc.collect()
    # The queues' feeder threads close their pipes as they end, a moment after shutdown.
    deadline = time.monotonic() + 5.0
    while _open_fds() > fds + 2:
        assert time.monotonic() < deadline, f"{_open_fds()} fds open, {fds} before"
        time.sleep(0.02)
    # Segments are memfds: nothing named in /dev/shm (other programs may add their own there).
    assert not [e for e in _shm_entries() - shm if "ember" in e]
    with open("/proc/self/maps") as f:
        assert not [line for line in f if "/dev/shm/" in line]


SCRIPT = """
import os, signal, sys, time
import ember
from ember.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        time.sleep(0.05)
        return i

it = iter(DataLoader(Slow(), batch_size=1, num_workers=3))
next(it)
print(" ".join(str(p.pid) for p in it._workers), flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("how", ["exit", "kill"])
def test_workers_end_with_the_interpreter(how, tmp_path):
    # At interpreter exit the live iterator is shut down; a parent killed outright leaves
    # workers that notice and exit on their own.
    script = tmp_path / "loader_at_exit.py"
    script.write_text(textwrap.dedent(SCRIPT))
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, str(script), how], env=worker_env(), capture_output=True,
                       text=True, timeout=60)
    pids = [int(p) for p in r.stdout.split()]
    assert len(pids) == 3, r.stdout + r.stderr
    if how == "exit":
        assert r.returncode == 0 and time.monotonic() - t0 < 20, r.stderr
        assert "Traceback" not in r.stderr, r.stderr
        _wait_gone(pids, 1.0)
    else:
        assert r.returncode == -signal.SIGKILL
        _wait_gone(pids, 10.0)


# ------------------------------------------------------------------------------------------------
# Forked workers after parallel ops (Note [Forked children run on one thread])


class ParallelOps(Dataset):
    """Ops large enough to split over threads, with values known exactly."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        n = 2_000_000
        added = ember.ones(n) + i
        product = ember.ones(300, 400) @ ember.ones(400, 200)
        return added.sum().item(), product.sum().item()


def test_forked_workers_compute_correctly_after_parallel_ops_in_the_parent():
    previous = ember.get_num_threads()
    ember.set_num_threads(max(2, previous))
    try:
        assert (ember.ones(3_000_000) + 1).sum().item() == 6_000_000  # the pool is in use
        loader = DataLoader(ParallelOps(), batch_size=1, num_workers=2,
                            multiprocessing_context="fork", timeout=60)
        got = [(a.item(), b.item()) for a, b in loader]
    finally:
        ember.set_num_threads(previous)
    assert got == [(2_000_000.0 * (1 + i), 300.0 * 400 * 200) for i in range(4)]
