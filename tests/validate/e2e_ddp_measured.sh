#!/usr/bin/env bash
# redsim validate --measured against real PyTorch DDP (bench/validate/ddp_steps.py): 2 local Gloo
# ranks train resnet18 on a tiny input (batch 2, 3x32x32) with the bucketed variant (and a trace
# scaled to the job's compute, --trace-out), the accumulate variant and fp16_compress_hook (with
# each rank's memory checked against resnet18's parameter count); redsim validate compares
# each measured file with its prediction on the local2 cluster (exit 0 at a huge --max-error: the
# error itself is not asserted, the machine is shared) and rejects a measured file with a
# non-positive step time (exit 2, one line). Skips (77) when /usr/bin/python3 lacks torch or
# torchvision.
set -euo pipefail
redsim=$1
src=$2
py=/usr/bin/python3
if ! "$py" -c 'import torch, torchvision, torch.distributed' >/dev/null 2>&1; then
  echo "SKIP: $py cannot import torch and torchvision (Debian: python3-torch python3-torchvision)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cluster=$src/tests/realexec/data/local2.json
script=$src/bench/validate/ddp_steps.py
fail() { echo "FAILED: $*"; tail -30 "$tmp/out" "$tmp/err" 2>/dev/null || true; exit 1; }
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT REDSIM_HOST_ADDR GLOO_SOCKET_IFNAME
tiny=(--local-ranks 2 --model resnet18 --batch-size 2 --input-shape 3,32,32 --warmup 1 --steps 2 --compute-steps 1)

# 1. Bucketed DDP, with the trace of the same model scaled to the job's compute-only times.
"$py" "$script" "${tiny[@]}" --variant bucketed --bucket-mb 25 --capture-iters 1 \
  --out "$tmp/bucketed.json" --trace-out "$tmp/trace.json" >"$tmp/out" 2>"$tmp/err" || fail "ddp_steps.py bucketed"
grep -q "step 2/2" "$tmp/out" || fail "bucketed: no per-step progress printed"
[ -s "$tmp/bucketed.json" ] && [ -s "$tmp/trace.json" ] || fail "bucketed: measured file or trace not written"
"$py" - "$tmp/bucketed.json" "$tmp/trace.json" <<'PY' || fail "bucketed: bad measured file or trace"
import json, sys
m, t = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert len(m["step_times_s"]) == 2 and all(v > 0 for v in m["step_times_s"]), m["step_times_s"]
assert m["variant"] == "bucketed" and m["world_size"] == 2
assert t["format"] == "redsim-trace" and t["batch_size_per_rank"] == 2
assert "rescaled by bench/validate/ddp_steps.py" in t["source"], t["source"]
PY
v() { "$redsim" validate --trace "$tmp/trace.json" --cluster "$cluster" "$@" >"$tmp/out" 2>"$tmp/err"; }
v --measured "$tmp/bucketed.json" --strategy bucketed --bucket-mb 25 --max-error 1000 || fail "validate bucketed: exit $?"
grep -Eq "step time +predicted [0-9.]+ ms +measured [0-9.]+ ms" "$tmp/out" || fail "validate bucketed: no predicted and measured step time"
echo "ok: bucketed DDP measured and validated: $(grep -m1 "predicted" "$tmp/out" | tr -s " ")"

# 2. Gradient accumulation (no_sync), 2 micro-batches.
"$py" "$script" "${tiny[@]}" --variant accumulate --bucket-mb 25 --microbatches 2 \
  --out "$tmp/accumulate.json" >"$tmp/out" 2>"$tmp/err" || fail "ddp_steps.py accumulate"
v --measured "$tmp/accumulate.json" --strategy accumulate --bucket-mb 25 --microbatches 2 --max-error 1000 ||
  fail "validate accumulate: exit $?"
grep -Eq "step time +predicted [0-9.]+ ms +measured [0-9.]+ ms" "$tmp/out" || fail "validate accumulate: no step times"
echo "ok: accumulate DDP measured and validated: $(grep -m1 "predicted" "$tmp/out" | tr -s " ")"

# 3. fp16_compress_hook (issue 18), with Adam: the measured file says which knobs model it and
#    what every rank held, and the allocator's peak over one profiled step. resnet18 has 11,689,512 fp32 parameters (torchvision's published
#    count): 46,758,048 bytes of parameters, as many of gradients and of DDP buckets, twice that
#    of Adam state (exp_avg, exp_avg_sq), plus 4-byte step counters, one per tensor (62).
"$py" "$script" "${tiny[@]}" --variant fp16-hook --bucket-mb 25 --optimizer adam --compute-steps 0 --allocator-peak \
  --out "$tmp/fp16.json" >"$tmp/out" 2>"$tmp/err" || fail "ddp_steps.py fp16-hook"
"$py" - "$tmp/fp16.json" <<'PY' || fail "fp16-hook: bad knobs or memory"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["redsim_knobs"] == ["--strategy", "bucketed", "--bucket-mb", "25", "--comm-hook", "fp16"], m["redsim_knobs"]
P = 11_689_512 * 4
ranks = m["memory"]["ranks"]
assert len(ranks) == 2
for r in ranks:
    assert r["params_bytes"] == P and r["grads_bytes"] == P and r["bucket_bytes"] == P, r
    assert 2 * P <= r["optimizer_bytes"] <= 2 * P + 62 * 8, r
    # The hook's fp16 copies in flight at their peak: some bucket's, at most every gradient's.
    assert 0 < r["hook_bytes"] <= P // 2 and r["hook_bytes"] % 2 == 0, r
    assert r["peak_rss_bytes"] > r["rss_before_model_bytes"] > 0, r
    # --allocator-peak: the profiled step began with the gradients freed and left exactly one new
    # set (P bytes) allocated, besides what a callback freed on a Gloo thread: the fp16 copies (half
    # of P) and a little bookkeeping (once 38,400 bytes more, CI 2026-11-29), well short of a full set
    # of gradients (P), which is what this tells apart; at Adam's step all the state above was
    # allocated at once.
    a = r["allocator"]
    assert a["net_bytes"] - a["unseen_free_bytes"] == P, a
    assert 0 <= a["unseen_free_bytes"] <= P // 2 + P // 100, a
    assert a["peak_bytes"] >= 5 * P, a  # params, grads and buckets (P each), Adam's two moments (2P)
PY
v --measured "$tmp/fp16.json" --strategy bucketed --bucket-mb 25 --comm-hook fp16 --max-error 1000 ||
  fail "validate fp16-hook: exit $?"
echo "ok: fp16_compress_hook DDP measured (memory of both ranks checked) and validated"

# 4. A measured file with a non-positive step time: exit 2, one line naming the file and path.
"$py" -c 'import json,sys; d=json.load(open(sys.argv[1])); d["step_times_s"][1]=0; json.dump(d, open(sys.argv[2],"w"))' \
  "$tmp/bucketed.json" "$tmp/zero-step.json"
rc=0; v --measured "$tmp/zero-step.json" --strategy bucketed --bucket-mb 25 || rc=$?
[ "$rc" -eq 2 ] || fail "non-positive step time: expected exit 2, got $rc"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "non-positive step time: expected a one-line error"
grep -q 'step_times_s\[1\]' "$tmp/err" || fail "non-positive step time: error does not name \$.step_times_s[1]"
echo "ok: non-positive step time rejected: $(cat "$tmp/err")"
