#!/usr/bin/env bash
# Activation checkpointing against real PyTorch (torch 1.13, Gloo) on the namespace testbed (root;
# not run by CI): bucketed DDP with and without every repeated block under torch.utils.checkpoint
# (ddp_steps.py --checkpoint-blocks), each run validated against the trace the job captured of the
# plain model and rescaled to its own compute-only steps (with the wrappers off), so redsim adds
# the recompute itself (--activation-checkpointing blocks).
#
#   bench/validate/checkpointing_table.sh BUILD_DIR [REPEATS]    (default 2 pairs per model)
# Environment: OUT (default ./ckpt-out), CLUSTER (default: `redsim calibrate` on this testbed
# first), RATE (400mbit), MODELS ("resnet18 mobilenet_v3_large"), BATCH (8), SHAPE (3,64,64).
# Outputs under $OUT: per run the measured file, trace and validate's output, and times.md: one row
# per run (predicted, measured, error) and per pair the checkpointing's cost (checkpointed - plain),
# predicted against measured. ~3 minutes per model and repeat.
set -euo pipefail

# "predicted measured" step milliseconds from a validate output.
step_ms() {
  local line
  line=$(grep -m1 "step time" "$1" || echo "")
  echo "$(sed -n 's/.*predicted \([0-9.]*\) ms.*/\1/p' <<<"$line") $(sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p' <<<"$line")"
}

main() {
  build=${1:?usage: checkpointing_table.sh BUILD_DIR [REPEATS]}
  repeats=${2:-2}
  case $repeats in '' | *[!0-9]* | 0) echo "REPEATS: expected a positive integer, got '$repeats'" >&2; exit 2 ;; esac
  src=$(cd "$(dirname "$0")/../.." && pwd)
  out=${OUT:-ckpt-out}
  rate=${RATE:-400mbit} batch=${BATCH:-8} shape=${SHAPE:-3,64,64}
  read -r -a models <<<"${MODELS:-resnet18 mobilenet_v3_large}"
  # shellcheck source=bench/validate/table_setup.sh
  . "$src/bench/validate/table_setup.sh"
  prepare_redsim_and_cluster
  echo "| run | predicted ms | measured ms | error |" >"$out/times.md"
  echo "|---|---|---|---|" >>"$out/times.md"
  costs=()
  for model in "${models[@]}"; do
    for i in $(seq 1 "$repeats"); do
      declare -A p=() m=()
      for v in plain ckpt; do
        name=$model-$v-$i
        extra=()
        [ "$v" = ckpt ] && extra=(--checkpoint-blocks)
        "$src/realexec/testbed" run --nodes 4 --ranks-per-node 1 --rate "$rate" -- "$py" "$script" --model "$model" \
          --batch-size "$batch" --input-shape "$shape" --variant bucketed --bucket-mb 25 "${extra[@]}" --warmup 3 \
          --steps 6 --out "$out/$name.json" --trace-out "$out/$name.trace.json" >"$out/$name.log" 2>&1 ||
          { echo "FAILED: $name (see $out/$name.log)"; continue 2; }
        knobs=$("$py" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["redsim_knobs"]))' "$out/$name.json")
        # shellcheck disable=SC2086
        "$redsim" validate --measured "$out/$name.json" --trace "$out/$name.trace.json" --cluster "$cluster" $knobs \
          --max-error 1000 >"$out/$name.validate" 2>&1 || true
        read -r p[$v] m[$v] <<<"$(step_ms "$out/$name.validate")"
        e=$(awk -v a="${p[$v]}" -v b="${m[$v]}" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')
        echo "| $name ($knobs) | ${p[$v]} | ${m[$v]} | $e |" | tee -a "$out/times.md"
      done
      costs+=("| $model $i | $(awk -v a="${p[ckpt]}" -v b="${p[plain]}" 'BEGIN { printf "%.1f", a - b }') | $(awk -v a="${m[ckpt]}" -v b="${m[plain]}" 'BEGIN { printf "%.1f", a - b }') |")
      unset p m
    done
  done
  { echo; echo "| pair | checkpointing's cost, predicted ms | measured ms |"; echo "|---|---|---|"; printf '%s\n' "${costs[@]}"; } |
    tee -a "$out/times.md"
}

main "$@"
