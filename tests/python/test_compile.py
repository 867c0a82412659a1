"""ember.compile: replays equal to eager calls, captures per signature, data-dependent Python
control flow guarded (never frozen), what runs eagerly and why, results' structure, and no
reference cycle through the C++ object."""

import gc
import weakref

import numpy as np
import pytest

import ember
from ember import nn


def _mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).eval()


def test_a_module_replays_what_it_computes():
    m = _mlp()
    f = ember.compile(m)
    with ember.no_grad():
        for seed in range(4):
            x = ember.randn(5, 6, generator=ember.Generator().manual_seed(seed))
            np.testing.assert_allclose(f(x).numpy(), m(x).numpy(), rtol=1e-6, atol=1e-6)
    r = f.report()
    assert r["captures"] == 1 and r["replays"] == 3
    assert r["steps"] >= 3 and r["guards"] == 0


def test_another_shape_is_captured_again():
    m = _mlp()
    f = ember.compile(m, example_inputs=(ember.randn(2, 6),))
    with ember.no_grad():
        for n in (2, 7, 2, 7):
            x = ember.randn(n, 6)
            np.testing.assert_allclose(f(x).numpy(), m(x).numpy(), rtol=1e-6, atol=1e-6)
    r = f.report()
    assert r["captures"] == 2 and r["replays"] == 3


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent control flow
            return x * 2
        return -x


def test_data_dependent_control_flow_is_guarded_not_frozen():
    f = ember.compile(Branchy())
    with ember.no_grad():
        pos, neg = ember.full((3,), 1.0), ember.full((3,), -1.0)
        assert f(pos).tolist() == [2.0, 2.0, 2.0]
        assert f(pos).tolist() == [2.0, 2.0, 2.0]
        assert f(neg).tolist() == [1.0, 1.0, 1.0]  # the other branch, not the captured one
        assert f(neg).tolist() == [1.0, 1.0, 1.0]
    r = f.report()
    assert r["guards"] == 1
    assert r["captures"] == 2 and r["replays"] == 2


def test_dropout_in_training_mode_is_never_replayed():
    m = nn.Sequential(nn.Linear(8, 64), nn.Dropout(0.5))
    f = ember.compile(m)
    x = ember.ones(4, 8)
    with ember.no_grad():
        a, b = f(x), f(x)
    assert not np.array_equal(a.numpy(), b.numpy())
    r = f.report()
    assert r["replays"] == 0
    assert "random numbers" in r["eager_reason"]


def test_calls_autograd_must_record_run_eagerly_with_gradients():
    m = _mlp().train()
    f = ember.compile(m)
    x = ember.randn(4, 6)
    f(x).sum().backward()
    assert m[0].weight.grad is not None
    assert "autograd" in f.report()["eager_reason"]


def test_a_replaced_parameter_is_captured_again():
    m = _mlp()
    f = ember.compile(m)
    x = ember.randn(3, 6)
    with ember.no_grad():
        f(x)
        m[2].weight = nn.Parameter(ember.zeros(3, 16))
        m[2].bias = nn.Parameter(ember.ones(3))
        assert f(x).tolist() == [[1.0, 1.0, 1.0]] * 3
        m[2].bias.fill_(2.0)  # in place: replays read it
        assert f(x).tolist() == [[2.0, 2.0, 2.0]] * 3
    assert f.report()["replays"] >= 1


def test_results_keep_their_structure_and_decorators_work():
    @ember.compile
    def pair(a, b):
        return {"sum": a + b, "prod": a * b}

    @ember.compile(fullgraph=True)
    def triple(a):
        return a, a * 2, [a * 3][0]

    with ember.no_grad():
        for _ in range(2):
            out = pair(ember.ones(2), ember.full((2,), 3.0))
            assert out["sum"].tolist() == [4.0, 4.0] and out["prod"].tolist() == [3.0, 3.0]
            t = triple(ember.ones(2))
            assert isinstance(t, tuple) and [v.tolist() for v in t] == [[1, 1], [2, 2], [3, 3]]
    assert pair.report()["replays"] == 1


def test_an_index_out_of_range_at_a_replay_is_an_error():
    emb = nn.Embedding(10, 4).eval()
    f = ember.compile(emb)
    with ember.no_grad():
        f(ember.tensor([1, 2]))
        np.testing.assert_allclose(f(ember.tensor([3, 9])).numpy(),
                                   emb(ember.tensor([3, 9])).numpy())
        with pytest.raises(IndexError):
            f(ember.tensor([3, 10]))


def test_keyword_arguments_run_eagerly():
    f = ember.compile(lambda x, scale=1.0: x * scale)
    with ember.no_grad():
        assert f(ember.ones(2), scale=3.0).tolist() == [3.0, 3.0]
    assert "positional tensor" in f.report()["eager_reason"]


def test_a_compiled_module_is_collected():
    f = ember.compile(_mlp())
    with ember.no_grad():
        f(ember.randn(2, 6))
        f(ember.randn(2, 6))
    ref = weakref.ref(f)
    del f
    gc.collect()
    assert ref() is None


def test_a_cnn_replays_on_the_reference_backend():
    ember.manual_seed(1)
    m = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)).eval().to("reference")
    f = ember.compile(m)
    with ember.no_grad():
        for _ in range(3):
            x = ember.randn(2, 3, 8, 8).to("reference")
            np.testing.assert_allclose(f(x).cpu().numpy(), m(x).cpu().numpy(), rtol=1e-5,
                                       atol=1e-6)
    assert f.report()["replays"] == 2
