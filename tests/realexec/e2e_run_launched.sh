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

# Below the kernel's ephemeral range (ip_local_port_range, 32768-60999 here), where other tests'
# port-0 listeners and outgoing connections take theirs: a probed port stays free until rank 0
# binds it. A collision anyway (another job on the machine) is retried with a new port.
free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 0
}

launch() {  # name rank-var size-var label
  for attempt in 1 2 3; do
    launch_once "$@" && return
    grep -q "Address already in use" "$tmp/$1.0.out" || break
    echo "retry: $1: the store's port was taken meanwhile (attempt $attempt)"
  done
  echo "FAILED: $1"
  cat "$tmp/$1".*.out
  exit 1
}

launch_once() {  # name rank-var size-var label; returns 1 if a rank failed
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
  local failed=0
  for i in 0 1 2; do
    wait "${pids[$i]}" || failed=1
  done
  [ "$failed" -eq 0 ] || return 1
  "$check" "$tmp/$name.json" || { echo "FAILED: $name's result"; exit 1; }
  grep -q "rank 0 of 3 ($4)" "$tmp/$name.0.out" || { echo "FAILED: $name: rank 0 did not recognise $4"; exit 1; }
  passed=$((passed + 1))
  echo "ok: $name"
}

launch torchrun RANK WORLD_SIZE torchrun
launch slurm SLURM_PROCID SLURM_NTASKS Slurm
launch openmpi OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE "Open MPI"
echo "$passed passed, 0 failed"
