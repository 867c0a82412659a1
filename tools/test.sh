#!/usr/bin/env bash
# Sets up everything Ember needs (Debian packages), builds, and runs the whole test suite:
#   1. the release build, every test (ctest), the Python package's tests and its wheel among them;
#   2. the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer);
#   3. the concurrency tests under ThreadSanitizer.
# EMBER_SANITIZERS=0 runs only the first pass; EMBER_PRESET picks its preset (default release).
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
# The Python package is built and tested in the release pass (tests/python, the wheel), with the
# interpreter tools/setup.sh prepared (Note [Python build dependencies]).
python=${EMBER_DEPS_DIR:-$HOME/.cache/ember-deps}/python/bin/python

section() { echo; echo "==== $* ($(date +%T))"; }

# Runs the tests of preset $1. When some fail, the end of the log (all a reader of a long CI log
# may see) also shows why: the first 40 lines from the first failure message of each of the first
# three failed tests, taken from ctest's own log of the run. The status stays ctest's.
run_ctest() {
  local status=0 dir=build/$1/Testing/Temporary
  ctest --preset "$1" -j "$jobs" || status=$?
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

section "$preset build and tests"
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
run_ctest "$preset"

[[ ${EMBER_SANITIZERS:-1} == 0 ]] && exit 0

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
section "AddressSanitizer + UndefinedBehaviorSanitizer: the whole suite"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:handle_segv=0:strict_string_checks=1:detect_stack_use_after_return=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-use_tls=0:suppressions=$PWD/tools/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cmake --preset asan -DEMBER_BUILD_TESTS=ON >/dev/null
cmake --build --preset asan -j "$jobs"
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
