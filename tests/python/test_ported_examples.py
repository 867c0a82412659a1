"""PyTorch's own example scripts (pytorch/examples), ported to Ember by renaming the imports and
swapping torchvision's data for Ember's (examples/python/ported/README.md), run as a user runs
them for a few steps: each must finish and its loss must fall as it does in PyTorch."""

import pathlib
import re
import subprocess
import sys

from helpers import worker_env

PORTED = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "ported"


def run(name, *args, limit=None, cwd=None, timeout=600):
    env = worker_env()
    if limit is not None:
        env["EMBER_EXAMPLE_LIMIT"] = str(limit)
    r = subprocess.run([sys.executable, "-W", "error", str(PORTED / name), *args],
                       capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def numbers(pattern, text):
    return [float(v) for v in re.findall(pattern, text)]


def test_regression_fits_its_polynomial():
    out = run("regression.py")
    loss = numbers(r"Loss: ([0-9.]+) after", out)
    assert loss and loss[0] < 1e-3, out
    assert "==> Actual function" in out


def test_mnist_trains_with_adadelta_and_steplr_and_saves(tmp_path):
    out = run("mnist.py", "--epochs", "2", "--log-interval", "2", "--save-model", limit=640,
              cwd=tmp_path)
    losses = numbers(r"Loss: ([0-9.]+)", out)
    tests = numbers(r"Test set: Average loss: ([0-9.]+)", out)
    accuracy = numbers(r"Accuracy: \d+/\d+ \((\d+)%\)", out)
    assert len(tests) == 2 and tests[1] < tests[0] < 2.3, out
    assert losses[-1] < losses[0] and accuracy[-1] > 40, out
    # torch.save(model.state_dict(), "mnist_cnn.pt"): loadable into the model again.
    import ember

    state = ember.load(tmp_path / "mnist_cnn.pt")
    assert set(state) == {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                          "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def test_vae_trains_and_writes_its_images(tmp_path):
    out = run("vae.py", "--epochs", "2", limit=512, cwd=tmp_path)
    train = numbers(r"Epoch: \d+ Average loss: ([0-9.]+)", out)
    test = numbers(r"Test set loss: ([0-9.]+)", out)
    assert len(train) == 2 and train[1] < train[0] and test[1] < test[0], out
    for name in ("reconstruction_1.png", "sample_2.png"):
        assert (tmp_path / "results" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_forward_forward_trains_each_layer_on_its_own_goodness():
    # A Linear subclass overriding train(), a plain list of layers, x[range(n), y] = ... indexing.
    out = run("mnist_forward_forward.py", "--epochs", "30", "--log-interval", "10", limit=500)
    losses = numbers(r"Loss:\s+([0-9.]+)", out)
    assert len(losses) == 6 and losses[2] < losses[0] and losses[5] < losses[3], out
    errors = numbers(r"(?:train|test) error: ([0-9.]+)", out)
    assert len(errors) == 2 and errors[0] < 0.9, out  # better than chance


def test_dcgan_runs_a_training_cycle_and_checkpoints(tmp_path):
    # import ember.backends.cudnn as cudnn; cudnn.benchmark = True; netG.apply(weights_init).
    import ember

    root = ember.datasets.find_fashion_mnist()
    out = run("dcgan.py", "--dataset", "mnist", "--dataroot", root, "--dry-run", "--outf",
              str(tmp_path), "--manualSeed", "1", "--workers", "0", limit=64)
    step = re.search(r"Loss_D: ([0-9.]+) Loss_G: ([0-9.]+) D\(x\): ([0-9.]+)", out)
    assert step, out
    assert 0 < float(step.group(3)) < 1  # the discriminator's output is a probability
    netG = ember.load(tmp_path / "netG_epoch_0.pth")
    assert netG["main.0.weight"].shape == (100, 512, 4, 4)
    assert (tmp_path / "fake_samples_epoch_000.png").read_bytes()[:4] == b"\x89PNG"


def test_time_sequence_prediction_fits_its_sine_waves_with_lbfgs(tmp_path):
    # PyTorch 2.15, same data and limit: test loss 7.0e-4 after step 1, 2.9e-4 after step 2.
    run("generate_sine_wave.py", cwd=tmp_path)
    out = run("time_sequence_prediction.py", "--steps", "2", limit=100, cwd=tmp_path)
    train = numbers(r"(?m)^loss: ([0-9.e-]+)$", out)
    test = numbers(r"test loss: ([0-9.e-]+)", out)
    assert len(test) == 2 and test[1] < 5e-3 and train[-1] < train[0] / 10, out
    assert (tmp_path / "predict1.npy").exists() or (tmp_path / "predict1.pdf").exists()
