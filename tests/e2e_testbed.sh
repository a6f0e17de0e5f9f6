#!/usr/bin/env bash
# The namespace testbed: ranks get torchrun's environment inside their node's namespace, a
# failing rank's status is returned, and nothing is left behind either way.
set -uo pipefail
testbed=$1
fail() { echo "FAIL: $*"; echo "0 passed, 1 failed"; exit 1; }
count_ns() { ip netns list 2>/dev/null | grep -c "^tbt$$" || true; }

out=$("$testbed" run --name "tbt$$" --nodes 3 --ranks-per-node 2 --rate 100mbit -- \
      sh -c 'echo "r=$RANK w=$WORLD_SIZE l=$LOCAL_RANK n=$NODE_RANK a=$REDSIM_HOST_ADDR m=$MASTER_ADDR"') || fail "run exited $?"
[ "$(grep -c 'w=6' <<<"$out")" -eq 6 ] || fail "expected 6 ranks, got: $out"
for r in 0 1 2 3 4 5; do grep -q "\[rank $r\] r=$r " <<<"$out" || fail "rank $r missing: $out"; done
# Ranks 2 and 3 share node 1's address; the master is node 0's.
a2=$(grep '\[rank 2\]' <<<"$out" | sed 's/.* a=\([^ ]*\).*/\1/')
a3=$(grep '\[rank 3\]' <<<"$out" | sed 's/.* a=\([^ ]*\).*/\1/')
m=$(grep '\[rank 5\]' <<<"$out" | sed 's/.* m=\([^ ]*\).*/\1/')
a0=$(grep '\[rank 0\]' <<<"$out" | sed 's/.* a=\([^ ]*\).*/\1/')
[ "$a2" = "$a3" ] && [ "$a2" != "$a0" ] && [ "$m" = "$a0" ] || fail "addresses wrong: $out"
[ "$(count_ns)" -eq 0 ] || fail "namespaces left after a clean run"

"$testbed" run --name "tbt$$" --nodes 2 --rate 100mbit -- sh -c 'exit $((RANK == 1 ? 9 : 0))'
rc=$?
[ "$rc" -eq 9 ] || fail "a rank exiting 9 gave status $rc"
ip netns list | grep -q "tbt$$" && fail "namespaces left after a failed run"
ip link show "tbt$$br" >/dev/null 2>&1 && fail "bridge left after a failed run"

# Each node's link is a token bucket at the rate, with the burst asked for (default 128kb, which
# tc shows as 128Kb or, rounded to its rate table, a few bytes less).
q=$("$testbed" run --name "tbt$$" --nodes 2 --rate 200mbit --burst 64kb -- sh -c 'tc qdisc show dev "$GLOO_SOCKET_IFNAME"') ||
  fail "run with --burst exited $?"
[ "$(grep -c 'tbf .*rate 200Mbit burst 64Kb' <<<"$q")" -eq 2 ] || fail "expected a 200Mbit tbf with a 64Kb burst per node: $q"
q=$("$testbed" run --name "tbt$$" --nodes 2 --rate 200mbit -- sh -c 'tc qdisc show dev "$GLOO_SOCKET_IFNAME"') || fail "run exited $?"
[ "$(grep -cE 'burst (128Kb|1310[0-9]{2}b)' <<<"$q")" -eq 2 ] || fail "expected the default 128Kb burst: $q"

"$testbed" run --nodes 0 -- true 2>/dev/null
[ $? -eq 2 ] || fail "--nodes 0 should be a usage error (2)"
"$testbed" run --burst 5 -- true 2>/dev/null
[ $? -eq 2 ] || fail "--burst 5 should be a usage error (2)"
echo "1 passed, 0 failed"
