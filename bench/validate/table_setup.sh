# shellcheck shell=bash
# Sourced by the testbed table scripts (hooks_memory_table.sh, checkpointing_table.sh).
#
# prepare_redsim_and_cluster: needs build, src, out and rate; sets redsim (a copy of BUILD_DIR's,
# so that a rebuild meanwhile cannot pull it away), py, script (ddp_steps.py) and cluster: $CLUSTER,
# or `redsim calibrate` on the 4 x 1 testbed at $rate, in the same minutes as the runs
# ($out/cluster.json, its log $out/calibrate.log).
# shellcheck disable=SC2034,SC2154  # the caller's variables, in and out
prepare_redsim_and_cluster() {
  mkdir -p "$out"
  cp "$build/cli/redsim" "$out/redsim"
  redsim=$out/redsim py=/usr/bin/python3 script=$src/bench/validate/ddp_steps.py
  cluster=${CLUSTER:-}
  [ -n "$cluster" ] && return 0
  cluster=$out/cluster.json
  REDSIM_TESTBED=$src/realexec/testbed "$redsim" calibrate --testbed "nodes=4,ranks-per-node=1,rate=$rate" \
    --out "$cluster" >"$out/calibrate.log" 2>&1 || { echo "FAILED: calibrate (see $out/calibrate.log)"; exit 1; }
}
