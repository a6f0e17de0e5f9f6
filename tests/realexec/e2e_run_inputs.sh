#!/usr/bin/env bash
# redsim run's input checks (exit status 2, one line naming the problem, no output) and the
# stated buffer scaling (--buffer-scale X, and auto when memory is short).
set -uo pipefail
redsim=$1
check=$2
src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace=$src/tests/data/tiny_trace.json
data=$src/tests/realexec/data
passed=0
fail() { echo "FAILED: $*"; cat "$tmp/err" 2>/dev/null; exit 1; }

bad() {  # name pattern args...
  local name=$1 pattern=$2
  shift 2
  env -u RANK -u WORLD_SIZE -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_RANK -u PMI_SIZE \
    -u SLURM_PROCID -u SLURM_NTASKS "$redsim" run --trace "$trace" --out "$tmp/o.json" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit status $rc, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: more than one line on stderr"
  grep -q -- "$pattern" "$tmp/err" || fail "$name: stderr does not say \"$pattern\""
  [ ! -e "$tmp/o.json" ] || fail "$name: wrote output"
  passed=$((passed + 1))
  echo "ok: $name: $(cat "$tmp/err")"
}

bad world-mismatch "has 2 ranks (1 node(s) x 2 device(s)) but the run has 3 (--ranks): they must be equal" \
  --ranks 3 --cluster "$data/local2.json"
bad no-ranks "--ranks N is required unless" --cluster "$data/local2.json"
bad backend "expected gloo" --ranks 2 --cluster "$data/local2.json" --backend mpi
bad scale "--buffer-scale: expected auto or a factor in (0, 1]" --ranks 2 --cluster "$data/local2.json" --buffer-scale 2
bad steps "--steps: expected at least 1" --ranks 2 --cluster "$data/local2.json" --steps 0
bad timeout "--timeout-s" --ranks 2 --cluster "$data/local2.json" --timeout-s 0
bad out-dir "cannot write here" --ranks 2 --cluster "$data/local2.json" --timeline /nonexistent/dir/t.json

# A launched job's environment without MASTER_ADDR.
RANK=0 WORLD_SIZE=2 MASTER_PORT=1 "$redsim" run --trace "$trace" --cluster "$data/local2.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "MASTER_ADDR is not set" "$tmp/err" || fail "launcher without MASTER_ADDR"
passed=$((passed + 1))
echo "ok: env-no-master: $(cat "$tmp/err")"

# A launched job's environment with a world size the cluster does not have.
RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 REDSIM_STORE_SECRET=x "$redsim" run --trace "$trace" --cluster "$data/local2.json" \
  >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "torchrun's world size" "$tmp/err" || fail "launcher world size mismatch"
passed=$((passed + 1))
echo "ok: env-world-mismatch: $(cat "$tmp/err")"

# An explicit buffer scale is applied and stated.
"$redsim" run --ranks 2 --trace "$trace" --cluster "$data/local2.json" --steps 1 --warmup 0 --buffer-scale 0.25 \
  --out "$tmp/s.json" >"$tmp/out" 2>"$tmp/err" || fail "buffer-scale 0.25 run"
"$check" "$tmp/s.json" --scaled || fail "buffer-scale 0.25 result"
grep -q "scaled by 1/4 as requested" "$tmp/out" || fail "buffer-scale 0.25 not stated"
passed=$((passed + 1))
echo "ok: buffer-scale-explicit"

# auto: with (pretended) 10 MB available, 2 ranks x 8.4 MB do not fit in 75% of it: scaled by a
# stated 2^-k (1/4: 2.1 MB per rank fits in 3.75 MB).
REDSIM_TEST_MEM_AVAILABLE_BYTES=10000000 "$redsim" run --ranks 2 --trace "$trace" --cluster "$data/local2.json" \
  --steps 1 --warmup 0 --out "$tmp/a.json" >"$tmp/out" 2>"$tmp/err" || fail "buffer-scale auto run"
"$check" "$tmp/a.json" --scaled || fail "buffer-scale auto result"
grep -q "every buffer scaled by 1/4: 2 rank(s)" "$tmp/out" || fail "buffer-scale auto not stated"
grep -q '"buffer_scale": 0.25' "$tmp/a.json" || fail "buffer-scale auto not recorded"
passed=$((passed + 1))
echo "ok: buffer-scale-auto"
# --backend nccl: runs where there is a GPU; otherwise one clear line (no GPU: status 1; a build
# without NCCL: status 2), before any rank starts.
"$redsim" run --backend nccl --ranks 1 --trace "$trace" --cluster "$data/local1.json" --steps 1 --warmup 0 \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
case $rc in
  0) echo "ok: nccl ran (a GPU is present)" ;;
  1) grep -q "^redsim: error: --backend nccl: the NCCL backend needs a CUDA device: " "$tmp/err" || fail "nccl without GPU"
     echo "ok: nccl without a GPU: $(cat "$tmp/err")" ;;
  2) grep -q "built without the NCCL backend" "$tmp/err" || fail "nccl not built"
     echo "ok: nccl not built: $(cat "$tmp/err")" ;;
  *) fail "nccl: exit status $rc" ;;
esac
passed=$((passed + 1))
# A pinned algorithm shapes the simulated Plan; the note names the NCCL_ALGO that runs it for
# real, in the cluster file's release's syntax (2.18.5 here: a bare name).
"$redsim" run --backend nccl --ranks 1 --trace "$trace" --cluster "$data/local1.json" --steps 1 --warmup 0 \
  --algorithm tree >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -le 1 ]; then
  grep -q "NCCL picks its own unless launched with NCCL_ALGO=Tree (NCCL 2.18.5's syntax" "$tmp/out" || fail "nccl pin note"
fi
passed=$((passed + 1))
echo "ok: nccl pin note"
# A list is printed as NCCL reads it, in NCCL's spellings (quoted only where it holds a ';').
# (Lists need NCCL's model: a DGX H100's first GPU. LL,Simple is everything but LL128.)
"$redsim" run --backend nccl --ranks 1 --layout 1 --trace "$trace" --cluster "$src/configs/dgx-h100.json" --steps 1 \
  --warmup 0 --algorithm '^nvls' --protocol 'll,simple' >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -le 1 ]; then
  grep -q 'launched with NCCL_ALGO=^NVLS NCCL_PROTO=^LL128 (NCCL 2.18.5' "$tmp/out" || fail "nccl list note"
else
  grep -q "built without the NCCL backend" "$tmp/err" || fail "nccl list note: exit status $rc"
fi
passed=$((passed + 1))
echo "ok: nccl list note"
echo "$passed passed, 0 failed"
