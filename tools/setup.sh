#!/usr/bin/env bash
# Installs what Ember needs to build and test on Debian 12, by package name.
# Idempotent and quick when everything is already present.
set -euo pipefail

# liblapack-dev is what the CPU backend links (liblapack.so); libopenblas0-openmp provides the
# LAPACK it runs (Note [LAPACK in the CPU backend] in backends/cpu/ops/linalg.cpp).
# dataset-fashion-mnist is the data of `ember train`; bible-kjv gives the public-domain text of
# `ember train --task charlm` (README).
packages=(
  build-essential cmake ninja-build ccache pkg-config
  python3-pip libfmt-dev libboost-dev libdlpack-dev nlohmann-json3-dev zlib1g-dev
  libzip-dev libonnx-dev libprotobuf-dev
  liblapack-dev libopenblas0-openmp
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  lintian
  file binutils
  python3-dev python3-venv
  dataset-fashion-mnist bible-kjv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all packages present"
fi

# Note [oneDNN from the wheels]
# The CPU backend is built against oneDNN 3 (Debian 12 ships 2.6, whose channels-last convolutions
# run at half the speed): the onednn-cpu-gomp / onednn-devel-cpu-gomp wheels, built for GNU OpenMP
# (the runtime of Ember's own loops, so both share one thread pool). They are fetched by name and
# version, checked against the hashes below and unpacked once into $EMBER_DEPS_DIR/onednn-3.2,
# where CMake finds them (EMBER_ONEDNN_DIR); the CPU backend's package ships the library beside
# its plugin, so a deployment does not depend on the distribution's version.
onednn_version=2023.2.0  # oneDNN 3.2
deps=${EMBER_DEPS_DIR:-$HOME/.cache/ember-deps}
onednn=$deps/onednn-3.2
if [[ ! -e $onednn/lib/libdnnl.so.3 || ! -e $onednn/include/oneapi/dnnl/dnnl.hpp ]]; then
  echo "[setup] fetching oneDNN $onednn_version into $onednn"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" \
    "onednn-cpu-gomp==$onednn_version" "onednn-devel-cpu-gomp==$onednn_version"
  (cd "$tmp" && sha256sum --check --quiet) <<'EOF'
2f22a54d6a890ed14bfa185d42a4be65d8b5b1df85dc1f0f3a9abe31620416fb  onednn_cpu_gomp-2023.2.0-py2.py3-none-manylinux1_x86_64.whl
9763c69e8c907e119056bd52ad918ca84ac9ba939d130a99dfa95ccca3e5e284  onednn_devel_cpu_gomp-2023.2.0-py2.py3-none-manylinux1_x86_64.whl
EOF
  # A wheel is a zip: each one's <name>.data/data/ is an install prefix. Zip has no symlinks, so
  # the library's aliases are copies; they become links to the one real file again.
  python3 - "$tmp" "$tmp/prefix" <<'EOF'
import glob, os, sys, zipfile
src, prefix = sys.argv[1], sys.argv[2]
for wheel in sorted(glob.glob(os.path.join(src, "*.whl"))):
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if len(parts) < 4 or not parts[0].endswith(".data") or parts[1] != "data" or info.is_dir():
                continue
            target = os.path.join(prefix, *parts[2:])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(info) as f, open(target, "wb") as out:
                out.write(f.read())
lib = os.path.join(prefix, "lib")
for alias in ("libdnnl.so.3", "libdnnl.so"):
    os.remove(os.path.join(lib, alias))
    os.symlink("libdnnl.so.3.2", os.path.join(lib, alias))
EOF
  mkdir -p "$deps"
  rm -rf "$onednn.partial"
  mv "$tmp/prefix" "$onednn.partial"
  rm -rf "$onednn"
  mv "$onednn.partial" "$onednn"
  rm -rf "$tmp"
  trap - EXIT
else
  echo "[setup] oneDNN present in $onednn"
fi

# Note [Python build dependencies]
# The Python package (api/python) is built with nanobind and packaged by scikit-build-core; its
# tests use NumPy, pytest and mypy, and the ONNX tests the onnx package (the newest with a
# wheel for CPython 3.11: its node test suite and model-building helpers) with the protobuf and
# ml_dtypes it needs, pinned with it, and onnxruntime (with its flatbuffers), which runs the
# models Ember exports as the independent reference. They come from the Python package index by name and exact
# version into a virtual environment of their own, $EMBER_DEPS_DIR/python, which tools/test.sh
# hands to CMake (Python_EXECUTABLE) and pytest; nothing is installed into the system's Python.
python_pins=(nanobind==3.1.0 scikit-build-core==1.1.2 numpy==2.4.6 pytest==9.2.0 mypy==2.4.1
  hypothesis==6.170.27 onnx==1.23.2 protobuf==7.36.2 ml_dtypes==0.7.0 onnxruntime==1.32.0
  flatbuffers==25.12.19)
pyenv=$deps/python
if ! "$pyenv/bin/python" - "${python_pins[@]}" 2>/dev/null <<'EOF_PY'; then
import importlib.metadata as md, sys
sys.exit(any(md.version(p.split("==")[0]) != p.split("==")[1] for p in sys.argv[1:]))
EOF_PY
  echo "[setup] installing ${python_pins[*]} into $pyenv"
  mkdir -p "$deps"
  python3 -m venv "$pyenv"
  "$pyenv/bin/python" -m pip install --quiet --disable-pip-version-check "${python_pins[@]}"
else
  echo "[setup] Python build dependencies present in $pyenv"
fi
