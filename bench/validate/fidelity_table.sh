#!/usr/bin/env bash
# The fidelity table of issue 5 (not run by CI; needs root for realexec/testbed): for each layout,
# calibrate a cluster file on the testbed (never hand-tuned), then validate every strategy at two
# bucket sizes against redsim's own executor on the same testbed, writing a table and an SVG.
#
#   bench/validate/fidelity_table.sh BUILD_DIR [RATE] [TRACE]     (defaults: 400mbit, resnet50)
# Outputs under $OUT (default ./fidelity-out): testbed-KxR.json, table-KxR.txt, plot-KxR.svg,
# matrix-KxR.json. Each case runs 5 measured steps after 1 warm-up (about 20-60 s per case).
set -euo pipefail
# One function, called on the last line: bash parses it whole before running, so editing this
# file during a run (the run takes ~30 min) cannot make the running copy read half-edited text.
main() {
  build=${1:?usage: fidelity_table.sh BUILD_DIR [RATE] [TRACE]}
  rate=${2:-400mbit}
  src=$(cd "$(dirname "$0")/../.." && pwd)
  trace=${3:-$src/traces/resnet50.json}
  out=${OUT:-fidelity-out}
  mkdir -p "$out"
  # validate re-executes its own binary per case: a copy, so a rebuild meanwhile cannot pull it away.
  cp "$build/cli/redsim" "$out/redsim"
  redsim=$out/redsim
  cases=$out/cases.json
  cat >"$cases" <<'JSON'
[{"strategy": "bucketed", "bucket_mb": 25, "label": "bucketed 25 MiB"},
 {"strategy": "bucketed", "bucket_mb": 1, "label": "bucketed 1 MiB"},
 {"strategy": "flat", "bucket_mb": 25, "label": "flat (bucket 25)"},
 {"strategy": "flat", "bucket_mb": 1, "label": "flat (bucket 1)"},
 {"strategy": "zero", "bucket_mb": 25, "label": "zero-2 25 MiB"},
 {"strategy": "zero", "bucket_mb": 1, "label": "zero-2 1 MiB"},
 {"strategy": "accumulate", "bucket_mb": 25, "label": "accumulate M=4 25 MiB"},
 {"strategy": "accumulate", "bucket_mb": 1, "label": "accumulate M=4 1 MiB"},
 {"strategy": "localsgd", "bucket_mb": 25, "label": "localsgd H=4 25 MiB"},
 {"strategy": "localsgd", "bucket_mb": 1, "label": "localsgd H=4 1 MiB"}]
JSON
  for layout in 4x1 2x2; do
    k=${layout%x*} r=${layout#*x}
    "$redsim" calibrate --testbed "nodes=$k,ranks-per-node=$r,rate=$rate" --out "$out/testbed-$layout.json"
    "$redsim" validate --matrix "$cases" --testbed "nodes=$k,ranks-per-node=$r,rate=$rate" \
      --cluster "$out/testbed-$layout.json" --trace "$trace" --steps 5 --warmup 1 --microbatches 4 --localsgd-period 4 \
      --table "$out/table-$layout.txt" --svg "$out/plot-$layout.svg" --out "$out/matrix-$layout.json" || true
    cat "$out/table-$layout.txt"
  done
}

main "$@"
