#!/usr/bin/env python3
"""redsim simulate against PyTorch's published DDP benchmark on DGX-1 V100 machines.

The table (pytorch_ddp_dgx1_v100.csv, with its source) gives DDP's step time for four torchvision
models at 1-16 GPUs with 25 MiB and 1 MiB buckets, and each model's step on one GPU without DDP.
The one-GPU step is the only measurement the prediction takes: it sets --compute-scale, so the
trace's compute (forward + backward + optimizer) is the measured step, as a user's own profile of one
GPU would. Everything else comes from the cluster file (default: the dgx1-v100 preset, and a copy of
it with two nodes for 16 GPUs). The bench prints the step time error per row and what the 1 MiB
buckets cost against 25 MiB, measured and predicted.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "pytorch_ddp_dgx1_v100.csv")
MODELS = ["resnet50", "resnet101", "resnext50_32x4d", "resnext101_32x8d"]


def fail(message):
    """Bad input: one line naming what was wrong, exit status 2 (the project's convention)."""
    print("ddp_check: " + message, file=sys.stderr)
    sys.exit(2)


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read the {what}: {e}")


def read_table(path):
    """{model: {"no_ddp": s, (gpus, bucket_mb): (p75_s, diff_pct or None)}} from the CSV."""
    with open(path) as f:
        rows = [line for line in f if not line.startswith("#")]
    table = {}
    for r in csv.DictReader(rows):
        m = table.setdefault(r["model"], {})
        if r["ddp"] == "0":
            m["no_ddp"] = float(r["p75_s"])
        else:
            diff = float(r["diff_pct"]) if r["diff_pct"] else None
            m[(int(r["gpus"]), int(r["bucket_mb"]))] = (float(r["p75_s"]), diff)
    return table


def trace_compute_s(trace):
    """What one GPU spends on a step without DDP: every layer's forward and backward, and the optimizer."""
    return sum(l["forward_s"] + l["backward_s"] for l in trace["layers"]) + trace.get("optimizer_s", 0.0)


def error_pct(predicted, measured):
    return 100.0 * (predicted - measured) / measured


def throughput_change_pct(step_small_s, step_large_s):
    """diff.py's column: throughput with the small buckets against the large ones, in %."""
    return 100.0 * (step_large_s / step_small_s - 1.0)


def two_node_copy(cluster_path, out_dir):
    c = load_json(cluster_path, "cluster file")
    if not isinstance(c, dict) or c.get("nodes", 1) != 1 or "inter_node" not in c:
        fail(f"{cluster_path}: $.nodes, $.inter_node: expected a one-node cluster that lists its NICs")
    c["nodes"] = 2
    c["name"] = c.get("name", "cluster") + "-x2"
    path = os.path.join(out_dir, "two_nodes.json")
    with open(path, "w") as f:
        json.dump(c, f, indent=1)
    return path


def simulate(redsim, trace_path, cluster, layout, bucket_mb, compute_scale, out_dir):
    """redsim simulate's result JSON for one row."""
    out = os.path.join(out_dir, "result.json")
    cmd = [redsim, "simulate", "--trace", trace_path, "--cluster", cluster, "--strategy", "bucketed",
           "--bucket-mb", str(bucket_mb), "--no-broadcast-buffers", "--compute-scale", repr(compute_scale),
           "--out", out]
    if layout:
        cmd += ["--layout", layout]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)


def simulate_step_s(redsim, trace_path, cluster, layout, bucket_mb, compute_scale, out_dir):
    return simulate(redsim, trace_path, cluster, layout, bucket_mb, compute_scale, out_dir)["summary"]["step_time_s"]


def framework_copy(cluster_path, name, bucket_us, tensor_us, out_dir):
    """A copy of the cluster file with DDP's per-bucket and per-tensor host costs set."""
    c = load_json(cluster_path, "cluster file")
    c.setdefault("framework", {})
    c["framework"]["bucket_overhead_us"] = bucket_us
    c["framework"]["copy_out_us_per_tensor"] = tensor_us
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(c, f, indent=1)
    return path


def one_gpu_framework(args, trace, trace_path, measured, scale, tmp):
    """DDP's own costs from the table's one-GPU rows, as a user would take them from profiling one
    GPU with DDP at two bucket sizes: both costs sit on the compute stream of a one-rank step (one
    per bucket as its gradients are ready, one per gradient tensor after the last allreduce), so
    step = base + buckets x c_b + tensors x c_t at 25 and 1 MiB gives c_b and c_t. The 1 MiB step
    is the 25 MiB one over diff.py's throughput change (finer than the 1 ms of the p75 column)."""
    (m25, _), (_, diff1) = measured[(1, 25)], measured[(1, 1)]
    m1 = m25 / (1.0 + diff1 / 100.0)
    res = {b: simulate(args.redsim, trace_path, args.cluster, "1", b, scale, tmp) for b in (25, 1)}
    n = {b: sum(1 for c in res[b]["summary"]["collectives"] if c["kind"] == "allreduce") for b in (25, 1)}
    tensors = sum(p.get("tensors", 1) for p in trace["params"]
                  if p.get("trainable", True) and not p.get("excluded", False))
    e25, e1 = m25 - res[25]["summary"]["step_time_s"], m1 - res[1]["summary"]["step_time_s"]
    bucket_us = max(0.0, (e1 - e25) / (n[1] - n[25]) * 1e6) if n[1] != n[25] else 0.0
    tensor_us = max(0.0, (e25 - n[25] * bucket_us * 1e-6) / tensors * 1e6)
    print(f"   DDP's costs from the one-GPU rows: {bucket_us:.1f} us a bucket ({n[25]} buckets at 25 MiB, "
          f"{n[1]} at 1 MiB), {tensor_us:.1f} us a gradient tensor ({tensors}); the one-GPU rows are fitted")
    return (framework_copy(args.cluster, "framework.json", bucket_us, tensor_us, tmp),
            framework_copy(args.two_node, "framework_x2.json", bucket_us, tensor_us, tmp))


def check_model(args, model, measured, trace_path, tmp, gpu_counts=(1, 2, 4, 8, 16)):
    trace = load_json(trace_path, "trace")
    try:
        scale = trace_compute_s(trace) / measured["no_ddp"]
        device = trace["reference_device"]
    except (KeyError, TypeError, AttributeError) as e:
        fail(f"{trace_path}: $.layers[*].forward_s, backward_s, $.reference_device: expected a redsim trace ({e!r})")
    print(f"\n== {model}: {os.path.relpath(trace_path, args.root)} ({device}), "
          f"compute x 1/{scale:.4g} = the measured one-GPU step without DDP, {measured['no_ddp'] * 1e3:.0f} ms")
    print(f"{'gpus':>5} {'25 MiB meas':>12} {'pred':>8} {'error':>7} {'1 MiB meas':>11} {'pred':>8} {'error':>7}"
          f" {'1 vs 25 meas':>13} {'pred':>7}")
    one, two = args.cluster, args.two_node
    if args.framework_from_one_gpu:
        one, two = one_gpu_framework(args, trace, trace_path, measured, scale, tmp)
    rows = []
    for gpus in gpu_counts:
        cluster, layout = (two, None) if gpus == 16 else (one, str(gpus))
        pred = {b: simulate_step_s(args.redsim, trace_path, cluster, layout, b, scale, tmp) for b in (25, 1)}
        (m25, _), (m1, diff) = measured[(gpus, 25)], measured[(gpus, 1)]
        row = {"gpus": gpus, "fitted": args.framework_from_one_gpu and gpus == 1, "p25": pred[25], "p1": pred[1],
               "e25": error_pct(pred[25], m25), "e1": error_pct(pred[1], m1), "diff": diff, "pdiff": throughput_change_pct(pred[1], pred[25])}
        rows.append(row)
        print(f"{gpus:>5} {m25 * 1e3:>9.0f} ms {pred[25] * 1e3:>8.1f} {row['e25']:>+6.1f}% {m1 * 1e3:>8.0f} ms"
              f" {pred[1] * 1e3:>8.1f} {row['e1']:>+6.1f}% {diff:>+12.1f}% {row['pdiff']:>+6.1f}%")
    return rows


def summarise(all_rows):
    errors = [abs(r[k]) for r in all_rows if not r["fitted"] for k in ("e25", "e1")]
    gaps = [abs(r["pdiff"] - r["diff"]) for r in all_rows if r["gpus"] > 1]
    worse = [r for r in all_rows if r["gpus"] > 1 and r["diff"] < -1.0]
    right_sign = sum(1 for r in worse if r["pdiff"] < 0)
    print(f"\nstep time: {len(errors)} rows, median |error| {statistics.median(errors):.1f}%, "
          f"worst {max(errors):.1f}%")
    print(f"1 MiB against 25 MiB (2-16 GPUs): median |predicted - measured| {statistics.median(gaps):.1f} points; "
          f"where 1 MiB measured more than 1% slower, predicted slower in {right_sign} of {len(worse)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redsim", default="build/cli/redsim", help="the redsim binary (default build/cli/redsim)")
    ap.add_argument("--root", default=".", help="the repository root (default .)")
    ap.add_argument("--cluster", default="configs/dgx1-v100.json",
                    help="one-node cluster file for 1-8 GPUs; 16 GPUs run on a copy with two nodes")
    ap.add_argument("--traces", default=os.path.join(HERE, "traces"),
                    help="folder of <model>.json traces (default: the captures kept beside this script)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, from the table")
    ap.add_argument("--framework-from-one-gpu", action="store_true",
                    help="also take DDP's per-bucket and per-gradient-tensor host costs from the one-GPU rows "
                         "(25 and 1 MiB), as a user would from profiling one GPU, and predict 2-16 GPUs with them")
    args = ap.parse_args()
    os.chdir(args.root)
    args.root = os.getcwd()
    table = read_table(TABLE)
    all_rows = []
    with tempfile.TemporaryDirectory(prefix="ddp_check.") as tmp:
        args.two_node = two_node_copy(args.cluster, tmp)
        for model in args.models.split(","):
            if model not in table:
                fail(f"--models: unknown model {model!r}; expected one of {', '.join(table)}")
            all_rows += check_model(args, model, table[model], os.path.join(args.traces, model + ".json"), tmp)
    summarise(all_rows)


if __name__ == "__main__":
    main()
