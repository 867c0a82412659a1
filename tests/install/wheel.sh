#!/usr/bin/env bash
# The Python package as a user installs it (ctest runs this as `python_wheel`):
#   1. `pip wheel .` builds one wheel with scikit-build-core (pyproject.toml) in its own build
#      tree, BUILD_DIR-wheel beside BUILD_DIR, taking BUILD_DIR's objects from ccache (Note [The
#      wheel's build tree reuses the build's objects]);
#   2. the wheel holds _C, the stubs, py.typed, the libraries, every backend plugin built and the
#      command line, and nothing of the build machine's paths in its RPATHs;
#   3. a fresh virtual environment installs it from the file alone (no index), and from a neutral
#      directory, with no EMBER_* or PYTHONPATH set, `import ember` finds its backends and
#      computes; the `ember` console script runs.
# Usage: tests/install/wheel.sh BUILD_DIR PYTHON   (PYTHON has scikit-build-core and nanobind:
# tools/setup.sh's $EMBER_DEPS_DIR/python).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: tests/install/wheel.sh BUILD_DIR PYTHON}" && pwd)
python=${2:?usage: tests/install/wheel.sh BUILD_DIR PYTHON}
work=$build/wheel-check
fail() { echo "wheel check FAILED: $*" >&2; exit 1; }
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
step() { echo; echo "== $*"; }

# Note [The wheel's build tree reuses the build's objects]
# ccache (with CCACHE_BASEDIR at the checkout, as tools/test.sh sets it) rewrites the paths under
# the checkout relative to the compiler's working directory, the build tree. The wheel's tree is
# a sibling of BUILD_DIR, at the same depth, so every source and include path reads the same from
# both, and it is given BUILD_DIR's compilers by path (scikit-build-core would otherwise pick g++
# where BUILD_DIR has c++, a different compiler name to ccache): the wheel then compiles only the
# extension module, and takes every other object from the cache.
wheel_build=$(dirname "$build")/$(basename "$build")-wheel
compilers=()
for lang in C CXX CUDA; do
  c=$(sed -n "s/^CMAKE_${lang}_COMPILER:[A-Z]*=//p" "$build/CMakeCache.txt")
  [[ -n $c ]] && compilers+=("-Ccmake.define.CMAKE_${lang}_COMPILER=$c")
done
rm -rf "$work" && mkdir -p "$work/dist"
step "pip wheel (build tree $wheel_build)"
"$python" -m pip wheel "$root" --no-build-isolation --no-deps --quiet -w "$work/dist" \
  -Cbuild-dir="$wheel_build" "${compilers[@]}" >"$work/wheel.log" 2>&1 ||
  { tail -50 "$work/wheel.log"; fail "pip wheel"; }
wheel=$(ls "$work"/dist/ember-*.whl)
echo "$(basename "$wheel"): $(du -h "$wheel" | cut -f1)"

step "contents"
listing=$("$python" -m zipfile -l "$wheel")
for f in ember/__init__.py ember/py.typed ember/_C/__init__.pyi ember/nn/__init__.py \
         ember/lib/libember_core.so ember/lib/libember.so ember/lib/libember_graph.so \
         ember/lib/ember-plugins/libember-cpu.so \
         ember/lib/ember-plugins/cpu/libdnnl.so.3 ember/lib/ember-plugins/libember-reference.so \
         ember/bin/ember; do
  grep -q "$f" <<<"$listing" || fail "the wheel lacks $f"
done
grep -q 'ember/_C\.cpython-.*\.so' <<<"$listing" || fail "the wheel lacks the extension module"
mkdir -p "$work/unpacked" && (cd "$work/unpacked" && "$python" -m zipfile -e "$wheel" .)
while IFS= read -r so; do
  rpath=$(readelf -d "$so" | sed -n 's/.*(RUNPATH\|RPATH).*\[\(.*\)\]/\1/p')
  case "$rpath" in *"$build"*|*/work/*|*/home/*) fail "$so has a build-machine RPATH: $rpath" ;; esac
done < <(find "$work/unpacked/ember" -name '*.so*' -type f)
echo "every RPATH is relative to the package"

step "a fresh virtual environment, installed from the file"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel" || fail "pip install"
cd /
check=$(env -i HOME="$HOME" PATH=/usr/bin:/bin "$work/venv/bin/python" -c '
import ember
devices = ember.devices()
print(devices)
assert ember.device("cpu") in devices, devices
loaded = [p["file"] for p in ember.plugins() if p["outcome"] == "loaded"]
assert any(f.endswith("/ember/lib/ember-plugins/libember-cpu.so") for f in loaded), loaded
x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
(x @ x).sum().backward()
assert x.grad.tolist() == [[7.0, 11.0], [9.0, 13.0]], x.grad
print("computed on", x.device, "with", len(loaded), "plugins loaded")
') || fail "import ember in the fresh environment"
echo "$check"
env -i HOME="$HOME" PATH=/usr/bin:/bin "$work/venv/bin/ember" devices | contains '^cpu ' || fail "the ember console script"
env -i HOME="$HOME" PATH=/usr/bin:/bin "$work/venv/bin/python" -m ember --version | contains '^ember ' || fail "python -m ember"
echo "the console script and python -m ember run"
step "wheel check passed"
