#!/usr/bin/env bash
# Ember side by side with PyTorch's C++ library (libtorch), in one table.
#
# Installs the newest `torch` package into a virtualenv under ~/.cache/ember-torch (only the
# wheels libtorch_cpu.so needs at run time unless EMBER_TORCH_FULL=1), configures a Release
# build with -DEMBER_TORCH_DIR=<site-packages>/torch, builds compare_ember and compare_torch and
# runs the comparison. Arguments go to the driver: --rounds N, --only add_1,matmul_1024,...
# (--only inference: every inference row).
# Environment: EMBER_COMPARE_BUILD (build dir, default build/compare), EMBER_TORCH_CACHE.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${EMBER_COMPARE_BUILD:-$root/build/compare}
cache=${EMBER_TORCH_CACHE:-$HOME/.cache/ember-torch}
venv=$cache/venv
say() { echo "[compare] $*" >&2; }

apt_install() {
  local sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "$@"
}

# 1. A virtualenv with pip (python3-venv and python3-pip by Debian package name if missing).
if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  say "installing python3-venv python3-pip"
  apt_install python3-venv python3-pip
fi
mkdir -p "$cache"
if [[ ! -x $venv/bin/pip ]]; then
  say "creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
torch_dir=$site/torch

# 2. torch. Note [Torch without its CUDA wheels]: the Linux wheel of torch is a CUDA build whose
# dependencies (cuDNN, cuBLAS, NCCL, ...) weigh several GB. The comparison uses only
# libtorch_cpu.so and libc10.so, so torch is installed without dependencies and then only the
# CUDA runtime pieces that libtorch_cpu.so names in DT_NEEDED (checked with readelf and ldd),
# at the versions torch's metadata pins. EMBER_TORCH_FULL=1 installs everything instead.
torch_ok() {
  [[ -f $torch_dir/lib/libtorch_cpu.so && -f $torch_dir/lib/libc10.so ]] &&
    ! ldd "$torch_dir/lib/libtorch_cpu.so" | grep -q "not found"
}
if [[ ${EMBER_TORCH_FULL:-0} == 1 ]]; then
  torch_ok || "$venv/bin/pip" install --upgrade torch
elif ! torch_ok; then
  if [[ ! -f $torch_dir/lib/libtorch_cpu.so ]]; then
    say "installing torch (no dependencies) into $venv"
    "$venv/bin/pip" install --no-deps torch || true
  fi
  if [[ -f $torch_dir/lib/libtorch_cpu.so ]]; then
    say "libtorch_cpu.so needs: $(readelf -d "$torch_dir/lib/libtorch_cpu.so" |
      sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    extras=()
    for lib in $(ldd "$torch_dir/lib/libtorch_cpu.so" | awk '/not found/ {print $1}'); do
      case $lib in
        libcudart.so*) extras+=(cudart) ;;
        libcupti.so*) extras+=(cupti) ;;
        libnvrtc*) extras+=(nvrtc) ;;
        libcublas*) extras+=(cublas) ;;
        libnvToolsExt* | libnvtx*) extras+=(nvtx) ;;
        libnvJitLink*) extras+=(nvjitlink) ;;
        *) say "libtorch_cpu.so needs $lib, which this script does not know how to install" ;;
      esac
    done
    if ((${#extras[@]})); then
      meta=$(ls -d "$site"/torch-*.dist-info | head -1)/METADATA
      pin=$(sed -n 's/^Requires-Dist: cuda-toolkit\[[^]]*\]\(==[0-9.]*\).*/\1/p' "$meta" | head -1)
      want=$(IFS=,; echo "${extras[*]}")
      say "installing the CUDA runtime pieces libtorch_cpu.so links: cuda-toolkit[$want]$pin"
      "$venv/bin/pip" install "cuda-toolkit[$want]$pin" || true
    fi
  fi
fi
cmake_torch=(-DEMBER_TORCH_DIR="$torch_dir")
if torch_ok; then
  say "using $(sed -n 's/^Version: //p' "$(ls -d "$site"/torch-*.dist-info | head -1)/METADATA") at $torch_dir"
else
  say "torch from the package index is unusable here; falling back to Debian's libtorch-dev"
  dpkg-query -W -f='${Status}' libtorch-dev 2>/dev/null | grep -q "install ok installed" ||
    apt_install libtorch-dev
  cmake_torch=(-DEMBER_TORCH_DIR=)
fi

# 3. Build both programs (and the CPU plugin compare_ember loads).
export CCACHE_NOHASHDIR=1
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_BUILD_BENCHMARKS=ON \
  -DEMBER_BUILD_TESTS=OFF "${cmake_torch[@]}" >/dev/null
targets=(compare_ember ember-plugin-cpu)
ninja -C "$build" -t targets all | grep -q '^compare_torch:' && targets+=(compare_torch)
ninja -C "$build" -j"$(nproc)" "${targets[@]}" >&2

# 4. Run: the driver alternates the two sides per workload and prints the table.
torch_args=()
[[ -x $build/bin/compare_torch ]] && torch_args=(--torch "$build/bin/compare_torch")
exec "$build/bin/compare_ember" table "${torch_args[@]}" "$@"
