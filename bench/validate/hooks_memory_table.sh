#!/usr/bin/env bash
# Issue 18 items 6-7 against real PyTorch (torch 1.13, Gloo) on the namespace testbed (root; not
# run by CI): step times of the DDP comm hooks that run here (fp16_compress_hook, powerSGD_hook
# with one bucket; bucketed DDP beside them, under the same load) predicted by redsim vs measured,
# and per-rank memory of every variant ddp_steps.py runs vs redsim's memory model.
#
#   bench/validate/hooks_memory_table.sh BUILD_DIR [REPEATS]    (default 2 timing runs per variant)
# Environment: OUT (default ./hooks-out), CLUSTER (default: `redsim calibrate` run on this testbed first,
# in the same minutes, its memory_GBps from the hooks' casts included), RATE (400mbit), MODEL (resnet18),
# BATCH (8), SHAPE (3,64,64).
# Outputs under $OUT: per run the measured file and trace, validate's output, times.md (one row per
# run: predicted, measured, error; and predicted again with the device memory_GBps set to the
# hook casts' bandwidth that gloo_half_allreduce.py measures on the same testbed, cluster-hooks.json)
# and memory.md (memory_compare.py's table). ~15 minutes.
set -euo pipefail
main() {
  build=${1:?usage: hooks_memory_table.sh BUILD_DIR [REPEATS]}
  repeats=${2:-2}
  src=$(cd "$(dirname "$0")/../.." && pwd)
  out=${OUT:-hooks-out}
  rate=${RATE:-400mbit} model=${MODEL:-resnet18} batch=${BATCH:-8} shape=${SHAPE:-3,64,64}
  # shellcheck source=bench/validate/table_setup.sh
  . "$src/bench/validate/table_setup.sh"
  prepare_redsim_and_cluster
  [ -n "${CLUSTER:-}" ] || grep "hook casts:" "$out/calibrate.log"
  common=(--model "$model" --batch-size "$batch" --input-shape "$shape")
  tb() { "$src/realexec/testbed" run --nodes 4 --ranks-per-node 1 --rate "$rate" -- "$py" "$script" "${common[@]}" "$@"; }

  # 0. The fp16 hook's casts on this testbed, as redsim counts them: the CPU's memory_GBps.
  "$src/realexec/testbed" run --nodes 4 --ranks-per-node 1 --rate "$rate" -- "$py" \
    "$src/bench/validate/gloo_half_allreduce.py" >"$out/casts.log" 2>&1
  gbps=$(sed -n 's/.*ms: \([0-9.]*\) GB\/s.*/\1/p' "$out/casts.log" | head -1)
  [ -n "$gbps" ] || { echo "FAILED: gloo_half_allreduce.py (see $out/casts.log)"; exit 1; }
  "$py" -c 'import json,sys; c=json.load(open(sys.argv[1])); c["device"]["memory_GBps"]=float(sys.argv[2]);
c["name"]+="+hook-casts"; json.dump(c, open(sys.argv[3], "w"), indent=1)' "$cluster" "$gbps" "$out/cluster-hooks.json"
  grep "rank 0" "$out/casts.log"

  # 1. Step times: each run validated against the trace captured and rescaled in that run.
  echo "| run | predicted ms | measured ms (median) | error | predicted with casts at $gbps GB/s | error |" >"$out/times.md"
  echo "|---|---|---|---|---|---|" >>"$out/times.md"
  for i in $(seq 1 "$repeats"); do
    for v in bucketed fp16-hook powersgd; do
      args=(--variant "$v" --bucket-mb 25)
      [ "$v" = powersgd ] && args=(--variant powersgd --bucket-mb 100 --first-bucket-mb 100 --powersgd-rank 1 \
        --powersgd-start-iter 2)
      name=$v-$i
      tb "${args[@]}" --warmup 3 --steps 6 --out "$out/$name.json" --trace-out "$out/$name.trace.json" \
        >"$out/$name.log" 2>&1 || { echo "FAILED: $name (see $out/$name.log)"; continue; }
      knobs=$("$py" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["redsim_knobs"]))' "$out/$name.json")
      # shellcheck disable=SC2086
      "$redsim" validate --measured "$out/$name.json" --trace "$out/$name.trace.json" --cluster "$cluster" $knobs \
        --max-error 1000 >"$out/$name.validate" 2>&1 || true
      # shellcheck disable=SC2086
      "$redsim" validate --measured "$out/$name.json" --trace "$out/$name.trace.json" \
        --cluster "$out/cluster-hooks.json" $knobs --max-error 1000 >"$out/$name.validate-casts" 2>&1 || true
      line=$(grep -m1 "step time" "$out/$name.validate" || echo "")
      p=$(sed -n 's/.*predicted \([0-9.]*\) ms.*/\1/p' <<<"$line") m=$(sed -n 's/.*measured \([0-9.]*\) ms.*/\1/p' <<<"$line")
      e=$(sed -n 's/.*error \([-+0-9.]*%\).*/\1/p' <<<"$line")
      line=$(grep -m1 "step time" "$out/$name.validate-casts" || echo "")
      p2=$(sed -n 's/.*predicted \([0-9.]*\) ms.*/\1/p' <<<"$line") e2=$(sed -n 's/.*error \([-+0-9.]*%\).*/\1/p' <<<"$line")
      echo "| $name ($knobs) | $p | $m | $e | $p2 | $e2 |" | tee -a "$out/times.md"
    done
  done

  # 2. Memory: Adam (whose state the model counts), no capture and no compute-only optimizer in
  #    the process, so the peak RSS is the training's own.
  mem=()
  for v in bucketed accumulate zero localsgd fp16-hook powersgd; do
    args=(--variant "$v" --bucket-mb 25)
    [ "$v" = powersgd ] && args=(--variant powersgd --bucket-mb 100 --first-bucket-mb 100)
    tb "${args[@]}" --optimizer adam --compute-steps 0 --warmup 3 --steps 4 --localsgd-period 2 --allocator-peak \
      --out "$out/mem-$v.json" >"$out/mem-$v.log" 2>&1 || { echo "FAILED: mem-$v (see $out/mem-$v.log)"; continue; }
    mem+=("$out/mem-$v.json")
  done
  "$py" "$src/bench/validate/memory_compare.py" --redsim "$redsim" --trace "$out/bucketed-1.trace.json" \
    --cluster "$cluster" --table "$out/memory.md" "${mem[@]}"
  cat "$out/times.md"
}

main "$@"
