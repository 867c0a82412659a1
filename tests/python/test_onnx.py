"""ember.onnx: whole models built with ONNX's helper API, run by Ember and checked against NumPy;
the session's calls (onnxruntime's InferenceSession.run, and calling it); external data; errors."""

import os

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")  # pinned by tools/setup.sh (Note [Python build dependencies])
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DEVICES = ["cpu", "reference"]


def _cnn(rng):
    """Conv(3x3, pad 1) - BatchNormalization - Relu - MaxPool(2) - Flatten - Gemm, batch N."""
    w = rng.standard_normal((4, 2, 3, 3)).astype(np.float32) * 0.5
    b = rng.standard_normal(4).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, 4).astype(np.float32)
    shift = rng.standard_normal(4).astype(np.float32)
    mean = rng.standard_normal(4).astype(np.float32) * 0.1
    var = rng.uniform(0.5, 2.0, 4).astype(np.float32)
    fc_w = rng.standard_normal((5, 4 * 3 * 3)).astype(np.float32) * 0.2
    fc_b = rng.standard_normal(5).astype(np.float32)
    params = dict(w=w, b=b, scale=scale, shift=shift, mean=mean, var=var, fc_w=fc_w, fc_b=fc_b)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["n"],
                         name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model, params


def _cnn_numpy(x, p):
    """The same network in float64 NumPy, written out loop by loop."""
    x = x.astype(np.float64)
    n, _, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((n, 4, h, w))
    for i in range(h):
        for j in range(w):
            window = xp[:, :, i:i + 3, j:j + 3]  # [n, 2, 3, 3]
            conv[:, :, i, j] = np.einsum("nchw,ochw->no", window, p["w"].astype(np.float64))
    conv += p["b"][None, :, None, None]
    c = lambda v: v.astype(np.float64)[None, :, None, None]  # noqa: E731
    bn = (conv - c(p["mean"])) / np.sqrt(c(p["var"]) + 1e-5) * c(p["scale"]) + c(p["shift"])
    r = np.maximum(bn, 0)
    pooled = r.reshape(n, 4, 3, 2, 3, 2).max(axis=(3, 5))
    return pooled.reshape(n, -1) @ p["fc_w"].astype(np.float64).T + p["fc_b"]


@pytest.mark.parametrize("device", DEVICES)
def test_a_small_cnn_matches_numpy(tmp_path, rng, device):
    model, params = _cnn(rng)
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    sess = ember.onnx.load(path, device=device)
    assert sess.input_names == ["x"] and sess.output_names == ["y"]
    for batch in (1, 3):  # the symbolic batch axis takes any size
        x = rng.standard_normal((batch, 2, 6, 6)).astype(np.float32)
        (y,) = sess.run(None, {"x": x})
        assert isinstance(y, ember.Tensor) and y.device.type == device
        assert tuple(y.shape) == (batch, 5)
        np.testing.assert_allclose(y.cpu().numpy(), _cnn_numpy(x, params), rtol=1e-4, atol=1e-4)


def test_the_session_is_called_like_onnxruntimes(tmp_path, rng):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "z"], ["s"]), helper.make_node("Mul", ["x", "z"], ["m"])],
        "two", [x, z],
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("m", TensorProto.FLOAT, [2])])
    path = str(tmp_path / "two.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    sess = ember.onnx.load(path)
    a, b = np.array([1, 2], np.float32), np.array([3, 4], np.float32)
    s, m = sess.run(None, {"x": a, "z": ember.tensor(b)})
    assert s.tolist() == [4, 6] and m.tolist() == [3, 8]
    (m_only,) = sess.run(["m"], {"x": a, "z": b})
    assert m_only.tolist() == [3, 8]
    s, m = sess(a, z=b)
    assert s.tolist() == [4, 6] and m.tolist() == [3, 8]
    with pytest.raises(KeyError, match=r"\[onnx\] unknown output 'q'"):
        sess.run(["q"], {"x": a, "z": b})
    with pytest.raises(ValueError, match=r"missing input 'z'"):
        sess.run(None, {"x": a})
    with pytest.raises(TypeError, match=r"input 'x' has the wrong dtype: got float64"):
        sess.run(None, {"x": a.astype(np.float64), "z": b})
    with pytest.raises(ValueError, match=r"takes 2 inputs"):
        sess(a, b, a)
    with pytest.raises(ValueError, match=r"input 'x' is given twice"):
        sess(a, x=a, z=b)


def test_external_data_is_read_from_the_models_folder_only(tmp_path, rng):
    model, params = _cnn(rng)
    folder = tmp_path / "model"
    folder.mkdir()
    path = str(folder / "cnn.onnx")
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    assert os.path.getsize(folder / "weights.bin") > 0
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    (y,) = ember.onnx.load(path).run(None, {"x": x})
    np.testing.assert_allclose(y.numpy(), _cnn_numpy(x, params), rtol=1e-4, atol=1e-4)

    # The same model naming a file one folder up is refused before anything is read.
    escaped = onnx.load(path, load_external_data=False)
    for t in escaped.graph.initializer:
        for kv in t.external_data:
            if kv.key == "location":
                kv.value = "../weights.bin"
    os.rename(folder / "weights.bin", tmp_path / "weights.bin")
    onnx.save(escaped, path)
    with pytest.raises(ember.IoError, match=r"leaves the model's folder"):
        ember.onnx.load(path)


def test_unsupported_models_are_refused_at_load_time(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Unique", ["x"], ["y"], name="h")], "g", [x], [y])
    path = str(tmp_path / "h.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    with pytest.raises(NotImplementedError,
                       match=r"\[onnx\] node 'h' \(Unique at opset 13\): op Unique is not supported"):
        ember.onnx.load(path)
    with pytest.raises(FileNotFoundError):
        ember.onnx.load(tmp_path / "absent.onnx")
    (tmp_path / "junk.onnx").write_bytes(b"\x0a\xff\xff\xff\xff\x0f")
    with pytest.raises(ember.IoError, match=r"\[onnx\] not an ONNX model"):
        ember.onnx.load(tmp_path / "junk.onnx")
