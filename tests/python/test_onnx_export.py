"""ember.onnx.export: modules and functions exported, the files checked by ONNX's checker, run by
onnxruntime (the independent reference) and by Ember's importer with the model's own outputs;
dynamic axes; and what has no ONNX form refused by name."""

import ast
import io
import pathlib
import sys
import types

import numpy as np
import onnx  # both pinned by tools/setup.sh (Note [Python build dependencies])
import onnxruntime as ort
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F


class Net(nn.Module):
    """A Python-defined CNN: grouped strided convolution, batch and group norm, the activations
    and poolings, flatten, a linear layer and softmax; and a second input added with
    broadcasting."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.gn = nn.GroupNorm(2, 8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 2 * 2, 5)

    def forward(self, x, bias):
        y = F.gelu(F.relu(self.bn(self.conv(x))))
        y = self.pool(y)
        y = ember.tanh(self.gn(self.conv2(y))) * 0.5 + ember.sigmoid(y) - 1.0
        y = F.avg_pool2d(y, 3, stride=1, padding=1)
        y = F.adaptive_avg_pool2d(y, (2, 2))
        logits = self.fc(y.flatten(1)) / 2.0 + bias
        return F.log_softmax(logits, dim=1), ember.cat([logits, logits.transpose(0, 1).t()], 1)


def _ort(path, feeds):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {k: np.asarray(v) for k, v in feeds.items()})


def _same(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def _numpy(t):
    return np.asarray(t)


def test_python_module_checker_onnxruntime_and_ember(tmp_path):
    ember.manual_seed(0)
    net = Net()
    net.train()
    with ember.no_grad():
        for _ in range(3):  # running statistics away from their defaults
            net(ember.randn(4, 4, 16, 16) * 2.0 + 1.0, ember.zeros(5))
    net.eval()
    x, bias = ember.randn(2, 4, 16, 16), ember.randn(5)
    path = tmp_path / "net.onnx"
    ember.onnx.export(net, (x, bias), path, input_names=["x", "bias"],
                      output_names=["logp", "both"],
                      dynamic_axes={"x": {0: "batch"}, "logp": {0: "batch"}, "both": [0]})
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    names = {i.name for i in model.graph.initializer}
    assert {"conv.weight", "conv.bias", "bn.running_mean", "bn.running_var", "fc.weight"} <= names
    assert [i.name for i in model.graph.input] == ["x", "bias"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert model.opset_import[0].version == 17
    with ember.no_grad():
        want = net(x, bias)
    got = _ort(path, {"x": _numpy(x), "bias": _numpy(bias)})
    for g, w in zip(got, want):
        _same(g, _numpy(w))
    back = ember.onnx.load(path)(x, bias)
    for g, w in zip(back, want):
        _same(_numpy(g), _numpy(w))
    # The symbolic batch runs at another size in onnxruntime.
    x7 = ember.randn(7, 4, 16, 16)
    with ember.no_grad():
        want7 = net(x7, bias)
    got7 = _ort(path, {"x": _numpy(x7), "bias": _numpy(bias)})
    assert got7[0].shape == (7, 5)
    for g, w in zip(got7, want7):
        _same(g, _numpy(w))


def test_resnet18(tmp_path):
    ember.manual_seed(1)
    net = ember.models.resnet18(num_classes=10)
    x = ember.randn(1, 3, 64, 64)
    path = tmp_path / "resnet18.onnx"
    ember.onnx.export(net, x, path, input_names=["image"], dynamic_axes={"image": {0: "n"}})
    assert net.training  # the mode it had is restored
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    net.eval()
    for batch in (x, ember.randn(3, 3, 64, 64)):
        with ember.no_grad():
            want = _numpy(net(batch))
        (got,) = _ort(path, {"image": _numpy(batch)})
        _same(got, want, 1e-4)
        _same(_numpy(ember.onnx.load(path)(batch)), want, 1e-4)


def test_attention_with_batch_and_sequence_axes(tmp_path):
    ember.manual_seed(3)
    attn, norm = nn.MultiheadAttention(8, 2, batch_first=True), nn.LayerNorm(8)
    attn.eval()

    def block(x):
        return norm(x + attn(x, x, x, need_weights=False)[0])

    path = tmp_path / "attn.onnx"
    ember.onnx.export(block, ember.randn(2, 3, 8), path, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "sequence"}})
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    for shape in [(2, 3, 8), (5, 11, 8), (1, 1, 8)]:
        x = ember.randn(*shape)
        with ember.no_grad():
            want = _numpy(block(x))
        (got,) = _ort(path, {"x": _numpy(x)})
        _same(got, want)


def test_function_of_tensors(tmp_path):
    ember.manual_seed(2)
    a, b = ember.randn(3, 4), ember.randn(4, 5)

    def fn(a, b):
        h = ember.matmul(a, b).permute(1, 0)  # [5, 3]
        top, where = h.max(1)
        picked = ember.gather(h, 1, where.unsqueeze(1))
        return (F.softmax(h - h.amax(1, keepdim=True), dim=0), ember.sum(h * h, 1),
                ember.cumsum(h, 0) + picked - top.unsqueeze(1), where)

    buffer = io.BytesIO()  # a file object, as torch.onnx.export takes
    ember.onnx.export(fn, (a, b), buffer)
    path = tmp_path / "fn.onnx"
    path.write_bytes(buffer.getvalue())
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    got = _ort(path, {"input_0": _numpy(a), "input_1": _numpy(b)})
    for g, w in zip(got, fn(a, b)):
        _same(g, _numpy(w))


def test_what_has_no_onnx_form_is_refused(tmp_path):
    x = ember.randn(3, 4)
    with pytest.raises(NotImplementedError, match=r"\[onnx.export\] .*'cumprod'.*no ONNX form"):
        ember.onnx.export(lambda t: ember.cumprod(t, 1), x, tmp_path / "a.onnx")
    with pytest.raises(NotImplementedError, match=r"read a tensor's values on the host"):
        ember.onnx.export(lambda t: t if t.sum().item() > 0 else -t, x, tmp_path / "b.onnx")
    with pytest.raises(NotImplementedError, match=r"cannot be recorded: .*random"):
        ember.onnx.export(lambda t: t + ember.randint(0, 3, (3, 4)).float(), x,
                          tmp_path / "r.onnx")
    with pytest.raises(KeyError, match=r"dynamic_axes names 'y'"):
        ember.onnx.export(lambda t: t + 1, x, tmp_path / "c.onnx", dynamic_axes={"y": [0]})
    with pytest.raises(ValueError, match=r"opset_version 11: Ember writes opset 17 .* or 18"):
        ember.onnx.export(lambda t: t + 1, x, tmp_path / "d.onnx", opset_version=11)
    with pytest.raises(TypeError, match=r"not a tensor"):
        ember.onnx.export(lambda t: 3, x, tmp_path / "e.onnx")
    assert not any(tmp_path.iterdir())  # nothing written on a refusal


def _flat(values):
    """Tensors nested in tuples and lists, in order (as the exported graph's inputs and outputs)."""
    if isinstance(values, (tuple, list)):
        return [t for v in values for t in _flat(v)]
    return [values]


def _exported(fn, args, tmp_path, tol=1e-5, ort_runs=True, **kw):
    """Exports fn on args; checks the file with ONNX's checker and its outputs, for the same
    inputs, from onnxruntime and from Ember's loader, against fn's own. Returns the model."""
    path = tmp_path / "model.onnx"
    ember.onnx.export(fn, args, path, **kw)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    inputs = _flat(list(args))
    with ember.no_grad():
        want = [_numpy(w) for w in _flat(fn(*args))]
    feeds = {i.name: _numpy(t) for i, t in zip(model.graph.input, inputs)}
    assert len(feeds) == len(inputs)
    if ort_runs:
        got = _ort(path, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, tol)
    back = _flat(ember.onnx.load(path)(*inputs))
    assert len(back) == len(want)
    for g, w in zip(back, want):
        _same(_numpy(g), w, tol)
    return model


def _ops(model):
    return [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("states", [False, True])
def test_recurrent_layers(tmp_path, layer, bidirectional, batch_first, states):
    ember.manual_seed(4)
    net = getattr(nn, layer)(5, 7, num_layers=2, bidirectional=bidirectional,
                             batch_first=batch_first)
    net.eval()
    dirs = 2 if bidirectional else 1
    x = ember.randn(4, 3, 5) if batch_first else ember.randn(3, 4, 5)
    h0 = ember.randn(2 * dirs, 4, 7)
    if not states:
        model = _exported(net, (x,), tmp_path)
    elif layer == "LSTM":
        model = _exported(net, (x, (h0, ember.randn(2 * dirs, 4, 7))), tmp_path)
    else:
        model = _exported(net, (x, h0), tmp_path)
    ops = _ops(model)
    # One node per layer and direction, the Elman RNN's too (the core composes it of matmuls).
    assert ops.count(layer) == 2 * dirs and "Gemm" not in ops and "MatMul" not in ops
    node = next(n for n in model.graph.node if n.op_type == layer)
    attrs = {a.name: a for a in node.attribute}
    assert attrs["hidden_size"].i == 7
    if layer == "GRU":
        assert attrs["linear_before_reset"].i == 1


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN"])
def test_recurrent_layers_off_the_cpu(tmp_path, layer):
    # On the reference backend a layer runs its rnn_layer kernel, a reverse direction between two
    # flips of time whose index the core copies to the device: still one node per direction.
    ember.manual_seed(16)
    net = getattr(nn, layer)(5, 6, num_layers=2, bidirectional=True).to("reference")
    net.eval()
    x = ember.randn(4, 3, 5).to("reference")
    path = tmp_path / "rnn.onnx"
    ember.onnx.export(net, x, path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert _ops(model).count(layer) == 4
    with ember.no_grad():
        want = [_numpy(t.cpu()) for t in _flat(net(x))]
    got = _ort(path, {"input_0": _numpy(x.cpu())})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def test_elman_rnn_with_relu_and_without_bias(tmp_path):
    ember.manual_seed(14)
    net = nn.RNN(4, 6, num_layers=2, nonlinearity="relu", bias=False, bidirectional=True)
    net.eval()
    model = _exported(net, (ember.randn(5, 3, 4),), tmp_path)
    nodes = [n for n in model.graph.node if n.op_type == "RNN"]
    assert len(nodes) == 4
    for n in nodes:
        attrs = {a.name: a for a in n.attribute}
        assert [s.decode() for s in attrs["activations"].strings] == ["Relu"]
        assert n.input[3] == ""  # no bias


def test_recurrent_layer_with_dynamic_batch_and_sequence(tmp_path):
    ember.manual_seed(5)
    net = nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    net.eval()
    path = tmp_path / "gru.onnx"
    ember.onnx.export(net, ember.randn(2, 3, 3), path, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "sequence"}})
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    for shape in [(2, 3, 3), (5, 8, 3), (1, 1, 3)]:
        x = ember.randn(*shape)
        with ember.no_grad():
            want = [_numpy(w) for w in net(x)]
        for got in (_ort(path, {"x": _numpy(x)}), [_numpy(t) for t in ember.onnx.load(path)(x)]):
            for g, w in zip(got, want):
                _same(g, w)
    # The Elman RNN is one node per layer and direction too: its sequence is dynamic as well.
    rnn = nn.RNN(3, 4, num_layers=2, bidirectional=True)
    rnn.eval()
    path = tmp_path / "rnn.onnx"
    ember.onnx.export(rnn, ember.randn(3, 2, 3), path, input_names=["x"],
                      dynamic_axes={"x": {0: "sequence", 1: "batch"}})
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    for shape in [(3, 2, 3), (9, 4, 3), (1, 1, 3)]:
        x = ember.randn(*shape)
        with ember.no_grad():
            want = [_numpy(w) for w in rnn(x)]
        for got in (_ort(path, {"x": _numpy(x)}), [_numpy(t) for t in ember.onnx.load(path)(x)]):
            for g, w in zip(got, want):
                _same(g, w)


@pytest.mark.parametrize("options", [
    {}, {"stride": 2}, {"stride": 2, "padding": 1, "output_padding": 1},
    {"stride": (3, 2), "padding": (2, 1), "dilation": 2, "groups": 2, "output_padding": 1,
     "bias": False}])
def test_conv_transpose(tmp_path, options):
    ember.manual_seed(6)
    layer = nn.ConvTranspose2d(4, 6, 3, **options)
    model = _exported(layer, (ember.randn(2, 4, 5, 6),), tmp_path)
    assert "ConvTranspose" in _ops(model)
    # The 1-d layer runs the 2-d kernel on a unit height, and output_size picks output_padding.
    flat = {k: v[0] if isinstance(v, tuple) else v for k, v in options.items()}
    model = _exported(nn.ConvTranspose1d(4, 6, 3, **flat), (ember.randn(2, 4, 7),), tmp_path)
    assert "ConvTranspose" in _ops(model)
    if options.get("padding") == 1:  # sizes 9 to 10 by 11 to 12
        _exported(lambda x: layer(x, output_size=[10, 12]), (ember.randn(2, 4, 5, 6),), tmp_path)


def test_sort_and_topk(tmp_path):
    x = ember.tensor([[1.0, 2.0, 1.0, 3.0, 2.0, 1.0], [0.0, 0.0, 5.0, 1.0, 1.0, 0.0]])  # ties

    def fn(t):
        out = [ember.sort(t, d, descending=desc) for d in (0, 1) for desc in (False, True)]
        out += [ember.topk(t, 3, 1, largest, s) for largest in (False, True) for s in (False, True)]
        return out

    model = _exported(fn, (x,), tmp_path)
    assert set(_ops(model)) <= {"TopK", "GatherElements", "Transpose", "Identity"}
    # The indices are int64, and the ties come lowest index first, as the kernels give them.
    values, indices = ember.sort(x, 1)
    assert indices.dtype == ember.int64
    assert _numpy(indices)[0].tolist() == [0, 2, 5, 1, 4, 3]


def test_scatter(tmp_path):
    ember.manual_seed(7)
    index = ember.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])

    def fn(x, index, src):
        twice = x * 2
        twice.scatter_(1, index[:, :2], src)  # in place, src larger than index
        return (ember.scatter(x, 0, index[:1], src), ember.scatter_add(x, 0, index, src), twice,
                ember.scatter_reduce(x, 0, index, src, "sum"),
                ember.scatter_reduce(x, 0, index, src, "mean", include_self=False),
                ember.zeros(3, 4).scatter_add_(0, index, src), x.scatter(1, index, 2.5))

    model = _exported(fn, (ember.randn(3, 4), index, ember.randn(3, 5)), tmp_path)
    reductions = [next((a.s for a in n.attribute if a.name == "reduction"), b"none")
                  for n in model.graph.node if n.op_type == "ScatterElements"]
    assert reductions.count(b"add") == 5 and reductions.count(b"none") == 4


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_as_scatter_elements(tmp_path, reduce, include_self):
    # Composed in the core of a sort and a scan, written as ScatterElements with a reduction:
    # "mul" from opset 16, "max" and "min" from 18, which torch.onnx refuses below 18 as well.
    ember.manual_seed(15)
    index = ember.tensor([[0, 1, 2, 0], [2, 0, 1, 1]])

    def fn(x, index, src):
        return ember.scatter_reduce(x, 0, index, src, reduce, include_self=include_self)

    args = (ember.randn(3, 4), index, ember.randn(3, 5))
    opsets = [17, 18] if reduce == "prod" else [18]
    for opset in opsets:
        model = _exported(fn, args, tmp_path, opset_version=opset)
        assert model.opset_import[0].version == opset
        red = [next((a.s for a in n.attribute if a.name == "reduction"), b"none")
               for n in model.graph.node if n.op_type == "ScatterElements"]
        onnx_reduce = {"prod": b"mul", "amax": b"max", "amin": b"min"}[reduce]
        assert red == ([onnx_reduce] if include_self else [b"none", onnx_reduce])
    if reduce != "prod":
        with pytest.raises(NotImplementedError,
                           match=rf"scatter_reduce with reduce='{reduce}' is ScatterElements .* "
                                 r"from opset 18 on: export with opset_version=18"):
            ember.onnx.export(fn, args, tmp_path / "r.onnx")
    # Integer tensors: the identity of max and min is the dtype's own extreme.
    ints = (ember.tensor([[5, -2, 7, 1], [0, 3, 9, -4], [2, 2, 2, 2]]), index,
            ember.tensor([[4, 9, -8, 2, 6], [-1, 0, 3, 5, 7], [1, 1, 1, 1, 1]]))
    _exported(fn, ints, tmp_path, opset_version=18)


def test_random_draws_as_onnx_random_ops(tmp_path):
    # ember.rand_like, randn_like and dropout in training mode (its mask: a uniform draw >= p)
    # become RandomUniformLike and RandomNormalLike without a seed: onnxruntime draws afresh at
    # every run, so its outputs are compared by their statistics, and exactly where no draw
    # enters.
    def fn(x):
        return (ember.rand_like(x), ember.randn_like(x) * 2.0 + 1.0,
                F.dropout(ember.ones_like(x), 0.25, training=True), x * 3.0)

    path = tmp_path / "random.onnx"
    ember.onnx.export(fn, ember.randn(4, 6), path, input_names=["x"],
                      dynamic_axes={"x": {0: "n"}})
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    ops = _ops(model)
    for op, count in (("RandomUniformLike", 2), ("RandomNormalLike", 1)):
        assert ops.count(op) == count, op
        node = next(n for n in model.graph.node if n.op_type == op)
        assert "seed" not in {a.name for a in node.attribute}
    x = np.random.default_rng(0).standard_normal((20000, 6)).astype(np.float32)
    reference = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    session = ember.onnx.load(path)
    for run in (lambda: reference.run(None, {"x": x}),
                lambda: [_numpy(t) for t in session(ember.tensor(x))]):
        u, z, d, y = run()
        assert u.shape == z.shape == d.shape == x.shape
        assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
        assert abs(z.mean() - 1.0) < 0.03 and abs(z.std() - 2.0) < 0.05
        assert set(np.unique(d)) <= {0.0, np.float32(1 / 0.75)}
        assert abs((d != 0).mean() - 0.75) < 0.02
        _same(y, x * 3.0)
        assert not np.array_equal(run()[0], u)  # a fresh draw at each run of a session


def test_channels_last(tmp_path):
    ember.manual_seed(8)
    conv = nn.Conv2d(3, 4, 3, padding=1)
    conv.eval()

    def fn(x):
        y = conv(x.contiguous(memory_format=ember.channels_last))
        return F.relu(y) + 1.0, y.flatten(1)

    _exported(fn, (ember.randn(2, 3, 5, 5),), tmp_path)


def test_a_module_whose_train_raises_is_an_error(tmp_path):
    class Odd(nn.Linear):
        def train(self, a, b):  # not Module.train's signature (as the forward-forward example)
            raise AssertionError("not called by an export")

    with pytest.raises(TypeError, match=r"train\(\)"):
        ember.onnx.export(Odd(3, 2), ember.randn(1, 3), tmp_path / "o.onnx")


_EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def _example(path, **given):
    """The imports, classes and functions of an example script (its training left out), with
    `given` as its globals (the values its command line would set)."""
    path = _EXAMPLES / path
    tree = ast.parse(path.read_text())
    kept = [n for n in tree.body
            if isinstance(n, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef))]
    namespace = {"__name__": "example", **given}
    sys.path.insert(0, str(path.parent))
    try:
        exec(compile(ast.Module(body=kept, type_ignores=[]), str(path), "exec"), namespace)
    finally:
        sys.path.remove(str(path.parent))
    return types.SimpleNamespace(**namespace)


def _word_language_model(kind):
    m = _example("ported/word_language_model/model.py")
    if kind == "Transformer":
        return m.TransformerModel(50, 8, 2, 16, 2, 0.2), (ember.randint(0, 50, (5, 3)),)
    net = m.RNNModel(kind, 50, 8, 12, 2, 0.2)
    return net, (ember.randint(0, 50, (5, 3)), net.init_hidden(3))


def _forward_forward():
    m = _example("ported/mnist_forward_forward.py", device="cpu",
                 args=types.SimpleNamespace(lr=0.03, threshold=2.0, epochs=1))
    layer = m.Layer(784, 20)  # its train() trains: the layer is exported as a function
    return (lambda x: layer(x)), (ember.randn(2, 784),)


def _vae_parts():
    vae = _example("ported/vae.py").VAE()
    vae.eval()
    # forward draws the reparameterization's noise, which the export writes as a random op whose
    # values are not Ember's (test_vae_forward_exports_with_its_noise): its halves compared here.
    return (lambda x, z: (*vae.encode(x), vae.decode(z))), (ember.randn(2, 784), ember.randn(2, 20))


_MODELS = {
    "lenet5": lambda: (ember.models.lenet5(), (ember.randn(2, 1, 28, 28),)),
    "fashion_cnn": lambda: (ember.models.fashion_cnn(), (ember.randn(2, 1, 28, 28),)),
    "mlp": lambda: (ember.models.mlp([784, 64, 10]), (ember.randn(2, 784),)),
    "resnet18": lambda: (ember.models.resnet18(num_classes=10), (ember.randn(1, 3, 32, 32),)),
    "resnet50": lambda: (ember.models.resnet50(num_classes=10), (ember.randn(1, 3, 32, 32),)),
    "vit": lambda: (ember.models.vit(), (ember.randn(2, 1, 28, 28),)),
    "gpt": lambda: (ember.models.gpt(), (ember.randint(0, 50, (2, 8)),)),
    **{f"by_name {n}": (lambda n=n: (ember.models.by_name(n), (ember.randn(2, 1, 28, 28),)))
       for n in ["lenet", "cnn", "mlp", "resnet18", "resnet50", "vit"]},
    "dcgan generator": lambda: (
        _example("ported/dcgan.py", nz=8, ngf=4, ndf=4, nc=3).Generator(1),
        (ember.randn(2, 8, 1, 1),)),
    "dcgan discriminator": lambda: (
        _example("ported/dcgan.py", nz=8, ngf=4, ndf=4, nc=3).Discriminator(1),
        (ember.randn(2, 3, 64, 64),)),
    "mixed_modules": lambda: (_example("mixed_modules.py").SequenceClassifier(3, 16, 2),
                              (ember.randn(4, 10, 3),)),
    "train_fashion_mnist": lambda: (_example("train_fashion_mnist.py").CNN(),
                                    (ember.randn(2, 1, 28, 28),)),
    "mnist": lambda: (_example("ported/mnist.py").Net(), (ember.randn(2, 1, 28, 28),)),
    "mnist_forward_forward": _forward_forward,
    "siamese_network": lambda: (_example("ported/siamese_network.py").SiameseNetwork(),
                                (ember.randn(2, 1, 28, 28), ember.randn(2, 1, 28, 28))),
    "vae": _vae_parts,
    "buildmodel": lambda: (_example("ported/learn_the_basics/buildmodel.py").NeuralNetwork(),
                           (ember.randn(2, 28, 28),)),
    "quickstart": lambda: (_example("ported/learn_the_basics/quickstart.py").NeuralNetwork(),
                           (ember.randn(2, 28, 28),)),
    "actor_critic": lambda: (_example("ported/reinforcement_learning/actor_critic.py").Policy(),
                             (ember.randn(2, 4),)),
    "reinforce": lambda: (_example("ported/reinforcement_learning/reinforce.py").Policy(),
                          (ember.randn(2, 4),)),
    "super_resolution": lambda: (_example("ported/super_resolution/model.py").Net(3),
                                 (ember.randn(1, 1, 16, 16),)),
    **{f"word_language_model {k}": (lambda k=k: _word_language_model(k))
       for k in ["LSTM", "GRU", "RNN_TANH", "RNN_RELU", "Transformer"]},
}


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_models_and_examples_export(tmp_path, name):
    ember.manual_seed(9)
    model, args = _MODELS[name]()
    if isinstance(model, nn.Module):
        model.eval()
    _exported(model, args, tmp_path, tol=1e-4)


def test_vae_forward_exports_with_its_noise(tmp_path):
    # The reparameterization draws its noise with randn_like: a RandomNormalLike node, so the
    # reconstruction differs per run, while mu and logvar are the model's own.
    vae = _example("ported/vae.py").VAE()
    vae.eval()
    x = ember.rand(3, 784)
    path = tmp_path / "vae.onnx"
    ember.onnx.export(vae, x, path, input_names=["x"], dynamic_axes={"x": {0: "n"}})
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert _ops(model).count("RandomNormalLike") == 1
    with ember.no_grad():
        _, mu, logvar = vae(x)
    for got in (_ort(path, {"x": _numpy(x)}),
                [_numpy(t) for t in ember.onnx.load(path)(x)]):
        recon, m, lv = got
        assert recon.shape == (3, 784) and ((recon > 0) & (recon < 1)).all()
        _same(m, _numpy(mu), 1e-5)
        _same(lv, _numpy(logvar), 1e-5)


def test_time_sequence_prediction_exports(tmp_path):
    # A float64 LSTMCell: onnxruntime has no float64 LSTM kernel, so Ember's loader runs it.
    model = _example("ported/time_sequence_prediction.py").Sequence().double()
    model.eval()
    onnx_model = _exported(model, (ember.randn(3, 7, dtype=ember.float64),), tmp_path,
                           ort_runs=False)
    assert _ops(onnx_model).count("LSTM") == 14


def test_in_place_update_of_a_box(tmp_path):
    def overlay(x):  # the forward-forward example's label overlay, first step
        x_ = x.clone()
        x_[:, :3] *= 0.0
        x_[1:, 4:6] = x[:1, :2]
        return x_

    model = _exported(overlay, (ember.randn(3, 8),), tmp_path)
    assert "Where" in _ops(model)
    with pytest.raises(NotImplementedError, match=r"updates part of a tensor .* no box of it"):
        ember.onnx.export(lambda x: (x * 2).diagonal().zero_(), ember.randn(3, 3),
                          tmp_path / "d.onnx")
