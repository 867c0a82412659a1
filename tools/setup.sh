#!/usr/bin/env bash
# Installs what Ember needs to build and test on Debian 12, by package name.
# Idempotent and quick when everything is already present.
set -euo pipefail

# dataset-fashion-mnist is the data of `ember train`; bible-kjv gives the public-domain text of
# `ember train --task charlm` (README).
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libdnnl-dev ocl-icd-opencl-dev libfmt-dev libboost-dev libdlpack-dev nlohmann-json3-dev zlib1g-dev
  libzip-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  libgloo-dev libopenmpi-dev openmpi-bin
  file binutils
  dataset-fashion-mnist bible-kjv
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all packages present"
fi
