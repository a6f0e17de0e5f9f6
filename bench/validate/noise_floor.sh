#!/bin/bash
# Issue 14: how far one plain capture and one real DDP job on this shared host move on their own.
# The same plain capture and the same real job, REPEATS times back to back (capture i, then job i),
# then every capture's prediction of every job (bench/validate/README.md, "The noise floor of one
# capture against one job"). Root (the testbed), Debian's python3-torch, about 1 minute a repeat:
#   OUT=DIR [MODEL=mobilenet_v3_large] [REPEATS=5] [NODES=4 RANKS_PER_NODE=1] [VARIANT=bucketed BUCKET_MB=25] \
#     [CLUSTER=FILE COMPUTE_SCALE=X] bench/validate/noise_floor.sh
# Without CLUSTER, calibrate runs first and its rank speed is the compute scale, as in
# capture_copies_table.sh. Rows: captures; columns: jobs; the diagonal is each capture's own next job.
cd "$(dirname "$0")/../.." || exit 2
me=noise_floor.sh
. bench/validate/testbed_args.sh
O=${OUT:-/tmp/noise_floor}
need_path OUT "$O"
M=${MODEL:-mobilenet_v3_large}
case "$M" in *[!a-z0-9_]*|"") echo "$me: MODEL: expected a torchvision model name" >&2; exit 2;; esac
N=${NODES:-4}; R=${RANKS_PER_NODE:-1}; K=${REPEATS:-5}; B=${BUCKET_MB:-25}; V=${VARIANT:-bucketed}
need_whole "NODES, RANKS_PER_NODE, REPEATS and BUCKET_MB" "$N" "$R" "$K" "$B"
case "$V" in bucketed|accumulate|localsgd) ;; *) echo "$me: VARIANT: expected bucketed, accumulate or localsgd" >&2; exit 2;; esac
[ "$K" -ge 2 ] || { echo "$me: REPEATS: expected at least 2" >&2; exit 2; }
mkdir -p "$O" || exit 2
BIN=${BUILD:-build}/cli/redsim
date -u; uptime
if [ -n "$CLUSTER" ]; then
  need_path CLUSTER "$CLUSTER"
  [ -f "$CLUSTER" ] || { echo "$me: CLUSTER: no such file" >&2; exit 2; }
  CL=$CLUSTER; CS=${COMPUTE_SCALE:?noise_floor.sh: COMPUTE_SCALE is needed with CLUSTER}
  case "$CS" in *[!0-9.]*|"") echo "$me: COMPUTE_SCALE: expected a number, got '$CS'" >&2; exit 2;; esac
else
  CL=$O/cluster.json
  CS=$(calibrate_rank_speed "$CL" "$O/calibrate.log" "$N" "$R") || exit 1
fi
echo "cluster $CL, compute scale $CS"
variant_knobs "$V" "$B" 8 16
extra=$knobs
for i in $(seq 1 $K); do
  /usr/bin/python3 traces/capture/redsim_capture.py --model $M --input-shape 3,64,64 --batch-size 8 --threads 1 \
    --out $O/plain-$i.json > $O/cap-$i.log 2>&1 || { echo "noise_floor.sh: capture $i failed, see $O/cap-$i.log" >&2; exit 1; }
  echo "capture $i: $(tail -1 $O/cap-$i.log | grep -o 'forward.*')"
  realexec/testbed run --nodes $N --ranks-per-node $R --rate 400mbit -- /usr/bin/python3 bench/validate/ddp_steps.py \
    --model $M --batch-size 8 --input-shape 3,64,64 --variant $V --bucket-mb $B --warmup 2 --steps $steps \
    --out $O/ddp-$i.json --trace-out $O/job-$i.json > $O/ddp-$i.log 2>&1 || { echo "noise_floor.sh: job $i failed, see $O/ddp-$i.log" >&2; exit 1; }
  python3 -c 'import json,statistics as s,sys; t=json.load(open(sys.argv[1]))["step_times_s"]; print("job %s: median step %.1f ms" % (sys.argv[2], s.median(t)*1e3))' $O/ddp-$i.json $i
  date -u
done
err() { $BIN validate --measured $O/ddp-$2.json --trace $1 $3 --cluster $CL $extra 2>&1 | grep "step time" | grep -o "[-+][0-9.]*%"; }
echo "step time error, plain capture (row) x$CS against real job (column):"
for i in $(seq 1 $K); do
  row="capture $i:"; for j in $(seq 1 $K); do row="$row $(err $O/plain-$i.json $j "--compute-scale $CS")"; done; echo "$row"
done
row="in-job trace:"; for j in $(seq 1 $K); do row="$row $(err $O/job-$j.json $j "")"; done; echo "$row"
echo ALLDONE
