#!/usr/bin/env python3
"""Capture a redsim model trace from a real PyTorch model (traces/README.md, "Capturing").

    /usr/bin/python3 traces/capture/redsim_capture.py --model resnet18 \
        --input-shape 3,224,224 --batch-size 32 --warmup 2 --iters 5 --out resnet18.json

The model is a torchvision model name (resnet18, vit_b_16, ...) or `module:factory` /
`path/to/file.py:factory` for a user nn.Module built by calling factory() with no arguments.
It is trained for --warmup + --iters steps on random inputs (forward, loss, backward, optimizer
step) while hooks timestamp:

  - every layer's forward (forward pre/post hooks; a layer is a leaf module that runs in
    forward, or any module that owns parameters directly),
  - every layer's backward: a pre-hook and a post-hook on the autograd node that produced the
    layer's output (the layer's backward starts and ends there; the same node a tensor hook or
    register_full_backward_hook would see, without their in-place restrictions),
  - every gradient as it becomes ready: register_post_accumulate_grad_hook (PyTorch >= 2.1),
    otherwise a hook on the parameter's AccumulateGrad node (param.expand_as(param).grad_fn
    .next_functions[0][0], the way DistributedDataParallel's reducer hooks in),
  - the optimizer step (SGD with momentum, or Adam).

On a GPU the timestamps are CUDA events on the current stream; on a CPU, time.perf_counter.
Times are means over the measured iterations. Each layer's time is the time from the previous
timestamp to its own end, so the work outside modules (activations written as functions,
residual adds, the loss) is charged to the layer that ends next and the layer times add up to
the measured forward and backward. Hooks cost time themselves, so every hooked iteration is
followed by one without hooks, and the layer times are rescaled to the un-hooked totals (the raw
file reports both; --no-rescale keeps the hooked times).

Exit status: 0 on success, 2 on bad arguments or when PyTorch cannot be imported.
"""

import argparse
import json
import os
import sys
import tempfile

# The implementation lives in capture_lib/ next to this file (files under 500 lines); these names
# stay importable from here (bench/validate/ddp_steps.py imports redsim_capture).
from capture_lib.batch_curve import add_curve, measure_curve, parse_batch_sizes
from capture_lib.common import PROG, CaptureError, build_model, import_torch, write_atomically  # noqa: F401
from capture_lib.copies import CopySync, check_processes, run_copies
from capture_lib.measure import run


def capture(args, script):
    """One capture at args.batch_size, written nowhere: (trace, raw or None, step totals). With
    --processes the copies' raw file is written by run_copies itself."""
    if args.processes == 1:
        trace, raw, warnings, totals = run(args)
        for w in warnings:
            print("%s: warning: %s" % (PROG, w), file=sys.stderr)
        return trace, raw, totals
    with tempfile.TemporaryDirectory(prefix="redsim_capture.") as d:
        final_out, args.out = args.out, os.path.join(d, "trace.json")
        try:
            trace, _ = run_copies(script, args)
        finally:
            args.out = final_out
    totals = (sum(l["forward_s"] for l in trace["layers"]), sum(l["backward_s"] for l in trace["layers"]),
              trace.get("optimizer_s", 0.0))
    return trace, None, totals


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Measure a PyTorch model (forward, backward, gradient-ready order and times, optimizer) "
        "and write a redsim model trace (traces/README.md).",
    )
    ap.add_argument("--model", required=True, help="torchvision model name (resnet18, ...) or module:factory / file.py:factory")
    ap.add_argument("--model-name", help="name written as the trace's model (default: --model)")
    ap.add_argument("--input-shape", default="3,224,224", help="shape of one sample, comma-separated (default 3,224,224)")
    ap.add_argument("--batch-size", type=int, default=32, help="samples per step (default 32)")
    ap.add_argument("--batch-sizes",
                    help="also time the model at these batch sizes (comma-separated) and record the layer times as "
                    "the trace's batch curve, for redsim's --batch-size (one whole capture each)")
    ap.add_argument("--input-dtype", choices=["float", "int64"], default="float",
                    help="float: random normal inputs in the parameter dtype; int64: random token ids below --vocab")
    ap.add_argument("--vocab", type=int, default=30522, help="token ids are drawn below this, with --input-dtype int64")
    ap.add_argument("--dtype", choices=["float32", "float16", "bfloat16", "float64"], default="float32",
                    help="parameter dtype (default float32)")
    ap.add_argument("--loss", choices=["auto", "ce", "sum", "mean"], default="auto",
                    help="auto: cross-entropy on random labels for an [N, classes] output, else the mean")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd", help="optimizer whose step is timed (default sgd)")
    ap.add_argument("--warmup", type=int, default=2, help="warm-up iterations, not measured (default 2)")
    ap.add_argument("--iters", type=int, default=5, help="measured iterations (default 5), plus as many un-hooked ones")
    ap.add_argument("--device", help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads on CPU (default: PyTorch's choice)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-rescale", action="store_true", help="keep the hooked layer times (do not rescale to un-hooked totals)")
    ap.add_argument("--out", required=True, help="write the redsim trace JSON here")
    ap.add_argument("--raw-out", help="also write the raw measurements (per-layer own times, observed ready times) here")
    ap.add_argument("--processes", type=int, default=1,
                    help="CPU only: time N copies of the model at once and keep the slowest copy's times, scaled to the "
                    "slowest copy's step iteration by iteration, as N ranks of a job sharing this host's cores "
                    "compute and wait for each other (default 1: a process alone)")
    ap.add_argument("--copy-sync", help=argparse.SUPPRESS)  # set by --processes for its copies
    args = ap.parse_args(argv)
    try:
        if args.copy_sync:
            CopySync(args.copy_sync)  # checked before any work
        sizes = parse_batch_sizes(args.batch_sizes, args.batch_size) if args.batch_sizes else None
        if args.processes != 1:
            device = args.device or ("cuda" if import_torch().cuda.is_available() else "cpu")
            check_processes(args, device.startswith("cpu"))
        measure = lambda a: capture(a, os.path.abspath(__file__))  # noqa: E731
        others = measure_curve(args, sizes, lambda a: measure(a)[0], sys.stderr) if sizes else {}
        trace, raw, totals = measure(args)
        if sizes:
            add_curve(trace, sizes, others, args.batch_size)
        write_atomically(args.out, json.dumps(trace, indent=1) + "\n")
        if args.raw_out and raw is not None:
            write_atomically(args.raw_out, json.dumps(raw, indent=1) + "\n")
    except CaptureError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    nparams = sum(p["numel"] for p in trace["params"])
    saved = [l["activation_bytes"] for l in trace["layers"] if "activation_bytes" in l]
    print(
        "%s: %s, %d tensors, %s params, %d layers, %d buffers, %s; per step (batch %d, %s): forward %.3f ms, "
        "backward %.3f ms, optimizer %.3f ms"
        % (
            args.out,
            trace["model"],
            len(trace["params"]),
            format(nparams, ","),
            len(trace["layers"]),
            len(trace["buffers"]),
            ("activations %.1f MiB" % (sum(saved) / 2**20) if sum(saved) >= 2**20 else
             "activations %s bytes" % format(sum(saved), ",")) if saved else "activations not measured",
            args.batch_size,
            trace["reference_device"],
            totals[0] * 1e3,
            totals[1] * 1e3,
            totals[2] * 1e3,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
