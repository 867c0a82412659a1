"""ember.multiprocessing (Note [Tensors between processes] in ember/multiprocessing/reductions.py,
Note [Tensors over shared memory] in api/python/src/interop.cpp): tensors sent between processes
through shared memory under each start method, Tensor.share_memory_() and is_shared()."""

import gc
import os
import time
from multiprocessing.reduction import ForkingPickler

import pytest

import ember
import ember.multiprocessing as mp

METHODS = [m for m in ("fork", "spawn", "forkserver") if m in mp.get_all_start_methods()]


def _writer(q, shared, done):
    shared[0] = 42.0
    shared[5:] += 1
    q.put((shared.is_shared(), ember.arange(6.0).reshape(2, 3).t(), ember.zeros(0, 3)))
    done.wait(30)  # a queue's fds are fetched from the sender: it stays until they are


def _param_child(q, p):
    q.put((type(p).__name__, p.requires_grad, p.is_shared(), p.sum().item()))


@pytest.mark.parametrize("method", METHODS)
def test_shared_tensors_are_seen_by_both_processes(method):
    ctx = mp.get_context(method)
    t = ember.zeros(8)
    assert not t.is_shared()
    before = id(t)
    assert t.share_memory_() is t and id(t) == before and t.is_shared()
    view = t[2:]
    assert view.is_shared()
    q, done = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_writer, args=(q, t, done))
    p.start()
    try:
        flag, transposed, empty = q.get(timeout=30)
    finally:
        done.set()
        p.join(30)
    assert p.exitcode == 0
    assert flag
    assert t.tolist() == [42.0, 0, 0, 0, 0, 1, 1, 1]  # the child's writes, seen here
    assert transposed.tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]] and transposed.is_shared()
    assert tuple(empty.shape) == (0, 3)


def test_parameters_and_dtypes_cross_and_history_does_not():
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    w = ember.nn.Parameter(ember.ones(2, 3)).share_memory_()
    assert isinstance(w, ember.nn.Parameter) and w.requires_grad and w.is_shared()
    p = ctx.Process(target=_param_child, args=(q, w))
    p.start()
    assert q.get(timeout=30) == ("Parameter", True, True, 6.0)
    p.join(30)
    for dtype in (ember.bfloat16, ember.float16, ember.int8, ember.bool, ember.int32):
        a = ember.arange(12).reshape(3, 4).to(dtype)
        b = ForkingPickler.loads(ForkingPickler.dumps(a[:, 1:3]))
        assert b.dtype == dtype and b.tolist() == a[:, 1:3].tolist() and b.is_shared()
    with pytest.raises(RuntimeError, match="non-leaf tensor which requires grad"):
        ForkingPickler.dumps(ember.ones(2, requires_grad=True) * 2)
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    with pytest.raises(ValueError, match="file_descriptor"):
        mp.set_sharing_strategy("file_system")
    assert mp.Process is not None and mp.Queue is not None and mp.cpu_count() >= 1


def _maps_memfd_at(address):
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= address < hi:
                return "memfd:ember-tensor" in line
    return False


def _fds_settle_to(most):
    """Waits for this process's open fds (the resource sharer's connections close a moment
    after a transfer) to number at most `most`."""
    deadline = time.monotonic() + 5.0
    while len(os.listdir("/proc/self/fd")) > most:
        assert time.monotonic() < deadline, f"{len(os.listdir('/proc/self/fd'))} fds open"
        time.sleep(0.02)


def test_mappings_hold_no_fd_and_go_with_their_last_tensor():
    ForkingPickler.loads(ForkingPickler.dumps(ember.ones(1)))  # starts the resource sharer
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    received = [ForkingPickler.loads(ForkingPickler.dumps(ember.full((3,), float(i))))
                for i in range(300)]
    assert [r[0].item() for r in received[:3]] == [0.0, 1.0, 2.0]
    assert all(r.is_shared() for r in received)
    _fds_settle_to(fds + 2)  # a message's copy keeps no fd
    shared = [ember.zeros(2).share_memory_() for _ in range(50)]
    assert len(os.listdir("/proc/self/fd")) >= fds + 50  # these keep theirs, to be sent on
    address = received[0].data_ptr()
    view = received[0][1:]
    del received, shared
    gc.collect()
    _fds_settle_to(fds + 2)
    assert _maps_memfd_at(address) and view.is_shared()  # a view keeps the mapping
    del view
    assert not _maps_memfd_at(address)


def _view_writer(view):
    view.fill_(7.0)


def test_a_view_of_a_shared_tensor_is_sent_as_a_view():
    ctx = mp.get_context("spawn")
    base = ember.zeros(3, 4).share_memory_()
    p = ctx.Process(target=_view_writer, args=(base[1:, 2:],))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert base.tolist() == [[0, 0, 0, 0], [0, 0, 7, 7], [0, 0, 7, 7]]


def test_a_layout_outside_the_segment_is_refused():
    fd = os.memfd_create("t")
    try:
        os.ftruncate(fd, 16)
        with pytest.raises(ValueError, match=r"\[_map_shared\] a float32 tensor of sizes \[5\]"):
            ember._C._map_shared(fd, 16, False, ember.float32, (5,), (1,), 0)
        t = ember._C._map_shared(fd, 16, False, ember.float32, (2,), (1,), 8)
        t.fill_(2.5)
        assert os.pread(fd, 16, 0)[8:] == ember.full((2,), 2.5).numpy().tobytes()
    finally:
        os.close(fd)


def _hogwild_step(model):
    with ember.no_grad():
        for p in model.parameters():
            p.add_(1.0)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_shared_modules_parameters_are_updated_by_its_children(method):
    ctx = mp.get_context(method)
    model = ember.nn.Linear(3, 2)
    assert model.share_memory() is model
    assert all(p.is_shared() for p in model.parameters())
    before = [p.detach().clone() for p in model.parameters()]
    children = [ctx.Process(target=_hogwild_step, args=(model,)) for _ in range(2)]
    for c in children:
        c.start()
    for c in children:
        c.join(60)
        assert c.exitcode == 0
    for p, b in zip(model.parameters(), before):
        assert ember.allclose(p, b + 2.0)
