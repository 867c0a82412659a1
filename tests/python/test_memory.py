"""Leaks: tensors, graphs with Python callbacks and Python modules created and dropped many
times leave the process's memory and the tensor identity map where they were."""

import gc

import ember
from ember import nn


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_a_million_tensors_created_and_dropped_leave_memory_flat():
    for _ in range(20_000):  # warm the allocators and nanobind's instance pools
        ember.ones(1)
    gc.collect()
    live = ember._C._live_tensor_objects()
    before = rss_bytes()
    a = ember.ones(1)
    for _ in range(1_000_000):
        b = a + a
        del b
    gc.collect()
    grown = rss_bytes() - before
    assert ember._C._live_tensor_objects() == live + 1  # only `a`
    assert grown < 8 << 20, f"resident memory grew by {grown >> 20} MiB over a million tensors"


class Double(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        return Double.apply(self.lin(x))


def test_graphs_with_python_callbacks_and_python_modules_are_freed():
    def step():
        model = nn.Sequential(Block(), nn.ReLU(), Block())
        x = ember.randn(8, 16, requires_grad=True)
        y = model(x)
        y.register_hook(lambda g: g * 1)
        y.sum().backward()
        return model, x

    for _ in range(200):
        step()
    gc.collect()
    live = ember._C._live_tensor_objects()
    before = rss_bytes()
    for _ in range(3000):
        step()
    gc.collect()
    assert ember._C._live_tensor_objects() == live
    grown = rss_bytes() - before
    assert grown < 8 << 20, f"resident memory grew by {grown >> 20} MiB over 3000 graphs"
