#!/usr/bin/env bash
# redsim run end to end: every strategy the binary knows, on 2 and 4 local Gloo ranks, completes,
# verifies its results and writes a measured timeline with every op of the Plan on every rank in
# Plan order per stream (checked by check_measured against the Plan rebuilt from the inputs).
set -euo pipefail
redsim=$1
check=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace=$src/tests/data/tiny_trace.json
data=$src/tests/realexec/data
passed=0

# The strategies this build has, from --help ("reduction strategy: flat|bucketed|...").
strategies=$("$redsim" run --help | sed -n 's/.*reduction strategy: \([a-z|]*\).*/\1/p' | tr '|' ' ')
[ -n "$strategies" ] || { echo "no strategies found in redsim run --help"; exit 1; }

run() {  # name ranks extra-args...
  local name=$1 n=$2
  shift 2
  if ! "$redsim" run --ranks "$n" --trace "$trace" --cluster "$data/local$n.json" --steps 2 --warmup 1 \
      --out "$tmp/$name.json" --timeline "$tmp/$name.trace.json" "$@" >"$tmp/$name.out" 2>&1; then
    echo "FAILED: $name"; cat "$tmp/$name.out"; exit 1
  fi
  grep -q "verification         passed" "$tmp/$name.out" || { echo "FAILED: $name printed no verification"; exit 1; }
  grep -q '"traceEvents"' "$tmp/$name.trace.json" || { echo "FAILED: $name wrote no Chrome trace"; exit 1; }
  "$check" "$tmp/$name.json" || { echo "FAILED: $name's result"; exit 1; }
  passed=$((passed + 1))
  echo "ok: $name"
}

for s in $strategies; do
  for n in 2 4; do
    run "$s-$n" "$n" --strategy "$s" --bucket-mb 1
  done
done
# Channels (concurrent communicators), a 16-bit wire dtype and another reduce op.
run bucketed-ch2-bf16 2 --strategy bucketed --bucket-mb 1 --channels 2 --wire-dtype bf16 --reduce-op sum
run flat-ch3-fp16-3 3 --strategy flat --channels 3 --wire-dtype fp16 --reduce-op avg
# DDP communication hooks and FSDP's knobs (issue 18).
run bucketed-fp16-hook 2 --strategy bucketed --bucket-mb 1 --comm-hook fp16
run bucketed-bf16-hook 3 --strategy bucketed --bucket-mb 1 --comm-hook bf16
run bucketed-powersgd 2 --strategy bucketed --bucket-mb 1 --comm-hook powersgd --powersgd-rank 2
# PyTorch's ZeroRedundancyOptimizer: DDP's allreduces, then every parameter from its owner.
run zero-pytorch-3 3 --strategy zero --zero-impl pytorch --bucket-mb 1
run fsdp-shard-grad-op 3 --strategy fsdp --reshard-after-forward false --backward-prefetch none --forward-prefetch true
# hsdp with real shard groups: two groups of two (sub-communicators), every buffer verified.
run hsdp-groups-of-2 4 --strategy hsdp --shard-group 2
run hsdp-groups-of-2-ch2 4 --strategy hsdp --shard-group 2 --channels 2 --wire-dtype bf16 --reduce-op avg
# Real sizes: ResNet-50's 25.6 M gradients (102 MB per rank) in DDP's 25 MiB buckets.
n=2
"$redsim" run --ranks 2 --trace "$src/traces/resnet50.json" --cluster "$data/local2.json" --strategy bucketed \
  --steps 2 --warmup 1 --out "$tmp/resnet.json" >"$tmp/resnet.out" 2>&1 || { echo "FAILED: resnet50"; cat "$tmp/resnet.out"; exit 1; }
"$check" "$tmp/resnet.json" || { echo "FAILED: resnet50's result"; exit 1; }
# resnet50.json gives its activations: the model's figure names them beside the comparison, the
# executor (no model) holds none of them.
grep -q "the model's activations, not held by the executor nor in the model row: 2.584 GiB" "$tmp/resnet.out" ||
  { echo "FAILED: resnet50's activations line"; grep -i activ "$tmp/resnet.out"; exit 1; }
python3 - "$tmp/resnet.json" "$src/traces/resnet50.json" <<'PY' || { echo "FAILED: resnet50's model activations"; exit 1; }
import json, sys
model = json.load(open(sys.argv[1]))["measurement"]["memory"]["model"]
want = sum(l["activation_bytes"] for l in json.load(open(sys.argv[2]))["layers"])
assert model["activation_bytes"] == want, (model["activation_bytes"], want)
assert model["total_bytes"] == sum(model[k] for k in ("params_bytes", "grads_bytes", "optimizer_bytes",
                                                      "comm_buffer_bytes", "activation_bytes")), model
PY
passed=$((passed + 1))
echo "ok: resnet50-bucketed-2"
# Activation checkpointing on a real executor: fsdp on resnet50's 16 bottleneck blocks (layer1.0 ..
# layer4.2) runs one recompute per block per step and re-gathers the earlier units each spans, all verified.
"$redsim" run --ranks 2 --trace "$src/traces/resnet50.json" --cluster "$data/local2.json" --strategy fsdp \
  --activation-checkpointing blocks --steps 2 --warmup 1 --out "$tmp/ckpt.json" --timeline "$tmp/ckpt.trace.json" \
  >"$tmp/ckpt.out" 2>&1 || { echo "FAILED: resnet50 fsdp checkpointed"; cat "$tmp/ckpt.out"; exit 1; }
grep -q "verification         passed" "$tmp/ckpt.out" || { echo "FAILED: checkpointed fsdp not verified"; exit 1; }
"$check" "$tmp/ckpt.json" || { echo "FAILED: checkpointed fsdp's result"; exit 1; }
python3 - "$tmp/ckpt.trace.json" "$src/traces/resnet50.json" "$tmp/ckpt.json" <<'PY' || { echo "FAILED: checkpointed fsdp's ops"; exit 1; }
import json, re, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = [l["name"] for l in json.load(open(sys.argv[2]))["layers"]]
blocks = {m.group(0) for m in (re.match(r"layer\d+\.\d+", n) for n in names) if m}
assert len(blocks) == 16, blocks
recomputes = [e for e in events if e.get("ph") == "X" and e.get("pid") == 0 and e["name"].startswith("recompute:")]
assert len(recomputes) == len(blocks), len(recomputes)  # one step in the timeline
model = json.load(open(sys.argv[3]))["measurement"]["memory"]["model"]
assert 0 < model["activation_bytes"] < sum(l["activation_bytes"] for l in json.load(open(sys.argv[2]))["layers"]), model
PY
passed=$((passed + 1))
echo "ok: resnet50-fsdp-checkpointed-2"
echo "$passed passed, 0 failed"
