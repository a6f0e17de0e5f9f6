#!/bin/bash
# Issue 14: plain captures (x calibrate's rank speed, and x 0.5) against redsim_capture.py --processes W
# and in-job traces, on the same real DDP runs (bench/validate/README.md, "Traces captured as ranks
# sharing the host"), each with and without calibrate's interference terms ("-i" after the label).
# Root (the testbed), Debian's python3-torch, about 12 minutes:
#   OUT=DIR [NODES=4 RANKS_PER_NODE=1] [MODELS="resnet18 mobilenet_v3_large"] [STEPS=8 LOCALSGD_STEPS=16] \
#     bench/validate/capture_copies_table.sh
# Every rank of the testbed shares this machine's cores, so the copies are NODES x RANKS_PER_NODE.
# A PostLocalSGD step is an H-step window over H (H = 4), so it gets more timed steps: 16 give 4
# windows to take the median of, where 8 gave 2. resnet50 takes about 12 minutes more.
cd "$(dirname "$0")/../.." || exit 2
me=capture_copies_table.sh
. bench/validate/testbed_args.sh
O=${OUT:-/tmp/capture_copies}
need_path OUT "$O"
mkdir -p "$O" || exit 2
N=${NODES:-4}; R=${RANKS_PER_NODE:-1}
need_whole "NODES and RANKS_PER_NODE" "$N" "$R"
W=$((N * R))
MODELS=${MODELS:-resnet18 mobilenet_v3_large}
case "$MODELS" in *[!a-z0-9_\ ]*|"") echo "$me: MODELS: expected torchvision model names separated by spaces" >&2; exit 2;; esac
S=${STEPS:-8}; SL=${LOCALSGD_STEPS:-16}
need_whole "STEPS and LOCALSGD_STEPS" "$S" "$SL"
date -u; uptime
# calibrate writes its interference terms into tb41-i.json; tb41.json is the same without them.
RS=$(calibrate_rank_speed "$O/tb41-i.json" "$O/calibrate.log" "$N" "$R") || exit 1
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c.pop("interference",None); json.dump(c,open(sys.argv[2],"w"),indent=1)' \
  $O/tb41-i.json $O/tb41.json
echo "rank speed $RS"; date -u; uptime
# The host's speed for this model, alone and as W copies at once (slowest copy per pass), printed
# at the plain capture and before each job: a shared host that slows between the capture and a job
# slows the job and not the trace (bench/validate/README.md, stop 43's grid).
probe() {
  /usr/bin/python3 bench/validate/contention_probe.py --load $1 --copies $W --passes 4 --seconds 0.5 2>&1 | tail -1
}
for m in $MODELS; do
  /usr/bin/python3 traces/capture/redsim_capture.py --model $m --input-shape 3,64,64 --batch-size 8 --threads 1 --out $O/plain-$m.json > $O/cap-plain-$m.log 2>&1
  echo "$m host at the capture: $(probe $m)"
  /usr/bin/python3 traces/capture/redsim_capture.py --model $m --input-shape 3,64,64 --batch-size 8 --threads 1 --processes $W --out $O/conc-$m.json > $O/cap-conc-$m.log 2>&1
  for v in "bucketed 25" "bucketed 1" "localsgd 25" "accumulate 25"; do
    set -- $v; var=$1; b=$2; tag=$m-$var-$b
    variant_knobs "$var" "$b" "$S" "$SL"
    extra=$knobs
    echo "$tag host before the job: $(probe $m)"
    realexec/testbed run --nodes $N --ranks-per-node $R --rate 400mbit -- /usr/bin/python3 bench/validate/ddp_steps.py \
      --model $m --batch-size 8 --input-shape 3,64,64 --variant $var --bucket-mb $b --warmup 2 --steps $steps \
      --out $O/ddp-$tag.json --trace-out $O/job-$tag.json > $O/ddp-$tag.log 2>&1
    for t in "plain:$O/plain-$m.json:$RS" "plain0.5:$O/plain-$m.json:0.5" "conc:$O/conc-$m.json:1" "job:$O/job-$tag.json:"; do
      IFS=: read lab tr cs <<< "$t"
      csarg=""; [ -n "$cs" ] && csarg="--compute-scale $cs"
      for cl in tb41 tb41-i; do
        e=$(${BUILD:-build}/cli/redsim validate --measured $O/ddp-$tag.json --trace $tr $csarg --cluster $O/$cl.json $extra 2>&1 | grep "step time" | grep -o "error [-+0-9.]*%")
        echo "$tag $lab${cl#tb41} $e"
      done
    done
    date -u; uptime
  done
done
echo ALLDONE
