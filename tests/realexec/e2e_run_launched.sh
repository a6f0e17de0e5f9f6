#!/usr/bin/env bash
# redsim run joining a job launched by someone else: three processes started here with the
# variables torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or srun (SLURM_PROCID,
# SLURM_NTASKS, plus MASTER_ADDR/MASTER_PORT) would set. Rank 0 serves the store and writes the
# result, which must hold every op of the Plan on every rank.
set -uo pipefail
redsim=$1
check=$2
src=$3
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
trace=$src/tests/data/tiny_trace.json
cluster=$src/tests/realexec/data/local3.json
passed=0

free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 0
}

launch() {  # name rank-var size-var
  local name=$1 rank_var=$2 size_var=$3 port
  port=$(free_port)
  local pids=()
  for r in 0 1 2; do
    env "$rank_var=$r" "$size_var=3" MASTER_ADDR=127.0.0.1 MASTER_PORT="$port" REDSIM_GLOO_HOSTNAME=127.0.0.1 \
      REDSIM_STORE_SECRET="job-$port" \
      "$redsim" run --trace "$trace" --cluster "$cluster" --strategy bucketed --bucket-mb 1 --steps 2 --warmup 1 \
      --timeout-s 30 --store-addr 127.0.0.1 --out "$tmp/$name.json" >"$tmp/$name.$r.out" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2; do
    wait "${pids[$i]}" || { echo "FAILED: $name rank $i"; cat "$tmp/$name".*.out; exit 1; }
  done
  "$check" "$tmp/$name.json" || { echo "FAILED: $name's result"; exit 1; }
  grep -q "rank 0 of 3 ($4)" "$tmp/$name.0.out" || { echo "FAILED: $name: rank 0 did not recognise $4"; exit 1; }
  passed=$((passed + 1))
  echo "ok: $name"
}

launch torchrun RANK WORLD_SIZE torchrun
launch slurm SLURM_PROCID SLURM_NTASKS Slurm
launch openmpi OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE "Open MPI"
echo "$passed passed, 0 failed"
