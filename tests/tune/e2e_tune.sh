#!/usr/bin/env bash
# redsim tune end to end on a tiny trace: the outputs exist and parse, the same inputs give
# byte-identical outputs, tuned.json feeds `redsim simulate --config` and simulates to the
# predicted step time, progress is plain lines when stderr is not a terminal, and the
# exhaustive search finds no better setting.
set -euo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace="$src/tests/data/tiny_trace.json"
cluster="$src/tests/data/ideal_star_4.json"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Run b spells --emit-dir as the README does: relative, with a trailing slash, not existing yet.
for run in a b; do
  emit="$tmp/$run.emit"
  [ "$run" = b ] && emit="b.emit/"
  (cd "$tmp" && "$redsim" tune --trace "$trace" --cluster "$cluster" --microbatches 2 --max-localsgd-period 4 \
    --out "$tmp/$run.tuned.json" --report "$tmp/$run.report.svg" --emit-dir "$emit" \
    >"$tmp/$run.stdout" 2>"$tmp/$run.stderr") || fail "redsim tune exited $?"
done

# Deterministic: every output byte-identical; stdout too, but for the paths and the wall time.
cmp "$tmp/a.tuned.json" "$tmp/b.tuned.json" || fail "tuned.json differs between runs"
cmp "$tmp/a.report.svg" "$tmp/b.report.svg" || fail "report differs between runs"
for f in pytorch_ddp.py deepspeed_config.json horovod.env nccl.env pytorch_fsdp.py README.txt; do
  [ -s "$tmp/a.emit/$f" ] || fail "no $f emitted"
  cmp "$tmp/a.emit/$f" "$tmp/b.emit/$f" || fail "$f differs between runs"
done
norm() { sed -e "s|$tmp/[ab]\.||g" -e "s|snippets:     [ab]\.|snippets:     |" -e 's/, [0-9.]* s on [0-9]* thread(s)//' "$1"; }
cmp <(norm "$tmp/a.stdout") <(norm "$tmp/b.stdout") || fail "stdout differs between runs"
ls "$tmp" | grep -q '\.tmp\.' && fail "a temporary file was left behind"

# Outputs parse.
jq -e '.format == "redsim-tuned" and (.knobs | type == "object") and .search.simulations > 0' "$tmp/a.tuned.json" >/dev/null ||
  fail "tuned.json lacks its members"
jq -e '.zero_optimization.reduce_bucket_size | type == "number"' "$tmp/a.emit/deepspeed_config.json" >/dev/null ||
  fail "deepspeed_config.json does not parse"
for f in horovod.env nccl.env; do
  grep -v -e '^#' -e '^$' "$tmp/a.emit/$f" | grep -qvE '^[A-Z_][A-Z0-9_]*=[^ ]+$' && fail "$f has a line that is not KEY=VALUE"
  ( set -a; . "$tmp/a.emit/$f"; set +a ) || fail "$f does not source"
done
grep -q '^HOROVOD_FUSION_THRESHOLD=[0-9][0-9]*$' "$tmp/a.emit/horovod.env" || fail "no fusion threshold"
# nccl.env pins the channels it was simulated with, or keeps NCCL's defaults and pins nothing.
if grep -q '^# redsim tune --target nccl: keep the defaults' "$tmp/a.emit/nccl.env"; then
  grep -q '^NCCL_' "$tmp/a.emit/nccl.env" && fail "nccl.env keeps the defaults but pins a variable"
else
  grep -q '^NCCL_MIN_NCHANNELS=' "$tmp/a.emit/nccl.env" || fail "no NCCL channels"
fi
for f in pytorch_ddp.py deepspeed_config.json horovod.env nccl.env pytorch_fsdp.py; do
  grep -q "redsim tune --target .*: \(predicted\|keep the defaults\)" "$tmp/a.emit/$f" "$tmp/a.emit/README.txt" ||
    fail "$f does not state its predicted step and the gap to the defaults"
done
if command -v python3 >/dev/null; then
  for f in pytorch_ddp.py pytorch_fsdp.py; do
    python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$tmp/a.emit/$f" || fail "$f is not valid Python"
  done
fi
grep -q '^<svg ' "$tmp/a.report.svg" && tail -1 "$tmp/a.report.svg" | grep -q '^</svg>$' || fail "report is not an SVG"
grep -q '^ready-to-paste settings:' "$tmp/a.stdout" || fail "snippets not printed"
grep -q '^--- horovod.env ---' "$tmp/a.stdout" || fail "horovod snippet not printed"

# Not a terminal: plain progress lines, no carriage returns.
grep -q '^tune: ' "$tmp/a.stderr" || fail "no progress lines"
grep -q $'\r' "$tmp/a.stderr" && fail "progress bar drawn on a non-terminal"

# tuned.json is a config for redsim simulate, and simulates to the predicted step time.
fidelity=$(jq -r '.inputs.engine.fidelity' "$tmp/a.tuned.json")
"$redsim" simulate --trace "$trace" --cluster "$cluster" --config "$tmp/a.tuned.json" --fidelity "$fidelity" \
  --out "$tmp/sim.json" >/dev/null || fail "simulate --config tuned.json failed"
predicted=$(jq '.predicted.step_time_s' "$tmp/a.tuned.json")
simulated=$(jq '.summary.step_time_s' "$tmp/sim.json")
[ "$predicted" = "$simulated" ] || fail "simulate --config gives $simulated s, tune predicted $predicted s"
[ "$(jq -c .knobs "$tmp/a.tuned.json")" = "$(jq -c .knobs "$tmp/sim.json")" ] || fail "simulate ran other knobs"

# The exhaustive search finds nothing better.
"$redsim" tune --trace "$trace" --cluster "$cluster" --microbatches 2 --max-localsgd-period 4 --exhaustive \
  --no-snippets --out "$tmp/ex.json" >/dev/null 2>&1 || fail "--exhaustive failed"
jq -e --slurpfile g "$tmp/a.tuned.json" \
  '.search.method == "exhaustive" and .predicted.time_per_optimizer_step_s == $g[0].predicted.time_per_optimizer_step_s' \
  "$tmp/ex.json" >/dev/null || fail "guided and exhaustive disagree on this small grid"
echo "1 passed, 0 failed"
