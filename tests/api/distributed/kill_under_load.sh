#!/usr/bin/env bash
# Runs the killed-rank jobs of Faults.EverySurvivorOfAKilledRankFailsWithinMomentsThoughTheTimeoutIsLong
# (an all-reduce, a recv, a send and a broadcast whose rank 1 is SIGKILLed in the middle, under a
# 60 s timeout) N times in a row, beside a busy loop on every core, and prints how many passed and
# the worst time from the kill to the last survivor's DistributedError (Note [A dead peer fails
# the waits on it] in backends/gloo/plugin.cpp). Not part of the suite: it takes minutes.
#
#   tests/api/distributed/kill_under_load.sh [N=50] [BUILD_DIR=build/release]
#   EMBER_BUSY_LOOPS=K  K busy loops instead of one per core (0: no load)
set -euo pipefail
runs=${1:-50}
build=${2:-build/release}
loops=${EMBER_BUSY_LOOPS:-$(nproc)}

# The test, the worker and the libraries are copied first: a rebuild of a shared build tree
# meanwhile would otherwise change the libraries under the running ranks (SIGBUS).
snap=$(mktemp -d)
busy=()
cleanup() {
  for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$snap"
}
trap cleanup EXIT
mkdir -p "$snap/bin"
cp "$build/bin/distributed_tests" "$build/bin/distributed_worker" "$snap/bin/"
cp -a "$build/lib" "$snap/"

for ((i = 0; i < loops; ++i)); do
  (while :; do :; done) &
  busy+=($!)
done
echo "kill_under_load: $runs runs of the killed-rank jobs beside $loops busy loop(s)"
EMBER_TEST_KILL_REPEAT=$runs EMBER_TEST_WORKER="$snap/bin/distributed_worker" \
  "$snap/bin/distributed_tests" \
  --gtest_filter='Faults.EverySurvivorOfAKilledRankFailsWithinMomentsThoughTheTimeoutIsLong'
