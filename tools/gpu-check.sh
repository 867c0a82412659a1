#!/usr/bin/env bash
# The CUDA backend on a real GPU: the GPU test suites, `ember plugins`, a short `ember train
# --device cuda`, the GPU benchmarks and (where PyTorch with CUDA is installed) the same
# workloads in PyTorch; a short table is printed last.
#
#   tools/gpu-check.sh            on a machine with a GPU: runs everything
#   tools/gpu-check.sh pack       on a build machine (no GPU needed): builds what the check needs
#                                 and packs it into .gpu/bundle.tar.xz
#
# Note [Two ways to run the GPU check]
# A GPU machine with Ember's build dependencies (tools/setup.sh's packages) builds in place:
# the run mode builds the release targets it needs when no bundle is present. A GPU machine
# without them (a CUDA image with nvcc, cuBLAS and cuDNN but no Debian packages or network)
# runs a bundle made elsewhere by `pack`: the binaries, the Ember libraries and plugins, the
# non-CUDA shared libraries they need (`ldd`: fmt, oneDNN, OpenMP, OpenCL's loader, Google
# Benchmark), a Fashion-MNIST subset, and the two Python helpers; xz keeps it near 20 MiB.
# glibc, libstdc++ and zlib come from the GPU machine, whose are as new or newer.
# The CUDA libraries themselves (cudart 13, cuDNN 9, cuBLAS 13) come from the GPU machine: the
# toolkit's lib64 and NVIDIA's Python packages are searched, and the CUDA plugin names them as
# DT_NEEDED / dlopen sonames only. EMBER_GPU_CHECK_SECONDS bounds each step (default 240 s).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-run}
bundle=$root/.gpu/bundle.tar.xz
targets=(ember_cli ember-plugin-cpu ember-plugin-cuda ember-plugin-reference cuda_gpu_tests
         autograd_tests cuda_bench ember-plugin-nccl distributed_worker ember-plugin-fused_bias_gelu)

build_release() {
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
  cmake --preset release -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=ON >/dev/null &&
    cmake --build --preset release -j "$(nproc)" --target "${targets[@]}"
}

# Copies the first `limit` records of an IDX file (gzipped) into `dst`, fixing the count.
idx_head() {
  python3 - "$1" "$2" "$3" <<'PY'
import gzip, struct, sys
src, dst, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = gzip.open(src).read()
ndim = data[3]
dims = list(struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim]))
per = 1
for d in dims[1:]:
    per *= d
dims[0] = min(dims[0], limit)
head = data[:4] + struct.pack(">" + "I" * ndim, *dims)
with gzip.open(dst, "wb") as f:
    f.write(head + data[4 + 4 * ndim:4 + 4 * ndim + dims[0] * per])
PY
}

if [[ $mode == pack ]]; then
  tools/setup.sh
  build_release || exit 1
  stage=$root/.gpu/stage
  rm -rf "$stage" && mkdir -p "$stage"/{bin,lib,sys,data/fashion-mnist,scripts}
  b=$root/build/release
  cp "$b"/bin/{ember,cuda_gpu_tests,autograd_tests,cuda_bench,distributed_worker} "$stage/bin/"
  cp -a "$b"/lib/libember*.so* "$stage/lib/"
  mkdir -p "$stage/lib/ember-plugins"
  cp "$b"/lib/ember-plugins/libember-{cpu,cuda,reference,nccl}.so "$stage/lib/ember-plugins/"
  # The example extension, whose CUDA kernels cuda_gpu_tests loads (EMBER_TEST_EXAMPLE_PLUGIN).
  mkdir -p "$stage/lib/ember-extensions"
  cp "$b"/lib/ember-extensions/libember-fused_bias_gelu.so "$stage/lib/ember-extensions/"
  # Every non-CUDA, non-glibc library the binaries and plugins load.
  ldd "$stage"/bin/* "$stage"/lib/ember-plugins/*.so "$stage"/lib/ember-extensions/*.so 2>/dev/null | awk '$3 ~ /^\// {print $3}' |
    sort -u | grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|libz|ld-linux[^/]*|libcuda[^/]*|libcudnn[^/]*|libcublas[^/]*|libnccl[^/]*)\.so' |
    grep -v "$stage" | while read -r lib; do cp -L "$lib" "$stage/sys/"; done
  src=/usr/share/datasets/fashion-mnist
  idx_head "$src/train-images-idx3-ubyte.gz" "$stage/data/fashion-mnist/train-images-idx3-ubyte.gz" 25600
  idx_head "$src/train-labels-idx1-ubyte.gz" "$stage/data/fashion-mnist/train-labels-idx1-ubyte.gz" 25600
  cp "$src"/t10k-*.gz "$stage/data/fashion-mnist/"
  cp benchmarks/cuda/*.py "$stage/scripts/"
  mkdir -p "$stage/data/onnx"
  cp tests/python/fixtures/{resblock,mobilenet_v3,vit,gpt2,bert,lstm_tagger,unet}.onnx "$stage/data/onnx/"
  tar -C "$stage" -cJf "$bundle" . && rm -rf "$stage"
  echo "[gpu-check] packed $(du -h "$bundle" | cut -f1) into $bundle"
  exit 0
fi

out=${OUT:-$root/.gpu/out}
mkdir -p "$out"
limit=${EMBER_GPU_CHECK_SECONDS:-240}
if [[ -f $bundle ]]; then
  work=$(mktemp -d /tmp/ember-gpu.XXXXXX)
  tar -C "$work" -xJf "$bundle"
  bin=$work/bin
  scripts=$work/scripts
  export EMBER_TEST_EXAMPLE_PLUGIN=$work/lib/ember-extensions/libember-fused_bias_gelu.so
  export EMBER_DATA_DIR=$work/data/fashion-mnist
  onnx_dir=$work/data/onnx
  sys_libs=$work/sys
else
  echo "[gpu-check] no bundle: building here"
  build_release || exit 1
  bin=$root/build/release/bin
  scripts=$root/benchmarks/cuda
  onnx_dir=$root/tests/python/fixtures
  sys_libs=
fi
# The CUDA libraries of this machine: the toolkit's, then NVIDIA's Python packages.
cuda_dirs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d $d ]] && cuda_dirs+=("$d"); done
py_roots=$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
for name in libcudnn.so.9 libcublas.so.13 libcudart.so.13 libnccl.so.2; do
  # shellcheck disable=SC2086
  found=$(find $py_roots /opt /usr/local/lib -name "$name" -path '*nvidia*' 2>/dev/null | head -n 1)
  [[ -n $found ]] && cuda_dirs+=("$(dirname "$found")")
done
LD_LIBRARY_PATH=$(IFS=:; echo "${sys_libs:+$sys_libs:}${cuda_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

declare -A status
step() {  # step NAME COMMAND...: runs with a time limit, logs to $out/NAME.log, keeps the tail
  local name=$1
  shift
  echo "==== $name ($(date +%T))"
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$out/$name.log"
  status[$name]=$([[ $rc == 0 ]] && echo ok || echo "failed (exit $rc)")
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 2
"$bin/ember" devices | tee "$out/devices.log"
if ! awk '$1 == "cuda" && $2 > 0 {found = 1} END {exit !found}' "$out/devices.log"; then
  echo "[gpu-check] no usable CUDA device (see the cuda line above): nothing to check here"
  exit 2
fi
step plugins "$bin/ember" plugins
step gpu_tests "$bin/cuda_gpu_tests" --gtest_brief=1
step gradcheck_cuda "$bin/autograd_tests" --gtest_filter='*GradcheckCuda*'
step train "$bin/ember" train --device cuda --epochs 1 --limit 25600 --test-limit 10000 \
  --no-progress --out "$out/train"
# ONNX models exported from PyTorch (tests/python/fixtures/make_onnx_zoo.py) on the GPU: `ember
# inspect` runs every node on cuda beside the CPU (each must run, within 1e-3 of the CPU's
# values), then `ember bench` times the whole graph there.
onnx_on_cuda() {
  local fail=0 model report
  for model in resblock mobilenet_v3 vit gpt2 bert lstm_tagger unet; do
    report=$("$bin/ember" inspect "$onnx_dir/$model.onnx" --dim sequence=8 2>&1)
    echo "$report" | grep -E '^(cpu|cuda) '
    echo "$report" | awk -v m="$model" '$1 == "cuda" {
        ok = ($3 == $5);
        if (match($0, /from the CPU [0-9.e+-]+/)) ok = ok && substr($0, RSTART + 13, RLENGTH - 13) + 0 < 1e-3;
        found = 1 }
      END { if (!found || !ok) { print m ": cuda did not run every node within 1e-3"; exit 1 } }' ||
      fail=1
    "$bin/ember" bench "$onnx_dir/$model.onnx" --device cuda --batch 4 --dim sequence=32 \
      --runs 20 | tail -n 3 || fail=1
  done
  return $fail
}
export -f onnx_on_cuda
export bin onnx_dir
step onnx_cuda bash -c onnx_on_cuda
step ember_bench "$bin/cuda_bench" --benchmark_out="$out/ember_cuda.json" \
  --benchmark_out_format=json --benchmark_min_time=0.3
# Note [NCCL in the GPU check]
# The nccl plugin travels in the bundle, libnccl.so.2 (over 200 MB) does not: it is found on
# this machine like the other CUDA libraries. Every collective x dtype runs on CUDA tensors with
# one rank, then, where the machine has two GPUs or more, with two ranks, one GPU each
# (informational: it does not fail the check). NCCL refuses two ranks on one GPU ("Duplicate GPU
# detected"), so a one-GPU machine skips that step.
if grep -q "nccl (cuda)" "$out/plugins.log"; then
  step nccl_world1 env EMBER_DIST_BACKEND=nccl EMBER_TEST_DEVICE=cuda \
    "$bin/ember" run --nproc-per-node 1 --timeout-s 200 "$bin/distributed_worker" collectives
  gpus=$(awk '$1 == "cuda" {print $2}' "$out/devices.log")
  if [[ ${gpus:-0} -ge 2 ]]; then
    # shellcheck disable=SC2016  # $LOCAL_RANK is each rank's, expanded by its own shell
    step nccl_two_ranks env EMBER_DIST_BACKEND=nccl "$bin/ember" run --nproc-per-node 2 \
      --timeout-s 200 sh -c 'EMBER_TEST_DEVICE=cuda:$LOCAL_RANK exec "$0" collectives' \
      "$bin/distributed_worker"
  else
    status[nccl_two_ranks]="skipped (one GPU: NCCL takes one rank per GPU)"
  fi
else
  status[nccl_world1]="skipped (the nccl plugin is not usable here: see plugins.log)"
fi
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step torch_bench sh -c "python3 '$scripts/torch_cuda_bench.py' > '$out/torch_cuda.json'"
else
  status[torch_bench]="skipped (no PyTorch with CUDA)"
fi

echo
echo "==== summary"
for s in plugins gpu_tests gradcheck_cuda train onnx_cuda ember_bench nccl_world1 nccl_two_ranks \
  torch_bench; do
  printf '%-16s %s\n' "$s" "${status[$s]:-not run}"
done
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/gpu_tests.log" | head -n 5
grep -E 'test accuracy' "$out/train.log" | tail -n 1
[[ -f $out/ember_cuda.json ]] && python3 "$scripts/gpu_table.py" "$out/ember_cuda.json" \
  "$out/torch_cuda.json" | tee "$out/table.md"
for s in plugins gpu_tests gradcheck_cuda train onnx_cuda ember_bench; do
  [[ ${status[$s]:-} == ok ]] || exit 1
done
