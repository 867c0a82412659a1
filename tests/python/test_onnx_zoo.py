"""Real model classes exported by PyTorch's ONNX exporters (tests/python/fixtures/make_onnx_zoo.py:
torchvision's MobileNetV3, timm's VisionTransformer, Hugging Face Transformers' GPT-2 with a
dynamic batch and sequence and BERT, an LSTM tagger, a U-Net with ConvTranspose and Resize) run
by Ember's InferenceSession match PyTorch's outputs and onnxruntime's on the same file within
1e-4 relative, at every optimization level, on the CPU and the reference backend."""

import pathlib

import numpy as np
import pytest

import ember

ort = pytest.importorskip("onnxruntime")  # pinned by tools/setup.sh

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
ZOO = np.load(FIXTURES / "zoo.npz")
MODELS = sorted({key.split("/")[0] for key in ZOO.files})


def _runs(name):
    """The fixture's input sets and PyTorch's outputs: [({input: array}, expected)]."""
    runs = sorted({int(key.split("/")[1]) for key in ZOO.files if key.startswith(name + "/")})
    out = []
    for r in runs:
        prefix = f"{name}/{r}/"
        feeds = {k[len(prefix):]: ZOO[k] for k in ZOO.files if k.startswith(prefix)
                 and not k.endswith("/out")}
        out.append((feeds, ZOO[prefix + "out"]))
    return out


def _close(actual, expected, what):
    scale = max(float(np.abs(expected).max()), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4 * scale, err_msg=what)


def test_the_zoo_has_every_kind_of_model():
    assert MODELS == ["bert", "gpt2", "lstm_tagger", "mobilenet_v3", "unet", "vit"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("level", ["ORT_DISABLE_ALL", "ORT_ENABLE_ALL"])
def test_matches_pytorch_and_onnxruntime(name, level):
    path = str(FIXTURES / f"{name}.onnx")
    options = ember.onnx.SessionOptions()
    options.graph_optimization_level = getattr(ember.onnx.GraphOptimizationLevel, level)
    ours = ember.onnx.InferenceSession(path, options)
    theirs = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape, i.type) for i in ours.get_inputs()] == \
           [(i.name, i.shape, i.type) for i in theirs.get_inputs()]
    for feeds, expected in _runs(name):  # several batch and sequence sizes through one session
        (mine,) = ours.run(None, feeds)
        (other,) = theirs.run(None, feeds)
        assert mine.shape == expected.shape
        _close(mine, expected, f"{name} at {level}, inputs {[v.shape for v in feeds.values()]}: "
                               "against PyTorch")
        _close(mine, other, f"{name} at {level}: against onnxruntime")


@pytest.mark.parametrize("name", MODELS)
def test_runs_on_the_reference_backend(name):
    session = ember.onnx.InferenceSession(str(FIXTURES / f"{name}.onnx"), device="reference")
    feeds, expected = _runs(name)[-1]
    (mine,) = session.run(None, feeds)
    _close(mine, expected, f"{name} on the reference backend")
