#!/usr/bin/env bash
# redsim calibrate end to end on 2 local ranks with a tiny sweep: prints busbw and residuals and
# writes a cluster file that loads (simulate accepts it); bad options exit 2.
set -uo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; tail -30 "$tmp/out" "$tmp/err" 2>/dev/null; exit 1; }
unset RANK WORLD_SIZE OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE PMI_RANK PMI_SIZE SLURM_PROCID SLURM_NTASKS

"$redsim" calibrate --ranks 2 --max-bytes 262144 --fit-min-bytes 4096 --iters 3 --interference-ms 200 \
  --out "$tmp/c.json" >"$tmp/out" 2>"$tmp/err" || fail "calibrate --ranks 2"
cp "$tmp/out" "$tmp/c.out"
grep -q "busbw_GBps" "$tmp/out" || fail "no busbw column"
grep -q "residuals over" "$tmp/out" || fail "no residuals"
[ "$(grep -c '^reduce_scatter' "$tmp/out")" -ge 1 ] || fail "no reduce_scatter points"
# Two local ranks share a host: an intra-node ping-pong sweep, fitted, 4 KiB to 256 KiB = 7 points.
[ "$(grep -c '^intra_node  *[0-9]' "$tmp/out")" -eq 7 ] || fail "expected 7 intra-node point-to-point points"
grep -q "^intra_node link, point to point" "$tmp/out" || fail "no point-to-point fit"
! grep -q "^inter_node" "$tmp/out" || fail "an inter-node sweep on one host"
"$redsim" simulate --trace "$src/tests/data/tiny_trace.json" --cluster "$tmp/c.json" >"$tmp/out" 2>"$tmp/err" ||
  fail "the calibrated cluster file does not simulate"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['devices_per_node']==2 and d['intra_node']['link_bandwidth_GBps']>0" "$tmp/c.json" ||
  fail "cluster file content"
grep -q "^interference: compute x.*: written to the cluster" "$tmp/c.out" || fail "no interference line"
# The rank speed is the median of its pairs of passes, so it lies within their printed range: 5
# pairs, or 15 when the first 5 spread over more than 10% of their median
# (realexec/interference_bench.h), so 5 pairs never spread that far.
python3 -c "
import re,sys
m = re.search(r'a rank runs at ([0-9.]+) of a lone process \(median of ([0-9]+) pairs; ([0-9.]+)-([0-9.]+)\)', open(sys.argv[1]).read())
assert m, 'no rank speed line'
speed, pairs, low, high = float(m.group(1)), int(m.group(2)), float(m.group(3)), float(m.group(4))
assert 0 < low <= speed <= high, m.group(0)
assert pairs in (5, 15), m.group(0)
assert pairs == 15 or high - low <= 0.10 * speed + 0.002, m.group(0)  # printed to 3 decimals
" "$tmp/c.out" || fail "rank speed: the median of its pairs"
# Slowdowns are measured; whatever they are, they are factors from 1 (none) to 10.
python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); i=d.get('interference', {})
assert all(1 <= i.get(k, 1) <= 10 for k in ('compute_slowdown','collective_slowdown')), i
assert 0 <= i.get('collective_latency_us', 0) <= 1e6, i
assert 'interference measured on every rank at once' in d['source']" "$tmp/c.json" || fail "interference in the cluster file"
# The hooks' casts (a 25 MiB bucket to fp16 and back, 12 bytes per element) price the comm hooks.
grep -q "^hook casts: 6553600 elements to fp16 and back in .* memory_GBps .* written" "$tmp/c.out" || fail "no hook casts line"
python3 -c "
import json,sys; d=json.load(open(sys.argv[1]))
assert d['device']['memory_GBps'] > 0 and 'fp16_compress_hook' in d['source'], d['device']
assert d['device']['reduce_GBps_by_dtype']['fp16'] > 0 and 'gloo::sum<float16>' in d['source'], d['device']
assert set(d['device']['reduce_GBps_by_dtype']) == {'fp16'}, d['device']
assert d['device']['copy_GBps'] > 0 and 'fp32 adds (a += b)' in d['source'], d['device']
assert d['device']['fresh_copy_GBps'] > 0 and 'newly mapped memory' in d['source'], d['device']" "$tmp/c.json" ||
  fail "memory_GBps, copy_GBps, fresh_copy_GBps or the fp16 reduce rate not written"
grep -q "^fresh copies: 6553600 elements into newly mapped memory in .* fresh_copy_GBps .* written" "$tmp/c.out" ||
  fail "no fresh copies line"
grep -q "^fp32 adds: 6553600 elements in .* copy_GBps .* written" "$tmp/c.out" || fail "no fp32 adds line"
grep -q "^fp16 reduction: 6553600 elements in .* reduce_GBps_by_dtype.fp16 .* written" "$tmp/c.out" || fail "no fp16 reduction line"
"$redsim" simulate --trace "$src/tests/data/tiny_trace.json" --cluster "$tmp/c.json" --strategy bucketed --comm-hook fp16 \
  >"$tmp/out" 2>"$tmp/err" || fail "the calibrated cluster does not simulate the fp16 hook"
"$redsim" calibrate --ranks 2 --max-bytes 65536 --fit-min-bytes 4096 --iters 1 --interference-ms 0 --hook-bucket-mb 0 \
  --out "$tmp/c0.json" >"$tmp/out" 2>"$tmp/err" || fail "calibrate --interference-ms 0"
! grep -q "^interference:" "$tmp/out" || fail "--interference-ms 0 still measured interference"
! grep -q "^hook casts" "$tmp/out" || fail "--hook-bucket-mb 0 still measured the casts"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['device']; assert 'memory_GBps' not in d and 'reduce_GBps_by_dtype' not in d and 'copy_GBps' not in d and 'fresh_copy_GBps' not in d" "$tmp/c0.json" ||
  fail "--hook-bucket-mb 0 wrote memory_GBps, copy_GBps, fresh_copy_GBps or an fp16 reduce rate"
"$redsim" calibrate --ranks 2 --max-bytes 65536 --fit-min-bytes 4096 --iters 1 --interference-ms 100 \
  --no-write-interference --out "$tmp/c1.json" >"$tmp/out" 2>"$tmp/err" || fail "calibrate --no-write-interference"
grep -q "^interference: .*not written" "$tmp/out" || fail "measured interference not reported as unwritten"
python3 -c "import json,sys; assert 'interference' not in json.load(open(sys.argv[1]))" "$tmp/c1.json" ||
  fail "interference written with --no-write-interference"
python3 -c "import json,sys; assert 'interference' not in json.load(open(sys.argv[1]))" "$tmp/c0.json" ||
  fail "--interference-ms 0 wrote interference"
echo "ok: calibrate --ranks 2 wrote a loadable cluster file"

bad() {
  local name=$1 pattern=$2
  shift 2
  "$redsim" calibrate "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
  grep -q -- "$pattern" "$tmp/err" || fail "$name: stderr does not say \"$pattern\""
  echo "ok: $name: $(cat "$tmp/err")"
}
bad max-bytes "--max-bytes" --ranks 2 --max-bytes 1e12 --out "$tmp/x.json"
bad backend "--backend: expected gloo" --ranks 2 --backend mpi --out "$tmp/x.json"
bad out-dir "cannot write here" --ranks 2 --out /nonexistent/dir/x.json
bad no-ranks "give --ranks N" --out "$tmp/x.json"
bad testbed "--testbed" --testbed nodes=1 --out "$tmp/x.json"
bad fit-min "--fit-min-bytes" --ranks 2 --max-bytes 262144 --out "$tmp/x.json"
bad fit "--fit: expected ring|all" --ranks 2 --fit some --out "$tmp/x.json"
bad interference "--interference-ms" --ranks 2 --interference-ms -1 --out "$tmp/x.json"
bad hook-cast "--hook-bucket-mb" --ranks 2 --hook-bucket-mb -1 --out "$tmp/x.json"
# --backend nccl without a GPU (or without NCCL in this build): one line naming the backend,
# status 1 (no device) or 2 (not built), and no output file.
if ! command -v nvidia-smi >/dev/null 2>&1; then
  "$redsim" calibrate --ranks 2 --backend nccl --out "$tmp/x.json" >"$tmp/out" 2>"$tmp/err"; rc=$?
  { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } || fail "--backend nccl without a GPU: exit status $rc"
  grep -qi "nccl" "$tmp/err" || fail "--backend nccl without a GPU: stderr does not name nccl"
  echo "ok: --backend nccl without a GPU: $(head -1 "$tmp/err")"
fi
[ ! -e "$tmp/x.json" ] || fail "a failed calibrate wrote its output"
echo "all calibrate checks passed"
