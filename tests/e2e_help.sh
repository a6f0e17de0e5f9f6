#!/usr/bin/env bash
# --help explains every option with its unit and default.
set -euo pipefail
redsim=$1
"$redsim" --help | grep -q simulate
help=$("$redsim" simulate --help)
for want in "--trace" "--cluster" "--strategy" "MiB" "--first-bucket-mb" "--channels" "--timeline" "--sim-log" "--bucket-order"; do
  grep -q -- "$want" <<<"$help" || { echo "simulate --help lacks $want"; exit 1; }
done
# A missing required option is a usage error: exit status 2.
set +e
"$redsim" simulate >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "missing --trace gave exit $rc, expected 2"; exit 1; }
echo "1 passed, 0 failed"
