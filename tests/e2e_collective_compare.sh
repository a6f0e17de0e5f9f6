#!/usr/bin/env bash
# redsim collective --compare end to end: a real nccl-tests log against the simulated sweep (each
# row's measured time is the log's, the error its arithmetic, the band summary its count), the
# chart, the log's NCCL release, a log's alltoall run left out, calibrate --from-nccl-tests's chart
# of the fit, and bad input
# (exit 2, one line, nothing written).
# usage: e2e_collective_compare.sh REDSIM_BINARY SOURCE_DIR
set -u
redsim=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redsim-compare.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok   $1"; fi; }
logs=$src/tests/data/nccl_tests
ar=$logs/superbench-a100_all_reduce_8r.log
ag=$logs/superbench-a100_all_gather_8r.log

"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$ar" "$ag" --json "$tmp/c.json" --svg "$tmp/c.svg" \
  >"$tmp/out.txt" 2>"$tmp/err.txt"
check "two logs compare" "[ $? -eq 0 ] && [ -s '$tmp/c.json' ] && [ -s '$tmp/c.svg' ]"
python3 - "$tmp/c.json" "$tmp/out.txt" "$tmp/c.svg" "$ar" "$ag" <<'PY' && echo "ok   rows, arithmetic, summaries and chart" || { echo "FAIL: rows"; fail=1; }
import json, re, sys, xml.etree.ElementTree as ET
j = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
runs = j["runs"]
assert [r["op"] for r in runs] == ["allreduce", "allgather"], runs
summaries = re.findall(r"within (\d+)%: (\d+) of (\d+)", out)
assert len(summaries) == 4, summaries
for run, log, k in zip(runs, sys.argv[4:6], range(2)):
    # The log's own rows, read here: size and out-of-place time, at the column the header names.
    measured, at = [], None
    for line in open(log):
        f = line.split()
        if f[:2] == ["#", "size"]:
            at = f.index("time") - 1
        elif f and f[0].isdigit() and int(f[0]) > 0 and int(f[1]) > 0:
            measured.append((int(f[0]), float(f[at])))
    rows = run["rows"]
    assert [(r["size_bytes"], r["measured_time_us"]) for r in rows] == measured, (rows[:3], measured[:3])
    n = run["ranks"]
    factor = 2 * (n - 1) / n if run["op"] == "allreduce" else (n - 1) / n
    for r in rows:
        assert abs(r["error_pct"] - (r["measured_time_us"] / r["predicted_time_us"] - 1) * 100) < 1e-9, r
        busbw = r["size_bytes"] / (r["predicted_time_us"] * 1e-6) / 1e9 * factor
        assert abs(r["predicted_busbw_GBps"] - busbw) <= 1e-9 * busbw + 1e-12, r
    assert run["gpus_per_process"] == 8 and run["iters"] == 20 and run["nccl_version"] == "2.18.5", run
    small = [abs(r["error_pct"]) for r in rows if r["size_bytes"] < 65536]
    large = [abs(r["error_pct"]) for r in rows if r["size_bytes"] >= 65536]
    expect = [("30", sum(e <= 30 for e in small), len(small)), ("15", sum(e <= 15 for e in large), len(large))]
    got = [(b, int(w), int(t)) for b, w, t in summaries[2 * k:2 * k + 2]]
    assert got == expect, (got, expect)
    assert len(re.findall(r"^ +\d+ ", out.split("line 1: " + run["op"])[1].split("#  from")[0], re.M)) == len(rows)
svg = ET.parse(sys.argv[3]).getroot()
lines = [e for e in svg.iter() if e.tag.endswith("polyline")]
assert len(lines) == 4, len(lines)  # measured and predicted, per run
assert [len(e.get("points").split()) for e in lines] == [len(runs[0]["rows"])] * 2 + [len(runs[1]["rows"])] * 2
PY

# The log's NCCL release decides the layout the simulation uses; without one, the cluster's.
{ echo "# nccl-tests version 2.13.9 nccl-headers=22005 nccl-library=22005"; cat "$ar"; } >"$tmp/v220.log"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/v220.log" --json "$tmp/v.json" >"$tmp/v.txt"
check "the log's NCCL release" "[ $? -eq 0 ] && grep -q '\"nccl_version\": \"2.20.5\"' '$tmp/v.json' && grep -q \"NCCL 2.20.5 (the log's)\" '$tmp/v.txt'"

# A -g 8 run: the output says the host's launches pace it, with the cluster file's figures
# (dgx-a100.json: collective_launch_us 4, no cost per channel).
check "a -g 8 run names the host's launch costs" "grep -q \"^#  -g 8: one thread launches 8 GPUs' kernels\" '$tmp/out.txt' && \
  grep -q '^#        8 x (4 us + 0 us a channel past the first) in this cluster file' '$tmp/out.txt'"

# A cluster check's log of several tests (a real alltoall_perf run, then an all_reduce_perf run):
# the alltoall run is left out with a note naming the file and its line, and the rest compared;
# a log of nothing else is bad input (below).
cat "$logs/xxrjun-h100_alltoall_8r.log" "$ar" >"$tmp/mixed.log"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/mixed.log" --json "$tmp/m.json" >"$tmp/m.txt" 2>"$tmp/m.err"
check "a log's alltoall run left out, its allreduce compared" "[ $? -eq 0 ] && grep -q 'mixed.log: line 2: alltoall_perf left out' '$tmp/m.err' && \
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"runs\"]; assert [x[\"op\"] for x in r] == [\"allreduce\"], r' '$tmp/m.json'"

# A row with wrong results (#wrong > 0) is shown and marked, and left out of the band summary.
sed -E '0,/^ +1048576 /s/^( +1048576 +[0-9]+ +float +sum +[0-9.]+ +[0-9.]+ +[0-9.]+ +)N\/A/\13/' "$ar" >"$tmp/wrong.log"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$ar" >"$tmp/w0.txt"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/wrong.log" --json "$tmp/w.json" >"$tmp/w1.txt"
check "a wrong row is marked and not counted" "grep -q '^ *1048576 .*#wrong > 0: not counted' '$tmp/w1.txt' && \
  grep -q 'from 64 KiB up: 18 rows' '$tmp/w0.txt' && grep -q 'from 64 KiB up: 17 rows' '$tmp/w1.txt' && \
  grep -q '\"wrong\": 3' '$tmp/w.json'"

# calibrate --from-nccl-tests --svg: the log measured, on the cluster as given and as fitted.
"$redsim" calibrate --from-nccl-tests "$ar" --cluster "$src/configs/dgx-a100.json" --out "$tmp/fit.json" \
  --svg "$tmp/fit.svg" >"$tmp/fit.txt" 2>/dev/null
check "calibrate --svg" "[ $? -eq 0 ] && [ -s '$tmp/fit.json' ] && [ -s '$tmp/fit.svg' ]"
python3 - "$tmp/fit.svg" "$tmp/fit.txt" <<'PY' && echo "ok   three curves of every fitted row" || { echo "FAIL: calibrate chart"; fail=1; }
import re, sys, xml.etree.ElementTree as ET
svg = ET.parse(sys.argv[1]).getroot()
rows = len(re.findall(r"^ +\d+ +[\d.]+ +[\d.]+ +[-+][\d.]+% +[\d.]+ +[-+][\d.]+%", open(sys.argv[2]).read(), re.M))
lines = [e for e in svg.iter() if e.tag.endswith("polyline")]
assert rows > 20 and [len(e.get("points").split()) for e in lines] == [rows] * 3, (rows, lines)
text = " ".join(e.text or "" for e in svg.iter() if e.tag.endswith("text"))
assert "fitted (calibrate's cluster)" in text and "as given" in text and "band below" not in text, text
PY

# Two SuperBench logs that ran -g 8: one thread's launches pace their small and mid sizes, and
# the launches cost more the more channels a size runs on (NCCL adds one per 32 KiB up to 24), so
# calibrate fits the host's launch and a positive part per channel, each in the written cluster,
# and the fitted rows come out closer than the preset's.
"$redsim" calibrate --from-nccl-tests "$logs/superbench-a100_reduce_scatter_8r.log" "$ag" --cluster "$src/configs/dgx-a100.json" \
  --out "$tmp/host.json" >"$tmp/host.txt" 2>/dev/null
check "calibrate on -g 8 logs" "[ $? -eq 0 ]"
python3 - "$tmp/host.json" "$tmp/host.txt" <<'PY' && echo "ok   the host's launch cost fitted from -g 8 logs" || { echo "FAIL: host launch fit"; fail=1; }
import json, re, sys
c = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
assert c["collective_launch_per_channel_us"] > 0 and c["collective_launch_us"] > 0, c
assert re.search(r"^  \$\.collective_launch_per_channel_us +0\.000 +[\d.]+ ", out, re.M), out
m = re.search(r"median \|time error\| over \d+ rows: ([\d.]+)% as given, ([\d.]+)% fitted", out)
assert m and float(m.group(2)) < float(m.group(1)), m
PY

# A log whose NCCL printed NCCL_ALGO / NCCL_PROTO (NCCL_DEBUG=INFO): the real log with NCCL's two
# INFO lines after its rank lines. The prediction runs what the log ran (tree/simple at every
# size), says so, and --algorithm given on the command line wins over the log's.
{ sed -n 1,11p "$ar"
  echo "localhost:112424:112424 [0] NCCL INFO NCCL_ALGO set by environment to Tree"
  echo "localhost:112424:112424 [0] NCCL INFO NCCL_PROTO set by environment to Simple"
  sed -n '12,$p' "$ar"; } >"$tmp/env.log"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/env.log" --json "$tmp/env.json" >"$tmp/env.txt"
check "a log's NCCL_ALGO and NCCL_PROTO" "[ $? -eq 0 ] && grep -q 'NCCL_ALGO=Tree NCCL_PROTO=Simple (the log.s)' '$tmp/env.txt'"
python3 - "$tmp/env.json" <<'PY' && echo "ok   every row runs the log's tree/simple" || { echo "FAIL: log pins"; fail=1; }
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
assert run["requested"] == {"algorithm": "Tree", "protocol": "Simple", "channels": "auto"}, run["requested"]
assert run["rows"] and all((r["algorithm"], r["protocol"]) == ("tree", "simple") for r in run["rows"]), run["rows"][0]
PY
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/env.log" --algorithm ring >"$tmp/env2.txt"
check "--algorithm beside the log's" "[ $? -eq 0 ] && grep -q 'NCCL_PROTO=Simple (the log.s), algorithm ring (given)' '$tmp/env2.txt' && ! grep -q 'tree/' '$tmp/env2.txt'"
sed 's/set by environment to Tree/set by environment to Trees/' "$tmp/env.log" >"$tmp/env_bad.log"
# NCCL_ALGO=NVLSTree on one node (Azure/AI-benchmarking-guide runs it on single VMs): NCCL 2.18
# turns NVLSTree off on one node and then takes a list that left nothing as ring and tree, so
# the log is simulated with NCCL's own choice, as the same log without the line is.
grep -v 'NCCL_PROTO set by' "$tmp/env.log" | sed 's/set by environment to Tree/set by environment to NVLSTree/' >"$tmp/nvlstree.log"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/nvlstree.log" --json "$tmp/nvlstree.json" >"$tmp/nvlstree.txt"
rc=$?
check "  saying NCCL ignores it there" "grep -q '^# note: NCCL 2.18.5 ignores NCCL_ALGO=NVLSTree here' '$tmp/nvlstree.txt' && ! grep -q '^# note' '$tmp/env.txt'"
# calibrate --from-nccl-tests says so too (two rows of that log keep the fit short).
{ sed -n 1,12p "$tmp/nvlstree.log"; sed -n '13,$p' "$tmp/nvlstree.log" | grep -E '^ *#|^ *(1048576|2097152) '; } >"$tmp/nvlstree2.log"
"$redsim" calibrate --from-nccl-tests "$tmp/nvlstree2.log" --cluster "$src/configs/dgx-a100.json" --out "$tmp/nvfit.json" >"$tmp/nvfit.txt" 2>/dev/null
check "  and calibrate --from-nccl-tests" "[ $? -eq 0 ] && grep -q 'note: .*nvlstree2.log line 1: NCCL 2.18.5 ignores NCCL_ALGO=NVLSTree here' '$tmp/nvfit.txt'"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$ar" --json "$tmp/plain.json" >/dev/null
python3 - "$tmp/nvlstree.json" "$tmp/plain.json" <<'PY' && [ $rc -eq 0 ] && echo "ok   a log's NCCL_ALGO=NVLSTree on one node is NCCL's own choice" || { echo "FAIL: NVLSTree log"; fail=1; }
import json, sys
pinned, plain = (json.load(open(f))["runs"][0] for f in sys.argv[1:])
assert pinned["requested"]["algorithm"] == "NVLSTree", pinned["requested"]
choice = lambda run: [(r["algorithm"], r["protocol"], r["channels"]) for r in run["rows"]]
assert pinned["rows"] and choice(pinned) == choice(plain)
PY

# NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS printed in a log (NCCL_PARAM's "... set by environment to
# N."), applied as graph/connect.cc applies them: the topology's channels cut to the maximum
# (clamped to [1, MAXCHANNELS], 32 in this 2.18.5 run, 64 from 2.25), then copied up to the
# minimum (clamped to [0, MAXCHANNELS]). The largest size runs on every channel, so its count is
# the communicator's.
bounds() {
  { sed -n 1,11p "$ar"; for b in "$@"; do echo "localhost:112424:112424 [0] NCCL INFO NCCL_${b%%=*}_NCHANNELS set by environment to ${b#*=}."; done
    sed -n '12,$p' "$ar"; } >"$tmp/bounds.log"
  "$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/bounds.log" --json "$tmp/bounds.json" >"$tmp/bounds.txt" || return 1
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["rows"]; print(max(x["channels"] for x in r), r[-1]["channels"])' "$tmp/bounds.json"
}
natural=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["runs"][0]["rows"]; print(r[-1]["channels"])' "$tmp/plain.json")
check "a log's MIN = MAX = 4 runs 4 channels" "[ \"\$(bounds MIN=4 MAX=4)\" = '4 4' ] && grep -q 'NCCL_MIN_NCHANNELS=4 NCCL_MAX_NCHANNELS=4 (the log.s)' '$tmp/bounds.txt'"
check "a maximum above 32 is 32, which does not bind" "[ \"\$(bounds MAX=100)\" = '$natural $natural' ] && [ $natural -le 32 ]"
check "a minimum of 32 copies channels up to 32" "[ \"\$(bounds MIN=32)\" = '32 32' ]"
check "a maximum of 0 is 1" "[ \"\$(bounds MAX=0)\" = '1 1' ]"
check "a minimum of 64 is 32 under 2.18.5" "[ \"\$(bounds MIN=64)\" = '32 32' ]"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["nccl_version"]="2.26.2"; json.dump(c,open(sys.argv[2],"w"))' \
  "$src/configs/dgx-a100.json" "$tmp/a100-226.json"
"$redsim" collective --cluster "$tmp/a100-226.json" --compare "$tmp/bounds.log" --json "$tmp/bounds226.json" >/dev/null
check "  and 64 from 2.25" "python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"runs\"][0][\"rows\"]; sys.exit(r[-1][\"channels\"] != 64)' '$tmp/bounds226.json'"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/bounds.log" --channels 2 --json "$tmp/bounds2.json" >/dev/null
check "--channels beside the log's bounds wins" "python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))[\"runs\"][0][\"rows\"]; sys.exit(r[-1][\"channels\"] != 2)' '$tmp/bounds2.json'"

# Bad input: exit 2, one line naming what is wrong, and nothing written.
bad() {
  local what=$1
  shift
  rm -f "$tmp/bad.json" "$tmp/bad.svg"
  "$redsim" "$@" >/dev/null 2>"$tmp/bad.txt"
  local rc=$?
  check "rejects $what" "[ $rc -eq 2 ] && [ \$(wc -l < '$tmp/bad.txt') -eq 1 ] && [ ! -e '$tmp/bad.json' ] && [ ! -e '$tmp/bad.svg' ]"
}
bad "a truncated log" collective --cluster "$src/configs/dgx-a100.json" --compare "$logs/truncated_all_reduce.log" --json "$tmp/bad.json"
check "  naming the file and line" "grep -q 'truncated_all_reduce.log' '$tmp/bad.txt' && grep -q 'line' '$tmp/bad.txt'"
bad "16 ranks on one node" collective --cluster "$src/configs/dgx-a100.json" --compare "$logs/oci-a100_all_reduce_16r.log" --svg "$tmp/bad.svg"
bad "sizes beside a log" collective --cluster "$src/configs/dgx-a100.json" --compare "$ar" -b 1M
bad "--svg without a log" collective --cluster "$src/configs/dgx-a100.json" --svg "$tmp/bad.svg"
bad "calibrate --svg without logs" calibrate --ranks 2 --out "$tmp/bad.json" --svg "$tmp/bad.svg"
bad "a log of alltoall alone" collective --cluster "$src/configs/dgx-a100.json" --compare "$logs/xxrjun-h100_alltoall_8r.log" --json "$tmp/bad.json"
check "  saying what the log has" "grep -q 'line 2: .*the log has only alltoall_perf' '$tmp/bad.txt'"
bad "a log's unknown NCCL_ALGO" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/env_bad.log" --json "$tmp/bad.json"
check "  naming the line and the name" "grep -q 'env_bad.log: line 12: a value of NCCL_ALGO as NCCL reads it: unknown name \"Trees\"' '$tmp/bad.txt'"
bad "a missing log" collective --cluster "$src/configs/dgx-a100.json" --compare "$tmp/none.log" --json "$tmp/bad.json"
exit $fail
