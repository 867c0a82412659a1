"""ember.save / ember.load (ember.io): safetensors written and read back exactly, the file format
checked by a reader written here with NumPy, modules restored from their state_dict, PyTorch's
torch.save files read against what PyTorch wrote beside them, and the errors."""

import json
import os
import pathlib
import stat
import struct
import threading
import time

import numpy as np
import pytest

import ember
from ember import nn

HERE = pathlib.Path(__file__).resolve().parent
TORCH_FILES = HERE.parent / "fuzz" / "corpus" / "torch_fuzz"  # written by torch.save
TWINS = HERE.parent / "api" / "io" / "fixtures"  # their contents, written by safetensors.torch

# safetensors dtype names and their NumPy types (bfloat16 handled apart).
ST_NUMPY = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
            "I32": np.int32, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """A safetensors file parsed with json and NumPy alone: ({name: array}, metadata); bfloat16
    tensors come back as float32 (their bits shifted into place)."""
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        chunk = data[begin:end]
        if entry["dtype"] == "BF16":
            bits = np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16
            array = bits.view(np.float32)
        else:
            array = np.frombuffer(chunk, dtype=np.dtype(ST_NUMPY[entry["dtype"]]).newbyteorder("<"))
        out[name] = array.reshape(entry["shape"])
    return out, meta


def to_numpy(t):
    t = t.detach()  # a parameter PyTorch saved loads requiring grad, as in PyTorch
    return t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy()


@pytest.fixture
def arrays(rng):
    """Arrays of every dtype safetensors and Ember share, of several shapes."""
    out = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f64": rng.standard_normal(5),
        "f16": rng.standard_normal((2, 2, 2)).astype(np.float16),
        "i64": rng.integers(-2**62, 2**62, (7,)),
        "i32": rng.integers(-2**31, 2**31 - 1, (2, 3), dtype=np.int32),
        "i8": np.array([-128, -1, 0, 127], dtype=np.int8),
        "u8": rng.integers(0, 256, (4, 1, 3), dtype=np.uint8),
        "bool": rng.integers(0, 2, (6,)).astype(bool),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    return out


def test_round_trip_of_every_dtype_and_shape(tmp_path, arrays):
    tensors = {name: ember.tensor(a) for name, a in arrays.items()}
    # bfloat16: values it represents exactly (8 significant bits).
    bf = (np.arange(-8, 8, dtype=np.float32) * 0.375).reshape(4, 4)
    tensors["bf16"] = ember.tensor(bf).to(ember.bfloat16)
    # A transposed view and a slice are written as their values.
    tensors["transposed"] = ember.tensor(arrays["f32"]).t()
    tensors["sliced"] = ember.tensor(arrays["f64"])[1::2]
    path = tmp_path / "all.safetensors"
    ember.save(tensors, path)
    loaded = ember.load(path)
    assert set(loaded) == set(tensors)
    expected = dict(arrays, bf16=bf, transposed=arrays["f32"].T, sliced=arrays["f64"][1::2])
    for name, want in expected.items():
        got = loaded[name]
        assert got.dtype == tensors[name].dtype, name
        assert tuple(got.shape) == want.shape, name
        assert got.device == ember.device("cpu")
        np.testing.assert_array_equal(to_numpy(got), want, err_msg=name)
    # The file itself, read without Ember: the same values under the same names.
    parsed, meta = read_safetensors(path)
    assert meta == {}
    for name, want in expected.items():
        assert parsed[name].shape == want.shape, name
        np.testing.assert_array_equal(parsed[name], want, err_msg=name)


def test_metadata_round_trip(tmp_path):
    path = tmp_path / "m.safetensors"
    meta = {"epoch": "3", "arch": "lenet", "note": "naïve — ünïcode", "empty": ""}
    ember.io.save({"w": ember.ones(2)}, str(path), metadata=meta)
    assert ember.io.load_metadata(path) == meta
    assert read_safetensors(path)[1] == meta
    with pytest.raises(TypeError, match="metadata"):
        ember.save({"w": ember.ones(2)}, path, metadata={"epoch": 3})


def test_a_module_restored_from_its_state_dict_computes_the_same(tmp_path):
    ember.manual_seed(1)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 3))
    x = ember.randn(8, 6)
    model.train()
    model(x)  # updates the batch-norm statistics, which are buffers
    model.eval()
    expected = model(x).detach().numpy()
    path = tmp_path / "model.safetensors"
    ember.save(model.state_dict(), path)
    ember.manual_seed(2)
    fresh = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 3))
    fresh.eval()
    assert not np.array_equal(fresh(x).detach().numpy(), expected)
    fresh.load_state_dict(ember.load(path))
    np.testing.assert_array_equal(fresh(x).detach().numpy(), expected)
    state = ember.load(path, map_location="cpu")
    assert set(state) == set(model.state_dict())
    assert "2.running_mean" in state


def test_save_is_atomic_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    ember.save({"a": ember.arange(4)}, path)
    with pytest.raises(TypeError, match="'b' is of type int"):
        ember.save({"a": ember.arange(9), "b": 1}, path)
    assert ember.load(path)["a"].tolist() == [0, 1, 2, 3]
    ember.save({"a": ember.arange(5)}, path)
    assert ember.load(path)["a"].tolist() == [0, 1, 2, 3, 4]
    assert sorted(os.listdir(tmp_path)) == ["ckpt.safetensors"]
    assert ember.save is ember.io.save and ember.load is ember.io.load


def _read_fifo_in_background(path, seconds=20.0):
    """Starts reading the FIFO at `path` without blocking anyone; returns (thread, bytearray) with
    everything written until the writer closes it, or what came within `seconds`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    got = bytearray()

    def run():
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    got.extend(chunk)
                elif chunk == b"" and got:
                    return  # the writer closed it
                else:
                    time.sleep(0.002)
        finally:
            os.close(fd)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, got


def test_save_writes_what_the_path_names(tmp_path):
    # As torch.save's open(path, "wb"): a symlink's target is written and the link stays, a FIFO
    # is written through, a directory is refused; only a regular file is replaced (atomically).
    real = tmp_path / "run1.safetensors"
    ember.save({"a": ember.arange(2)}, real)
    link = tmp_path / "latest.safetensors"
    link.symlink_to("run1.safetensors")
    ember.save({"a": ember.arange(3)}, link)
    assert link.is_symlink()
    assert ember.load(real)["a"].tolist() == [0, 1, 2]

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    state = {"w": ember.full((50_000,), 0.5)}  # more than a pipe holds
    thread, got = _read_fifo_in_background(fifo)
    ember.save(state, fifo)
    thread.join()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    ember.save(state, tmp_path / "regular.safetensors")
    assert bytes(got) == (tmp_path / "regular.safetensors").read_bytes()

    (tmp_path / "d").mkdir()
    with pytest.raises(OSError, match="is a directory, not a file") as info:
        ember.save(state, tmp_path / "d")
    assert isinstance(info.value, ember.IoError)
    assert (tmp_path / "d").is_dir()
    assert sorted(os.listdir(tmp_path)) == ["d", "latest.safetensors", "pipe", "regular.safetensors",
                                            "run1.safetensors"]


def test_a_missing_file_is_file_not_found(tmp_path):
    missing = tmp_path / "nope.safetensors"
    for load in (ember.load, ember.io.load_metadata, ember.io.load_torch):
        with pytest.raises(FileNotFoundError, match="No such file or directory") as info:
            load(missing)
        assert isinstance(info.value, ember.FileNotFoundError)
        assert isinstance(info.value, ember.IoError) and "nope.safetensors" in str(info.value)
    with pytest.raises(FileNotFoundError):
        ember.save({"a": ember.ones(1)}, tmp_path / "no_such_dir" / "a.safetensors")


def test_malformed_files_are_io_errors(tmp_path):
    good = tmp_path / "good.safetensors"
    ember.save({"w": ember.randn(64, 64)}, good)
    raw = good.read_bytes()
    cases = {
        "truncated.safetensors": raw[:len(raw) // 2],
        "garbage.safetensors": b"\x07not a safetensors file at all",
        "short.safetensors": b"\x01\x02",
        "bad_json.safetensors": struct.pack("<Q", 4) + b"{x}}",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ember.IoError) as info:
            ember.load(tmp_path / name)
        assert isinstance(info.value, OSError) and not isinstance(info.value, FileNotFoundError)
        assert name in str(info.value)
    with pytest.raises(ember.IoError, match="not a regular file"):
        ember.load(tmp_path)
    for bad in ("bad_truncated.pt", "bad_legacy.pt", "bad_numpy_array.pt", "bad_compressed.pt"):
        with pytest.raises(ember.IoError):
            ember.load(TORCH_FILES / bad)


def test_header_whitespace_is_what_the_reference_reader_takes(tmp_path):
    # The reference reader parses the header with serde_json: space, tab, newline and carriage
    # return may pad it (and sit inside the JSON); other whitespace and a leading one may not.
    entry = '{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
    data = struct.pack("<2f", 1.5, -2.0)

    def write(header):
        path = tmp_path / "h.safetensors"
        raw = header.encode()
        path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)
        return path

    for padding in ("\n", "\t\t", "\r\n", " \t\r\n"):
        assert ember.load(write('{"a":' + entry + "}" + padding))["a"].tolist() == [1.5, -2.0]
    assert ember.load(write('{\n\t"a" :\r\n' + entry + "\n}"))["a"].tolist() == [1.5, -2.0]
    for bad in ('{"a":' + entry + "}\f", '{"a":' + entry + "}\v", '{"a":' + entry + "}\u00a0",
                '\n{"a":' + entry + "}"):
        with pytest.raises(ember.IoError):
            ember.load(write(bad))


def test_paths_and_arguments(tmp_path):
    ember.save({"a": ember.ones(2)}, str(tmp_path / "s.safetensors"))
    assert ember.load(tmp_path / "s.safetensors")["a"].tolist() == [1.0, 1.0]
    with open(tmp_path / "s.safetensors", "rb") as f:  # a file object, as torch.load takes
        assert ember.load(f)["a"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="path .* or a binary file object"):
        ember.load(3)
    # A .safetensors path holds a dict of tensors only.
    with pytest.raises(TypeError, match="state_dict"):
        ember.save(nn.Linear(2, 2), tmp_path / "m.safetensors")
    with pytest.raises(TypeError, match="keys must be str"):
        ember.save({1: ember.ones(1)}, tmp_path / "m.safetensors")


# ------------------------------------------------------------------------------------------------
# Files written by PyTorch (tests/api/io/fixtures/make_torch_fixtures.py)


@pytest.mark.parametrize("name", ["valid_state_dict", "valid_checkpoint", "valid_parameters",
                                  "valid_empty", "valid_big_endian"])
def test_torch_save_files_hold_what_pytorch_wrote(name):
    tensors, values = ember.io.load_torch(TORCH_FILES / f"{name}.pt")
    twin, twin_values = read_safetensors(TWINS / f"{name}.safetensors")
    assert set(tensors) == set(twin)
    for key, want in twin.items():
        got = tensors[key]
        assert tuple(got.shape) == want.shape, key
        np.testing.assert_array_equal(to_numpy(got), want, err_msg=key)
    assert values == twin_values
    # ember.load gives the object as saved, nested (torch.load's result); flattened, it is
    # what load_torch names.
    loaded = ember.load(TORCH_FILES / f"{name}.pt")
    flat = {}

    def walk(v, prefix):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{prefix}.{k}" if prefix else str(k))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{prefix}.{i}" if prefix else str(i))
        elif isinstance(v, ember.Tensor):
            flat[prefix] = v
    walk(loaded, "")
    assert set(flat) == set(tensors)
    for key, t in flat.items():
        assert t.equal(tensors[key]), key


def test_a_torch_state_dict_has_the_values_the_fixture_script_made():
    sd = ember.load(TORCH_FILES / "valid_state_dict.pt")
    assert sd["i64"].dtype == ember.int64 and sd["i64"].tolist() == list(range(-3, 3))
    assert sd["i32"].dtype == ember.int32 and sd["i32"].tolist() == [0, -7, -14, -21, -28]
    assert sd["i8"].tolist() == [-128, -1, 0, 127] and sd["u8"].tolist() == [0, 1, 200, 255]
    assert sd["bool"].dtype == ember.bool and sd["bool"].tolist() == [True, False, True]
    assert sd["scalar"].dim() == 0 and sd["scalar"].item() == 2.5
    assert tuple(sd["empty"].shape) == (0, 3)
    assert sd["f16"].dtype == ember.float16 and sd["bf16"].dtype == ember.bfloat16
    np.testing.assert_array_equal(sd["offset_view"].numpy(), sd["transposed"].numpy().T[1:3, 2:5])
    np.testing.assert_array_equal(sd["tied_a"].numpy(), sd["tied_b"].numpy())
    _, values = ember.io.load_torch(TORCH_FILES / "valid_checkpoint.pt")
    assert values["epoch"] == "3" and values["best_acc"] == "0.875" and values["arch"] == "mlp"
    assert values["amp"] == "False" and values["note"] == "None" and values["lrs.1"] == "0.01"


def test_torch_save_read_by_ember(tmp_path, torch):
    g = torch.Generator().manual_seed(0)
    state = {"w": torch.randn(3, 4, generator=g), "n": torch.arange(5),
             "h": torch.randn(2, generator=g).half(), "nested": {"b": torch.ones(2, dtype=torch.bool)}}
    torch.save(state, tmp_path / "t.pt")
    got = ember.load(tmp_path / "t.pt")
    assert set(got) == {"w", "n", "h", "nested"} and set(got["nested"]) == {"b"}
    for e, want in ((got["w"], state["w"]), (got["n"], state["n"]), (got["h"], state["h"]),
                    (got["nested"]["b"], state["nested"]["b"])):
        np.testing.assert_array_equal(e.numpy(), want.numpy())
    # And the other way: what Ember saves, PyTorch loads (weights_only, its default).
    ember.save({"model": {"w": ember.ones(2, 3).t()}, "epoch": 4, "lrs": [0.1]}, tmp_path / "e.pt")
    back = torch.load(tmp_path / "e.pt", weights_only=True)
    assert back["epoch"] == 4 and back["lrs"] == [0.1]
    np.testing.assert_array_equal(back["model"]["w"].numpy(), np.ones((3, 2), np.float32))



# ------------------------------------------------------------------------------------------------
# Any object, as torch.save and torch.load (Note [Files PyTorch reads] in ember/io.py)


def test_checkpoints_of_any_shape_round_trip_nested(tmp_path):
    model = nn.Linear(3, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(ember.ones(1, 3)).sum().backward()
    opt.step()
    ck = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 7,
          "best": 0.875, "arch": "linear", "flags": (True, None), "lrs": [0.1, 0.01]}
    ember.save(ck, tmp_path / "ck.pt")
    back = ember.load(tmp_path / "ck.pt")
    assert back["epoch"] == 7 and back["best"] == 0.875 and back["arch"] == "linear"
    assert back["flags"] == (True, None) and back["lrs"] == [0.1, 0.01]
    assert set(back["model"]) == {"weight", "bias"}
    assert back["model"]["weight"].equal(model.weight.detach())
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(back["model"])
    assert fresh.weight.equal(model.weight)
    opt2 = ember.optim.SGD(fresh.parameters(), lr=0.5, momentum=0.9)
    opt2.load_state_dict(back["optimizer"])
    assert opt2.param_groups[0]["lr"] == 0.1
    # Views and non-contiguous tensors are saved as their values.
    t = ember.arange(12.0).reshape(3, 4).t()
    ember.save([t, t[1:], ember.ones(2, dtype=ember.bfloat16)], tmp_path / "views.pt")
    views = ember.load(tmp_path / "views.pt")
    assert views[0].tolist() == t.tolist() and views[1].tolist() == t[1:].tolist()
    assert views[2].dtype == ember.bfloat16


def test_whole_modules_load_only_when_trusted(tmp_path):
    model = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 1))
    ember.save(model, tmp_path / "model.pt")
    with pytest.raises(ember.IoError, match="not allowed"):
        ember.load(tmp_path / "model.pt")  # weights_only=True is the default, as in PyTorch
    back = ember.load(tmp_path / "model.pt", weights_only=False)
    x = ember.randn(3, 2)
    assert type(back) is type(model) and back(x).equal(model(x))
    assert isinstance(back[0].weight, nn.Parameter) and back[0].weight.requires_grad


class _Config:
    def __init__(self, lr):
        self.lr = lr


def test_safe_globals_allow_named_classes_in_weights_only_loads(tmp_path):
    ember.save({"config": _Config(0.25), "w": ember.ones(2)}, tmp_path / "c.pt")
    with pytest.raises(ember.IoError, match="_Config' is not allowed"):
        ember.load(tmp_path / "c.pt")
    with ember.serialization.safe_globals([_Config]):
        got = ember.load(tmp_path / "c.pt")
    assert got["config"].lr == 0.25 and got["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ember.IoError):
        ember.load(tmp_path / "c.pt")  # the allowance ended with the block
    ember.serialization.add_safe_globals([_Config])
    try:
        assert ember.serialization.get_safe_globals() == [_Config]
        assert ember.load(tmp_path / "c.pt")["config"].lr == 0.25
    finally:
        ember.serialization.clear_safe_globals()


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.fc(x))


def test_whole_modules_load_weights_only_when_their_classes_are_allowed(tmp_path):
    # torch.save(model, f); with safe_globals([...]): torch.load(f) -- PyTorch's examples.
    net = _Net().eval()
    with open(tmp_path / "net.pt", "wb") as f:
        ember.save(net, f)
    with pytest.raises(ember.IoError, match="is not allowed"):
        ember.load(tmp_path / "net.pt")
    with pytest.raises(ember.IoError, match="Dropout' is not allowed"):
        with ember.serialization.safe_globals([_Net, nn.modules.linear.Linear]):
            ember.load(tmp_path / "net.pt")
    with ember.serialization.safe_globals([_Net, nn.modules.linear.Linear,
                                           nn.modules.dropout.Dropout]):
        with open(tmp_path / "net.pt", "rb") as f:
            back = ember.load(f)
    x = ember.randn(4, 3)
    assert type(back) is _Net and back(x).equal(net(x))


def test_file_objects_and_map_location(tmp_path):
    import io

    buf = io.BytesIO()
    ember.save({"a": [ember.ones(2)], "n": 1}, buf)
    buf.seek(0)
    got = ember.load(buf, map_location="reference")
    assert got["n"] == 1 and got["a"][0].device.type == "reference"
    with open(tmp_path / "f.pt", "wb") as f:
        ember.save({"w": ember.zeros(3)}, f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert ember.load(f, map_location=lambda t, loc: t * 2)["w"].tolist() == [0, 0, 0]


def test_parameters_saved_requiring_grad_load_requiring_grad(tmp_path):
    # (A dict of tensors alone is a safetensors file, which holds no requires_grad.)
    ember.save({"p": nn.Parameter(ember.ones(2)), "t": ember.ones(2), "step": 1}, tmp_path / "p.pt")
    got = ember.load(tmp_path / "p.pt")
    assert got["p"].requires_grad and not got["t"].requires_grad


def test_hostile_torch_files_are_io_errors(tmp_path):
    import zipfile

    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.")
    for weights_only in (None, True):
        with pytest.raises(ember.IoError, match="os.system' is not allowed"):
            ember.load(bad, weights_only=weights_only)
    (tmp_path / "cut.pt").write_bytes(bad.read_bytes()[:30])
    with pytest.raises(ember.IoError):
        ember.load(tmp_path / "cut.pt", weights_only=False)
