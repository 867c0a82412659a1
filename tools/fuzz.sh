#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) and runs each one for
# ${EMBER_FUZZ_SECONDS:-60} seconds on a copy of its seed corpus. Fails if any target crashed.
#   tools/fuzz.sh                 all targets
#   tools/fuzz.sh idx_fuzz ...    just these
# Crashes, hangs and OOMs land in build/fuzz/findings/<target>/; add each to
# tests/fuzz/corpus/<target>/ once fixed, and `ctest -R <target>_replay` replays it forever.
# EMBER_FUZZ_KEEP=1 merges what a clean run found into tests/fuzz/corpus/<target>/ (libFuzzer's
# -merge=1: only inputs that reach code the corpus did not), to be committed.
# EMBER_FUZZ_BUILD picks the build directory; EMBER_FUZZ_PLUGINS="" skips building the CPU
# plugin (only targets that run ops need it).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${EMBER_FUZZ_SECONDS:-60}
jobs=${EMBER_JOBS:-$(nproc)}
build=${EMBER_FUZZ_BUILD:-build/fuzz}

# clang and libFuzzer's runtime are needed only here, so this script installs them itself.
fuzzer_lib=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -n1 || true)
if ! command -v clang++ >/dev/null || [[ -z $fuzzer_lib ]]; then
  echo "[fuzz] installing clang and libclang-rt-14-dev"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
fi
tools/setup.sh >/dev/null

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
# clang warns about things gcc does not; the fuzz build is not where -Werror is enforced.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DEMBER_FUZZ=ON -DEMBER_CUDA=OFF \
  -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_WERROR=OFF >/dev/null

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$f" .cpp)"); done
fi
# The CPU plugin too: targets that run ops load it from next to the core library.
plugins=${EMBER_FUZZ_PLUGINS-ember-plugin-cpu}
cmake --build "$build" -j "$jobs" --target "${targets[@]}" $plugins

# Leaks are not findings here (a plugin stays loaded for the life of the process).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${targets[@]}"; do
  work="$build/fuzz-run/$t"
  findings="$build/findings/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$findings"
  findings=$(cd "$findings" && pwd)
  if [[ -d tests/fuzz/corpus/$t ]]; then cp -r "tests/fuzz/corpus/$t/." "$work/corpus/"; fi
  echo "[fuzz] $t: ${seconds}s"
  rc=0
  "$build/bin/$t" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$findings/" >"$work/log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' | tail -n1 || true)
  if ((rc != 0)); then
    failed+=("$t")
    summary+=("$(printf '%-22s FAILED (exit %d) after %s runs; log %s' "$t" "$rc" "${runs:-?}" "$work/log")")
    grep -E 'ERROR: |SUMMARY: |runtime error|Test unit written' "$work/log" | head -n 8 || true
  else
    kept=""
    if [[ ${EMBER_FUZZ_KEEP:-0} == 1 ]]; then
      repo_corpus=tests/fuzz/corpus/$t
      mkdir -p "$repo_corpus"
      before=$(find "$repo_corpus" -type f | wc -l)
      "$build/bin/$t" -merge=1 "$repo_corpus" "$work/corpus" >"$work/merge.log" 2>&1
      kept="; corpus $before -> $(find "$repo_corpus" -type f | wc -l) files, $(du -sk "$repo_corpus" | cut -f1) KiB"
    fi
    summary+=("$(printf '%-22s %s runs in %ss%s' "$t" "${runs:-?}" "$seconds" "$kept")")
  fi
done
echo "[fuzz] results:"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "[fuzz] FAILED: ${failed[*]}; inputs in $build/findings/<target>/ (reproduce with"
  echo "       $build/bin/<target> FILE, or <target>_replay FILE in the normal build)"
  exit 1
fi
