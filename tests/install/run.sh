#!/usr/bin/env bash
# Ember as an outside project sees it (ctest runs this as `install_check`):
#   1. `cmake --install` into a prefix; the layout, SONAMEs and symlinks, no private header;
#   2. every installed header compiles on its own (this folder's CMakeLists.txt); pkg-config;
#   3. every project in examples/ configured with find_package(Ember) against the prefix, built
#      and run (the custom op with gradcheck, the custom backend with `ember conformance`);
#   4. the prefix moved elsewhere still works and reports its new plugin directory;
#   5. one application binary with only the reference backend, only cpu, both, and none;
#   6. find_package(Ember) refuses another major version;
#   7. the Debian packages (tools/package.sh): contents, a deployment made of them, lintian, and
#      dpkg installing and removing them in a fresh root (debs.sh).
# Usage: tests/install/run.sh BUILD_DIR   (a configured and built tree; work goes to
# BUILD_DIR/install-check).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: tests/install/run.sh BUILD_DIR}" && pwd)
work=$build/install-check
prefix=$work/prefix
jobs=${EMBER_JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

step() { echo; echo "== $*"; }
fail() { echo "install check FAILED: $*" >&2; exit 1; }
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# expect_fail <what> <pattern> <command...>: the command must fail and print <pattern>.
expect_fail() {
  local what=$1 pattern=$2 out
  shift 2
  if out=$("$@" 2>&1); then fail "$what succeeded: $out"; fi
  grep -q -- "$pattern" <<<"$out" || fail "$what failed without '$pattern': $out"
  echo "$what refused as expected: $(grep -m1 -- "$pattern" <<<"$out")"
}
# configure_build <source> <binary> [cmake args...]: an outside project against the prefix.
configure_build() {
  local src=$1 bin=$2
  shift 2
  cmake -S "$src" -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    "${launcher[@]}" "$@" >"$bin.configure.log" 2>&1 || { cat "$bin.configure.log"; fail "configure $src"; }
  cmake --build "$bin" -j "$jobs" >"$bin.build.log" 2>&1 || { cat "$bin.build.log"; fail "build $src"; }
}

rm -rf "$work"
mkdir -p "$work"

step "1. cmake --install into $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=lib
for f in $libdir/libember_core.so $libdir/libember.so $libdir/libember_graph.so bin/ember \
  include/ember/ember.h include/ember/graph/graph.h include/ember/graph/onnx.h \
  include/ember/tensor.h include/ember/nn.h include/ember/optim.h include/ember/data.h \
  include/ember/io.h include/ember/version.h include/ember/plugin_abi.h include/ember/ops.def \
  include/ember/plugin_sdk.hpp $libdir/cmake/Ember/EmberConfig.cmake \
  $libdir/cmake/Ember/EmberConfigVersion.cmake $libdir/cmake/Ember/EmberTargets.cmake \
  $libdir/cmake/Ember/EmberPlugin.cmake $libdir/cmake/Ember/plugin.map \
  $libdir/pkgconfig/ember.pc $libdir/pkgconfig/ember-plugin-sdk.pc \
  $libdir/ember-plugins/libember-cpu.so $libdir/ember-plugins/libember-reference.so \
  $libdir/ember-plugins/cpu/libdnnl.so.3; do
  [[ -e $prefix/$f ]] || fail "$f is not installed"
done
for lib in ember_core ember ember_graph; do
  soname=$(readelf -d "$prefix/$libdir/lib$lib.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ $soname == lib$lib.so.0 ]] || fail "lib$lib.so has SONAME '$soname'"
  [[ -L $prefix/$libdir/lib$lib.so && -L $prefix/$libdir/$soname ]] || fail "lib$lib.so symlinks"
  [[ -f $(readlink -f "$prefix/$libdir/$soname") ]] || fail "$soname dangles"
done
for private in dispatch/call.h dispatch/profiled.h plugin/elf_check.h plugin/loading.h util/log.h \
    util/file_writer.h ops/size_math.h ops/kernel_view.h profiler/report.h autograd/retain_grad.h \
    autograd/op_math.h autograd/profiled.h; do
  [[ ! -e $prefix/include/ember/$private ]] || fail "private header $private is installed"
done
[[ -z $(find "$prefix/include" -name '*.cpp' -o -name '*.in') ]] || fail "sources installed"
if grep -rl -e "$root" -e "$build" "$prefix/$libdir/cmake" "$prefix/$libdir/pkgconfig"; then
  fail "the CMake or pkg-config files name the build or source tree"
fi
ls "$prefix/$libdir/ember-plugins"

step "2. every installed header on its own; pkg-config"
configure_build "$here" "$work/consumer"
echo "$(grep -c '' <(find "$prefix/include" -name '*.h' -o -name '*.hpp')) headers compiled on their own"
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
[[ $(pkg-config --modversion ember) == $("$prefix/bin/ember" --version | sed -n 's/^ember //p') ]] ||
  fail "pkg-config and ember --version disagree"
# shellcheck disable=SC2046
g++ "$root/examples/hello/hello.cpp" $(pkg-config --cflags --libs ember) -o "$work/hello-pc"
LD_LIBRARY_PATH=$prefix/$libdir "$work/hello-pc" >/dev/null || fail "hello built with pkg-config"
echo "hello built with pkg-config runs"

step "3. examples/, each built against the prefix only"
mkdir -p "$work/examples"
for ex in hello train_mnist custom_op custom_backend; do
  configure_build "$root/examples/$ex" "$work/examples/$ex"
  echo "built examples/$ex"
done
# ember_add_plugin outside the tree builds as inside: one exported symbol, no link to the core.
for plugin in "$work/examples/custom_op/libember-fused_bias_gelu.so" \
  "$work/examples/custom_backend/libember-toy.so"; do
  exported=$(nm -D --defined-only "$plugin" | awk '{print $3}')
  [[ $exported == ember_plugin_entry_v1 ]] || fail "$(basename "$plugin") exports: $exported"
  ! readelf -d "$plugin" | contains 'NEEDED.*libember' || fail "$(basename "$plugin") links Ember"
done
"$work/examples/hello/hello"
"$work/examples/train_mnist/train_mnist" --epochs 1 --limit 6000 --test-limit 2000 --min-accuracy 0.70 \
  --out "$work/train_mnist.safetensors"
EMBER_PLUGIN_PATH=$work/examples/custom_op "$work/examples/custom_op/custom_op_demo"
EMBER_PLUGIN_PATH=$work/examples/custom_backend "$prefix/bin/ember" conformance --device toy
EMBER_PLUGIN_PATH=$work/examples/custom_backend "$work/examples/custom_backend/toy_demo"

step "4. the installed tree, moved, still works"
app=$work/consumer/swap_app
"$app" "$work/cpu.safetensors"
mv "$prefix" "$work/moved"
"$work/moved/bin/ember" --version | tee "$work/version.txt"
grep -qx "plugin directory $work/moved/$libdir/ember-plugins" "$work/version.txt" ||
  fail "ember --version does not show the moved plugin directory"
LD_LIBRARY_PATH=$work/moved/$libdir "$app" "$work/moved.safetensors"
LD_LIBRARY_PATH=$work/moved/$libdir "$app" compare "$work/cpu.safetensors" "$work/moved.safetensors" ||
  fail "the moved tree computes something else"
mv "$work/moved" "$prefix"

step "5. one binary, backends swapped by what is installed"
# deployment <name> <backend>...: a copy of the prefix with only these backends.
deployment() {
  local d=$work/deploy/$1
  shift
  mkdir -p "$work/deploy"
  cp -a "$prefix" "$d"
  for f in "$d/$libdir/ember-plugins/"*; do
    local keep=0
    for b in "$@"; do [[ $(basename "$f") == libember-$b.so ]] && keep=1; done
    ((keep)) || rm "$f"
  done
  echo "$d"
}
in_deploy() { local d=$1; shift; LD_LIBRARY_PATH=$d/$libdir "$@"; }
ref=$(deployment reference reference)
cpu=$(deployment cpu cpu)
both=$(deployment both cpu reference)
none=$(deployment none)
in_deploy "$ref" "$ref/bin/ember" devices
# With only the reference backend, it is the best device: no setting needed.
in_deploy "$ref" "$app" "$work/ref.safetensors" | tee "$work/ref.txt"
grep -q "^device reference" "$work/ref.txt" || fail "the only backend installed is not the default"
in_deploy "$cpu" "$app" "$work/only-cpu.safetensors"
in_deploy "$both" "$app" "$work/both.safetensors"
EMBER_PLUGINS_ONLY=reference EMBER_DEVICE=reference in_deploy "$both" "$app" "$work/both-only-ref.safetensors"
EMBER_PLUGINS_ONLY=cpu in_deploy "$both" "$app" "$work/both-only-cpu.safetensors"
for f in ref only-cpu both both-only-ref both-only-cpu; do
  "$app" compare "$work/cpu.safetensors" "$work/$f.safetensors" || fail "$f disagrees with cpu"
done
echo "reference only, cpu only, both, and both under EMBER_PLUGINS_ONLY agree"
expect_fail "no backend at all" "ember-backend-cpu" in_deploy "$none" "$app" "$work/none.safetensors"

step "6. find_package(Ember) and versions"
configure_build "$here/version_check" "$work/version-ok" -DEMBER_REQUEST=0.1
expect_fail "find_package(Ember 1.0)" "version: 0.1.0" \
  cmake -S "$here/version_check" -B "$work/version-major" -DCMAKE_PREFIX_PATH="$prefix" -DEMBER_REQUEST=1.0
expect_fail "find_package(Ember 0.2)" "version: 0.1.0" \
  cmake -S "$here/version_check" -B "$work/version-newer" -DCMAKE_PREFIX_PATH="$prefix" -DEMBER_REQUEST=0.2

step "7. Debian packages"
pkgs=$work/packages
"$root/tools/package.sh" "$build" "$pkgs"
deb() { ls "$pkgs/$1"_*.deb; }
contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}'; }
contents libember0 | contains 'usr/lib/libember_core.so.0$' || fail "libember0 lacks libember_core.so.0"
contents libember0 | contains 'include/' && fail "libember0 holds headers"
contents libember-dev | contains 'usr/include/ember/ember.h$' || fail "libember-dev lacks ember.h"
contents libember-dev | contains 'usr/lib/cmake/Ember/EmberConfig.cmake$' || fail "libember-dev lacks the CMake package"
contents ember-backend-cpu | contains 'usr/lib/ember-plugins/libember-cpu.so$' || fail "ember-backend-cpu"
contents ember-backend-reference | contains 'libember-reference.so$' || fail "ember-backend-reference"
contents ember-tools | contains 'usr/bin/ember$' || fail "ember-tools lacks bin/ember"
for p in ember-backend-cpu ember-backend-reference ember-tools libember-dev; do
  contents "$p" | contains 'cuda' && fail "$p holds CUDA files"
done
# The CPU backend ships its oneDNN 3 beside the plugin (Note [oneDNN from the wheels]) rather than
# depending on the distribution's older one; that library's own needs are dependencies.
contents ember-backend-cpu | contains 'usr/lib/ember-plugins/cpu/libdnnl.so.3$' || fail "ember-backend-cpu lacks its oneDNN"
dpkg-deb -f "$(deb ember-backend-cpu)" Depends | contains libdnnl && fail "ember-backend-cpu depends on the distribution's oneDNN"
dpkg-deb -f "$(deb ember-backend-cpu)" Depends | contains libgomp1 || fail "ember-backend-cpu does not depend on libgomp1"
dpkg-deb -f "$(deb libember0)" Depends | contains libzip4 || fail "libember0 does not depend on libzip4 (torch.save files)"
dpkg-deb -f "$(deb libember0)" Depends | contains libonnx1 || fail "libember0 does not depend on libonnx1 (ONNX import)"
# A CPU server: the runtime, the tools and the CPU backend, extracted into a fresh root.
for set in "cpu:libember0 ember-tools ember-backend-cpu" "reference:libember0 ember-tools ember-backend-reference"; do
  name=${set%%:*}
  r=$work/debroot-$name
  for p in ${set#*:}; do dpkg-deb -x "$(deb "$p")" "$r"; done
  "$r/usr/bin/ember" devices | tee "$work/devices-$name.txt"
  grep -q "^$name " "$work/devices-$name.txt" || fail "$name devices from the packages"
  EMBER_DEVICE=$name LD_LIBRARY_PATH=$r/usr/lib "$app" "$work/deb-$name.safetensors"
  LD_LIBRARY_PATH=$r/usr/lib "$work/examples/hello/hello" >/dev/null || fail "hello on the $name packages"
  "$app" compare "$work/cpu.safetensors" "$work/deb-$name.safetensors" || fail "deb $name disagrees"
  [[ -z $(find "$r" -name '*cuda*') ]] || fail "a $name deployment got CUDA files"
done
# lintian, and the packages installed and removed with dpkg in a fresh root.
"$here/debs.sh" "$pkgs" "$work"
echo
echo "install check passed"
