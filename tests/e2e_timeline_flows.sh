#!/usr/bin/env bash
# simulate --timeline: a flow arrow from each op a collective waits on (its gradients' backward)
# to the collective, on rank 0, a "collective bytes in flight" counter per rank that rises by
# a collective's bytes while it runs, and per link class the bytes each rank sends while they
# run (a star of single-device nodes: network only; two DGX H100 nodes: NVLink and network), and
# with a trace that gives activations the activations held, peaking at their sum.
# Expected values come from the --plan file and the slices' own bytes.
set -euo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$redsim" simulate --trace "$src/tests/data/tiny_trace.json" --cluster "$src/tests/data/ideal_star_4.json" \
  --strategy bucketed --bucket-mb 1 --plan "$tmp/plan.json" --out "$tmp/out.json" --timeline "$tmp/tl.json" >/dev/null
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
plan = json.load(open(d + "/plan.json"))
ev = json.load(open(d + "/tl.json"))["traceEvents"]
ops = plan["ops"]
coll = lambda o: "bytes" in o
pairs = [(dep, o["id"]) for o in ops if coll(o) for dep in o["deps"] if not coll(ops[dep])]
assert len(pairs) >= 2, "the plan should have several buckets fed by backward ops"
starts = {e["id"]: e for e in ev if e["ph"] == "s"}
ends = {e["id"]: e for e in ev if e["ph"] == "f"}
assert len(starts) == len(ends) == len(pairs), (len(starts), len(ends), len(pairs))
slices = {(e["pid"], e["args"]["op"]): e for e in ev if e["ph"] == "X"}
for i, (dep, op) in enumerate(pairs):
    s, f, src_x, dst_x = starts[i], ends[i], slices[(0, dep)], slices[(0, op)]
    # The arrow leaves inside the dependency's slice and lands where the collective starts.
    assert src_x["ts"] <= s["ts"] <= src_x["ts"] + src_x["dur"] + 1e-6, (s, src_x)
    assert abs(f["ts"] - dst_x["ts"]) < 1e-6 and f["ts"] >= s["ts"] - 1e-6, (f, dst_x)
# Counter: never negative, back to 0 at the end, and at least a collective's bytes while it runs.
assert {e["name"] for e in ev if e["ph"] == "C"} == {"collective bytes in flight", "bytes sent in flight: net"}
for rank in range(plan["world_size"]):
    c = sorted((e["ts"], e["args"]["bytes"]) for e in ev if e["ph"] == "C" and e["pid"] == rank
               and e["name"] == "collective bytes in flight")
    assert c and all(b >= 0 for _, b in c) and c[-1][1] == 0, c
    for o in ops:
        if not coll(o):
            continue
        x = slices[(rank, o["id"])]
        if x["dur"] <= 0:
            continue
        at = [b for t, b in c if t <= x["ts"] + 1e-9][-1]
        assert at >= o["bytes"], (o["name"], at, o["bytes"])
print("1 passed, 0 failed")
PY

"$redsim" simulate --trace "$src/traces/gpt2-xl.json" --cluster "$src/configs/dgx-h100-x2.json" \
  --strategy bucketed --timeline "$tmp/tl2.json" >/dev/null
python3 - "$tmp" "$src" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1] + "/tl2.json"))["traceEvents"]
names = ("bytes sent in flight: nvlink", "bytes sent in flight: net")
act = "activations held (model)"  # gpt2-xl.json gives its layers' activation_bytes
assert {e["name"] for e in ev if e["ph"] == "C"} == {"collective bytes in flight", act, *names}
trace = json.load(open(sys.argv[2] + "/traces/gpt2-xl.json"))
held = [e["args"]["bytes"] for e in sorted((e for e in ev if e["ph"] == "C" and e["pid"] == 0 and e["name"] == act),
                                            key=lambda e: e["ts"])]
assert max(held) == sum(l["activation_bytes"] for l in trace["layers"]) and held[-1] == 0, (max(held), held[-1])
for rank in (0, 15):
    tracks = {n: sorted((e["ts"], e["args"]["bytes"]) for e in ev if e["ph"] == "C" and e["pid"] == rank and e["name"] == n)
              for n in names}
    for n, c in tracks.items():
        assert c and all(b >= 0 for _, b in c) and c[-1][1] == 0, (n, c[-1])
    at = lambda n, t: [b for ts, b in tracks[n] if ts <= t + 1e-9][-1]
    # While a collective runs, the classes together carry at least the bytes it sends.
    for x in (e for e in ev if e["ph"] == "X" and e["pid"] == rank and "bytes_sent" in e["args"] and e["dur"] > 0):
        assert sum(at(n, x["ts"]) for n in names) >= x["args"]["bytes_sent"] - 2, (x["name"], x["args"]["bytes_sent"])
print("2 passed, 0 failed")
PY
