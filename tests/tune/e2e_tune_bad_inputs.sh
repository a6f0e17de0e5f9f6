#!/usr/bin/env bash
# Bad input to redsim tune: exit status 2, exactly one line on stderr, nothing written.
set -u
redsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trace="$src/tests/data/tiny_trace.json"
cluster="$src/tests/data/ideal_star_4.json"
passed=0
failed=0

check() {  # check NAME EXPECTED_TEXT ARGS...
  local name=$1 expect=$2
  shift 2
  rm -rf "$tmp/out"
  mkdir -p "$tmp/out"
  "$redsim" tune "$@" --out "$tmp/out/tuned.json" --report "$tmp/out/report.svg" >"$tmp/stdout" 2>"$tmp/stderr"
  local rc=$?
  local lines
  lines=$(wc -l <"$tmp/stderr")
  if [ "$rc" -ne 2 ]; then
    echo "FAIL $name: exit $rc, expected 2"; failed=$((failed + 1)); return
  fi
  if [ "$lines" -ne 1 ] || ! grep -qF -- "$expect" "$tmp/stderr"; then
    echo "FAIL $name: stderr should be one line with \"$expect\":"; cat "$tmp/stderr"; failed=$((failed + 1)); return
  fi
  if [ -n "$(ls -A "$tmp/out")" ]; then
    echo "FAIL $name: wrote $(ls -A "$tmp/out")"; failed=$((failed + 1)); return
  fi
  passed=$((passed + 1))
}

check microbatches "--microbatches" --trace "$trace" --cluster "$cluster" --microbatches 0
check localsgd "--max-localsgd-period" --trace "$trace" --cluster "$cluster" --max-localsgd-period 0
check strategies "unknown strategy \"bogus\"" --trace "$trace" --cluster "$cluster" --strategies bucketed,bogus
check accumulate_m1 "--microbatches 2 or more" --trace "$trace" --cluster "$cluster" --strategies accumulate
check memory_negative "--memory-per-device-gb" --trace "$trace" --cluster "$cluster" --memory-per-device-gb -1
check nothing_fits "no setting fits in" --trace "$trace" --cluster "$cluster" --memory-per-device-gb 0.000001
check fidelity "fidelity" --trace "$trace" --cluster "$cluster" --fidelity fastest
check threads "--threads" --trace "$trace" --cluster "$cluster" --threads -1
check threads_many "--threads: expected 0 (all cores) to 1024" --trace "$trace" --cluster "$cluster" --threads 100000
check margin "--prune-margin" --trace "$trace" --cluster "$cluster" --prune-margin 2
check budget_exhaustive "--max-simulations" --trace "$trace" --cluster "$cluster" --exhaustive --max-simulations 5
check no_trace "missing.json" --trace "$tmp/missing.json" --cluster "$cluster"
check bad_cluster "$src/tests/data/tiny_trace.json" --trace "$trace" --cluster "$trace"
check emit_dir "--emit-dir" --trace "$trace" --cluster "$cluster" --emit-dir "$tmp/no/such/dir"
# An output in a directory that does not exist is refused before the search.
"$redsim" tune --trace "$trace" --cluster "$cluster" --out "$tmp/nodir/tuned.json" --emit-dir "$tmp/emit" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/stderr")" -eq 1 ] && grep -q "is missing or not writable" "$tmp/stderr" && [ ! -e "$tmp/emit" ]; then
  passed=$((passed + 1))
else
  echo "FAIL out_dir: exit $rc"; cat "$tmp/stderr"; failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
