"""ember.onnx.export: modules and functions exported, the files checked by ONNX's checker, run by
onnxruntime (the independent reference) and by Ember's importer with the model's own outputs;
dynamic axes; and what has no ONNX form refused by name."""

import io

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
    with pytest.raises(NotImplementedError, match=r"\[onnx.export\] .*'sort'.*no ONNX form"):
        ember.onnx.export(lambda t: ember.sort(t, 1)[0], x, tmp_path / "a.onnx")
    with pytest.raises(NotImplementedError, match=r"read a tensor's values on the host"):
        ember.onnx.export(lambda t: t if t.sum().item() > 0 else -t, x, tmp_path / "b.onnx")
    with pytest.raises(NotImplementedError, match=r"cannot be recorded: .*random"):
        ember.onnx.export(lambda t: F.dropout(t, 0.5, training=True), x, tmp_path / "r.onnx")
    with pytest.raises(KeyError, match=r"dynamic_axes names 'y'"):
        ember.onnx.export(lambda t: t + 1, x, tmp_path / "c.onnx", dynamic_axes={"y": [0]})
    with pytest.raises(ValueError, match=r"opset_version 11"):
        ember.onnx.export(lambda t: t + 1, x, tmp_path / "d.onnx", opset_version=11)
    with pytest.raises(TypeError, match=r"not a tensor"):
        ember.onnx.export(lambda t: 3, x, tmp_path / "e.onnx")
    assert not any(tmp_path.iterdir())  # nothing written on a refusal
