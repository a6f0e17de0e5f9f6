#!/usr/bin/env bash
# redsim collective end to end: nccl-tests' columns and bus-bandwidth factors, every op, subsets
# of a cluster, NCCL's spellings, and bad options (exit 2, one line).
# usage: e2e_collective.sh REDSIM_BINARY SOURCE_DIR
set -u
redsim=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redsim-collective.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok   $1"; fi; }

# The issue's example: 8 B .. 8 GiB doubling is 31 rows on 8 H100s.
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --op allreduce -b 8 -e 8G -f 2 >"$tmp/out.txt" 2>"$tmp/err.txt"
check "example runs" "[ $? -eq 0 ]"
check "31 rows" "[ \$(grep -cv '^#' '$tmp/out.txt') -eq 31 ]"
check "nccl-tests header" "grep -q 'size *count *type *redop *root *time *algbw *busbw #wrong' '$tmp/out.txt'"
check "algorithm and protocol columns" "grep -q 'nvls *simple' '$tmp/out.txt' && grep -q 'ring *ll ' '$tmp/out.txt'"

# Bus-bandwidth factors and algbw = size / time, for every op (JSON rows).
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --ops all -b 1M -e 64M -f 8 --json "$tmp/all.json" >/dev/null
check "--ops all --json" "[ $? -eq 0 ] && [ -s '$tmp/all.json' ]"
python3 - "$tmp/all.json" <<'PY' && echo "ok   busbw = algbw x nccl-tests factor; algbw = size/time" || { echo "FAIL: factors"; fail=1; }
import json, sys
j = json.load(open(sys.argv[1]))
n = j["cluster"]["ranks"]
factor = {"allreduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n, "allgather": (n - 1) / n, "broadcast": 1.0, "reduce": 1.0}
ops = set()
for r in j["rows"]:
    ops.add(r["op"])
    assert abs(r["algbw_GBps"] - r["size_bytes"] / (r["time_us"] * 1e-6) / 1e9) <= 1e-9 * r["algbw_GBps"] + 1e-12, r
    assert abs(r["busbw_GBps"] - r["algbw_GBps"] * factor[r["op"]]) <= 1e-9 * r["busbw_GBps"] + 1e-12, r
    if r["op"] in ("allgather", "reduce_scatter"):
        assert r["size_bytes"] == r["count"] * n * 4, r  # per-rank count, whole buffer
    assert r["root"] == (0 if r["op"] in ("broadcast", "reduce") else -1), r
assert ops == set(factor), ops
PY

# Subsets: 2 GPUs of a node, 2 of 16 nodes; not a whole number of nodes.
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --ranks 2 -b 1M -e 1M >"$tmp/two.txt"
check "--ranks 2" "[ $? -eq 0 ] && grep -q ', 2 ranks' '$tmp/two.txt' && ! grep -q nvls '$tmp/two.txt'"
"$redsim" collective --cluster "$src/configs/dgx-h100-x16.json" --ranks 16 -b 1M -e 1M >"$tmp/nodes.txt"
check "--ranks 16 of 128" "[ $? -eq 0 ] && grep -q '16 ranks (2 x 8)' '$tmp/nodes.txt'"
"$redsim" collective --cluster "$src/configs/dgx-h100-x16.json" --ops all -b 64 -e 8G -f 2 --fidelity scalable >"$tmp/x16.txt"
# 64 B .. 8 GiB doubling is 28 sizes per op; reduce-scatter and allgather skip the three below one
# float per rank of 128 (64, 128, 256 B), as nccl-tests does.
check "--ops all on 128 ranks, scalable" "[ $? -eq 0 ] && [ \$(grep -c '(simulated)' '$tmp/x16.txt') -eq 5 ] && [ \$(grep -cv '^#' '$tmp/x16.txt') -eq 134 ]"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" --algorithm Ring --protocol Simple -b 1M -e 1M >"$tmp/nccl.txt"
check "NCCL spellings" "[ $? -eq 0 ] && grep -q 'ring *simple' '$tmp/nccl.txt'"

# nccl-tests' types and reductions: -d double has 8-byte elements and prints as given; the switch
# reduces a float sum (NVLS at 64 MiB) but not ncclAvg or a float max, which run rings
# (NCCL_NVLS_SUPPORTS); half with max it does.
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -d double -b 64M -e 64M >"$tmp/dbl.txt"
check "-d double" "[ $? -eq 0 ] && grep -Eq '^ *67108864 +8388608 +double +sum .* nvls +simple' '$tmp/dbl.txt'"
for o in avg max mulsum; do
  "$redsim" collective --cluster "$src/configs/dgx-h100.json" -o $o -b 64M -e 64M >"$tmp/$o.txt"
  check "-o $o runs no NVLS" "[ $? -eq 0 ] && grep -Eq '^ *67108864 .* float +$o .* ring ' '$tmp/$o.txt'"
done
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -d half -o max -b 64M -e 64M >"$tmp/hmax.txt"
check "-d half -o max runs NVLS" "[ $? -eq 0 ] && grep -Eq ' half +max .* nvls +simple' '$tmp/hmax.txt'"

# The NCCL release: before 2.20 NVLS runs 128 KiB on one channel's block (collectives/README.md),
# from 2.20 on all 16; the header and the JSON say which, and the header names the tag whose
# tuning model ranked the choices.
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --algorithm nvls -b 128K -e 128K --json "$tmp/v218.json" >"$tmp/v218.txt"
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --algorithm nvls -b 128K -e 128K --nccl-version 2.20.5 --json "$tmp/v220.json" >"$tmp/v220.txt"
"$redsim" collective --cluster "$src/configs/dgx-a100.json" -b 1M -e 1M --nccl-version 2.9.9 >"$tmp/v299.txt"
check "--nccl-version" "grep -q 'NCCL 2.18.5.s collective model (tuning of v2.18.5-1' '$tmp/v218.txt' && grep -q 'NCCL 2.20.5.s collective model (tuning of v2.19.3-1' '$tmp/v220.txt' && grep -q 'NCCL 2.9.9.s collective model (tuning of v2.9.9-1' '$tmp/v299.txt'"
python3 - "$tmp/v218.json" "$tmp/v220.json" <<'PY' && echo "ok   2.18.5's NVLS block is slower than 2.20's split at 128 KiB" || { echo "FAIL: NVLS layouts"; fail=1; }
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert (a["nccl_version"], b["nccl_version"]) == ("2.18.5", "2.20.5"), (a["nccl_version"], b["nccl_version"])
assert a["requested"] == {"algorithm": "nvls", "protocol": "auto", "channels": "auto"}, a["requested"]
assert a["rows"][0]["time_us"] > 1.5 * b["rows"][0]["time_us"], (a["rows"], b["rows"])
PY

# Blackwell (configs/dgx-b200.json, NCCL 2.29.7): NVLS within the node on 24 channels.
"$redsim" collective --cluster "$src/configs/dgx-b200.json" -b 64M -e 64M >"$tmp/b200.txt"
check "a DGX B200 runs NVLS on 24 channels at 64 MiB" "[ $? -eq 0 ] && grep -Eq ' nvls +simple +24$' '$tmp/b200.txt'"

# PAT (NCCL 2.23+): eight single-GPU nodes under 2.26.2 run allgather and reduce-scatter on PAT
# at 64 KiB (ring/LL below, tests/test_nccl_pat.cpp works the switch by hand); 2.18.5 has none.
"$redsim" collective --cluster "$src/configs/ethernet-100g-x8.json" --ops allgather,reduce_scatter --nccl-version 2.26.2 \
  -b 64K -e 64K >"$tmp/pat.txt"
check "one GPU a node under 2.26.2 runs PAT at 64 KiB" "[ $? -eq 0 ] && [ \$(grep -Ec ' pat +simple +[0-9]+$' '$tmp/pat.txt') -eq 2 ]"
"$redsim" collective --cluster "$src/configs/ethernet-100g-x8.json" --op allgather -b 64K -e 64K >"$tmp/pat0.txt"
check "2.18.5 runs rings there" "[ $? -eq 0 ] && grep -Eq ' ring +ll +[0-9]+$' '$tmp/pat0.txt'"

# NCCL_ALGO / NCCL_PROTO lists: the issue's example with NVLS excluded never runs NVLS; from 2.24
# a per-collective value pins each collective; a bare list reaches all of them (below: a Tree
# and CollNet list fails allgather, which has neither, as it fails in NCCL).
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --op allreduce -b 8 -e 8G -f 2 --algorithm '^NVLS' >"$tmp/nonvls.txt"
check "--algorithm ^NVLS" "[ $? -eq 0 ] && [ \$(grep -cv '^#' '$tmp/nonvls.txt') -eq 31 ] && ! grep -q ' nvls ' '$tmp/nonvls.txt'"
"$redsim" collective --cluster "$src/configs/dgx-h100.json" --ops allreduce,allgather --nccl-version 2.26.2 \
  --algorithm 'allreduce:Tree;allgather:Ring' --protocol '^LL,LL128' -b 1M -e 1M >"$tmp/perfn.txt"
check "per-collective lists from 2.24" "[ $? -eq 0 ] && grep -Eq ' tree +simple +[0-9]+$' '$tmp/perfn.txt' && grep -Eq ' ring +simple +[0-9]+$' '$tmp/perfn.txt'"
# The header says what was pinned, in NCCL's spellings (functions left every algorithm are left
# out; ^LL,LL128 leaves Simple).
check "the pins in the header" "grep -qF '# requested: algorithm AllGather:Ring;AllReduce:Tree, protocol Simple, channels auto' '$tmp/perfn.txt'"
# Azure/AI-benchmarking-guide's NCCL_ALGO=NVLSTree on one VM: NCCL 2.18.5 turns NVLSTree off on
# one node and then ignores the list (ring and tree back), so the sweep is NCCL's own and says so;
# the single name is refused, and from 2.24 the list leaves nothing (exit 2).
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -b 8 -e 8G -f 8 --algorithm 'NVLSTree,' --json "$tmp/nvt.json" >"$tmp/nvt.txt"
rc=$?
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -b 8 -e 8G -f 8 --algorithm '^NVLS' --json "$tmp/nvt0.json" >/dev/null
python3 - "$tmp/nvt.json" "$tmp/nvt0.json" <<'PY' && [ $rc -eq 0 ] && grep -q '^# note: NCCL 2.18.5 ignores NCCL_ALGO=NVLSTree here' "$tmp/nvt.txt" && echo "ok   NCCL_ALGO=NVLSTree on one node is ring and tree, with a note" || { echo "FAIL: NVLSTree on one node"; fail=1; }
import json, sys
a, b = (json.load(open(f))["rows"] for f in sys.argv[1:])
assert a and [(r["algorithm"], r["protocol"]) for r in a] == [(r["algorithm"], r["protocol"]) for r in b]
PY
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -b 1M -e 1M --algorithm nvlstree >/dev/null 2>&1
check "the single name nvlstree on one node is refused" "[ $? -eq 2 ]"
"$redsim" collective --cluster "$src/configs/dgx-h100.json" -b 1M -e 1M --algorithm 'NVLSTree,' --nccl-version 2.24.3 >/dev/null 2>&1
check "from 2.24 the list leaves nothing" "[ $? -eq 2 ]"

# nccl-tests' -n: the mean of n iterations queued back to back, the first whole and each later
# one its period, so n x mean grows by the same period per iteration (a broadcast overlaps).
for n in 1 20 40; do
  "$redsim" collective --cluster "$src/configs/dgx-a100.json" --op broadcast -b 32M -e 32M -n $n --json "$tmp/n$n.json" >/dev/null
done
python3 - "$tmp/n1.json" "$tmp/n20.json" "$tmp/n40.json" <<'PY' && echo "ok   -n: one iteration whole, each later one its period" || { echo "FAIL: -n"; fail=1; }
import json, sys
j = [json.load(open(f)) for f in sys.argv[1:]]
assert [x["iters"] for x in j] == [1, 20, 40], [x["iters"] for x in j]
t1, t20, t40 = (x["rows"][0]["time_us"] for x in j)
period_a, period_b = (20 * t20 - t1) / 19, (40 * t40 - 20 * t20) / 20
assert abs(period_a - period_b) < 1e-6 * t1, (period_a, period_b)
assert period_a < 0.8 * t1, (t1, period_a)  # most of the chain's fill overlaps
PY

# Bad options: exit 2 and one line on stderr.
bad() {
  "$redsim" collective "$@" >/dev/null 2>"$tmp/bad.txt"
  local rc=$?
  check "rejects $*" "[ $rc -eq 2 ] && [ \$(wc -l < '$tmp/bad.txt') -eq 1 ]"
}
bad --cluster "$src/configs/dgx-a100.json" --algorithm nvls -b 1M -e 1M
bad --cluster "$src/configs/dgx-a100.json" --algorithm bogus
bad --cluster "$src/configs/pcie-a10g-8gpu.json" --protocol ll128 -b 1M -e 1M
# What a release does not have: NVLS before 2.17, NVLSTree before 2.18, LL128 on Hopper before 2.15.
bad --cluster "$src/configs/dgx-h100.json" --algorithm nvls --nccl-version 2.16.5 -b 1M -e 1M
bad --cluster "$src/configs/dgx-h100-x2.json" --algorithm nvlstree --nccl-version 2.17.1 -b 1M -e 1M
bad --cluster "$src/configs/dgx-h100.json" --protocol ll128 --nccl-version 2.14.3 -b 1M -e 1M
grep -q "NCCL 2.14.3 enables LL128 on Hopper only from 2.15" "$tmp/bad.txt" && echo "ok   the release is named" || { echo "FAIL: release not named"; fail=1; }
bad --cluster "$src/configs/dgx-b200.json" --protocol ll128 --nccl-version 2.23.4 -b 1M -e 1M
grep -q "NCCL 2.23.4 enables LL128 on compute capability 7.0, 8.0 and 9.0 .* not 10.0" "$tmp/bad.txt" && echo "ok   LL128 on Blackwell from 2.25" || { echo "FAIL: Blackwell LL128"; fail=1; }
bad --cluster "$src/configs/dgx-h100.json" --algorithm nvls -o avg -b 1M -e 1M
grep -q "not fp32 with avg" "$tmp/bad.txt" && echo "ok   the reduction is named" || { echo "FAIL: reduction not named"; fail=1; }
bad --cluster "$src/configs/dgx-h100.json" --op allgather --algorithm pat --nccl-version 2.26.2 -b 1M -e 1M
grep -q "PAT needs one GPU a node" "$tmp/bad.txt" && echo "ok   PAT on 8 GPUs a node refused" || { echo "FAIL: PAT refusal"; fail=1; }
bad --cluster "$src/configs/ethernet-100g-x8.json" --op allgather --algorithm pat -b 1M -e 1M
bad --cluster "$src/configs/dgx-h100.json" --op allgather --algorithm Tree,CollNetDirect --nccl-version 2.26.2 -b 1M -e 1M
grep -q "has no NCCL_ALGO=Tree,CollNetDirect for allgather" "$tmp/bad.txt" && echo "ok   a bare list reaches allgather from 2.24" || { echo "FAIL: list reach"; fail=1; }
bad --cluster "$src/configs/dgx-h100.json" --algorithm 'allreduce:Tree' -b 1M -e 1M
grep -q "reads from 2.24" "$tmp/bad.txt" && echo "ok   per-collective lists need 2.24" || { echo "FAIL: per-collective before 2.24"; fail=1; }
bad --cluster "$src/configs/dgx-h100.json" --algorithm 'Ring,Trees'
bad --cluster "$src/configs/dgx-h100.json" --protocol 'Simple;LL'
bad --cluster "$src/configs/dgx-h100.json" -d complex64
bad --cluster "$src/configs/dgx-a100.json" --op alltoall
bad --cluster "$src/configs/dgx-a100.json" -b 0
bad --cluster "$src/configs/dgx-a100.json" -b 1G -e 1M
bad --cluster "$src/configs/dgx-h100-x16.json" --ranks 12
bad --cluster "$src/configs/dgx-h100.json" --nccl-version 2.x
bad --cluster "$src/configs/local.json" --nccl-version 2.20.5
bad --cluster "$src/configs/dgx-a100.json" -n 0
exit $fail
