#!/usr/bin/env python3
"""bench/fidelity/ddp/ddp_check.py: its table, its arithmetic and one model through redsim.
Usage: e2e_ddp_check.py REDSIM SOURCE_DIR"""
import argparse
import json
import os
import sys
import tempfile

redsim, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, os.path.join(src, "bench", "fidelity", "ddp"))
import ddp_check  # noqa: E402

PRESET = os.path.join(src, "configs", "dgx1-v100.json")
RESNET50 = os.path.join(src, "bench", "fidelity", "ddp", "traces", "resnet50.json")


def check(cond, what):
    if not cond:
        sys.exit("e2e_ddp_check: FAIL: " + what)


# diff.py's column is throughput against the baseline: (1/t_small) / (1/t_large) - 1.
check(abs(ddp_check.throughput_change_pct(0.108, 0.104) - 100 * (0.104 / 0.108 - 1)) < 1e-12, "throughput change")
check(abs(ddp_check.throughput_change_pct(0.1, 0.1)) < 1e-12, "no change")
check(abs(ddp_check.error_pct(0.11, 0.1) - 10.0) < 1e-9, "error")

# The table: four models, each with its one-GPU step without DDP and 1-16 GPUs at 25 and 1 MiB.
table = ddp_check.read_table(ddp_check.TABLE)
check(sorted(table) == sorted(ddp_check.MODELS), f"models {sorted(table)}")
for model, rows in table.items():
    check("no_ddp" in rows, model + ": no one-GPU step without DDP")
    for gpus in (1, 2, 4, 8, 16):
        check((gpus, 25) in rows and (gpus, 1) in rows, f"{model}: {gpus} GPUs missing")
        check(rows[(gpus, 1)][1] is not None and rows[(gpus, 25)][1] is None, f"{model}: diff_pct only on 1 MiB rows")
        check(rows[(gpus, 25)][0] >= rows["no_ddp"], f"{model}: DDP faster than no DDP at {gpus} GPUs")

# A trace's compute is its layers' forward and backward and the optimizer.
trace = {"layers": [{"forward_s": 0.25, "backward_s": 0.5}, {"forward_s": 0.125, "backward_s": 0.0625}],
         "optimizer_s": 0.0625}
check(abs(ddp_check.trace_compute_s(trace) - 1.0) < 1e-12, "trace compute")

# One model through redsim on the preset, which has no framework costs: one GPU then computes the
# trace scaled to the measured step without DDP, whatever the bucket size, with nothing to reduce.
with tempfile.TemporaryDirectory() as tmp:
    args = argparse.Namespace(redsim=redsim, root=src, cluster=PRESET, framework_from_one_gpu=False)
    args.two_node = ddp_check.two_node_copy(args.cluster, tmp)
    os.chdir(src)
    rows = ddp_check.check_model(args, "resnet50", table["resnet50"], RESNET50, tmp, gpu_counts=(1, 16))
no_ddp = table["resnet50"]["no_ddp"]
one, sixteen = rows
for b in ("p25", "p1"):
    check(abs(one[b] - no_ddp) < 1e-4 * no_ddp, f"one GPU {b}: {one[b]} s against the {no_ddp} s the trace is scaled to")
    # 16 GPUs over two nodes: the step cannot be shorter than the compute alone.
    check(sixteen[b] >= no_ddp * (1 - 1e-9), f"16 GPUs {b}: {sixteen[b]} s below the compute {no_ddp} s")
check(abs(one["pdiff"]) < 1e-6, "one GPU: 1 MiB and 25 MiB differ")

# The preset's datasheet memory bandwidth lets DDP's bucket copies run on a copy of it: on one GPU
# they add exactly their bytes, into the buckets and back out, each read and written once: 4 x the
# gradients' bytes at 900 GB/s (NVIDIA's V100 datasheet), after the compute (nothing to overlap).
preset = ddp_check.load_json(PRESET, "cluster file")
check(preset["device"].get("memory_GBps") == 900, "dgx1-v100.json: memory_GBps is not the datasheet's 900")
trace_r50 = ddp_check.load_json(RESNET50, "trace")
grad_bytes = sum(p["numel"] * {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]] for p in trace_r50["params"])
with tempfile.TemporaryDirectory() as tmp:
    preset["framework"] = {"bucket_copy": True}
    copying = os.path.join(tmp, "copying.json")
    with open(copying, "w") as f:
        json.dump(preset, f)
    scale = ddp_check.trace_compute_s(trace_r50) / no_ddp
    step = {c: ddp_check.simulate_step_s(redsim, RESNET50, c, "1", 25, scale, tmp) for c in (copying, PRESET)}
    added_s = step[copying] - step[PRESET]
    check(abs(added_s - 4 * grad_bytes / 900e9) < 1e-9, f"bucket copies added {added_s} s, not 4 x {grad_bytes} B / 900 GB/s")
# --framework-from-one-gpu: both costs sit on a one-rank step's compute stream, so the step is linear
# in them and the two one-GPU rows it solves from come back exactly: 25 MiB at its p75, 1 MiB at
# the p75 over diff.py's throughput change.
with tempfile.TemporaryDirectory() as tmp:
    args = argparse.Namespace(redsim=redsim, root=src, cluster=PRESET, framework_from_one_gpu=True)
    args.two_node = ddp_check.two_node_copy(args.cluster, tmp)
    (fitted,) = ddp_check.check_model(args, "resnet50", table["resnet50"], RESNET50, tmp, gpu_counts=(1,))
(m25, _), (_, diff1) = table["resnet50"][(1, 25)], table["resnet50"][(1, 1)]
check(fitted["fitted"], "the one-GPU row is not marked fitted")
check(abs(fitted["p25"] - m25) < 1e-6 * m25, f"one GPU 25 MiB: {fitted['p25']} s against the measured {m25} s")
check(abs(fitted["p1"] - m25 / (1 + diff1 / 100)) < 1e-6 * m25, f"one GPU 1 MiB: {fitted['p1']} s")
print("e2e_ddp_check: ok")
