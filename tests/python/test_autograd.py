"""Autograd from Python: backward and grad (higher order too), grad modes as context managers and
decorators, tensor hooks, custom Functions written in Python, gradcheck, checkpointing."""

import threading

import numpy as np
import pytest

import ember
from ember.autograd import Function
from helpers import assert_close


def test_backward_accumulates_into_leaves():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0]
    x.grad = None
    (x ** 3).backward(ember.tensor([1.0, 0.0, 2.0]))
    assert x.grad.tolist() == [3.0, 0.0, 54.0]
    with pytest.raises(ValueError, match="require grad"):
        ember.ones(2).sum().backward()


def test_backward_through_a_graph_twice_needs_retain_graph():
    x = ember.tensor(2.0, requires_grad=True)
    y = x * x * x
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.item() == 24.0
    z = x.exp()
    z.backward()
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()


def test_grad_and_higher_derivatives():
    x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = ember.autograd.grad(y, x, create_graph=True)
    assert_close(g, 3 * x.detach().numpy() ** 2)
    (h,) = ember.autograd.grad(g.sum(), x)
    assert_close(h, 6 * x.detach().numpy())
    assert x.grad is None  # grad() leaves .grad alone
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    with pytest.raises(ValueError):
        ember.autograd.grad((a * 2).sum(), [a, b])
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], allow_unused=True)
    assert ga.tolist() == [2.0, 2.0] and gb is None
    ga, gb = ember.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
    assert gb.tolist() == [0.0, 0.0]
    out = a * b
    ga, = ember.autograd.grad(out, a, grad_outputs=ember.tensor([1.0, 3.0]))
    assert ga.tolist() == [1.0, 3.0]


def test_backward_with_inputs_accumulates_only_there():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    (a * b * 3).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 3.0] and b.grad is None
    ember.autograd.backward([(a * b).sum()], inputs=[b])
    assert b.grad.tolist() == [1.0, 1.0]


def test_grad_modes_as_context_managers_and_decorators():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        y = x * 2
        with ember.enable_grad():
            z = x * 2
    assert ember.is_grad_enabled()
    assert not y.requires_grad and z.requires_grad

    @ember.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad and ember.is_grad_enabled()

    @ember.no_grad()
    def gen(t):
        for _ in range(2):
            yield t * 2

    assert [v.requires_grad for v in gen(x)] == [False, False]
    ember.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled()
    with ember.inference_mode(False):
        assert (x * 2).requires_grad


def test_inference_tensors_follow_pytorchs_rules():
    w = ember.ones(3, requires_grad=True)
    with ember.inference_mode():
        made = ember.full((3,), 2.0)
        assert made.is_inference() and made[1:].is_inference()
        made.add_(1.0)
        assert made._version == 0
    assert not w.is_inference() and not (made + 1).is_inference()
    with pytest.raises(RuntimeError, match="inference tensor cannot be modified in place"):
        made.mul_(2.0)
    assert made.tolist() == [3.0, 3.0, 3.0]
    with pytest.raises(RuntimeError, match="inference tensor cannot be used in an operation"):
        made * w
    with ember.no_grad():
        assert (made * w).tolist() == [3.0, 3.0, 3.0]
    c = made.clone()
    assert not c.is_inference()
    (c * w).sum().backward()
    assert w.grad.tolist() == [3.0, 3.0, 3.0]


def test_grad_mode_is_per_thread():
    seen = []
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.append(ember.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_tensor_hooks_replace_gradients_and_can_be_removed():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    h = x.register_hook(lambda g: calls.append(g.tolist()) or g * 10)
    (x * 3).sum().backward()
    assert calls == [[3.0, 3.0]] and x.grad.tolist() == [30.0, 30.0]
    h.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and len(calls) == 1
    y = x * 2
    y.register_hook(lambda g: g + 1)
    y.sum().backward()
    assert x.grad.tolist() == [7.0, 7.0]
    seen = []
    x.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (x * 1).sum().backward()
    assert seen == [[8.0, 8.0]]
    with pytest.raises(ValueError, match="doesn't require"):
        ember.ones(1).register_hook(lambda g: g)


def test_retain_grad_keeps_a_non_leaf_gradient():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 4.0] and x.grad.tolist() == [8.0, 8.0]


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 2 * x * x


def test_custom_function_forward_and_backward():
    x = ember.tensor([1.0, -2.0], requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]


def test_gradcheck_from_python_accepts_right_and_rejects_wrong_backwards():
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(Cube.apply, (x,))
    assert not ember.autograd.gradcheck(WrongCube.apply, (x,), raise_exception=False)
    with pytest.raises(RuntimeError, match="gradcheck failed"):
        ember.autograd.gradcheck(WrongCube.apply, (x,))
    assert ember.autograd.gradgradcheck(Cube.apply, (x,))
    y = ember.randn(3, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: (a.sum() * b, b.exp()), (x, y))


class ScaleShift(Function):
    """Several inputs (one not a tensor), two outputs, one of them integer."""

    @staticmethod
    def forward(ctx, x, scale, shift):
        ctx.scale = scale
        ctx.save_for_backward(shift)
        idx = x.argmax()
        ctx.mark_non_differentiable(idx)
        return x * scale + shift, idx

    @staticmethod
    def backward(ctx, g, g_idx):
        (shift,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False, True)
        return g * ctx.scale, None, g.sum(0) if shift.dim() == 0 else g


def test_custom_function_with_several_inputs_and_outputs():
    x = ember.tensor([1.0, 5.0, 2.0], requires_grad=True)
    shift = ember.tensor(0.5, requires_grad=True)
    y, idx = ScaleShift.apply(x, 3.0, shift)
    assert idx.item() == 1 and not idx.requires_grad and y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0] and shift.grad.item() == 3.0


def test_saved_tensors_modified_in_place_are_detected():
    x = ember.ones(3, requires_grad=True)
    a = x * 1
    y = Cube.apply(a)
    a.add_(1)
    with pytest.raises(ValueError, match="modified"):
        y.sum().backward()


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_returning_an_input_gives_a_new_view_not_a_changed_leaf():
    x = ember.ones(2, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x and x.is_leaf and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


class Square(Function):
    """PyTorch 2's style: forward without ctx, setup_context separately."""

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def test_setup_context_style_and_double_backward_through_a_function():
    x = ember.tensor([3.0], dtype=ember.float64, requires_grad=True)
    y = Square.apply(x)
    (g,) = ember.autograd.grad(y.sum(), x, create_graph=True)
    assert g.item() == 6.0
    (h,) = ember.autograd.grad(g.sum(), x)
    assert h.item() == 2.0


class Broken(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise KeyError("from backward")


def test_python_errors_in_backward_reach_the_caller_unchanged():
    x = ember.ones(1, requires_grad=True)
    with pytest.raises(KeyError, match="from backward"):
        Broken.apply(x).sum().backward()
    with pytest.raises(ZeroDivisionError):
        y = x * 1
        y.register_hook(lambda g: 1 / 0)
        y.sum().backward()


def test_wrong_number_of_gradients_is_a_clear_error():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        TooMany.apply(ember.ones(1, requires_grad=True)).sum().backward()


def test_checkpoint_gives_the_same_gradients():
    from ember.utils.checkpoint import checkpoint

    lin = ember.nn.Linear(4, 4)
    x = ember.randn(3, 4, requires_grad=True)
    (lin(x).tanh() * 2).sum().backward()
    expected_x, expected_w = x.grad.clone(), lin.weight.grad.clone()
    x.grad = None
    lin.zero_grad()
    checkpoint(lambda a: lin(a).tanh() * 2, x).sum().backward()
    assert_close(x.grad, expected_x) and None
    assert_close(lin.weight.grad, expected_w)


def test_detect_anomaly_names_the_forward_op():
    x = ember.tensor([0.0], requires_grad=True)
    with ember.autograd.detect_anomaly():
        y = ember.sqrt(x) * 0  # d/dx sqrt at 0 is inf; 0 * inf is NaN
        with pytest.raises(RuntimeError, match="sqrt|nan|NaN"):
            y.backward()


def test_graph_matches_pytorch(torch, rng):
    a = rng.standard_normal((3, 4))
    e = ember.tensor(a, requires_grad=True)
    p = torch.tensor(a, requires_grad=True)
    for m, x in ((ember, e), (torch, p)):
        y = (m.tanh(x @ x.t()).sum(1) * x[:, 0]).softmax(0)
        (y * m.arange(3)).sum().backward()
    assert_close(e.grad, p.grad.numpy(), rtol=1e-6)


def test_a_view_sees_its_base_modified_in_place():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    y.mul_(2)
    v.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 0.0]
    assert v.grad_fn.name() == "AsStridedBackward"
    assert v._is_view() and v._base is y and not y._is_view() and y._base is None


def test_a_view_requires_grad_once_its_base_gains_history():
    w = ember.ones(2, requires_grad=True)
    y = ember.zeros(2)
    v = y.view(2)
    assert not v.requires_grad
    y.add_(w * 3)
    assert v.requires_grad and not v.is_leaf
    assert v.grad_fn is not None and v.grad_fn.name() == "AsStridedBackward"
    (v * v).sum().backward()
    assert w.grad.tolist() == [18.0, 18.0]


def test_writing_through_a_view_gives_the_base_history():
    # y[:1].mul_(w), y[1:] = h and y[mask-like index] = h: the base takes the history
    w = ember.tensor([2.0], requires_grad=True)
    h = ember.tensor([5.0, 7.0], requires_grad=True)
    y = ember.tensor([1.0, 2.0, 3.0, 4.0])
    y[:1].mul_(w)
    y[2:] = h
    y[ember.tensor([1])] = h[:1] * 10
    assert y.requires_grad and y.grad_fn.name() == "CopySlices"
    assert y.tolist() == [2.0, 50.0, 5.0, 7.0]
    (y * ember.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    assert w.grad.tolist() == [1.0]
    assert h.grad.tolist() == [100.0 + 100.0, 1000.0]


def test_views_of_views_and_other_views_follow_an_in_place_change():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=ember.float64, requires_grad=True)
    y = x * 1
    col = y[:, 1]
    top = y[:2]
    top_left = top[:, 0]
    top.mul_(10)
    assert col.tolist() == [20.0, 40.0, 6.0] and top_left.tolist() == [10.0, 30.0]
    (col.sum() + 2 * top_left.sum()).backward()
    assert x.grad.tolist() == [[20.0, 10.0], [20.0, 10.0], [0.0, 1.0]]


def test_in_place_through_views_has_right_first_and_second_derivatives():
    def f(x, w):
        y = x * 1
        y[:, :2].mul_(w)  # a view of a contiguous base
        z = (x * 1).t().contiguous().t()  # a base with a transposed layout
        z[1, :2].add_(w[0] * w[0])
        v = y.view(-1)
        y.mul_(x)
        return (v * v).sum() + (z * y).sum()

    x = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    w = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(f, (x, w))
    assert ember.autograd.gradgradcheck(f, (x, w))


def test_a_view_made_under_no_grad_is_not_rebased():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    with ember.no_grad():
        v = y[:2]
    with pytest.raises(RuntimeError, match="view made under no_grad is being modified in place"):
        v.mul_(x[:2])
    assert y.tolist() == [1.0, 2.0, 3.0]
    y.mul_(2)
    with pytest.raises(RuntimeError, match="view made under no_grad is used after its base"):
        v * 2
    z = x * 1
    with ember.no_grad():
        z[:2].mul_(2)
    assert z.tolist() == [2.0, 4.0, 3.0]
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_retain_grad_follows_an_in_place_change():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()
    assert y.grad.tolist() == [6.0, 12.0]


class HalfPrecisionBackward(Function):
    """A backward that returns float64 gradients (or broadcast ones) for float32 inputs."""

    @staticmethod
    def forward(ctx, x, mode):
        ctx.mode = mode
        return x * 2

    @staticmethod
    def backward(ctx, g):
        d = g.double() * 2
        if ctx.mode == "broadcast":
            d = d.expand(3, *d.shape)
        elif ctx.mode == "wrong":
            d = ember.cat([d, d])
        return d, None


def test_gradients_are_converted_to_the_dtype_of_their_input():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    HalfPrecisionBackward.apply(x, "dtype").sum().backward()
    assert x.grad.dtype == ember.float32 and x.grad.tolist() == [2.0, 2.0]
    w = ember.tensor([3.0, 4.0], requires_grad=True)
    h = w * 1
    (HalfPrecisionBackward.apply(h, "dtype") * h).sum().backward()
    assert w.grad.dtype == ember.float32 and w.grad.tolist() == [12.0, 16.0]
    x.grad = None
    (x * 3).backward(ember.ones(2, dtype=ember.float64))
    assert x.grad.dtype == ember.float32


def test_gradients_of_another_shape_are_summed_or_refused():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    HalfPrecisionBackward.apply(x, "broadcast").sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]
    with pytest.raises(ValueError, match=r"invalid gradient at index 0: got shape \[4\] but expected shape "
                                         r"compatible with \[2\]"):
        HalfPrecisionBackward.apply(x, "wrong").sum().backward()
    y = x * 1
    y.register_hook(lambda g: g.double())
    with pytest.raises(TypeError, match="hook changed the gradient's type"):
        y.sum().backward()
