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


def _loop_model():
    """A Loop whose body holds a linear layer and ReLU on its carried value (weights read from the
    main graph), a product of two constants and a GELU written out with erf."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    f32 = TensorProto.FLOAT
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["v", "W"], ["vw"]),
            helper.make_node("Add", ["vw", "b"], ["z"]),
            helper.make_node("Relu", ["z"], ["h"]),
            helper.make_node("Mul", ["c1", "c2"], ["k"]),
            helper.make_node("Add", ["h", "k"], ["g0"]),
            # gelu(g0) = g0 * 0.5 * (1 + erf(g0 / sqrt(2))), its constants Constant nodes.
            helper.make_node("Constant", [], ["sqrt2"], value_float=float(np.sqrt(2.0))),
            helper.make_node("Constant", [], ["one"], value_float=1.0),
            helper.make_node("Constant", [], ["half"], value_float=0.5),
            helper.make_node("Div", ["g0", "sqrt2"], ["gs"]),
            helper.make_node("Erf", ["gs"], ["ge"]),
            helper.make_node("Add", ["ge", "one"], ["gp"]),
            helper.make_node("Mul", ["g0", "gp"], ["gm"]),
            helper.make_node("Mul", ["gm", "half"], ["v2"]),
            helper.make_node("Identity", ["cond"], ["cond_out"]),
            helper.make_node("Add", ["v2", "x"], ["scan"]),  # reads the main graph's input
        ],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", f32, ["N", 5])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v2", f32, ["N", 5]),
         helper.make_tensor_value_info("scan", f32, ["N", 5])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "x"], ["y", "ys"], body=body)],
        "loop",
        [helper.make_tensor_value_info("M", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", f32, ["N", 5])],
        [helper.make_tensor_value_info("y", f32, None),
         helper.make_tensor_value_info("ys", f32, None)],
        [numpy_helper.from_array((rng.standard_normal((5, 5)) * 0.4).astype(np.float32), "W"),
         numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "b"),
         numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c1"),
         numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "c2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _if_model():
    """An If whose then-branch is a linear layer with ReLU, its else-branch x + k1 * k2, every
    weight read from the main graph."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(6)
    f32 = TensorProto.FLOAT
    out = [helper.make_tensor_value_info("out", f32, None)]
    then_branch = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["out"])], "then", [], out)
    else_branch = helper.make_graph(
        [helper.make_node("Mul", ["k1", "k2"], ["k"]),
         helper.make_node("Add", ["x", "k"], ["out"])], "else", [], out)
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)],
        "if",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", f32, ["N", 4])],
        [helper.make_tensor_value_info("y", f32, None)],
        [numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), name)
         if name == "W" else numpy_helper.from_array(rng.standard_normal(4).astype(np.float32),
                                                     name)
         for name in ("W", "b", "k1", "k2")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("device", ["cpu", "reference"])
def test_loop_and_if_bodies_are_optimized_and_give_onnxruntimes_outputs(tmp_path, level, device):
    ort = pytest.importorskip("onnxruntime")
    import onnx

    rng = np.random.default_rng(7)
    for name, model, feeds_list in [
        ("loop", _loop_model(),
         [{"M": np.array(trips, np.int64), "x": rng.standard_normal((3, 5)).astype(np.float32)}
          for trips in (1, 4)]),  # (no trip: onnxruntime shapes the empty scan otherwise)
        ("if", _if_model(),
         [{"c": np.array(c), "x": rng.standard_normal((3, 4)).astype(np.float32)}
          for c in (False, True)]),
    ]:
        path = tmp_path / f"{name}.onnx"
        onnx.save(model, str(path))
        reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        sess = ember.onnx.load(path, device=device, optimization_level=level)
        for feeds in feeds_list:
            want = reference.run(None, feeds)
            got = sess.run(None, feeds)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                np.testing.assert_allclose(g.cpu().numpy(), w, rtol=1e-5, atol=1e-5)


def test_subgraphs_run_the_passes_too(tmp_path):
    import onnx

    path = tmp_path / "loop.onnx"
    onnx.save(_loop_model(), str(path))
    assert ember.onnx.load(path, optimization_level="none").optimizations == {}
    report = ember.onnx.load(path, optimization_level="extended").optimizations
    assert report["fuse_linear"] == 1  # MatMul + Add + Relu in the body, its weight outside
    assert report["fuse_gelu"] == 1
    assert report["fold_constants"] >= 4  # the three Constant nodes and c1 * c2
    path = tmp_path / "if.onnx"
    onnx.save(_if_model(), str(path))
    report = ember.onnx.load(path, optimization_level="all").optimizations
    assert report["fuse_linear"] == 1 and report["fold_constants"] >= 1
