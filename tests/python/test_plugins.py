"""Plugins from Python: what discovery loaded, op libraries loaded with ember.load_plugin or found
on EMBER_PLUGIN_PATH and called through ember.ops, and broken plugin files reported, not raised."""

import os
import pathlib
import subprocess
import sys

import pytest

import ember
from helpers import assert_close, worker_env

# The op libraries the build tree makes (the template plugin and examples/custom_op); ctest says
# where (tests/CMakeLists.txt), and the build tree's layout is the default.
EXTENSIONS = pathlib.Path(os.environ.get(
    "EMBER_TEST_EXTENSIONS", pathlib.Path(ember.__file__).parents[2] / "lib" / "ember-extensions"))


def test_discovery_loaded_the_backends_next_to_the_core():
    loaded = {pathlib.Path(p["file"]).name: p for p in ember.plugins() if p["outcome"] == "loaded"}
    assert "libember-cpu.so" in loaded and "libember-reference.so" in loaded
    report = ember.plugin_report()
    assert any(d["source"] == "core library dir" for d in report["search_path"])
    types = {t["name"]: t for t in ember.device_types()}
    assert types["cpu"]["count"] == 1 and "cuda" in types
    if types["cuda"]["count"] == 0:
        assert types["cuda"]["reason"]  # 0 devices, and why
    assert ember.cuda.is_available() == (types["cuda"]["count"] > 0)


def test_an_op_library_loaded_at_run_time_is_callable_through_ember_ops():
    record = ember.load_plugin(EXTENSIONS / "libember-my_ext.so")
    assert record["outcome"] in ("loaded", "shadowed"), record
    names = [op["name"] for op in ember.ops.list_ops()]
    assert "my_ext::scaled_add" in names
    x, y = ember.randn(3, 4), ember.randn(3, 4)
    assert_close(ember.ops.my_ext.scaled_add(x, y, floats=[2.5]), x + 2.5 * y, rtol=1e-6)
    assert_close(ember.ops.call("my_ext::scaled_add", x, y, floats=[-1.0]), x - y, rtol=1e-6)
    with pytest.raises(ValueError, match="my_ext::scaled_add"):
        ember.ops.my_ext.scaled_add(x, ember.randn(2, 2), floats=[1.0])
    with pytest.raises(RuntimeError, match="no_such_op"):
        ember.ops.my_ext.no_such_op(x)


def test_a_plugin_on_ember_plugin_path_is_found_by_a_new_process():
    env = worker_env()
    env["EMBER_PLUGIN_PATH"] = str(EXTENSIONS)
    script = ("import ember\n"
              "x = ember.ones(2)\n"
              "print(ember.ops.my_ext.scaled_add(x, x, floats=[3.0]).tolist())\n")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[4.0, 4.0]"


def test_a_broken_plugin_file_is_reported_not_raised(tmp_path):
    bad = tmp_path / "libember-broken.so"
    bad.write_bytes(b"\x7fELF" + b"\0" * 60)
    record = ember.load_plugin(bad)
    assert record["outcome"] != "loaded" and record["reason"], record
    assert ember.ones(2).sum().item() == 2.0  # the process carries on


def test_importing_ember_maps_no_nccl_or_mpi_so_pytorch_can_follow():
    # The communication plugins open their vendor libraries on first use: after discovery the
    # process holds neither, so a later `import torch` brings its own NCCL.
    script = ("import ember\n"
              "ember.ones(1).sum()\n"
              "maps = open('/proc/self/maps').read()\n"
              "print([n for n in ('libnccl', 'libmpi') if n in maps])\n")
    r = subprocess.run([sys.executable, "-c", script], env=worker_env(), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
