#!/usr/bin/env bash
# redsim validate end to end: a measured run it starts itself on 2 local ranks (must finish with a
# verdict; the error is not asserted, the machine is shared), a `redsim run --out` file given
# with --measured, the exit-status rules on step-times files with known times (0 within
# --max-error, 1 beyond), a --matrix with its table and SVG, and bad input (exit 2, one line).
set -uo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace=$src/tests/data/tiny_trace.json
cluster=$src/tests/realexec/data/local2.json
fail() { echo "FAILED: $*"; cat "$tmp/out" "$tmp/err" 2>/dev/null | tail -30; exit 1; }
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS
v() { "$redsim" validate --trace "$trace" --cluster "$cluster" "$@" >"$tmp/out" 2>"$tmp/err"; }
jget() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 1. Measured by validate itself on 2 local ranks.
v --ranks 2 --steps 3 --warmup 1 --out "$tmp/self.json"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "validate --ranks 2: exit status $rc"
grep -q "verdict: " "$tmp/out" || fail "validate --ranks 2: no verdict printed"
[ "$(jget "$tmp/self.json" 'd["verdict"] in ("pass","fail")')" = True ] || fail "no verdict in --out"
[ "$(jget "$tmp/self.json" 'd["measured"]["has_timeline"]')" = True ] || fail "self-measured run has no timeline"
pred=$(jget "$tmp/self.json" 'd["comparison"]["predicted_step_s"]')
echo "ok: validate --ranks 2 (exit $rc, predicted $pred s, error $(jget "$tmp/self.json" 'd["comparison"]["step_error"]'))"

# 1b. Part of a larger cluster file (configs/local.json has 4 ranks): --layout 2 for validate and
#     the run it starts, and for redsim run itself, which refuses the whole file on 2 ranks.
four=$src/configs/local.json
"$redsim" validate --trace "$trace" --cluster "$four" --layout 2 --ranks 2 --steps 2 --warmup 1 --out "$tmp/part.json" \
  >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "validate --layout 2 --ranks 2: exit status $rc"
[ "$(jget "$tmp/part.json" 'd["cluster"]["world_size"]')" = 2 ] || fail "validate --layout 2: not 2 ranks"
"$redsim" run --ranks 2 --trace "$trace" --cluster "$four" --steps 1 --warmup 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
[ "$rc" -eq 2 ] || fail "run --ranks 2 on a 4-rank cluster: expected exit 2, got $rc"
"$redsim" run --ranks 2 --trace "$trace" --cluster "$four" --layout 1x2 --steps 1 --warmup 0 >"$tmp/out" 2>"$tmp/err" ||
  fail "run --ranks 2 --layout 1x2"
echo "ok: --layout 2 of configs/local.json's 4 ranks for validate --ranks 2 and redsim run"

# 2. A redsim run result given with --measured (per-op comparison).
"$redsim" run --ranks 2 --trace "$trace" --cluster "$cluster" --steps 3 --warmup 1 --out "$tmp/run.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "redsim run"
v --measured "$tmp/run.json" --out "$tmp/m.json"; rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || fail "validate --measured run.json: exit status $rc"
grep -q "op start error" "$tmp/out" || fail "no per-op error printed"
[ "$(jget "$tmp/m.json" 'len(d["comparison"]["ops"]) > 0')" = True ] || fail "no per-op comparison in --out"
echo "ok: validate --measured (redsim run result, exit $rc)"

# 3. Exit status from known step times: predicted x {0.98, 1.0, 1.03} -> median error 0 (pass at 1%),
# predicted x 1.5 -> error -33% (fail at 10%, pass at 40%).
python3 - "$pred" "$tmp" <<'PY'
import json, sys
p, d = float(sys.argv[1]), sys.argv[2]
json.dump({"step_times_s": [p * 0.98, p, p * 1.03]}, open(d + "/near.json", "w"))
json.dump([p * 1.5] * 4, open(d + "/slow.json", "w"))
PY
v --measured "$tmp/near.json" --max-error 0.01; [ $? -eq 0 ] || fail "near: expected exit 0"
grep -q "step times only" "$tmp/out" || fail "near: step-times-only not stated"
v --measured "$tmp/slow.json" --max-error 0.10; [ $? -eq 1 ] || fail "slow: expected exit 1"
grep -q "FAIL" "$tmp/out" || fail "slow: no FAIL verdict"
v --measured "$tmp/slow.json" --max-error 0.40; [ $? -eq 0 ] || fail "slow at 40%: expected exit 0"
echo "ok: exit status 0 within, 1 beyond --max-error"

# 4. Matrix: two cases from files, a table and an SVG with one point per case.
printf '[{"measured": "%s", "label": "near"}, {"measured": "%s", "label": "slow"}]\n' "$tmp/near.json" "$tmp/slow.json" >"$tmp/matrix.json"
v --matrix "$tmp/matrix.json" --table "$tmp/t.txt" --svg "$tmp/p.svg" --out "$tmp/mx.json" --max-error 0.10
[ $? -eq 1 ] || fail "matrix: expected exit 1 (one case beyond)"
[ "$(grep -c '<circle' "$tmp/p.svg")" -eq 2 ] || fail "matrix: SVG does not have 2 points"
# Readable without hovering: a title, labelled ticks on both axes, each case named beside its
# point, and the +-max-error band.
grep -q 'font-weight="bold">redsim validate: predicted against measured' "$tmp/p.svg" || fail "matrix: SVG has no title"
[ "$(grep -cE 'text-anchor="end">[0-9.]+</text>' "$tmp/p.svg")" -ge 3 ] || fail "matrix: fewer than 3 y ticks"
[ "$(grep -cE 'text-anchor="middle">[0-9.]+</text>' "$tmp/p.svg")" -ge 3 ] || fail "matrix: fewer than 3 x ticks"
for c in near slow; do grep -q "paint-order=\"stroke\">$c [+-]" "$tmp/p.svg" || fail "matrix: case $c not labelled"; done
[ "$(grep -c '<polygon' "$tmp/p.svg")" -eq 1 ] && grep -q 'max-error 10.0%' "$tmp/p.svg" || fail "matrix: no max-error band"
grep -q "^near" "$tmp/t.txt" && grep -q "^slow" "$tmp/t.txt" || fail "matrix: table lacks a case"
[ "$(jget "$tmp/mx.json" 'len(d["cases"])')" = 2 ] || fail "matrix: --out lacks cases"
# Both cases simulate the same plan: a predicted tie, so no pair is ordered otherwise.
grep -q "^ranking preserved: 0 of 1 pairs" "$tmp/t.txt" || fail "matrix: no ranking line for 1 pair"
[ "$(jget "$tmp/mx.json" 'd["ranking"]["pairs"]')" = 1 ] || fail "matrix: --out lacks the ranking check"
echo "ok: --matrix table, SVG and JSON"

# 5. Bad input: exit 2, one line on stderr.
bad() {  # name pattern args...
  local name=$1 pattern=$2
  shift 2
  v "$@"; local rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: not one line on stderr"
  grep -q -- "$pattern" "$tmp/err" || fail "$name: stderr does not say \"$pattern\""
  echo "ok: $name: $(cat "$tmp/err")"
}
echo 'not json' >"$tmp/garbage.json"
echo '{"step_times_s": [0.1, -1]}' >"$tmp/neg.json"
python3 -c "import json; d=json.load(open('$tmp/run.json')); d['timeline']['ranks'][0]['ops'].pop(); json.dump(d, open('$tmp/short.json','w'))"
bad missing "cannot open" --measured "$tmp/nope.json"
bad garbage "not valid JSON" --measured "$tmp/garbage.json"
bad negative 'step_times_s\[1\]' --measured "$tmp/neg.json"
bad op-count "ops (the plan's op count)" --measured "$tmp/short.json"
bad both "give neither --ranks nor --testbed" --measured "$tmp/near.json" --ranks 2
bad none "give exactly one of" 
bad world "--ranks 3 but the cluster has 2" --ranks 3
bad max-error "--max-error" --measured "$tmp/near.json" --max-error -1
bad testbed "--testbed: expected" --testbed nodes=2
printf '[{"measured": "%s", "label": "near"}, {"measured": "%s", "label": "near"}]\n' "$tmp/near.json" "$tmp/slow.json" >"$tmp/twice.json"
bad matrix-label-twice 'twice.json: \$\[1\].label: expected a label that no case before it has' --matrix "$tmp/twice.json" --table "$tmp/t2.txt"
echo "all validate checks passed"
