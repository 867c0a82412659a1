#!/usr/bin/env bash
# Sets up everything Ember needs (Debian packages), builds, and runs the whole test suite:
#   1. the release build, and the tests only it has (ctest): the Python package's tests and its
#      wheel, the install check, the CUDA plugin's tests;
#   2. every other test, under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer);
#   3. the concurrency tests under ThreadSanitizer.
# EMBER_SANITIZERS=0 runs the whole suite in the first pass alone; EMBER_PRESET picks its preset
# (default release).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
preset=${EMBER_PRESET:-release}
jobs=${EMBER_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
# Paths under the checkout are hashed relative to it, so another build tree of the same sources
# (the wheel's, tests/install/wheel.sh) reuses the objects this build compiled.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# Test binaries precompile their common headers (Note [Test compile time] in tests/CMakeLists.txt);
# ccache caches such compiles only with this sloppiness.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}
# ... and keys them on the header's checksum file (Note [The precompiled header's checksum]).
export CCACHE_PCH_EXTSUM=${CCACHE_PCH_EXTSUM:-true}
# The Python package is built and tested in the release pass (tests/python, the wheel), with the
# interpreter tools/setup.sh prepared (Note [Python build dependencies]).
python=${EMBER_DEPS_DIR:-$HOME/.cache/ember-deps}/python/bin/python
# CUDA code as PTX only: no GPU runs it here, and ptxas is most of its compile time (Note [CUDA
# architectures] in CMakeLists.txt). tools/gpu-check.sh and the packages build machine code too.
export CUDAARCHS=${CUDAARCHS:-90-virtual}

# Note [OpenMP threads that wait]
# ctest runs as many tests at once as there are cores, and a test's kernels run on OpenMP threads,
# so the threads of two tests share the cores. libgomp's threads spin at a barrier before they
# sleep; a spinning thread then takes the core from one with work, and a test that trains a
# model ran 2.6 times as long beside another as alone (CharLM under ASan: 16 s alone, 42 s in
# the suite). Waiting threads here sleep at once instead (OMP_WAIT_POLICY=passive): the ASan
# pass's model and reliability tests went from 179 to 148 s.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

section() { echo; echo "==== $* ($(date +%T))"; }

# Note [Test costs]
# ctest -j starts the tests in decreasing order of their measured time, which it keeps in the
# build tree; a fresh clone has none, and started tests in file order, so the longest (the
# examples' training runs, the install check, the second-order gradchecks) could start last and
# run alone on one core at the end. A build tree that has never run its tests starts from
# tests/ctest-costs.txt instead: the seconds each test that takes 3 s or more took on a 2-core
# machine, in ctest's own format. It only orders the tests; stale entries cost nothing.

# Runs the tests of preset $1; further arguments go to ctest. When some fail, the end of the log
# (all a reader of a long CI log may see) also shows why: the first 40 lines from the first
# failure message of each of the first three failed tests, taken from ctest's own log of the run.
# The status stays ctest's.
run_ctest() {
  local status=0 dir=build/$1/Testing/Temporary
  mkdir -p "$dir"
  [[ -e $dir/CTestCostData.txt ]] || cp tests/ctest-costs.txt "$dir/CTestCostData.txt"
  ctest --preset "$1" -j "$jobs" "${@:2}" || status=$?
  ((status == 0)) && return 0
  section "why the failed tests of the $1 pass failed"
  cut -d: -f2- "$dir/LastTestsFailed.log" | head -3 | while read -r name; do
    echo "---- $name"
    awk -v name="$name" '
      $0 ~ /^[0-9]+\/[0-9]+ Testing: / { mine = (substr($0, index($0, ": ") + 2) == name) }
      mine && /<end of output>/ { mine = 0 }
      mine && (shown || /Failure|FAILED|rror/) { if (shown++ < 40) print }' "$dir/LastTest.log"
  done
  return "$status"
}

section "$preset build"
cmake --preset "$preset" -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=OFF -DEMBER_PYTHON=ON \
  -DPython_EXECUTABLE="$python" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
# The Python side is part of this run: ctest runs each pytest file of tests/python (python.test_*)
# and the wheel's check. Were they not registered (no interpreter found, say), the run would pass
# without testing Python at all, so that is an error.
pytests=$(ctest --preset "$preset" -N -R '^python\.test_' | sed -n 's/^Total Tests: //p')
if [[ ${pytests:-0} -eq 0 ]]; then
  echo "[test] the Python package's pytest suite is not registered with ctest (EMBER_PYTHON)" >&2
  exit 1
fi
if [[ ${EMBER_SANITIZERS:-1} == 0 ]]; then
  section "$preset tests"
  run_ctest "$preset"
  exit 0
fi

# Note [Sanitizer options]
# allocator_may_return_null: tests ask for more memory than exists and expect a clear error, which
# ASan would otherwise turn into a report. handle_segv=0: the doctor tests need a child that
# crashes to die by SIGSEGV, as it would in production, not exit with ASan's status. Leaks are
# checked (LeakSanitizer); plugins stay loaded for the life of a process, which is no leak.
# use_tls=0: LeakSanitizer in GCC 12 records the dynamic TLS blocks of dlopen'ed libraries by
# intercepting __tls_get_addr, and with glibc 2.36 it records bogus ranges for some of them
# (seen: "DTLS 7 at 0x0001000004f7-0x0025000015f9" on an OpenMP worker of oneDNN), so its
# exit-time tracer faults while scanning them ("Tracer caught signal 11") and the test fails
# after passing. Which threads get such a block depends on the CPU (oneDNN's JIT picks its code
# by ISA), so no test filter or thread count avoids it everywhere. Not scanning TLS avoids it;
# the price is that memory reachable only from TLS looks leaked: Ember's thread_local objects are
# destroyed before the check (none shows up in the whole suite), and the system libraries that
# keep such memory are listed, by library, in tools/lsan.supp.
section "AddressSanitizer + UndefinedBehaviorSanitizer build"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:handle_segv=0:strict_string_checks=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-use_tls=0:suppressions=$PWD/tools/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cmake --preset asan -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build --preset asan -j "$jobs"

# Note [Each test in one pass] (tests/CMakeLists.txt): the release pass runs only the tests the
# sanitizer build lacks, labelled `unsanitized`; every other test must be in the sanitizer build.
# Compared by GoogleTest binary (the sanitizer build runs them in shards, Note [Test shards]) and
# by name for the other tests, from ctest's JSON listing of the tests of preset $1.
test_keys() {
  ctest --preset "$1" --show-only=json-v1 "${@:2}" | "$python" -c '
import json, os, sys
for t in json.load(sys.stdin)["tests"]:
    command = t.get("command") or [t["name"]]
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    gtest = any(a.startswith("--gtest_filter=") for a in command[1:]) or any(
        str(e).startswith("GTEST_TOTAL_SHARDS=") for e in props.get("ENVIRONMENT", []))
    print(os.path.basename(command[0]) if gtest else t["name"])' | sort -u
}
missing=$(comm -23 <(test_keys "$preset" -LE unsanitized) <(test_keys asan))
if [[ -n $missing ]]; then
  echo "[test] these tests of the $preset build are not in the sanitizer build, and are not" \
    "labelled 'unsanitized' (Note [Each test in one pass]):" >&2
  head -20 <<<"$missing" >&2
  exit 1
fi
section "$preset tests that the sanitizer build lacks"
run_ctest "$preset" -L unsanitized
section "AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite"
run_ctest asan
unset ASAN_OPTIONS LSAN_OPTIONS

# Only what the concurrency tests need is built; OpenMP's own threads are not instrumented, so
# they run with one OpenMP thread per caller (the callers are the threads under test).
section "ThreadSanitizer: concurrency tests"
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
cmake --preset tsan -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build --preset tsan -j "$jobs" --target concurrency_tests ember-plugin-cpu ember-plugin-reference
OMP_NUM_THREADS=1 build/tsan/bin/concurrency_tests
section "all passes green"
