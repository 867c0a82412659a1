"""PyTorch's torch.distributed (gloo) on the workloads of benchmarks/distributed_bench.cpp.

Run it as Ember's benchmark is run, one process per rank:
    ember run --nproc-per-node 2 python3 benchmarks/compare/torch_distributed_bench.py
(or torchrun --nproc-per-node 2 ...). Rank 0 prints one line per workload in the units of the
Ember benchmark: all-reduce time and bus bandwidth 2 (n - 1) / n * bytes / time, and DDP steps
with the global batch split over the ranks. Same sizes, same iteration counts, one thread each.
"""
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()


def report(name, seconds_per_iter, extra):
    if rank == 0:
        print(f"{name:<28} {seconds_per_iter * 1e3:10.3f} ms  {extra}", flush=True)


for size, iters in [(1 << 10, 2000), (16 << 10, 1000), (256 << 10, 300), (4 << 20, 50),
                    (64 << 20, 8)]:
    t = torch.ones(size // 4)
    dist.all_reduce(t)
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    per = (time.perf_counter() - start) / iters
    bus = 2 * (world - 1) / world * size / per / 1e9
    report(f"all_reduce/{size}", per, f"bus_GBps={bus:.3f}")


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def resnet18():
    import torchvision  # optional: only for this row
    return torchvision.models.resnet18(num_classes=10)


def ddp_step(name, make, global_batch, example, iters):
    try:
        model = nn.parallel.DistributedDataParallel(make())
    except ImportError as e:
        report(name, float("nan"), f"skipped: {e}")
        return
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(global_batch // world, *example)
    y = torch.randint(0, 10, (global_batch // world,))
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        step()
    per = (time.perf_counter() - start) / iters
    report(name, per, f"items_per_second={global_batch / per:.0f}")


ddp_step("ddp_mlp_step", mlp, 128, (784,), 100)
ddp_step("ddp_resnet18_step", resnet18, 32, (3, 32, 32), 10)
dist.barrier()
dist.destroy_process_group()
