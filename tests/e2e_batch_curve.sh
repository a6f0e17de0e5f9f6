#!/usr/bin/env bash
# --batch-size end to end: a trace captured at several batch sizes (curve_batch_sizes) simulated,
# tuned and run at another; compute follows the curve, a trace without one is refused (exit 2).
# usage: e2e_batch_curve.sh REDSIM_BINARY SOURCE_DIR
set -u
redsim=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redsim-batch.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok   $1"; fi; }
cluster=$src/tests/data/ideal_star_4.json

# tiny_trace.json (batch 8: forward 2.5 ms, backward 5 ms, optimizer 0.5 ms) with a curve: every
# layer takes 0.6x its time at 4 samples and 1.8x at 16.
python3 - "$src/tests/data/tiny_trace.json" "$tmp/curved.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["curve_batch_sizes"] = [4, 8, 16]
for l in t["layers"]:
    for k in ("forward_s", "backward_s"):
        l[k + "_by_batch"] = [l[k] * 0.6, l[k], l[k] * 1.8]
json.dump(t, open(sys.argv[2], "w"))
PY

compute_s() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['trace']['batch_size_per_rank'], round(r['summary']['compute_time_s'], 9))" "$1"; }
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 4 --out "$tmp/b4.json" >/dev/null
# 0.6 x 7.5 ms + 0.5 ms.
check "batch 4: the curve's point" "[ \"\$(compute_s '$tmp/b4.json')\" = '4 0.005' ]"
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 12 --out "$tmp/b12.json" >/dev/null
# Half way from 8 to 16: 1.4 x 7.5 ms + 0.5 ms.
check "batch 12: between the points" "[ \"\$(compute_s '$tmp/b12.json')\" = '12 0.011' ]"
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 12 >"$tmp/b12.txt"
check "batch 12, within the measured 4 to 16: no note" "! grep -q '^note:' '$tmp/b12.txt'"
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 32 >"$tmp/b32.txt"
check "batch 32, beyond the measured 4 to 16: a note says it is extrapolated" "grep -q '^note: batch 32 per rank is outside the batch sizes the trace.s curve measured (4 to 16)' '$tmp/b32.txt'"
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --out "$tmp/own.json" >/dev/null
check "no --batch-size: the trace's own" "[ \"\$(compute_s '$tmp/own.json')\" = '8 0.008' ]"
# Accumulation of 2 micro-batches of 4: each micro-batch costs the curve's 4.5 ms, not half of 7.5.
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 4 --strategy accumulate \
  --microbatches 2 --out "$tmp/acc.json" >/dev/null
check "accumulate: micro-batches at the curve's cost" "[ \"\$(compute_s '$tmp/acc.json')\" = '4 0.0095' ]"

"$redsim" tune --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 4 --strategies bucketed \
  --out "$tmp/tuned.json" >"$tmp/tune.txt" 2>&1
check "tune --batch-size" "[ $? -eq 0 ] && [ -s '$tmp/tuned.json' ]"

# validate plans at the batch too (and passes it to a run it starts): against a measured file here.
echo '[0.01, 0.01, 0.01]' >"$tmp/measured.json"
"$redsim" validate --measured "$tmp/measured.json" --cluster "$cluster" --trace "$tmp/curved.json" --batch-size 4 \
  --max-error 1 --out "$tmp/v.json" >/dev/null 2>&1
check "validate --batch-size: the plan at batch 4" "python3 -c \"import json,sys; v=json.load(open('$tmp/v.json')); s=json.load(open('$tmp/b4.json')); sys.exit(not (v['trace']['batch_size_per_rank'] == 4 and v['comparison']['predicted_step_s'] == s['summary']['step_time_s']))\""
echo '[{"label": "b4", "batch_size": 4}, {"label": "own"}]' >"$tmp/cases.json"
"$redsim" validate --measured "$tmp/measured.json" --cluster "$cluster" --trace "$tmp/curved.json" --matrix "$tmp/cases.json" \
  --max-error 1 --table "$tmp/t.txt" >/dev/null 2>&1
check "validate --matrix: a case's batch_size" "[ -s '$tmp/t.txt' ] && grep -q b4 '$tmp/t.txt'"
echo '[{"batch_size": 0}]' >"$tmp/bad_cases.json"
"$redsim" validate --measured "$tmp/measured.json" --cluster "$cluster" --trace "$tmp/curved.json" --matrix "$tmp/bad_cases.json" \
  --table "$tmp/t2.txt" >/dev/null 2>"$tmp/bad.txt"
check "validate --matrix: batch_size 0 is exit 2 naming its path" "[ $? -eq 2 ] && grep -q 'bad_cases.json: \\\$\[0\].batch_size' '$tmp/bad.txt'"

# tune --samples-per-rank 16: the micro-batch searched over the measured sizes (4 x 4, 8 x 2,
# 16 x 1). With 100 MB of activations a layer at batch 8, batch 16 needs 600 MB and cannot fit in
# 0.5 GB (500,000,000 bytes), so it is reported and the choice is among the other two.
python3 - "$tmp/curved.json" "$tmp/curved_act.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for l in t["layers"]:
    l["activation_bytes"] = 100000000
json.dump(t, open(sys.argv[2], "w"))
PY
# simulate says when a rank's memory exceeds the device's: activations scale with the batch, so
# 3 layers x 100 MB x 16/8 = 600 MB at batch 16 cannot fit in 0.5 GB, and 150 MB at batch 4 can.
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); c['device']['memory_GB']=0.5; json.dump(c, open(sys.argv[2], 'w'))" \
  "$cluster" "$tmp/half_gb.json"
"$redsim" simulate --trace "$tmp/curved_act.json" --cluster "$tmp/half_gb.json" --batch-size 16 --out "$tmp/m16.json" >"$tmp/m16.txt"
"$redsim" simulate --trace "$tmp/curved_act.json" --cluster "$tmp/half_gb.json" --batch-size 4 --out "$tmp/m4.json" >"$tmp/m4.txt"
fits() { python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['memory_per_rank']; print(m['device_memory_bytes'], m['fits_device_memory'], m['total_bytes'] > 600000000)" "$1"; }
check "batch 16: over the device's 500,000,000 bytes" "[ \"\$(fits '$tmp/m16.json')\" = '500000000 False True' ] && grep -q '^  does not fit ' '$tmp/m16.txt'"
check "batch 4: fits, and nothing said" "[ \"\$(fits '$tmp/m4.json')\" = '500000000 True False' ] && ! grep -q 'does not fit' '$tmp/m4.txt'"
"$redsim" simulate --trace "$tmp/curved_act.json" --cluster "$tmp/half_gb.json" --batch-size 16 --strategy all >"$tmp/mall.txt"
check "--strategy all marks the rows over the device" "[ \$(grep -c ' over\$' '$tmp/mall.txt') -eq 7 ] && grep -q '^  over: ' '$tmp/mall.txt'"
"$redsim" simulate --trace "$tmp/curved_act.json" --cluster "$cluster" --batch-size 16 --out "$tmp/m_unknown.json" >/dev/null
check "a device without memory_GB: nothing claimed" "python3 -c \"import json,sys; m=json.load(open('$tmp/m_unknown.json'))['memory_per_rank']; sys.exit('fits_device_memory' in m)\""

"$redsim" tune --trace "$tmp/curved_act.json" --cluster "$cluster" --samples-per-rank 16 --memory-per-device-gb 0.5 \
  --target deepspeed --out "$tmp/mb.json" --emit-dir "$tmp/mb" >"$tmp/mb.txt" 2>&1
check "tune --samples-per-rank runs" "[ $? -eq 0 ]"
python3 - "$tmp/mb.json" "$tmp/mb/deepspeed_config.json" <<'PY' && echo "ok   micro-batch search: sizes, memory, choice and the DeepSpeed batch" || { echo "FAIL: micro-batch search"; fail=1; }
import json, sys
j = json.load(open(sys.argv[1]))
runs = j["micro_batch_search"]
assert [(r["batch_size_per_rank"], r["microbatches"]) for r in runs] == [(4, 4), (8, 2), (16, 1)], runs
assert "no setting fits" in runs[2]["not_tuned"], runs[2]
chosen = [r for r in runs if r.get("chosen")]
assert len(chosen) == 1 and chosen[0]["best_step_s"] == min(r["best_step_s"] for r in runs[:2]), runs
ds = json.load(open(sys.argv[2]))
assert ds["train_micro_batch_size_per_gpu"] == chosen[0]["batch_size_per_rank"], ds
assert ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] == 16, ds
assert ds["train_batch_size"] == 16 * 4, ds
PY
check "the tuned config's hint gives the chosen batch" "grep -q 'redsim simulate --config .*mb.json --batch-size [48] ' '$tmp/mb.txt'"
check "micro-batch table printed" "grep -q '16 x 1 .*no setting fits' '$tmp/mb.txt' && grep -q '<- chosen' '$tmp/mb.txt'"
"$redsim" tune --trace "$tmp/curved.json" --cluster "$cluster" --samples-per-rank 6 >/dev/null 2>"$tmp/err6.txt"
check "--samples-per-rank 6: no measured size divides it, exit 2" "[ $? -eq 2 ] && grep -q 'curved.json: \\\$.curve_batch_sizes: --samples-per-rank 6' '$tmp/err6.txt'"
"$redsim" tune --trace "$tmp/curved.json" --cluster "$cluster" --samples-per-rank 16 --batch-size 4 >/dev/null 2>&1
check "--samples-per-rank with --batch-size: exit 2" "[ $? -eq 2 ]"

# trace synth --batch-sizes: the curve's points are what synth gives at each batch by itself.
"$redsim" trace synth --model resnet50 --batch-size 64 --batch-sizes 8,32 --out "$tmp/synth_curve.json" >/dev/null
"$redsim" trace synth --model resnet50 --batch-size 8 --out "$tmp/synth8.json" >/dev/null
python3 - "$tmp/synth_curve.json" "$tmp/synth8.json" <<'PY' && echo "ok   synth --batch-sizes: the points are synth's own" || { echo "FAIL: synth curve"; fail=1; }
import json, sys
c, b8 = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert c["curve_batch_sizes"] == [8, 32, 64] and c["batch_size_per_rank"] == 64, c["curve_batch_sizes"]
for l, m in zip(c["layers"], b8["layers"]):
    assert l["forward_s_by_batch"][0] == m["forward_s"] and l["backward_s_by_batch"][0] == m["backward_s"], l["name"]
    assert l["forward_s_by_batch"][2] == l["forward_s"], l["name"]
PY

# The bundled traces carry synth's default curve: at batch 32, one of its points, resnet50's compute
# is what synth gives at 32 by itself; --batch-sizes none writes no curve.
"$redsim" trace synth --model resnet50 --batch-size 32 --batch-sizes none --out "$tmp/r50_32.json" >/dev/null
check "synth --batch-sizes none: no curve" "python3 -c \"import json,sys; sys.exit('curve_batch_sizes' in json.load(open('$tmp/r50_32.json')))\""
big=$src/configs/dgx-a100.json
"$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$big" --batch-size 32 --out "$tmp/r50_b32.json" >/dev/null
"$redsim" simulate --trace "$tmp/r50_32.json" --cluster "$big" --out "$tmp/r50_own32.json" >/dev/null
check "bundled resnet50 at batch 32: synth's compute at 32" "[ \"\$(compute_s '$tmp/r50_b32.json')\" = \"\$(compute_s '$tmp/r50_own32.json')\" ]"

"$redsim" simulate --trace "$src/tests/data/tiny_trace.json" --cluster "$cluster" --batch-size 4 >"$tmp/out.txt" 2>"$tmp/err.txt"
rc=$?
check "no curve: exit 2" "[ $rc -eq 2 ]"
check "no curve: one line naming file and path" "[ \$(wc -l <'$tmp/err.txt') -eq 1 ] && grep -q 'tiny_trace.json: \\\$.curve_batch_sizes: --batch-size 4' '$tmp/err.txt'"
"$redsim" simulate --trace "$tmp/curved.json" --cluster "$cluster" --batch-size 0 >/dev/null 2>&1
check "batch 0: exit 2" "[ $? -eq 2 ]"
exit $fail
