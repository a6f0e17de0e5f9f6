#!/usr/bin/env bash
# Quick start, step 2: build (warnings are errors) and run every test through CTest.
set -euo pipefail
cd "$(dirname "$0")"
bash ./setup.sh --no-run
ctest --test-dir build --output-on-failure -j"$(nproc)"
