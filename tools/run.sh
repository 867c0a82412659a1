#!/usr/bin/env bash
# Sets up everything Ember needs (Debian packages and the Fashion-MNIST dataset), builds, and
# runs the main job: `ember train` on Fashion-MNIST.
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
# The main job: the default CNN on Fashion-MNIST. EMBER_TRAIN_ARGS overrides the short default
# (e.g. EMBER_TRAIN_ARGS="--epochs 5 --lr-schedule cosine" for the full run, about 91.5%).
echo "== ember train"
# shellcheck disable=SC2086
build/release/bin/ember train ${EMBER_TRAIN_ARGS:---epochs 2} --out build/release/train
