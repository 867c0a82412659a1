#!/usr/bin/env bash
# Sets up everything Ember needs (Debian packages), builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
preset=${EMBER_PRESET:-release}
jobs=${EMBER_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
cmake --preset "$preset" -DEMBER_BUILD_TESTS=ON -DEMBER_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs"
