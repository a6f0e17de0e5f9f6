#!/usr/bin/env bash
# simulate --out at scale (issue 19): the timeline is folded (redsim-timeline v3), each op's
# records partition the ranks it holds, the step time is the last record's end, equal buckets of
# a computed tree get equal per-rank times, --timeline-ranks chooses what both outputs hold, the
# Perfetto trace keeps to a few ranks on a large job, validate reads the folded form back, and
# ZeRO past 4,096 ranks keeps a record per chain.
set -euo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
trace="$src/traces/gpt2-xl.json"
# 64 DGX H100 nodes, 512 ranks: a tree allreduce over 511 edges is computed, not simulated.
python3 -c "
import json, sys
c = json.load(open('$src/configs/dgx-h100-x16.json')); c['nodes'] = 64; c['name'] = 'dgx-h100-x64'
json.dump(c, open('$tmp/c512.json', 'w'))"
"$redsim" simulate --trace "$trace" --cluster "$tmp/c512.json" --strategy bucketed --algorithm tree --fidelity scalable \
  --out "$tmp/r.json" --timeline "$tmp/t.json" >"$tmp/out" || fail "simulate at 512 ranks"
grep -q "ranks 0,7-8,511 of 512 (--timeline-ranks chooses)" "$tmp/out" || fail "the Perfetto default ranks are not said"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def ranks_of(run):  # [first, last] or [first, last, stride]
    return range(run[0], run[1] + 1, run[2] if len(run) == 3 else 1)
r = json.load(open(d + "/r.json"))
tl = r["timeline"]
assert tl["version"] == 3 and tl["world_size"] == 512 and tl["ranks_included"] == [[0, 511]], tl["ranks_included"]
last_end = 0.0
by_bytes = {}
for i, op in enumerate(tl["ops"]):
    assert op["op"] == i
    covered = []
    for rec in op["records"]:
        for run in rec["ranks"]:
            covered.extend(ranks_of(run))
        assert rec["ready_s"] <= rec["start_s"] <= rec["end_s"], rec
        last_end = max(last_end, rec["end_s"])
    assert sorted(covered) == list(range(512)), "op %d does not cover each rank once" % i
coll = r["summary"]["collectives"]
assert coll and all(c["algorithm"] == "tree" for c in coll)
# Ranks end by their place in the tree: a tree op has more than one record, far fewer than ranks.
for c in coll:
    n = len(tl["ops"][c["op"]]["records"])
    assert 1 < n < 512, (c["op"], n)
    by_bytes.setdefault(c["bytes"], []).append(c["op"])
assert abs(r["summary"]["step_time_s"] - last_end) <= 1e-12 * last_end, (r["summary"]["step_time_s"], last_end)
# Buckets of equal bytes: every rank's time in the collective is the same in each.
def per_rank(op):
    out = {}
    for rec in tl["ops"][op]["records"]:
        for run in rec["ranks"]:
            for k in ranks_of(run):
                out[k] = rec["end_s"] - rec["start_s"]
    return out
same = [ops for ops in by_bytes.values() if len(ops) > 1]
assert same, "GPT-2 XL's 25 MiB buckets should repeat"
for ops in same:
    first = per_rank(ops[0])
    for op in ops[1:]:
        other = per_rank(op)
        assert all(abs(first[k] - other[k]) <= 1e-12 for k in range(512)), op
pids = {e["pid"] for e in json.load(open(d + "/t.json"))["traceEvents"]}
assert pids == {0, 7, 8, 511}, pids
PY
echo "ok: folded --out at 512 ranks, default Perfetto ranks"

"$redsim" simulate --trace "$trace" --cluster "$tmp/c512.json" --strategy bucketed --fidelity scalable \
  --timeline-ranks 3,100-101 --out "$tmp/r3.json" --timeline "$tmp/t3.json" >/dev/null || fail "--timeline-ranks"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def ranks_of(run):  # [first, last] or [first, last, stride]
    return range(run[0], run[1] + 1, run[2] if len(run) == 3 else 1)
tl = json.load(open(d + "/r3.json"))["timeline"]
assert tl["ranks_included"] == [[3, 3], [100, 101]], tl["ranks_included"]
for op in tl["ops"]:
    covered = sorted(k for rec in op["records"] for run in rec["ranks"] for k in ranks_of(run))
    assert covered == [3, 100, 101], covered
assert {e["pid"] for e in json.load(open(d + "/t3.json"))["traceEvents"]} == {3, 100, 101}
PY
echo "ok: --timeline-ranks 3,100-101"

# validate reads the folded form as a measured run (every rank held).
python3 -c "
import json; d = json.load(open('$tmp/r.json')); d['measurement'] = {'step_times_s': [d['summary']['step_time_s']]}
json.dump(d, open('$tmp/m.json', 'w'))"
"$redsim" validate --trace "$trace" --cluster "$tmp/c512.json" --strategy bucketed --algorithm tree --fidelity scalable \
  --measured "$tmp/m.json" --out "$tmp/v.json" >"$tmp/vout" || fail "validate of a folded timeline: $(tail -2 "$tmp/vout")"
python3 -c "
import json; v = json.load(open('$tmp/v.json')); e = v['comparison']['step_error']
assert abs(e) < 1e-9, e
assert v['measured']['has_timeline'] is True"
echo "ok: validate reads redsim-timeline v3"

set +e
"$redsim" simulate --trace "$trace" --cluster "$tmp/c512.json" --strategy flat --timeline-ranks 512 --out "$tmp/bad.json" >"$tmp/bad_out" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--timeline-ranks 512 of 512: exit $rc"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "--timeline-ranks: expected" "$tmp/err" || fail "bad --timeline-ranks message: $(cat "$tmp/err")"
[ ! -e "$tmp/bad.json" ] && [ ! -s "$tmp/bad_out" ] || fail "a refused run wrote its output or simulated first"
echo "ok: a rank beyond the world is refused"

# ZeRO past 4,096 ranks: a reduce per owner slice, each a long chain stored as one record plus
# the ranks whose bytes differ (sim/README.md). 1,024 DGX H100 nodes, 8,192 ranks.
python3 -c "
import json
c = json.load(open('$src/configs/dgx-h100-x2048.json')); c['nodes'] = 1024; c['name'] = 'dgx-h100-x1024'
json.dump(c, open('$tmp/c8192.json', 'w'))"
"$redsim" simulate --trace "$trace" --cluster "$tmp/c8192.json" --strategy zero --fidelity scalable \
  --out "$tmp/z.json" >/dev/null || fail "zero at 8,192 ranks"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
def ranks_of(run):  # [first, last] or [first, last, stride]
    return range(run[0], run[1] + 1, run[2] if len(run) == 3 else 1)
r = json.load(open(d + "/z.json"))
tl, n = r["timeline"], 8192
assert tl["world_size"] == n
reduces = [c for c in r["summary"]["collectives"] if c["kind"] == "reduce"]
assert len(reduces) > n, len(reduces)  # one per owner slice of each bucket
last_end = max(rec["end_s"] for op in tl["ops"] for rec in op["records"])
assert abs(r["summary"]["step_time_s"] - last_end) <= 1e-12 * last_end
for c in reduces:
    op = tl["ops"][c["op"]]
    root = int(c["name"].rsplit(":to", 1)[1])
    sent = received = 0
    covered = 0
    for rec in op["records"]:
        count = sum(len(ranks_of(run)) for run in rec["ranks"])
        covered += count
        sent += rec["bytes_sent"] * count
        received += rec["bytes_received"] * count
        if any(root in ranks_of(run) for run in rec["ranks"]):
            assert rec["bytes_sent"] == 0, ("the root sends nothing", c["name"])
    assert covered == n, c["name"]
    # Few records (a default, each channel's head and tail), every rank ending with the chain.
    assert len(op["records"]) <= 1 + 2 * c["channels"], (c["name"], len(op["records"]))
    assert len({rec["end_s"] for rec in op["records"]}) == 1, c["name"]
    # Every rank but the root sends the buffer once (per channel), every rank but the heads receives it.
    assert sent == received and sent > 0, (c["name"], sent, received)
PY
echo "ok: zero at 8,192 ranks, long chains folded"
