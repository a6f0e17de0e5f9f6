#!/usr/bin/env bash
# Same inputs, byte-identical outputs: run redsim simulate twice and compare every file.
set -euo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in a b; do
  "$redsim" simulate --trace "$src/traces/resnet50.json" --cluster "$src/configs/dgx-h100-x2.json" \
    --strategy bucketed --bucket-mb 25 --channels 2 \
    --out "$tmp/$run.result.json" --timeline "$tmp/$run.timeline.json" --plan "$tmp/$run.plan.json" >"$tmp/$run.stdout"
done
for f in result.json timeline.json plan.json; do
  cmp "$tmp/a.$f" "$tmp/b.$f"
done
# The summary names the output files, which differ by run; everything else must match.
cmp <(sed "s|$tmp/a\.||" "$tmp/a.stdout") <(sed "s|$tmp/b\.||" "$tmp/b.stdout")
# The timeline is a Chrome trace with a process per rank and a thread per stream.
grep -q '"traceEvents"' "$tmp/a.timeline.json"
grep -q '"thread_name"' "$tmp/a.timeline.json"
echo "1 passed, 0 failed"
