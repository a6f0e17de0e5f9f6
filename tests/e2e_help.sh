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
# An unknown subcommand is named in one line, exit 2, with or without --help after it.
for args in "nosuch --help" "bogus"; do
  set +e
  err=$("$redsim" $args 2>&1 >/dev/null)
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { echo "redsim $args gave exit $rc, expected 2"; exit 1; }
  [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "unknown subcommand \"${args%% *}\"" <<<"$err" ||
    { echo "redsim $args: expected one line naming it, got: $err"; exit 1; }
done
# --zero-impl: an unknown library, or PyTorch's ZeroRedundancyOptimizer (stage 1) with stage 2,
# is one line naming the option, exit 2.
src0=$(cd "$(dirname "$0")/.." && pwd)
for args in "--zero-impl fairscale" "--zero-impl pytorch --zero-stage 2"; do
  set +e
  err=$("$redsim" simulate --trace "$src0/traces/resnet50.json" --cluster "$src0/configs/dgx-h100.json" --strategy zero \
        $args 2>&1 >/dev/null)
  rc=$?
  set -e
  [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q -- "--zero-impl" <<<"$err" ||
    { echo "simulate $args: expected exit 2 and one line naming --zero-impl, got $rc: $err"; exit 1; }
done
# NCCL's spellings of algorithms and protocols (NCCL_ALGO, NCCL_PROTO), any case, on the command
# line and in a --config file.
src=$(cd "$(dirname "$0")/.." && pwd)
for a in Ring Tree NVLS rInG; do
  "$redsim" collective --cluster "$src/configs/dgx-h100.json" --op allreduce -b 1M -e 1M --algorithm "$a" >/dev/null ||
    { echo "--algorithm $a refused"; exit 1; }
done
for p in LL LL128 Simple; do
  "$redsim" collective --cluster "$src/configs/dgx-h100.json" --op allreduce -b 1M -e 1M --protocol "$p" >/dev/null ||
    { echo "--protocol $p refused"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo '{"knobs": {"strategy": "bucketed", "algorithm": "Tree", "protocol": "LL128"}}' >"$tmp/k.json"
"$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100.json" --config "$tmp/k.json" \
  --out "$tmp/r.json" >/dev/null || { echo "--config with NCCL spellings refused"; exit 1; }
# NCCL_ALGO's lists in a --config file: the result's knobs write them back in NCCL's spellings,
# and no allreduce runs NVLS; a malformed list names the file and its JSON path, exit 2.
echo '{"knobs": {"strategy": "bucketed", "algorithm": "^nvls", "protocol": "ll,simple"}}' >"$tmp/l.json"
"$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100.json" --config "$tmp/l.json" \
  --out "$tmp/l_r.json" >/dev/null || { echo "--config with NCCL lists refused"; exit 1; }
"$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100.json" --strategy bucketed \
  --out "$tmp/auto_r.json" >/dev/null || { echo "auto run failed"; exit 1; }
python3 - "$tmp/l_r.json" "$tmp/auto_r.json" <<'PY' || { echo "lists not in the result"; exit 1; }
import json, sys
j, auto = (json.load(open(f)) for f in sys.argv[1:])
assert (j["knobs"]["algorithm"], j["knobs"]["protocol"]) == ("^NVLS", "^LL128"), j["knobs"]
algos = lambda r: {c["algorithm"] for c in r["summary"]["collectives"] if c["kind"] == "allreduce"}
assert "nvls" in algos(auto) and algos(j) and "nvls" not in algos(j), (algos(auto), algos(j))
PY
echo '{"knobs": {"algorithm": "Ring;Tree"}}' >"$tmp/bad_l.json"
rc=0
"$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100.json" --config "$tmp/bad_l.json" \
  --out "$tmp/bad_r.json" >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "bad_l.json: \$.knobs.algorithm: expected an algorithm" "$tmp/err" &&
  [ ! -e "$tmp/bad_r.json" ] || { echo "bad list in --config: rc $rc: $(cat "$tmp/err")"; exit 1; }
# PowerSGD says when a trace lacks parameter shapes (its matrices are then guessed); the bundled
# traces carry every shape, tests/data/tiny_trace.json none of its 4 parameters.
out=$("$redsim" simulate --trace "$src/tests/data/tiny_trace.json" --cluster "$src/tests/data/ideal_star_4.json" \
  --strategy bucketed --comm-hook powersgd --powersgd-rank 2) || { echo "powersgd on tiny_trace failed"; exit 1; }
grep -q "^knobs: .*, comm hook powersgd rank 2 (4 of 4 parameters without a shape in the trace" <<<"$out" ||
  { echo "no word on the missing shapes: $(grep '^knobs' <<<"$out")"; exit 1; }
out=$("$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/tests/data/ideal_star_4.json" \
  --strategy bucketed --comm-hook powersgd) || { echo "powersgd on resnet50 failed"; exit 1; }
grep -q "^knobs: .*, comm hook powersgd rank 1$" <<<"$out" || { echo "resnet50's shapes: $(grep '^knobs' <<<"$out")"; exit 1; }
# Activation checkpointing: resnet50's 16 bottleneck blocks each recompute once; a bad value and
# a trace without input_bytes are refused with one line and exit 2.
out=$("$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/tests/data/ideal_star_4.json" \
  --activation-checkpointing blocks) || { echo "checkpointing on resnet50 failed"; exit 1; }
grep -q "^knobs: .*, activation checkpointing: 16 block recomputes a step$" <<<"$out" ||
  { echo "checkpointing not in the knobs line: $(grep '^knobs' <<<"$out")"; exit 1; }
# refuses PATTERN ARGS...: simulate on the 4-rank ideal star with ARGS exits 2 with one stderr
# line containing PATTERN (a fixed string) and writes no --out.
refuses() {
  local want=$1 rc=0
  shift
  "$redsim" simulate "$@" --cluster "$src/tests/data/ideal_star_4.json" --out "$tmp/no.json" >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -e "$tmp/no.json" ] && grep -qF -- "$want" "$tmp/err" ||
    { echo "$*: exit $rc, $(cat "$tmp/err")"; exit 1; }
}
refuses --activation-checkpointing --trace "$src/traces/resnet50.json" --activation-checkpointing some
refuses --activation-checkpointing --trace "$src/tests/data/tiny_trace.json" --activation-checkpointing blocks
# From a --config file the same error names the file and the knob's JSON path.
echo '{"knobs": {"activation_checkpointing": "blocks"}}' >"$tmp/ck.json"
refuses 'ck.json: $.knobs.activation_checkpointing: expected' --trace "$src/tests/data/tiny_trace.json" --config "$tmp/ck.json"
# --optimizer-impl: a bad name on the command line and in a --config file.
refuses "--optimizer-impl: expected auto|for-loop|foreach|fused" --trace "$src/tests/data/tiny_trace.json" --optimizer-impl adamw
echo '{"knobs": {"optimizer_impl": "apex"}}' >"$tmp/oi.json"
refuses 'oi.json: $.knobs.optimizer_impl: expected one of' --trace "$src/tests/data/tiny_trace.json" --config "$tmp/oi.json"
# The option parser's own errors are one line too (CLI11 adds "Run with --help" on a second).
refuses "redsim: error: --batch-size: Value 0 not in range" --trace "$src/tests/data/tiny_trace.json" --batch-size 0
refuses "redsim: error: The following argument was not expected: --bogus" --trace "$src/tests/data/tiny_trace.json" --bogus
echo "9 passed, 0 failed"
