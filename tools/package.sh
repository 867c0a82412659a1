#!/usr/bin/env bash
# Builds Ember's Debian packages, one per deployment part (cmake/EmberPackage.cmake):
#   libember0 (core + user library), libember-dev (headers, CMake package, plugin SDK),
#   ember-tools (the `ember` command), ember-backend-cpu, ember-backend-reference and, where the
#   CUDA plugin was built, ember-backend-cuda.
# Usage: tools/package.sh [BUILD_DIR [OUT_DIR]]   (default: build/release, build/packages)
# Builds what the packages hold first (configuring the release preset if BUILD_DIR is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=${2:-build/packages}
if [[ ! -f $build/CMakeCache.txt ]]; then
  tools/setup.sh
  cmake --preset release -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCHMARKS=OFF >/dev/null
  build=build/release
fi
cmake --build "$build" -j "${EMBER_JOBS:-$(nproc)}" --target ember_installables
mkdir -p "$out"
(cd "$build" && cpack --config CPackConfig.cmake -B "$PWD/cpack" >cpack.log 2>&1) ||
  { cat "$build/cpack.log"; exit 1; }
rm -f "$out"/*.deb
cp "$build"/cpack/*.deb "$out/"
for deb in "$out"/*.deb; do
  echo "$(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done
