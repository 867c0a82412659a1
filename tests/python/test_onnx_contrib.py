"""ember.onnx on onnxruntime's com.microsoft contrib ops and its ai.onnx extensions (the fused
forms its optimizer writes into PyTorch and Hugging Face exports): each built with ONNX's helper
API, run on random inputs by Ember and by onnxruntime (which implements them), compared within
1e-5; and the contrib ops Ember does not read, refused at load time by node, op and domain."""

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")  # pinned by tools/setup.sh (Note [Python build dependencies])
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DEVICES = ["cpu", "reference"]
MS = "com.microsoft"


def _model(node, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(
        [node], "contrib",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
         for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(v, k) for k, v in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                   helper.make_opsetid(MS, 1)])


def _compare(tmp_path, model, feeds, device, atol=1e-5, expected=None):
    path = str(tmp_path / "model.onnx")
    onnx.save(model, path)
    if expected is None:
        expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ember.onnx.load(path, device=device, optimization_level="none").run(None, feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.cpu().numpy()
        assert g.shape == e.shape and g.dtype == e.dtype, (g.shape, e.shape, g.dtype, e.dtype)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=atol)


def _r(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op,inputs,attrs", [
    ("Gelu", ["x"], {}),
    ("FastGelu", ["x"], {}),
    ("FastGelu", ["x", "bias"], {}),
    ("BiasGelu", ["x", "bias"], {}),
    ("QuickGelu", ["x"], {}),
    ("QuickGelu", ["x"], {"alpha": 1.3}),
])
def test_contrib_activations_match_onnxruntime(tmp_path, rng, device, op, inputs, attrs):
    values = {"x": _r(rng, 2, 3, 8) * 3, "bias": _r(rng, 8), "skip": _r(rng, 2, 3, 8)}
    feeds = {k: values[k] for k in inputs}
    model = _model(helper.make_node(op, inputs, ["y"], domain=MS, **attrs), feeds, ["y"])
    _compare(tmp_path, model, feeds, device)


@pytest.mark.parametrize("device", DEVICES)
def test_bias_add_matches_numpy(tmp_path, rng, device):
    # onnxruntime implements BiasAdd on CUDA only: NumPy is the reference.
    feeds = {"x": _r(rng, 2, 3, 8), "bias": _r(rng, 8), "skip": _r(rng, 2, 3, 8)}
    model = _model(helper.make_node("BiasAdd", ["x", "bias", "skip"], ["y"], domain=MS), feeds,
                   ["y"])
    _compare(tmp_path, model, feeds, device, expected=[feeds["x"] + feeds["bias"] + feeds["skip"]])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("attrs,a_shape,b_shape", [
    ({}, (2, 3, 4), (4, 5)),
    ({"transA": 1}, (2, 4, 3), (4, 5)),
    ({"transB": 1, "alpha": 0.125}, (2, 3, 4), (2, 5, 4)),
    ({"transA": 1, "transB": 1, "alpha": -2.0}, (4, 3), (5, 4)),
    # transBatch moves the first dim behind the other batch dims: [d0, ..., dn-1] is read as
    # [d1, ..., dn-2, d0, dn-1].
    ({"transBatchA": 1}, (4, 2, 3, 5), (2, 3, 5, 6)),
    ({"transBatchB": 1}, (2, 3, 4, 5), (5, 2, 3, 6)),
    ({"transBatchA": 1, "transBatchB": 1, "alpha": 0.5}, (4, 2, 5), (5, 2, 6)),
    ({"transBatchA": 1, "transA": 1}, (5, 2, 3, 4), (2, 3, 5, 6)),
    ({"transBatchB": 1, "transB": 1}, (2, 3, 4, 5), (6, 2, 3, 5)),
])
def test_fused_matmul_matches_onnxruntime(tmp_path, rng, device, attrs, a_shape, b_shape):
    feeds = {"a": _r(rng, *a_shape), "b": _r(rng, *b_shape)}
    model = _model(helper.make_node("FusedMatMul", ["a", "b"], ["y"], domain=MS, **attrs), feeds,
                   ["y"])
    _compare(tmp_path, model, feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("with_beta,with_bias,eps", [
    (True, True, None), (False, False, 1e-5), (True, False, 1e-3), (False, True, None)])
def test_skip_layer_normalization_and_its_sum_match_onnxruntime(tmp_path, rng, device, with_beta,
                                                                with_bias, eps):
    h = 16
    feeds = {"x": _r(rng, 2, 5, h), "skip": _r(rng, 2, 5, h)}
    init = [("gamma", _r(rng, h))]
    inputs = ["x", "skip", "gamma", "", ""]
    if with_beta:
        init.append(("beta", _r(rng, h)))
        inputs[3] = "beta"
    if with_bias:
        init.append(("bias", _r(rng, h)))
        inputs[4] = "bias"
    while inputs[-1] == "":
        inputs.pop()
    attrs = {} if eps is None else {"epsilon": eps}
    # Output 3 is input + skip (+ bias), which the next block's residual reads.
    node = helper.make_node("SkipLayerNormalization", inputs, ["y", "", "", "sum"], domain=MS,
                            **attrs)
    _compare(tmp_path, _model(node, feeds, ["y", "sum"], init), feeds, device)
    node = helper.make_node("SkipLayerNormalization", inputs, ["y"], domain=MS, **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)
    # Its statistics, [batch, sequence, 1] in float32.
    outputs = ["y", "mean", "inv_std_var", "sum"]
    node = helper.make_node("SkipLayerNormalization", inputs, outputs, domain=MS, **attrs)
    _compare(tmp_path, _model(node, feeds, outputs, init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("with_bias", [False, True])
def test_skip_simplified_layer_normalization_matches_onnxruntime(tmp_path, rng, device,
                                                                 with_bias):
    h = 16
    feeds = {"x": _r(rng, 2, 5, h), "skip": _r(rng, 2, 5, h)}
    init = [("gamma", _r(rng, h))]
    inputs = ["x", "skip", "gamma"]
    if with_bias:
        init.append(("bias", _r(rng, h)))
        inputs.append("bias")
    node = helper.make_node("SkipSimplifiedLayerNormalization", inputs, ["y", "", "inv", "sum"],
                            domain=MS, epsilon=1e-6)
    _compare(tmp_path, _model(node, feeds, ["y", "inv", "sum"], init), feeds, device)
    # The mean output: a simplified norm has none, and onnxruntime writes zeros [2, 5, 1].
    outputs = ["y", "mean", "inv", "sum"]
    node = helper.make_node("SkipSimplifiedLayerNormalization", inputs, outputs, domain=MS)
    _compare(tmp_path, _model(node, feeds, outputs, init), feeds, device)
    node = helper.make_node("SkipSimplifiedLayerNormalization", inputs, ["y"], domain=MS)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
def test_onnxruntimes_ai_onnx_layer_norms_at_opset_13_match_it(tmp_path, rng, device):
    # onnxruntime's optimizer writes these two into models of opsets before 17 (ai.onnx domain,
    # version 1): LayerNormalization as opset 17's, SimplifiedLayerNormalization an RMS norm.
    feeds = {"x": _r(rng, 3, 4, 8)}
    init = [("scale", _r(rng, 8)), ("bias", _r(rng, 8))]
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], epsilon=1e-5)
    _compare(tmp_path, _model(node, feeds, ["y"], init, opset=13), feeds, device)
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y", "mean", "inv"],
                            axis=1)
    _compare(tmp_path, _model(node, feeds, ["y", "mean", "inv"], init, opset=13), feeds, device)
    node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv"],
                            epsilon=1e-6)
    _compare(tmp_path, _model(node, feeds, ["y", "inv"], init[:1], opset=13), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("activation,params,with_z,conv_attrs", [
    ("Relu", None, False, {"pads": [1, 1, 1, 1]}),
    ("Relu", None, True, {"pads": [1, 1, 1, 1]}),
    ("Tanh", None, False, {"strides": [2, 2]}),
    ("Sigmoid", None, False, {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ("Relu", None, False, {"dilations": [2, 2]}),
    ("LeakyRelu", [0.2], False, {"group": 2}),
    ("Clip", [-0.5, 0.75], True, {"pads": [0, 1, 2, 1]}),
    ("HardSigmoid", [0.3, 0.4], False, {}),
])
def test_fused_conv_matches_onnxruntime(tmp_path, rng, device, activation, params, with_z,
                                        conv_attrs):
    feeds = {"x": _r(rng, 2, 4, 7, 6)}
    group = conv_attrs.get("group", 1)
    init = [("w", _r(rng, 6, 4 // group, 3, 3) * 0.3), ("b", _r(rng, 6))]
    inputs = ["x", "w", "b"]
    if with_z:
        pads = conv_attrs.get("pads", [0, 0, 0, 0])
        h, w = 7 + pads[0] + pads[2] - 2, 6 + pads[1] + pads[3] - 2
        feeds["z"] = _r(rng, 2, 6, h, w)
        inputs.append("z")
    attrs = dict(conv_attrs, activation=activation)
    if params is not None:
        attrs["activation_params"] = params
    node = helper.make_node("FusedConv", inputs, ["y"], domain=MS, **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fixture", ["encoder", "resblock_bn"])
def test_models_onnxruntime_optimized_run_and_match_it(tmp_path, rng, device, fixture):
    # PyTorch exports (tests/python/fixtures) as onnxruntime's own optimizer rewrites them: fused
    # into SkipLayerNormalization, FusedMatMul, QuickGelu, FusedConv, Gelu, ...
    import os

    src = os.path.join(os.path.dirname(__file__), "fixtures", f"{fixture}.onnx")
    path = str(tmp_path / "optimized.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = path
    ort.InferenceSession(src, options, providers=["CPUExecutionProvider"])
    model = onnx.load(path)
    contrib = {n.op_type for n in model.graph.node if n.domain == MS}
    assert contrib, "onnxruntime fused nothing into its contrib ops"
    feeds = {}
    for info in model.graph.input:
        shape = [d.dim_value or 2 for d in info.type.tensor_type.shape.dim]
        feeds[info.name] = _r(rng, *shape)
    if fixture == "encoder":  # an additive attention mask: 0 or -10000 per key
        feeds["mask"] = np.where(rng.random(feeds["mask"].shape) < 0.3, -10000.0, 0.0).astype(
            np.float32)
    expected = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, feeds)
    for level in ("none", "all"):
        got = ember.onnx.load(path, device=device, optimization_level=level).run(None, feeds)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g.cpu().numpy(), e, rtol=1e-4, atol=1e-4)


def _padding(kind, b, s, t):
    """A key mask of onnxruntime's forms: lengths [B], or 1/0 [B, T] or [B, S, T] (int32)."""
    if kind == "lengths":
        return np.array([t - 2, 1][:b], np.int32)
    if kind == "2d":
        m = np.ones((b, t), np.int32)
        m[0, -2:] = 0
        m[1, ::2] = 0
        return m
    m = (np.arange(t)[None, None, :] <= np.arange(s)[None, :, None] + 1).astype(np.int32)
    return np.broadcast_to(m, (b, s, t)).copy()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask,attrs,with_bias,with_attention_bias", [
    (None, {}, True, False),
    ("2d", {}, True, False),
    ("lengths", {}, False, False),
    ("3d", {"scale": 0.3}, True, False),
    (None, {"unidirectional": 1}, True, True),
    ("2d", {"unidirectional": 1, "mask_filter_value": -1000.0}, True, False),
    (None, {"qkv_hidden_sizes": [16, 16, 8]}, True, True),
])
def test_attention_matches_onnxruntime(tmp_path, rng, device, mask, attrs, with_bias,
                                       with_attention_bias):
    b, s, d, heads = 2, 5, 16, 4
    sizes = attrs.get("qkv_hidden_sizes", [d, d, d])
    feeds = {"x": _r(rng, b, s, d)}
    init = [("w", _r(rng, d, sum(sizes)) * 0.5)]
    inputs = ["x", "w", "", "", "", ""]
    if with_bias:
        init.append(("bias", _r(rng, sum(sizes))))
        inputs[2] = "bias"
    if mask is not None:
        feeds["mask"] = _padding(mask, b, s, s)
        inputs[3] = "mask"
    if with_attention_bias:
        feeds["ab"] = _r(rng, 1, heads, s, s)
        inputs[5] = "ab"
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("Attention", inputs, ["y"], domain=MS, num_heads=heads, **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mask,attrs,with_bias,with_attention_bias", [
    (None, {}, False, False),
    ("2d", {}, True, False),
    ("lengths", {"scale": 0.2}, True, True),
    (None, {}, True, True),
])
def test_multi_head_attention_matches_onnxruntime(tmp_path, rng, device, mask, attrs, with_bias,
                                                  with_attention_bias):
    b, s, t, heads = 2, 5, 7, 4
    feeds = {"q": _r(rng, b, s, 16), "k": _r(rng, b, t, 16), "v": _r(rng, b, t, 8)}
    inputs = ["q", "k", "v", "", "", ""]
    init = []
    if with_bias:
        init.append(("bias", _r(rng, 40)))
        inputs[3] = "bias"
    if mask is not None:
        feeds["mask"] = _padding(mask, b, s, t)
        inputs[4] = "mask"
    if with_attention_bias:
        feeds["ab"] = _r(rng, b, heads, s, t)
        inputs[5] = "ab"
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("MultiHeadAttention", inputs, ["y"], domain=MS, num_heads=heads,
                            **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("past_length,mask,attrs", [
    (3, None, {}),
    (3, None, {"unidirectional": 1}),
    (2, "2d", {"unidirectional": 1}),
    (4, "lengths", {}),
    (0, None, {"unidirectional": 1}),  # the first step: an empty past
])
def test_attention_with_a_key_value_cache_matches_onnxruntime(tmp_path, rng, device, past_length,
                                                              mask, attrs):
    # Decoding: past [2, B, N, P, H] holds the earlier steps' keys and values; present appends
    # this step's, and the masks cover all P + S keys.
    b, s, d, heads = 2, 3, 16, 4
    feeds = {"x": _r(rng, b, s, d), "past": _r(rng, 2, b, heads, past_length, d // heads)}
    init = [("w", _r(rng, d, 3 * d) * 0.5), ("bias", _r(rng, 3 * d))]
    inputs = ["x", "w", "bias", "", "past"]
    if mask is not None:
        feeds["mask"] = _padding(mask, b, s, past_length + s)
        inputs[3] = "mask"
    outputs = ["y", "present"]  # onnxruntime requires present with past
    node = helper.make_node("Attention", inputs, outputs, domain=MS, num_heads=heads, **attrs)
    _compare(tmp_path, _model(node, feeds, outputs, init), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("past_length,with_bias,attrs", [
    (4, True, {}), (2, False, {"unidirectional": 1}), (3, True, {"scale": 0.3}),
])
def test_multi_head_attention_with_a_key_value_cache_matches_onnxruntime(tmp_path, rng, device,
                                                                         past_length, with_bias,
                                                                         attrs):
    b, s, heads, h = 2, 3, 2, 4
    d = heads * h
    feeds = {"q": _r(rng, b, s, d), "k": _r(rng, b, s, d), "v": _r(rng, b, s, d),
             "past_key": _r(rng, b, heads, past_length, h),
             "past_value": _r(rng, b, heads, past_length, h)}
    init = [("bias", _r(rng, 3 * d))] if with_bias else []
    inputs = ["q", "k", "v", "bias" if with_bias else "", "", "", "past_key", "past_value"]
    outputs = ["y", "present_key", "present_value"]
    node = helper.make_node("MultiHeadAttention", inputs, outputs, domain=MS, num_heads=heads,
                            **attrs)
    _compare(tmp_path, _model(node, feeds, outputs, init), feeds, device)
    # A cross-attention's keys and values already in heads [B, N, L, H] (no bias, no past).
    feeds = {"q": feeds["q"], "k": _r(rng, b, heads, 5, h), "v": _r(rng, b, heads, 5, h)}
    node = helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["y"], domain=MS,
                            num_heads=heads, **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"]), feeds, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("form", ["qkv", "kv"])
@pytest.mark.parametrize("with_bias", [False, True])
def test_multi_head_attentions_packed_forms_are_its_unpacked_ones(tmp_path, rng, device, form,
                                                                  with_bias):
    # onnxruntime's CPU kernel has no packed QKV [B, L, N, 3, H] or KV [B, L, N, 2, H]; by
    # ContribOperators.md they are the same tensors as query, key and value, so onnxruntime's
    # output for those unpacked is the reference.
    b, s, heads, h = 2, 4, 2, 4
    d = heads * h
    init = [("bias", _r(rng, 3 * d))] if with_bias else []
    bias = "bias" if with_bias else ""
    if form == "qkv":
        packed = {"qkv": _r(rng, b, s, heads, 3, h)}
        node = helper.make_node("MultiHeadAttention", ["qkv", "", "", bias], ["y"], domain=MS,
                                num_heads=heads)
        q, k, v = (packed["qkv"][:, :, :, i, :].reshape(b, s, d) for i in range(3))
    else:
        packed = {"q": _r(rng, b, s, d), "kv": _r(rng, b, 5, heads, 2, h)}
        node = helper.make_node("MultiHeadAttention", ["q", "kv", "", bias], ["y"], domain=MS,
                                num_heads=heads)
        q = packed["q"]
        k, v = (packed["kv"][:, :, :, i, :].reshape(b, 5, d) for i in range(2))
    unpacked = {"q": q, "k": k, "v": v}
    plain = helper.make_node("MultiHeadAttention", ["q", "k", "v", bias], ["y"], domain=MS,
                             num_heads=heads)
    path = str(tmp_path / "plain.onnx")
    onnx.save(_model(plain, unpacked, ["y"], init), path)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, unpacked)
    _compare(tmp_path, _model(node, packed, ["y"], init), packed, device, expected=expected)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout,positions,attrs", [
    ("bsd", "offset", {}),
    ("bsd", "ids", {"interleaved": 1}),
    ("bnsh", "ids", {}),
    ("bnsh", "offset", {"interleaved": 1}),
    ("bsd", "ids", {"num_heads": 2, "rotary_embedding_dim": 4}),  # partial: 4 of 8 rotate
])
def test_rotary_embedding_matches_onnxruntime(tmp_path, rng, device, layout, positions, attrs):
    b, s, heads, h, max_len = 2, 5, 2, 8, 16
    rot = attrs.get("rotary_embedding_dim", h)
    x = _r(rng, b, s, heads * h) if layout == "bsd" else _r(rng, b, heads, s, h)
    angles = np.arange(max_len)[:, None] * (0.1 + np.arange(rot // 2)[None, :])
    feeds = {"x": x}
    if positions == "offset":
        feeds["pos"] = np.array([3], np.int64)
    else:
        feeds["pos"] = rng.integers(0, max_len, (b, s)).astype(np.int64)
    init = [("cos", np.cos(angles).astype(np.float32)), ("sin", np.sin(angles).astype(np.float32))]
    node = helper.make_node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain=MS,
                            **attrs)
    _compare(tmp_path, _model(node, feeds, ["y"], init), feeds, device)
    # ONNX's own RotaryEmbedding (opset 23): (X, cos_cache, sin_cache, position_ids).
    if positions == "ids":
        attrs = dict(attrs)
        if layout == "bsd":
            attrs["num_heads"] = heads
        node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["y"], **attrs)
        _compare(tmp_path, _model(node, feeds, ["y"], init, opset=23), feeds, device)


def test_attentions_decoding_inputs_are_refused_at_load_time(tmp_path):
    path = str(tmp_path / "m.onnx")
    x = np.zeros((1, 2, 4), np.float32)
    node = helper.make_node("Attention", ["x", "w", "", "", "past", "", "plen"],
                            ["y", "present"], name="att", domain=MS, num_heads=2,
                            past_present_share_buffer=1)
    onnx.save(_model(node, {"x": x, "w": np.zeros((4, 12), np.float32),
                            "past": np.zeros((2, 1, 2, 1, 2), np.float32),
                            "plen": np.zeros(1, np.int32)}, ["y"]), path)
    with pytest.raises(ember.NotImplementedError,
                       match=r"\[onnx\] node 'att' \(Attention at com.microsoft opset 1\): input 6 "
                             r"\(past_sequence_length\) is not supported"):
        ember.onnx.load(path)
    node = helper.make_node("MultiHeadAttention", ["x", "x", "x"], ["y", "", "", "qk"], name="mha",
                            domain=MS, num_heads=2)
    onnx.save(_model(node, {"x": x}, ["y", "qk"]), path)
    with pytest.raises(ember.NotImplementedError, match=r"output 3 \(qk\) is read"):
        ember.onnx.load(path)


def test_an_unsupported_contrib_op_is_refused_at_load_time(tmp_path):
    node = helper.make_node("GroupQueryAttention", ["x"], ["y"], name="gqa", domain=MS)
    path = str(tmp_path / "gqa.onnx")
    onnx.save(_model(node, {"x": np.zeros((1, 2), np.float32)}, ["y"]), path)
    with pytest.raises(ember.NotImplementedError,
                       match=r"\[onnx\] node 'gqa' \(GroupQueryAttention at com.microsoft opset "
                             r"1\): op GroupQueryAttention of domain com.microsoft is not "
                             r"supported \(Ember reads from com.microsoft: Attention, BiasAdd, "):
        ember.onnx.load(path)


def test_contrib_nodes_need_their_domains_opset_and_a_known_domain(tmp_path):
    x = np.zeros((1, 2), np.float32)
    node = helper.make_node("FastGelu", ["x"], ["y"], name="g", domain=MS)
    model = _model(node, {"x": x}, ["y"])
    del model.opset_import[1]  # com.microsoft not imported
    path = str(tmp_path / "m.onnx")
    onnx.save(model, path)
    with pytest.raises(IOError, match=r"\[onnx\] node 'g' \(FastGelu in domain com.microsoft\): "
                                      r"the model imports no com.microsoft opset"):
        ember.onnx.load(path)
    node = helper.make_node("Normalizer", ["x"], ["y"], name="n", domain="ai.onnx.ml")
    model = _model(node, {"x": x}, ["y"])
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    onnx.save(model, path)
    with pytest.raises(ember.NotImplementedError,
                       match=r"op domain 'ai.onnx.ml' is not supported \(Ember reads ai.onnx and "
                             r"com.microsoft\)"):
        ember.onnx.load(path)


def test_what_a_contrib_op_cannot_do_is_refused_at_load_time(tmp_path):
    path = str(tmp_path / "m.onnx")
    x = np.zeros((2, 2), np.float32)
    node = helper.make_node("FusedMatMul", ["x", "x"], ["y"], name="mm", domain=MS, transBatchA=1)
    onnx.save(_model(node, {"x": x}, ["y"]), path)
    with pytest.raises(ValueError, match=r"transBatchA and transBatchB need A and B of one rank, "
                                         r"at least 3: got shapes \[2, 2\] and \[2, 2\]"):
        ember.onnx.load(path).run(None, {"x": x})
    w = np.zeros((1, 1, 1, 1), np.float32)
    x4 = np.zeros((1, 1, 2, 2), np.float32)
    node = helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc", domain=MS,
                            activation="LeakyRelu")
    onnx.save(_model(node, {"x": x4, "w": w}, ["y"]), path)
    with pytest.raises(ValueError, match=r"\(FusedConv at com.microsoft opset 1\): activation "
                                         r"LeakyRelu takes 1 activation_params: got 0"):
        ember.onnx.load(path)
    node = helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc", domain=MS,
                            activation="Elu")
    onnx.save(_model(node, {"x": x4, "w": w}, ["y"]), path)
    with pytest.raises(ember.NotImplementedError, match=r"attribute activation='Elu' is not "
                                                        r"supported"):
        ember.onnx.load(path)
    node = helper.make_node("RotaryEmbedding", ["x", "p", "c", "c"], ["y"], name="rope",
                            domain=MS, is_packed_batching=1)
    onnx.save(_model(node, {"x": x, "p": np.zeros(1, np.int64), "c": x}, ["y"]), path)
    with pytest.raises(ember.NotImplementedError,
                       match=r"\(RotaryEmbedding at com.microsoft opset 1\): attribute "
                             r"is_packed_batching = 1 \(ragged batches\) is not supported"):
        ember.onnx.load(path)
