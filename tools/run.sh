#!/usr/bin/env bash
# Sets up everything Ember needs (Debian packages), builds, and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
cmake --preset release -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target ember_cli
echo "== ember devices"
build/release/bin/ember devices
echo "== ember plugins"
build/release/bin/ember plugins
