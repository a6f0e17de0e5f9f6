#!/usr/bin/env bash
# What one GPU can check (bench/gpu/README.md): the NCCL backend's test, `redsim run --backend
# nccl` on every strategy, a CUDA capture with a batch curve, and the profile loop (profile real
# one-rank DDP steps at 25 MiB and 1 MiB buckets, import the 25 MiB profile with the bundled
# resnet50's parameters and calibrate from it, and validate its predictions at both bucket sizes
# against the two runs' step times).
#
#   bench/gpu/one_gpu_check.sh OUT_DIR [BUILD_DIR]
#
# CLUSTER (default configs/dgx-h100.json) is the preset whose first device stands for the GPU;
# REDSIM_LIBS, when set, is put on LD_LIBRARY_PATH for redsim's binaries only (binaries built on
# another machine and carried with their libraries; Python keeps its own). Each step is bounded
# by `timeout` and reports its exit status; the script goes on after a failure and exits 1 if
# any step failed, 77 if there is no GPU.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/gpu/one_gpu_check.sh OUT_DIR [BUILD_DIR]}
build=${2:-build}
cluster=${CLUSTER:-configs/dgx-h100.json}
mkdir -p "$out"
failed=0
rx() { LD_LIBRARY_PATH=${REDSIM_LIBS:-${LD_LIBRARY_PATH:-}} timeout "$@"; }
step() { # step NAME CMD...: runs CMD, prints its exit status, remembers a failure
  local name=$1; shift
  echo "== $name"
  "$@"
  local rc=$?
  echo "== $name: exit $rc"
  [ $rc -eq 0 ] || failed=1
}

date -u
if ! nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; then
  echo "one_gpu_check: no GPU (nvidia-smi failed)"
  exit 77
fi
/usr/bin/env python3 -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version())'

step test_nccl_backend rx 300 "$build/tests/realexec/test_nccl_backend"
for s in bucketed flat zero accumulate localsgd fsdp; do
  step "run $s" rx 120 "$build/cli/redsim" run --backend nccl --ranks 1 --layout 1 --trace traces/resnet50.json \
    --cluster "$cluster" --strategy "$s" --steps 3 --warmup 1 --out "$out/run_$s.json"
done

export PYTHONUNBUFFERED=1
for mb in 25 1; do
  mkdir -p "$out/prof$mb"
  step "profile ${mb} MiB" timeout 300 python3 traces/capture/redsim_profile_ddp.py --model resnet50 --batch-size 64 \
    --amp bf16 --bucket-mb "$mb" --memory --out-dir "$out/prof$mb"
done
p25=$out/prof25/rank0.pt.trace.json.gz
step calibrate rx 120 "$build/cli/redsim" calibrate --from-profile "$p25" --cluster "$cluster" --out "$out/fitted.json"
# The profile's compute ran beside NCCL: the import takes out the slowdown the fitted cluster puts
# back (a factor, or the SM-share rule where the fit kept it), so it is not counted twice.
slow=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["interference"]["compute_slowdown"])' \
  "$out/fitted.json" 2>/dev/null || echo 1)
step import rx 120 "$build/cli/redsim" trace import --kineto "$p25" --batch-size 64 --model resnet50 \
  --params-from traces/resnet50.json --bucket-mb 25 --compute-slowdown "$slow" --out "$out/resnet50-imported.json" \
  --measured "$out/resnet50-measured.json"
for mb in 25 1; do
  step "predict ${mb} MiB" rx 120 "$build/cli/redsim" validate --trace "$out/resnet50-imported.json" \
    --cluster "$out/fitted.json" --layout 1 --compute-scale 1 --strategy bucketed --bucket-mb "$mb" \
    --measured "$out/prof$mb/steps.json" --out "$out/validated_$mb.json"
done

step capture timeout 300 python3 traces/capture/redsim_capture.py --model resnet50 --device cuda --dtype bfloat16 \
  --batch-size 64 --batch-sizes 1,4,16,256 --out "$out/resnet50-capture.json"
step "simulate the capture" rx 120 "$build/cli/redsim" simulate --trace "$out/resnet50-capture.json" \
  --cluster "$cluster" --compute-scale 1 --strategy bucketed --out "$out/capture_simulated.json"
date -u
exit $failed
