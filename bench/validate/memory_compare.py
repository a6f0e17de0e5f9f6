#!/usr/bin/env python3
"""Per-rank memory of real PyTorch runs (ddp_steps.py's "memory") against redsim's memory model.

For each measured file, `redsim simulate` is run with the file's own knobs (redsim_knobs) on the
given trace and cluster, and its memory per rank (parameters, gradients, optimizer state,
communication buffers: the model state; plus the activations autograd saves in forward when the
trace gives them: the figure simulate and tune print) is set against what the most loaded rank
held in PyTorch:

  - tensors: parameters, gradients, this rank's optimizer state, DDP's buckets plus the comm hook's
    state (PowerSGD's matrices; the fp16 hook's compressed copies at their peak in flight),
    counted from the tensors themselves (ddp_memory.py), against the model state;
  - allocator peak (with ddp_steps.py --allocator-peak): the most tensor bytes the rank had
    allocated at once over a profiled window of steps, what torch.cuda.max_memory_allocated
    reports on a GPU, against the model's total (the state plus the larger of the activations
    and the step's buffers after backward). Allocations freed on another thread (a comm hook's
    callbacks run on Gloo's) stay in the profiler's running sum: the peak is then an upper bound,
    by at most the "unseen" bytes shown;
  - RSS growth: the rank's peak resident memory (VmHWM) minus its resident memory before the model
    existed, i.e. the model state, the activations, and what the model leaves out (allocator slack,
    backward's temporaries, Gloo's buffers, the runtime's own pages), against the model's total.

Error = (model - measured) / measured. Prints a Markdown table (--table writes it too).

    memory_compare.py --redsim build/cli/redsim --trace T.json --cluster C.json m1.json m2.json ...
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

MiB = 1024.0 * 1024.0


def simulate_memory(redsim, trace, cluster, knobs):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sim.json")
        cmd = [redsim, "simulate", "--trace", trace, "--cluster", cluster, "--out", out] + knobs
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["memory_per_rank"]


def measured_memory(m):
    """The most loaded rank's tensor bytes by kind, and the largest RSS growth over the ranks."""
    ranks = m["memory"]["ranks"]
    kinds = ("params_bytes", "grads_bytes", "optimizer_bytes", "bucket_bytes", "hook_bytes")
    worst = max(ranks, key=lambda r: sum(r[k] for k in kinds))
    held = {k: worst[k] for k in kinds}
    held["comm_bytes"] = held["bucket_bytes"] + held["hook_bytes"]
    held["total_bytes"] = sum(held[k] for k in kinds)
    growth = max(r["peak_rss_bytes"] - r["rss_before_model_bytes"] for r in ranks)
    peaks = [r["allocator"] for r in ranks if r.get("allocator")]
    peak = max(peaks, key=lambda a: a["peak_bytes"]) if len(peaks) == len(ranks) else None
    return held, growth, peak


def err(model, measured):
    return "%+.1f%%" % (100.0 * (model - measured) / measured) if measured else "n/a"


def label(m):
    v = m["variant"]
    extra = {"accumulate": " M=%s" % m.get("microbatches"), "localsgd": " H=%s" % m.get("localsgd_period"),
             "powersgd": " r=%s" % m.get("powersgd_rank")}.get(v, "")
    return "%s%s, %g MiB buckets, %s" % (v, extra, m["bucket_cap_mb"], m.get("optimizer", "sgd"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--redsim", required=True, help="the redsim binary")
    ap.add_argument("--trace", required=True, help="a redsim trace of the measured model")
    ap.add_argument("--cluster", required=True, help="a cluster file with the measured world size")
    ap.add_argument("--table", help="also write the table here")
    ap.add_argument("measured", nargs="+", help="ddp_steps.py --out files")
    args = ap.parse_args(argv)
    rows = ["| variant | model state: params / grads / optimizer / comm = sum MiB | PyTorch tensors (most loaded rank) "
            "MiB | error | model activations / step buffers MiB | model total MiB | PyTorch allocator peak MiB (unseen frees) "
            "| model total vs allocator peak | PyTorch peak RSS growth MiB | model total vs RSS growth |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for path in args.measured:
        with open(path) as f:
            m = json.load(f)
        if "memory" not in m:
            print("memory_compare: %s: no \"memory\" (measured by an older ddp_steps.py)" % path, file=sys.stderr)
            return 2
        model = simulate_memory(args.redsim, args.trace, args.cluster, m["redsim_knobs"])
        held, growth, peak = measured_memory(m)
        mib = lambda b: b / MiB  # noqa: E731
        activations = model.get("activation_bytes")  # None: the trace does not give them
        state = sum(model[k] for k in ("params_bytes", "grads_bytes", "optimizer_bytes", "comm_buffer_bytes"))
        transient = "%s / %.1f" % ("%.1f" % mib(activations) if activations is not None else "not in the trace",
                                   mib(model.get("step_buffer_bytes", 0)))
        measured_peak, peak_err = "not measured", "n/a"
        if peak:
            measured_peak = "%.1f (%.1f)" % (mib(peak["peak_bytes"]), mib(peak["unseen_free_bytes"]))
            peak_err = err(model["total_bytes"], peak["peak_bytes"])
        rows.append("| %s | %.1f / %.1f / %.1f / %.1f = %.1f | %.1f / %.1f / %.1f / %.1f = %.1f | %s | %s | %.1f | %s | %s "
                    "| %.1f | %s |" % (
                        label(m), mib(model["params_bytes"]), mib(model["grads_bytes"]), mib(model["optimizer_bytes"]),
                        mib(model["comm_buffer_bytes"]), mib(state), mib(held["params_bytes"]),
                        mib(held["grads_bytes"]), mib(held["optimizer_bytes"]), mib(held["comm_bytes"]),
                        mib(held["total_bytes"]), err(state, held["total_bytes"]), transient,
                        mib(model["total_bytes"]), measured_peak, peak_err, mib(growth), err(model["total_bytes"], growth)))
    table = "\n".join(rows) + "\n"
    sys.stdout.write(table)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
