"""Leaks: tensors, graphs with Python callbacks and Python modules created and dropped many
times leave the process's memory and the tensor identity map where they were."""

import gc
import weakref

import pytest

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


# Reference cycles through C++ state: Python's collector sees what Ember's objects keep of
# Python (Note [Python objects in the garbage collector]), so these cycles are collected.

class _Tripled(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x * 3
        ctx.out = out  # the ctx keeps the output, whose grad_fn keeps the ctx
        return out

    @staticmethod
    def backward(ctx, g):
        return g * 3


class _SelfHooked(nn.Module):
    """A module whose forward hook and pre-hook are its own bound methods."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.seen = 0
        self.register_forward_hook(self._after)
        self.register_forward_pre_hook(self._before)

    def forward(self, x):
        return self.fc(x)

    def _before(self, module, args):
        self.seen += 1

    def _after(self, module, args, output):
        self.seen += 1


class _Child(nn.Module):
    def forward(self, x):
        return x


def _cycle_leaf_hook():
    x = ember.ones(3, requires_grad=True)
    x.register_hook(lambda g: g + x.detach())
    return x


def _cycle_post_accumulate_hook():
    x = ember.ones(3, requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: x)
    return x


def _cycle_non_leaf_hook():
    y = ember.ones(3, requires_grad=True) * 2
    y.register_hook(lambda g: g * y.detach())
    return y


def _cycle_function_ctx():
    return _Tripled.apply(ember.ones(3, requires_grad=True))


def _cycle_module_hooks():
    m = _SelfHooked()
    m(ember.ones(1, 2))
    return m


def _cycle_parameter_hook():
    m = nn.Linear(2, 2)
    m.weight.register_hook(lambda g: m and g)
    return m


def _cycle_child_refers_to_parent():
    parent = nn.Sequential(nn.Linear(2, 2))
    parent.child = _Child()
    parent.child.back = [parent]  # a plain attribute (a submodule would be refused: a cycle)
    return parent


def _cycle_hooked_tensor_in_module():
    m = nn.Linear(2, 2)
    t = ember.ones(2, requires_grad=True)
    t.register_hook(lambda g: m)
    m.saved = t
    return m


_CYCLES = [_cycle_leaf_hook, _cycle_post_accumulate_hook, _cycle_non_leaf_hook,
           _cycle_function_ctx, _cycle_module_hooks, _cycle_parameter_hook,
           _cycle_child_refers_to_parent, _cycle_hooked_tensor_in_module]


def _tracked(cls) -> int:
    return sum(1 for o in gc.get_objects() if isinstance(o, cls))


@pytest.mark.parametrize("make", _CYCLES, ids=lambda f: f.__name__[len("_cycle_"):])
def test_reference_cycles_through_cpp_state_are_collected(make):
    gc.collect()
    live, tensors, modules = ember._C._live_tensor_objects(), _tracked(ember.Tensor), _tracked(nn.Module)
    ref = weakref.ref(make())
    gc.collect()
    # Freed, not only found unreachable (a cycle the collector cannot break keeps its objects
    # after clearing their weak references).
    assert ref() is None, "the cycle was not collected"
    assert _tracked(ember.Tensor) == tensors and _tracked(nn.Module) == modules
    assert ember._C._live_tensor_objects() == live and gc.garbage == []


def test_objects_in_cycles_still_work_while_reachable():
    x = _cycle_leaf_hook()
    gc.collect()  # reachable: the collector must not clear the hook
    (x * 2).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]  # 2 + x
    m = _cycle_module_hooks()
    gc.collect()
    m(ember.ones(1, 2))
    assert m.seen == 4
    y = _cycle_function_ctx()
    gc.collect()
    y.sum().backward()


def test_removed_hooks_release_their_callables():
    x = ember.ones(2, requires_grad=True)

    class Hook:
        def __call__(self, g):
            return g

    hook = Hook()
    ref = weakref.ref(hook)
    handle = x.register_hook(hook)
    del hook
    assert ref() is not None
    handle.remove()
    assert ref() is None  # dropped at once, not when x dies


def test_cycles_through_cpp_state_do_not_leak_over_thousands_of_iterations():
    def churn(n):
        for i in range(n):
            for make in _CYCLES:
                obj = make()
                if i % 4 == 0 and isinstance(obj, ember.Tensor) and obj.requires_grad:
                    obj.sum().backward(retain_graph=True)

    churn(50)
    gc.collect()
    live = ember._C._live_tensor_objects()
    objects = len(gc.get_objects())
    before = rss_bytes()
    churn(1500)
    gc.collect()
    assert ember._C._live_tensor_objects() == live
    assert len(gc.get_objects()) <= objects + 100
    grown = rss_bytes() - before
    assert grown < 16 << 20, f"resident memory grew by {grown >> 20} MiB"


def test_twenty_thousand_training_steps_with_hooks_and_cycles_leave_memory_flat():
    """A training loop as users write it, with everything that has leaked before: module forward
    and pre-hooks, gradient hooks on parameters and activations, a custom Function, a scheduler,
    and a fresh reference cycle through C++ state every step."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    seen = []
    model[0].register_forward_hook(lambda m, args, out: out * 1.0)
    model[2].register_forward_pre_hook(lambda m, args: None)
    model[0].weight.register_hook(lambda g: g.clamp(-1, 1))
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    sched = ember.optim.lr_scheduler.StepLR(opt, step_size=1000, gamma=0.9)
    x, y = ember.randn(4, 8), ember.randn(4, 1)

    def step(i):
        h = model[0](x)
        h.register_hook(lambda g: g)  # a hook on an activation, dropped with its graph
        loss = ((model[2](model[1](Double.apply(h))) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        _CYCLES[i % len(_CYCLES)]()
        if i % 1000 == 0:
            seen.append(loss.item())

    for i in range(1000):  # warm the allocators and nanobind's pools
        step(i)
    gc.collect()
    live = ember._C._live_tensor_objects()
    objects = len(gc.get_objects())
    before = rss_bytes()
    for i in range(20_000):
        step(i)
    gc.collect()
    assert ember._C._live_tensor_objects() == live
    assert len(gc.get_objects()) <= objects + 100
    grown = rss_bytes() - before
    assert grown < 16 << 20, f"resident memory grew by {grown >> 20} MiB over 20,000 steps"
    assert all(v == v for v in seen) and seen[-1] < seen[0]  # it trained
