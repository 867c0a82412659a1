"""ember.onnx's graph optimizer: models exported by PyTorch, loaded at every optimization level,
give PyTorch's outputs (fixtures/make_onnx_models.py) on every host backend, with the patterns
PyTorch's exporter writes fused into single nodes."""

import pathlib

import numpy as np
import pytest

import ember

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
LEVELS = ["none", "basic", "extended", "all"]


@pytest.fixture(scope="module")
def expected():
    data = np.load(FIXTURES / "resblock.npz")
    return data["x"], data["y"]


@pytest.mark.parametrize("model", ["resblock.onnx", "resblock_bn.onnx"])
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_every_level_gives_pytorchs_outputs(model, level, device, expected):
    x, y = expected
    sess = ember.onnx.load(FIXTURES / model, device=device, optimization_level=level)
    (got,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(got.cpu().numpy(), y, rtol=1e-4, atol=1e-4)


def test_the_exporters_patterns_become_single_nodes():
    none = ember.onnx.load(FIXTURES / "resblock_bn.onnx", optimization_level="none")
    full = ember.onnx.load(FIXTURES / "resblock_bn.onnx")  # "all" is the default
    assert none.optimizations == {}
    assert none.node_count == 21
    report = full.optimizations
    assert report["fold_conv_batchnorm"] == 3
    assert report["fuse_gelu"] == 1
    assert report["fuse_linear"] == 2
    assert report["fuse_conv_activation"] == 3  # two Conv+Relu, one Conv+Add+Relu
    # the input and the flatten's input change layout; the three weights are made channels-last
    assert report["plan_layout"] == 5
    # layout, conv+relu, conv+relu, conv+add+relu, layout, flatten, linear+gelu, linear
    assert full.node_count == 8
    extended = ember.onnx.load(FIXTURES / "resblock_bn.onnx", optimization_level="extended")
    assert "fuse_conv_activation" not in extended.optimizations
    assert extended.node_count == 10


def test_disabled_optimizers_do_not_run(expected):
    x, y = expected
    sess = ember.onnx.load(FIXTURES / "resblock_bn.onnx", disabled_optimizers=["plan_layout"])
    assert "plan_layout" not in sess.optimizations
    assert sess.optimizations["fuse_conv_activation"] == 3
    assert sess.node_count == 6  # the three fused convolutions without layout nodes
    (got,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(got.numpy(), y, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="unknown pass 'nope' to disable"):
        ember.onnx.load(FIXTURES / "resblock_bn.onnx", disabled_optimizers=["nope"])


@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_runs_replay_a_memory_plan(device, expected):
    x, y = expected
    sess = ember.onnx.load(FIXTURES / "resblock_bn.onnx", device=device)
    for _ in range(3):
        (got,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got.cpu().numpy(), y, rtol=1e-4, atol=1e-4)
    plan = sess.memory_plan
    assert (plan["plans"], plan["planned_runs"], plan["unplanned_runs"]) == (1, 2, 1)
    assert 0 < plan["planned_bytes"] < plan["intermediate_bytes"]
    assert plan["peak_bytes"] == plan["weight_bytes"] + plan["planned_bytes"]
    off = ember.onnx.load(FIXTURES / "resblock_bn.onnx", device=device, enable_mem_pattern=False)
    (got,) = off.run(None, {"x": x})
    np.testing.assert_allclose(got.cpu().numpy(), y, rtol=1e-4, atol=1e-4)
    assert off.memory_plan["planned_runs"] == 0
    assert off.memory_plan["unplanned_reason"] == "[graph.session] memory planning is off"


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="unknown optimization level 'max'"):
        ember.onnx.load(FIXTURES / "resblock.onnx", optimization_level="max")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_a_bert_style_encoder_gives_pytorchs_outputs(level, device):
    data = np.load(FIXTURES / "encoder.npz")
    sess = ember.onnx.load(FIXTURES / "encoder.onnx", device=device, optimization_level=level)
    (got,) = sess.run(None, {"x": data["x"], "mask": data["mask"]})
    np.testing.assert_allclose(got.cpu().numpy(), data["y"], rtol=1e-4, atol=1e-4)


def test_attention_layer_norm_and_silu_become_single_nodes():
    sess = ember.onnx.load(FIXTURES / "encoder.onnx", optimization_level="extended")
    report = sess.optimizations
    assert report["fuse_attention"] == 1
    assert report["fuse_layer_norm"] == 2
    assert report["fuse_silu"] == 1
    assert report["fuse_linear"] == 6  # q, k, v, o, up, down
