"""One rank of a test_distributed.py job: `python distributed_worker.py SCENARIO OUT_DIR`.

RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT come from the environment. Each scenario records
what it observed in a dict that lands in OUT_DIR/rank<r>.pkl (NumPy arrays, numbers, strings);
the test computes the expected values itself and compares. Net, batch and sgd_step are shared
with the test, which replays the training in one process.
"""

import datetime
import os
import pickle
import signal
import sys
import threading
import time

import numpy as np

import ember
import ember.distributed as dist
import ember.nn as nn
import ember.nn.functional as F
from ember.nn.parallel import DistributedDataParallel as DDP

LR = 0.1
STEPS = 3


class Net(nn.Module):
    """A Python module: two linear layers and a buffer added to the output."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        self.register_buffer("shift", ember.randn(2))

    def forward(self, x, scale=1.0):
        return self.fc2(ember.tanh(self.fc1(x))) * scale + self.shift


def batch(step: int, rank: int):
    """Rank `rank`'s batch at `step` (different on every rank)."""
    g = np.random.default_rng(1000 + 10 * step + rank)
    x = g.standard_normal((8, 4)).astype(np.float32)
    y = g.standard_normal((8, 2)).astype(np.float32)
    return ember.tensor(x), ember.tensor(y)


def sgd_step(model) -> None:
    """p -= LR * p.grad for every parameter."""
    with ember.no_grad():
        for p in model.parameters():
            p.sub_(p.grad * LR)


def numpy_params(model) -> dict:
    return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}


def numpy_grads(model) -> dict:
    return {n: p.grad.numpy().copy() for n, p in model.named_parameters()}


def value(rank: int):
    """Rank r's [2, 3] input of the collectives: 1..6 plus 10 r."""
    return ember.arange(1, 7, dtype=ember.float32).reshape(2, 3) + 10 * rank


def collectives(rank: int, world: int) -> dict:
    out = {}
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    out["initialized"] = dist.is_initialized()
    out["rank"], out["world"] = dist.get_rank(), dist.get_world_size()
    out["backend"] = dist.get_backend()
    out["group_world"] = (dist.group.WORLD.rank(), dist.group.WORLD.size())

    for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX"):
        t = value(rank)
        assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
        out["all_reduce_" + op] = t.numpy()
    t = ember.full((4,), rank + 1, dtype=ember.int64)
    dist.all_reduce(t, group=dist.group.WORLD)
    out["all_reduce_int64"] = t.numpy()

    t = value(rank)
    dist.broadcast(t, src=world - 1)
    out["broadcast"] = t.numpy()

    gathered = [ember.zeros(2, 3) for _ in range(world)]
    dist.all_gather(gathered, value(rank))
    out["all_gather"] = np.stack([g.numpy() for g in gathered])
    into = ember.zeros(world * 2, 3)
    dist.all_gather_into_tensor(into, value(rank))
    out["all_gather_into_tensor"] = into.numpy()

    scattered = ember.zeros(2)
    dist.reduce_scatter_tensor(scattered, ember.arange(2 * world, dtype=ember.float32) + 100 * rank)
    out["reduce_scatter_tensor"] = scattered.numpy()
    scattered = ember.zeros(2)
    dist.reduce_scatter(scattered, [ember.full((2,), 10.0 * i + rank) for i in range(world)],
                        op=dist.ReduceOp.MAX)
    out["reduce_scatter_max"] = scattered.numpy()

    exchanged = ember.zeros(2 * world)
    dist.all_to_all_single(exchanged, ember.arange(2 * world, dtype=ember.float32) + 100 * rank)
    out["all_to_all_single"] = exchanged.numpy()
    outputs = [ember.zeros(3) for _ in range(world)]
    dist.all_to_all(outputs, [ember.full((3,), 10.0 * rank + j) for j in range(world)])
    out["all_to_all"] = np.stack([o.numpy() for o in outputs])

    # Asynchronous work: several in flight, waited for in reverse order.
    works, tensors = [], []
    for k in range(3):
        tensors.append(ember.full((5,), float(rank + k)))
        works.append(dist.all_reduce(tensors[-1], async_op=True))
    out["work_type"] = type(works[0]).__name__
    out["work_wait"] = [w.wait() for w in reversed(works)]
    out["work_completed"] = [w.is_completed() for w in works]
    out["async_all_reduce"] = np.stack([t.numpy() for t in tensors])
    gathered = [ember.zeros(2, 3) for _ in range(world)]
    work = dist.all_gather(gathered, value(rank), async_op=True)
    deadline = time.monotonic() + 20
    while not work.is_completed() and time.monotonic() < deadline:
        time.sleep(0.001)
    out["async_all_gather"] = np.stack([g.numpy() for g in gathered])  # read after is_completed
    work.wait()
    out["async_barrier"] = dist.barrier(async_op=True).wait()

    # Point to point: a ring of isend + recv, then blocking and non-blocking pairs with tags.
    received = ember.zeros(2, 3)
    send_work = dist.isend(value(rank), dst=(rank + 1) % world)
    out["ring_src"] = dist.recv(received, src=(rank - 1) % world)
    send_work.wait()
    out["ring"] = received.numpy()
    if rank == 0:
        dist.send(ember.full((3,), 7.0), dst=1, tag=5)
        dist.isend(ember.full((3,), 8.0), dst=1, tag=6).wait()
    elif rank == 1:
        t7, t8 = ember.zeros(3), ember.zeros(3)
        w8 = dist.irecv(t8, src=0, tag=6)  # posted first, matched by its tag
        out["pair_src"] = dist.recv(t7, src=0, tag=5)
        w8.wait()
        out["pair"] = np.stack([t7.numpy(), t8.numpy()])

    # Argument errors are found before anything is sent and leave the group usable.
    try:
        dist.all_gather([ember.zeros(2, 3)] * (world + 1), value(rank))
    except ValueError as e:
        out["error_list_length"] = str(e)
    try:
        dist.all_reduce(value(rank).t())
    except ember.Error as e:
        out["error_contiguous"] = str(e)

    # A blocking call releases the GIL: a thread counts while rank 0 waits for a late rank 1.
    if rank == 1:
        time.sleep(1.0)
    ticks, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    start = time.monotonic()
    dist.barrier()
    end = time.monotonic()
    stop.set()
    thread.join()
    out["barrier_seconds"] = end - start
    out["ticks_inside_barrier"] = sum(start + 0.1 < t < end - 0.1 for t in ticks)

    dist.destroy_process_group()
    out["initialized_after_destroy"] = dist.is_initialized()
    out["world_after_destroy"] = dist.group.WORLD
    return out


def ddp(rank: int, world: int) -> dict:
    out = {}
    dist.init_process_group("gloo", timeout=30)
    ember.manual_seed(rank)  # a different start on every rank: DDP starts from rank 0's
    model = Net()
    out["params_before"] = numpy_params(model)
    model_ddp = DDP(model, bucket_cap_mb=1e-4)  # two buckets: one starts during backward
    out["module_is_model"] = model_ddp.module is model
    out["is_module"] = isinstance(model_ddp, nn.Module)
    out["num_buckets"] = model_ddp.num_buckets()
    out["state_dict_keys"] = sorted(model_ddp.state_dict().keys())
    out["params_start"] = numpy_params(model)
    out["shift_start"] = model.shift.numpy().copy()
    out["grads"], out["params"] = [], []
    for step in range(STEPS):
        with ember.no_grad():  # undone by the broadcast of rank 0's buffers in forward
            model.shift.add_(float(rank))
        x, y = batch(step, rank)
        # The middle step passes a keyword: forward runs through the Python path.
        pred = model_ddp(x, scale=0.5) if step == 1 else model_ddp(x)
        loss = F.mse_loss(pred, y)
        model.zero_grad()
        loss.backward()
        out["grads"].append(numpy_grads(model))
        sgd_step(model)
        out["params"].append(numpy_params(model))

    # no_sync: the first backward stays local, the second averages the sum of both.
    model.zero_grad()
    xa, ya = batch(10, rank)
    xb, yb = batch(11, rank)
    with model_ddp.no_sync():
        F.mse_loss(model_ddp(xa), ya).backward()
    out["grads_no_sync"] = numpy_grads(model)
    F.mse_loss(model_ddp(xb), yb).backward()
    out["grads_after_sync"] = numpy_grads(model)

    # A C++ layer: forward with one tensor runs natively throughout.
    ember.manual_seed(10 + rank)
    linear = nn.Linear(3, 1)
    linear_ddp = DDP(linear)  # alive until backward is done: its hooks average the gradients
    linear_ddp(ember.full((2, 3), rank + 1.0)).sum().backward()
    out["linear"] = {"weight": linear.weight.detach().numpy().copy(),
                     "weight_grad": linear.weight.grad.numpy().copy(),
                     "bias_grad": linear.bias.grad.numpy().copy()}
    dist.destroy_process_group()
    return out


def killed(rank: int, world: int) -> dict:
    out = {}
    dist.init_process_group("gloo", timeout=10)
    t = ember.ones(1 << 16)
    dist.all_reduce(t)  # every rank is connected
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        for _ in range(10000):
            dist.all_reduce(t)
        out["error_type"] = None
    except ember.DistributedError as e:
        out["error_type"] = type(e).__name__
        out["is_runtime_error"] = isinstance(e, RuntimeError)
        out["message"] = str(e)
    out["seconds"] = time.monotonic() - start
    start = time.monotonic()
    try:
        dist.barrier()
        out["later_error"] = None
    except ember.DistributedError as e:
        out["later_error"] = str(e)
    out["later_seconds"] = time.monotonic() - start
    dist.destroy_process_group()
    return out


def silent(rank: int, world: int) -> dict:
    out = {}
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
    dist.barrier()
    if rank == 1:  # alive but absent from the next collective, until rank 0 has given up
        time.sleep(6)
        return out
    start = time.monotonic()
    try:
        dist.all_reduce(ember.ones(4))
        out["error_type"] = None
    except ember.DistributedError as e:
        out["error_type"] = type(e).__name__
        out["message"] = str(e)
    out["seconds"] = time.monotonic() - start
    return out


SCENARIOS = {"collectives": collectives, "ddp": ddp, "killed": killed, "silent": silent}

if __name__ == "__main__":
    scenario, out_dir = sys.argv[1], sys.argv[2]
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    result = SCENARIOS[scenario](rank, world)
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(result, f)
