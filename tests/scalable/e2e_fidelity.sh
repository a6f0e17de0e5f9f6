#!/usr/bin/env bash
# redsim simulate --fidelity: the result JSON names the fidelity that ran; auto picks exact for
# a small world; a bad value is a usage error (exit status 2).
set -euo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fidelity_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["engine"]["fidelity"])' "$1"; }
args=(--trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100-x2.json")
"$redsim" simulate "${args[@]}" --strategy bucketed --out "$tmp/auto.json" >/dev/null
[ "$(fidelity_of "$tmp/auto.json")" = exact ] || { echo "auto on 16 ranks did not run exact"; exit 1; }
"$redsim" simulate "${args[@]}" --strategy bucketed --fidelity scalable --out "$tmp/scalable.json" >/dev/null
[ "$(fidelity_of "$tmp/scalable.json")" = scalable ] || { echo "--fidelity scalable not reported"; exit 1; }
"$redsim" simulate "${args[@]}" --strategy bucketed --fidelity exact --out "$tmp/exact.json" >/dev/null
[ "$(fidelity_of "$tmp/exact.json")" = exact ] || { echo "--fidelity exact not reported"; exit 1; }
# The two fidelities agree on this step within 2%.
python3 - "$tmp/exact.json" "$tmp/scalable.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))["summary"]["step_time_s"]
s = json.load(open(sys.argv[2]))["summary"]["step_time_s"]
assert abs(s - e) <= 0.02 * e, (e, s)
PY
# --strategy all reports one fidelity for the comparison and one per strategy.
"$redsim" simulate "${args[@]}" --strategy all --fidelity scalable --out "$tmp/all.json" >/dev/null
[ "$(fidelity_of "$tmp/all.json")" = scalable ] || { echo "--strategy all did not report scalable"; exit 1; }
set +e
"$redsim" simulate "${args[@]}" --fidelity fastest >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || { echo "--fidelity fastest gave exit $rc, expected 2"; exit 1; }
echo "1 passed, 0 failed"
