# shellcheck shell=bash
# shellcheck disable=SC2154  # me: the caller names itself
# Sourced by the testbed benches of issue 14 (capture_copies_table.sh, noise_floor.sh): the checks
# of their environment arguments, the calibration they start with and the redsim flags of each DDP
# variant. $me names the calling script in messages; a bad argument exits 2, a failed run 1.

# need_path NAME VALUE: a path of letters, digits and _./- (it goes into commands and file names).
need_path() {
  case "$2" in *[!A-Za-z0-9_./-]*|"") echo "$me: $1: expected a path of letters, digits and _./-, got '$2'" >&2; exit 2;; esac
}

# need_whole NAMES VALUE...: each value a whole number.
need_whole() {
  local what=$1 v
  shift
  for v in "$@"; do
    case "$v" in *[!0-9]*|"") echo "$me: $what: expected whole numbers, got '$v'" >&2; exit 2;; esac
  done
}

# calibrate_rank_speed CLUSTER LOG NODES RANKS_PER_NODE: redsim calibrate on the testbed at
# 400 Mbit/s, its interference terms written into CLUSTER; prints the rank speed it measured (the
# --compute-scale of a plain capture). Call it as RS=$(calibrate_rank_speed ...) || exit 1.
calibrate_rank_speed() {
  "${BUILD:-build}/cli/redsim" calibrate --testbed "nodes=$3,ranks-per-node=$4,rate=400mbit" --max-bytes 16777216 \
    --write-interference --out "$1" >"$2" 2>&1 || { echo "$me: calibrate failed, see $2" >&2; return 1; }
  local rs
  rs=$(grep -o "a rank computes at [0-9.]*" "$2" | awk '{print $5}')
  case "$rs" in *[!0-9.]*|"") echo "$me: calibrate printed no rank speed, see $2" >&2; return 1;; esac
  echo "$rs"
}

# variant_knobs VARIANT BUCKET_MB STEPS LOCALSGD_STEPS: sets `knobs` (redsim's flags for the
# ddp_steps.py variant: PostLocalSGD's period and accumulation's micro-batches are 4) and `steps`
# (a PostLocalSGD step is an H-step window over H, so it takes LOCALSGD_STEPS).
# shellcheck disable=SC2034  # knobs and steps are the caller's
variant_knobs() {
  knobs="--strategy $1 --bucket-mb $2"
  steps=$3
  case $1 in
    localsgd) knobs="$knobs --localsgd-period 4"; steps=$4;;
    accumulate) knobs="$knobs --microbatches 4";;
  esac
}
