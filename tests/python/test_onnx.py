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


# Recurrent ops: what ONNX's node tests leave out (sequence lengths, clip, activations with alpha
# and beta, GRU's linear_before_reset, LSTM's input_forget), against a NumPy loop that walks each
# batch entry over its own steps.

_ACTS = {
    "Sigmoid": lambda x, a, b: 1 / (1 + np.exp(-x)),
    "Tanh": lambda x, a, b: np.tanh(x),
    "Relu": lambda x, a, b: np.maximum(x, 0),
    "LeakyRelu": lambda x, a, b: np.where(x >= 0, x, a * x),
    "HardSigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "ScaledTanh": lambda x, a, b: a * np.tanh(b * x),
    "Affine": lambda x, a, b: a * x + b,
}


def _recurrent_numpy(op, x, w, r, bias, lens, h0, c0, acts, clip, lbr, input_forget):
    """Y [T, D, B, H], Y_h and Y_c [D, B, H] in float64; acts[d] = [(name, alpha, beta), ...]."""
    x, w, r, bias = (v.astype(np.float64) for v in (x, w, r, bias))
    steps, batch, _ = x.shape
    dirs, hidden = r.shape[0], r.shape[2]
    y = np.zeros((steps, dirs, batch, hidden))
    y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for d in range(dirs):
        f, g, h_act = [(lambda v, a=a: _ACTS[a[0]](v, a[1], a[2])) for a in acts[d]] + [None] * (
            3 - len(acts[d]))
        wd, rd, wb, rb = w[d], r[d], bias[d, :w.shape[1]], bias[d, w.shape[1]:]
        for b in range(batch):
            h, c = h0[d, b].astype(np.float64), c0[d, b].astype(np.float64)
            order = range(lens[b]) if d == 0 else range(lens[b] - 1, -1, -1)
            for t in order:
                gx, gh = wd @ x[t, b] + wb, rd @ h + rb
                sl = lambda v, k: v[k * hidden:(k + 1) * hidden]  # noqa: E731
                if op == "RNN":
                    h = f(cl(gx + gh))
                elif op == "GRU":
                    z, rr = f(cl(sl(gx, 0) + sl(gh, 0))), f(cl(sl(gx, 1) + sl(gh, 1)))
                    if lbr:
                        n = g(cl(sl(gx, 2) + rr * sl(gh, 2)))
                    else:
                        n = g(cl(sl(gx, 2) + sl(rd, 2) @ (rr * h) + sl(rb, 2)))
                    h = (1 - z) * n + z * h
                else:
                    i = f(cl(sl(gx, 0) + sl(gh, 0)))
                    fg = 1 - i if input_forget else f(cl(sl(gx, 2) + sl(gh, 2)))
                    c = fg * c + i * g(cl(sl(gx, 3) + sl(gh, 3)))
                    h = f(cl(sl(gx, 1) + sl(gh, 1))) * h_act(c)
                y[t, d, b] = h
            y_h[d, b], y_c[d, b] = h, c
    return y, y_h, y_c


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_recurrent_ops_match_numpy_with_lengths_clip_and_activations(tmp_path, rng, device, op):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    steps, batch, inp, hidden, dirs = 4, 3, 2, 3, 2
    x = rng.standard_normal((steps, batch, inp)).astype(np.float32)
    w = rng.standard_normal((dirs, gates * hidden, inp)).astype(np.float32) * 0.7
    r = rng.standard_normal((dirs, gates * hidden, hidden)).astype(np.float32) * 0.7
    bias = rng.standard_normal((dirs, 2 * gates * hidden)).astype(np.float32) * 0.3
    lens = np.array([4, 2, 0], np.int32)
    h0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((dirs, batch, hidden)).astype(np.float32)
    names = {"LSTM": ["HardSigmoid", "ScaledTanh", "Tanh", "Sigmoid", "Tanh", "LeakyRelu"],
             "GRU": ["Sigmoid", "Affine", "HardSigmoid", "Tanh"],
             "RNN": ["LeakyRelu", "Affine"]}[op]
    # alpha and beta go, in order, to the activations that take them.
    takes = {"HardSigmoid": 2, "ScaledTanh": 2, "Affine": 2, "LeakyRelu": 1}
    alphas, betas, acts = [], [], []
    for k, name in enumerate(names):
        a, b = 0.3 + 0.1 * k, 0.4 + 0.05 * k
        if takes.get(name, 0) >= 1:
            alphas.append(a)
        if takes.get(name, 0) >= 2:
            betas.append(b)
        acts.append((name, a, b))
    per = len(names) // 2
    attrs = dict(hidden_size=hidden, direction="bidirectional", activations=names,
                 activation_alpha=alphas, activation_beta=betas, clip=1.5)
    if op == "GRU":
        attrs["linear_before_reset"] = 1
    if op == "LSTM":
        attrs["input_forget"] = 1
    inputs = ["x", "w", "r", "b", "lens", "h0"] + (["c0"] if op == "LSTM" else [])
    outputs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node(op, inputs, outputs, name="cell", **attrs)], "rnn",
        [helper.make_tensor_value_info("x", f32, list(x.shape))],
        [helper.make_tensor_value_info(o, f32, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in
         dict(w=w, r=r, b=bias, lens=lens, h0=h0, c0=c0).items() if k in inputs])
    path = str(tmp_path / "rnn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), path)
    got = ember.onnx.load(path, device=device).run(None, {"x": x})
    want = _recurrent_numpy(op, x, w, r, bias, lens, h0, c0, [acts[:per], acts[per:]],
                            1.5, op == "GRU", op == "LSTM")
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.cpu().numpy(), e, rtol=1e-5, atol=1e-5)


def test_an_unsupported_recurrent_activation_is_refused_at_load_time(tmp_path):
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="cell", hidden_size=2,
                          activations=["Sigmoid", "Gelu", "Tanh"])], "g",
        [helper.make_tensor_value_info(n, f32, None) for n in ("x", "w", "r")],
        [helper.make_tensor_value_info("y", f32, None)])
    path = str(tmp_path / "lstm.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), path)
    with pytest.raises(NotImplementedError, match=r"\[onnx\] node 'cell' \(LSTM at opset 22\): "
                       r"attribute activations names 'Gelu', which Ember does not implement"):
        ember.onnx.load(path)


# Resize: what ONNX's node tests leave out (integer images, which round and saturate; other
# ranks; opset 13's tf_half_pixel_for_nn), against ONNX's own reference evaluator or by hand.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", [
    ("uint8_linear", 19, np.uint8, (1, 1, 3, 4), dict(mode="linear"), [1, 1, 2.5, 1.5]),
    ("uint8_cubic", 19, np.uint8, (1, 2, 4, 3), dict(mode="cubic"), [1, 1, 1.75, 2.0]),
    ("int32_nearest", 19, np.int32, (2, 5), dict(mode="nearest", nearest_mode="ceil"),
     [1, 1.6]),
    ("rank3_linear", 19, np.float32, (2, 3, 7),
     dict(mode="linear", axes=[2], coordinate_transformation_mode="pytorch_half_pixel"), [0.45]),
    ("rank5_cubic_antialias", 19, np.float32, (1, 1, 6, 5, 4),
     dict(mode="cubic", antialias=1, axes=[2, 4]), [0.5, 0.7]),
])
def test_resize_matches_onnx_reference(tmp_path, rng, device, case):
    from onnx.reference import ReferenceEvaluator

    name, opset, dtype, shape, attrs, scales = case
    if np.issubdtype(dtype, np.integer):
        x = rng.integers(0, 256 if dtype == np.uint8 else 1000, shape).astype(dtype)
    else:
        x = rng.standard_normal(shape).astype(dtype)
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", **attrs)], name,
        [helper.make_tensor_value_info("x", elem, list(shape))],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = str(tmp_path / "resize.onnx")
    onnx.save(model, path)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = ember.onnx.load(path, device=device).run(None, {"x": x})
    got = got.cpu().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_resize_tf_half_pixel_for_nn_at_opset_13(tmp_path, device):
    # x = (o + 0.5) / scale, rounded half down: rows 0.33, 1, 1.67, 2.33 and columns 0.83, 2.5,
    # 4.17 take rows [0, 1, 2, 2] and columns [1, 2, 4].
    x = np.arange(15, dtype=np.float32).reshape(1, 1, 3, 5)
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                          coordinate_transformation_mode="tf_half_pixel_for_nn")], "nn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.array([1, 1, 1.5, 0.6], np.float32), "scales")])
    path = str(tmp_path / "nn.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    (y,) = ember.onnx.load(path, device=device).run(None, {"x": x})
    np.testing.assert_array_equal(y.cpu().numpy(), x[:, :, [0, 1, 2, 2]][:, :, :, [1, 2, 4]])


def test_resize_errors_name_the_node(tmp_path):
    f32 = TensorProto.FLOAT

    def save(node, opset=19, inits=()):
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", f32, None)],
                                  [helper.make_tensor_value_info("y", f32, None)], list(inits))
        path = str(tmp_path / "r.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), path)
        return path

    path = save(helper.make_node("Resize", ["x", "", "s"], ["y"], name="up", mode="linear",
                                 coordinate_transformation_mode="tf_half_pixel_for_nn"), 13,
                [numpy_helper.from_array(np.array([2.0], np.float32), "s")])
    with pytest.raises(ValueError, match=r"\[onnx\] node 'up' \(Resize at opset 13\): attribute "
                       r"coordinate_transformation_mode='tf_half_pixel_for_nn' is for mode "
                       r"nearest only"):
        ember.onnx.load(path)
    path = save(helper.make_node("Resize", ["x", "", "s"], ["y"], name="up", mode="area"), 19,
                [numpy_helper.from_array(np.array([2.0], np.float32), "s")])
    with pytest.raises(NotImplementedError, match=r"node 'up' \(Resize at opset 19\): attribute "
                       r"mode='area' is not supported"):
        ember.onnx.load(path)
    inits = [numpy_helper.from_array(np.array([2.0], np.float32), "s"),
             numpy_helper.from_array(np.array([4], np.int64), "n")]
    sess = ember.onnx.load(save(helper.make_node("Resize", ["x", "", "s", "n"], ["y"], name="up"),
                                19, inits))
    with pytest.raises(ValueError, match=r"\[resize\] node 'up': exactly one of scales and sizes "
                       r"must be given: got both"):
        sess.run(None, {"x": np.zeros(2, np.float32)})
    sess = ember.onnx.load(save(helper.make_node("Resize", ["x", "", "s"], ["y"], name="up"),
                                19, inits[:1]))
    with pytest.raises(ValueError, match=r"scales must hold one value per resized axis \(2\): "
                       r"got 1"):
        sess.run(None, {"x": np.zeros((2, 2), np.float32)})


# If and Loop: subgraphs reading the enclosing graphs' values (two levels up, too), against NumPy.

def _control_flow_model(opset):
    """y = sum over i < n of (x * scale if i is even else x + shift), scanned; the If inside the
    Loop's body reads `scale` and `shift` from the main graph, two scopes up."""
    f32, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    scalar = lambda name, t: helper.make_tensor_value_info(name, t, [])  # noqa: E731
    two = numpy_helper.from_array(np.array(2, np.int64), "two")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "scale"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", f32, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["x", "shift"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", f32, [3])])
    body = helper.make_graph(
        [helper.make_node("Mod", ["i", "two"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["term"], name="pick", then_branch=then_g,
                          else_branch=else_g),
         helper.make_node("Add", ["acc_in", "term"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["term"], ["scan"])],
        "body", [scalar("i", i64), scalar("cond_in", b),
                 helper.make_tensor_value_info("acc_in", f32, [3])],
        [scalar("cond_out", b), helper.make_tensor_value_info("acc_out", f32, [3]),
         helper.make_tensor_value_info("scan", f32, [3])], [two, zero])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "acc0"], ["acc", "terms"], name="loop", body=body)],
        "g", [scalar("n", i64), helper.make_tensor_value_info("x", f32, [3])],
        [helper.make_tensor_value_info("acc", f32, [3]),
         helper.make_tensor_value_info("terms", f32, [None, 3])],
        [numpy_helper.from_array(np.array([2, -1, 0.5], np.float32), "scale"),
         numpy_helper.from_array(np.array([1, 1, -3], np.float32), "shift"),
         numpy_helper.from_array(np.zeros(3, np.float32), "acc0")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opset", [13, 16, 21])
def test_loop_and_if_read_values_of_enclosing_graphs(tmp_path, rng, device, opset):
    model = _control_flow_model(opset)
    onnx.checker.check_model(model, full_check=True)
    path = str(tmp_path / "flow.onnx")
    onnx.save(model, path)
    sess = ember.onnx.load(path, device=device)
    x = rng.standard_normal(3).astype(np.float32)
    scale, shift = np.array([2, -1, 0.5]), np.array([1, 1, -3])
    for n in (0, 1, 4):
        acc, terms = sess.run(None, {"n": np.array(n, np.int64), "x": x})
        want = [x * scale if i % 2 == 0 else x + shift for i in range(n)]
        np.testing.assert_allclose(acc.cpu().numpy(), np.sum(want, axis=0) if n else 0 * x,
                                   rtol=1e-6)
        assert tuple(terms.shape) == (n, 3)
        if n:
            np.testing.assert_allclose(terms.cpu().numpy(), np.stack(want), rtol=1e-6)


def test_a_loop_that_would_never_end_is_refused(tmp_path):
    b = TensorProto.BOOL
    f32 = TensorProto.FLOAT
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]),
         helper.make_node("Identity", ["v"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c", b, []), helper.make_tensor_value_info("v", f32, [1])],
        [helper.make_tensor_value_info("c_out", b, []),
         helper.make_tensor_value_info("v_out", f32, [1])])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["", "", "x"], ["y"], name="forever", body=body)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = str(tmp_path / "forever.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), path)
    with pytest.raises(ValueError, match=r"\[loop\] node 'forever': neither M nor cond is given"):
        ember.onnx.load(path).run(None, {"x": np.zeros(1, np.float32)})


@pytest.mark.parametrize("level", ["none", "all"])
def test_if_reads_its_outer_values_after_the_optimizer_renames_them(tmp_path, rng, level):
    # Removing the Identity makes the If read x where it read xi; its branches still name xi.
    f32 = TensorProto.FLOAT
    out = lambda name: helper.make_tensor_value_info(name, f32, [3])  # noqa: E731
    then_g = helper.make_graph([helper.make_node("Mul", ["xi", "xa"], ["t"])], "then", [],
                               [out("t")])
    else_g = helper.make_graph([helper.make_node("Sub", ["xa", "xi"], ["e"])], "else", [],
                               [out("e")])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["xi"]),
         helper.make_node("Add", ["xi", "one"], ["xa"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []), out("x")], [out("y")],
        [numpy_helper.from_array(np.ones(3, np.float32), "one")])
    path = str(tmp_path / "if.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    sess = ember.onnx.load(path, optimization_level=level)
    assert sess.optimizations.get("eliminate_identities", 0) == (level == "all")
    x = rng.standard_normal(3).astype(np.float32)
    (y,) = sess.run(None, {"c": np.array(True), "x": x})
    np.testing.assert_allclose(y.numpy(), x * (x + 1), rtol=1e-6)
    (y,) = sess.run(None, {"c": np.array(False), "x": x})
    np.testing.assert_allclose(y.numpy(), np.ones(3), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("attrs", [
    dict(pads=[1, 0, 1, 1, 2, 0], strides=[2, 1, 1], group=2),
    dict(auto_pad="SAME_UPPER", dilations=[1, 2, 1]),
])
def test_3d_convolution_matches_onnx_reference(tmp_path, rng, device, attrs):
    from onnx.reference import ReferenceEvaluator

    x = rng.standard_normal((2, 4, 5, 6, 4)).astype(np.float32)
    w = rng.standard_normal((6, 4 // attrs.get("group", 1), 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv3d", **attrs)], "conv3d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = str(tmp_path / "conv3d.onnx")
    onnx.save(model, path)
    (want,) = ReferenceEvaluator(model).run(None, {"x": x})
    (got,) = ember.onnx.load(path, device=device).run(None, {"x": x})
    got = got.cpu().numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_random_ops_draw_their_distributions(tmp_path, device):
    # RandomUniform, RandomNormal, their Like forms and Bernoulli draw from Ember's generators:
    # the values are Ember's own (ONNX leaves them to the runtime), the distribution ONNX's, a
    # seeded node the same at every run, and the optimizer neither folds nor merges them.
    n = 60000
    f32 = TensorProto.FLOAT
    nodes = [
        helper.make_node("RandomUniform", [], ["u"], shape=[n], low=-1.0, high=3.0, seed=5.0),
        helper.make_node("RandomUniform", [], ["u2"], shape=[n], low=-1.0, high=3.0, seed=5.0),
        helper.make_node("RandomNormal", [], ["z"], shape=[n], mean=2.0, scale=0.5,
                         dtype=TensorProto.DOUBLE),
        helper.make_node("RandomUniformLike", ["p"], ["ul"]),
        helper.make_node("RandomNormalLike", ["p"], ["zl"], dtype=TensorProto.FLOAT16),
        helper.make_node("Bernoulli", ["p"], ["b"], dtype=TensorProto.INT64),
    ]
    outputs = [("u", f32), ("u2", f32), ("z", TensorProto.DOUBLE), ("ul", f32),
               ("zl", TensorProto.FLOAT16), ("b", TensorProto.INT64)]
    graph = helper.make_graph(nodes, "random", [helper.make_tensor_value_info("p", f32, [n])],
                              [helper.make_tensor_value_info(o, t, None) for o, t in outputs])
    path = str(tmp_path / "random.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    sess = ember.onnx.load(path, device=device)
    assert sess.node_count == 6 and sess.optimizations.get("fold_constants", 0) == 0
    p = np.linspace(0.0, 1.0, n, dtype=np.float32)
    u, u2, z, ul, zl, b = [t.cpu().numpy() for t in sess.run(None, {"p": p})]
    assert u.dtype == np.float32 and z.dtype == np.float64 and zl.dtype == np.float16
    assert b.dtype == np.int64
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.03
    np.testing.assert_array_equal(u, u2)  # one seed, one stream
    np.testing.assert_array_equal(u, sess.run(None, {"p": p})[0].cpu().numpy())  # every run
    assert abs(z.mean() - 2.0) < 0.01 and abs(z.std() - 0.5) < 0.01
    assert ul.min() >= 0 and ul.max() < 1 and abs(ul.mean() - 0.5) < 0.01
    assert abs(zl.astype(np.float64).mean()) < 0.02
    # 1 with probability p (ONNX's definition and reference): more often where p is larger.
    assert set(np.unique(b)) <= {0, 1}
    assert abs(b.mean() - 0.5) < 0.01
    assert b[: n // 4].mean() < 0.2 and b[-n // 4:].mean() > 0.8
    assert not np.array_equal(ul, sess.run(None, {"p": p})[3].cpu().numpy())  # unseeded


def test_inference_session_mirrors_onnxruntimes_class(tmp_path):
    """InferenceSession(path, sess_options, providers): inputs and outputs described as
    onnxruntime describes them, NumPy arrays out in the order asked, bytes as well as paths."""
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    model, params = _cnn(rng)
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    x = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)

    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ours = ember.onnx.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for mine, other in [(ours.get_inputs(), theirs.get_inputs()),
                        (ours.get_outputs(), theirs.get_outputs())]:
        assert [(a.name, a.shape, a.type) for a in mine] == \
               [(a.name, a.shape, a.type) for a in other]
    assert ours.get_providers() == ["CPUExecutionProvider"]

    (y,) = ours.run(None, {"x": x})
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (3, 5)
    np.testing.assert_allclose(y, _cnn_numpy(x, params), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y, theirs.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)
    (again,) = ours.run(["y"], {"x": ember.tensor(x)})  # an Ember tensor in, by output name
    np.testing.assert_array_equal(again, y)

    from_bytes = ember.onnx.InferenceSession(model.SerializeToString())
    np.testing.assert_array_equal(from_bytes.run([], {"x": x})[0], y)


def test_session_options_reach_the_session(tmp_path):
    """The optimization level, memory planning and threads within an op come from
    SessionOptions; a run's thread count is the calling thread's and is put back after it."""
    rng = np.random.default_rng(4)
    model, params = _cnn(rng)
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)

    options = ember.onnx.SessionOptions()
    options.graph_optimization_level = ember.onnx.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.enable_mem_pattern = False
    options.intra_op_num_threads = 1
    plain = ember.onnx.InferenceSession(path, options)
    assert plain.session.optimizations == {}
    assert plain.session.node_count == len(model.graph.node)
    before = ember.get_num_threads()
    (y,) = plain.run(None, {"x": x})
    assert ember.get_num_threads() == before
    assert plain.session.memory_plan["planned_runs"] == 0
    np.testing.assert_allclose(y, _cnn_numpy(x, params), rtol=1e-4, atol=1e-4)

    optimized = ember.onnx.InferenceSession(path)  # ORT_ENABLE_ALL, planned
    assert sum(optimized.session.optimizations.values()) > 0  # BatchNormalization folded, at least
    optimized.run(None, {"x": x})
    (z,) = optimized.run(None, {"x": x})
    assert optimized.session.memory_plan["planned_runs"] >= 1
    np.testing.assert_allclose(z, y, rtol=1e-5, atol=1e-5)


def test_inference_session_refuses_what_it_cannot_run(tmp_path):
    model, _ = _cnn(np.random.default_rng(5))
    path = tmp_path / "cnn.onnx"
    onnx.save(model, str(path))
    with pytest.raises(ValueError, match="none of the providers"):
        ember.onnx.InferenceSession(path, providers=["TensorrtExecutionProvider"])
    options = ember.onnx.SessionOptions()
    options.intra_op_num_threads = -2
    with pytest.raises(ValueError, match="intra_op_num_threads"):
        ember.onnx.InferenceSession(path, options)
    with pytest.raises(ember.KeyError, match="unknown output 'z'"):
        ember.onnx.InferenceSession(path).run(["z"], {"x": np.zeros((1, 2, 6, 6), np.float32)})
    with pytest.raises(ember.Error, match="unknown pass 'no_such_pass'"):
        ember.onnx.InferenceSession(path, disabled_optimizers=["no_such_pass"])
