"""ember.onnx on float16 and bfloat16 models: a small CNN (Conv, Relu, Flatten, Gemm) and a
LayerNorm + MatMul block saved with half-precision weights, inputs and outputs, run by Ember and
compared with onnxruntime on the float16 model and with a float32 run of the same (rounded)
weights and inputs, within a tolerance that fits the dtype."""

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")  # pinned by tools/setup.sh (Note [Python build dependencies])
ort = pytest.importorskip("onnxruntime")
ml_dtypes = pytest.importorskip("ml_dtypes")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DEVICES = ["cpu", "reference"]
# ONNX dtype, NumPy dtype, opset (bfloat16 Conv needs opset 22), tolerance.
DTYPES = {
    "float16": (TensorProto.FLOAT16, np.float16, 17, 1e-2),
    "bfloat16": (TensorProto.BFLOAT16, ml_dtypes.bfloat16, 22, 6e-2),
}


def _cnn(rng):
    params = dict(w=rng.standard_normal((4, 2, 3, 3)) * 0.5, b=rng.standard_normal(4),
                  fw=rng.standard_normal((5, 4 * 4 * 4)) * 0.2, fb=rng.standard_normal(5))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)]
    return nodes, params, (2, 2, 4, 4), (2, 5)


def _layer_norm_block(rng):
    params = dict(scale=1 + 0.1 * rng.standard_normal(16), shift=0.1 * rng.standard_normal(16),
                  w=rng.standard_normal((16, 8)) * 0.25, b=rng.standard_normal(8))
    nodes = [helper.make_node("LayerNormalization", ["x", "scale", "shift"], ["n"], epsilon=1e-5),
             helper.make_node("MatMul", ["n", "w"], ["m"]),
             helper.make_node("Add", ["m", "b"], ["y"])]
    return nodes, params, (2, 3, 16), (2, 3, 8)


def _model(nodes, params, shape, out_shape, onnx_dtype, np_dtype, opset):
    graph = helper.make_graph(
        nodes, "half", [helper.make_tensor_value_info("x", onnx_dtype, list(shape))],
        [helper.make_tensor_value_info("y", onnx_dtype, list(out_shape))],
        [numpy_helper.from_array(v.astype(np.float32).astype(np_dtype), k)
         for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("build", [_cnn, _layer_norm_block])
def test_half_precision_models_run_and_match(tmp_path, rng, device, dtype, build):
    onnx_dtype, np_dtype, opset, tol = DTYPES[dtype]
    nodes, params, shape, out_shape = build(rng)
    # The weights and input as the half model holds them, and float32 copies of those values.
    params = {k: v.astype(np.float32).astype(np_dtype).astype(np.float32)
              for k, v in params.items()}
    x = rng.standard_normal(shape).astype(np.float32).astype(np_dtype)
    model = _model(nodes, params, shape, out_shape, onnx_dtype, np_dtype, opset)
    path = str(tmp_path / "half.onnx")
    onnx.save(model, path)
    x_in = ember.tensor(x.astype(np.float32)).to(getattr(ember, dtype))
    (y,) = ember.onnx.load(path, device=device).run(None, {"x": x_in})
    assert y.dtype == getattr(ember, dtype)
    got = y.cpu().float().numpy()
    # A float32 run of the same values: the half model's error is its dtype's rounding.
    reference = _ort(_model(nodes, params, shape, out_shape, TensorProto.FLOAT, np.float32, 17),
                     {"x": x.astype(np.float32)})
    assert got.shape == reference.shape
    scale = np.abs(reference).max()
    np.testing.assert_allclose(got, reference, rtol=tol, atol=tol * scale)
    if dtype == "float16":  # onnxruntime runs float16 models on the CPU (not bfloat16 ones)
        np.testing.assert_allclose(got, _ort(model, {"x": x}).astype(np.float32), rtol=tol,
                                   atol=tol * scale)
