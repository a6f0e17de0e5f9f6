#!/usr/bin/env bash
# Quick start, step 1: install what is missing (Debian 12 packages), build redsim, and run
# `redsim simulate` on a bundled model and cluster. Pass --no-run to only install and build.
set -euo pipefail
cd "$(dirname "$0")"

packages=(build-essential cmake pkg-config libsimgrid-dev nlohmann-json3-dev libcli11-dev catch2 libbenchmark-dev libgloo-dev iproute2 zlib1g-dev python3-torch python3-torchvision)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DREDSIM_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"

if [ "${1:-}" != "--no-run" ]; then
  mkdir -p out
  ./build/cli/redsim simulate --trace traces/resnet50.json --cluster configs/dgx-h100-x2.json \
    --strategy bucketed --bucket-mb 25 --channels 2 \
    --out out/result.json --timeline out/timeline.json
fi
