#!/usr/bin/env bash
# redsim run when things go wrong: a rank killed mid-run (SIGKILL, or exiting) and a rank that
# hangs make the run exit non-zero within the collective timeout, naming the rank; a wrong
# collective result stops the run with a verification error naming the op; nothing is written.
set -uo pipefail
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace=$src/tests/data/tiny_trace.json
cluster=$src/tests/realexec/data/local4.json
passed=0
fail() { echo "FAILED: $*"; cat "$tmp/err" 2>/dev/null; exit 1; }

expect_failure() {  # name timeout pattern env...
  local name=$1 timeout=$2 pattern=$3
  shift 3
  local start=$SECONDS
  env "$@" "$redsim" run --ranks 4 --trace "$trace" --cluster "$cluster" --steps 4 --warmup 1 --timeout-s "$timeout" \
    --out "$tmp/$name.json" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local took=$((SECONDS - start))
  [ "$rc" -ne 0 ] || fail "$name: exit status 0"
  grep -q -- "$pattern" "$tmp/err" || fail "$name: stderr does not say \"$pattern\""
  [ ! -e "$tmp/$name.json" ] || fail "$name: wrote a result anyway"
  # Within the collective timeout plus the launcher's grace and start-up (generous: not a speed test).
  [ "$took" -le $((timeout + 20)) ] || fail "$name: took ${took}s"
  passed=$((passed + 1))
  echo "ok: $name (exit $rc, ${took}s): $(tail -n 1 "$tmp/err")"
}

expect_failure kill 30 "redsim: error: rank 1 failed (killed by signal 9" \
  REDSIM_TEST_FAIL_RANK=1 REDSIM_TEST_FAIL_STEP=2 REDSIM_TEST_FAIL_MODE=kill
expect_failure exit 30 "redsim: error: rank 3 failed (exited with status 1" \
  REDSIM_TEST_FAIL_RANK=3 REDSIM_TEST_FAIL_STEP=1 REDSIM_TEST_FAIL_MODE=exit
expect_failure hang 3 "redsim: error: rank 2 stopped responding" \
  REDSIM_TEST_FAIL_RANK=2 REDSIM_TEST_FAIL_STEP=3 REDSIM_TEST_FAIL_MODE=hang
# Verification: rank 1's result of op 6 (allreduce:bucket0 of the bucketed tiny plan) is damaged.
expect_failure verify 30 "rank 1: verification failed: rank 1: step 0: op 6 \"allreduce:bucket0\"" \
  REDSIM_TEST_CORRUPT_RANK=1 REDSIM_TEST_CORRUPT_OP=6
grep -q "redsim: error: rank 1 failed (exited with status 1" "$tmp/err" || fail "verify: launcher did not name rank 1"
echo "$passed passed, 0 failed"
