#!/usr/bin/env python3
"""Profile real DistributedDataParallel steps with PyTorch's profiler, in the form that
`redsim trace import --kineto` and `redsim calibrate --from-profile` read (traces/README.md,
"Importing a PyTorch profile").

    torchrun --nproc-per-node 8 traces/capture/redsim_profile_ddp.py --model resnet50 \\
        --batch-size 32 --amp bf16 --out-dir prof
    redsim trace import --kineto prof/rank0.pt.trace.json.gz --out imported.json --measured measured.json

Every rank builds the model (a torchvision name, or module:factory / file.py:factory as
redsim_capture.py takes it), wraps it in DDP with --bucket-mb buckets and trains on random inputs:
  1. --warmup steps, untimed (DDP rebuilds its buckets in the order gradients became ready after
     its first step, so a profile of later steps has one bucket layout throughout);
  2. --steps timed steps without the profiler: each step's time is the slowest rank's, as a
     synchronous job sees it, and rank 0 writes them to OUT_DIR/steps.json;
  3. --profile-steps steps under torch.profiler (CPU and CUDA activities; record_shapes, so that
     PyTorch < 2.1 records message sizes; --memory adds profile_memory, from which the import
     reads the activations), each a ProfilerStep#N span. Every rank writes
     OUT_DIR/rank<R>.pt.trace.json.gz, gzip-compressed, whole or not at all.
Without torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, ...) it runs as one rank.
On CUDA the process group is NCCL and each rank takes the device LOCAL_RANK; on a CPU it is Gloo
(a CPU profile has no NCCL kernels, so `trace import --kineto` refuses it and says so).
Progress goes to stderr. Exit status: 0 on success, 2 on bad arguments or when PyTorch is missing.
"""

import argparse
import gzip
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_lib.common import CaptureError, build_model, fail, import_torch, parse_shape, write_atomically  # noqa: E402
from capture_lib.hooks import make_loss  # noqa: E402

PROG = "redsim_profile_ddp"


def parse_args(argv):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="torchvision model name (resnet50, ...) or module:factory / file.py:factory")
    ap.add_argument("--input-shape", default="3,224,224", help="shape of one sample, comma-separated (default 3,224,224)")
    ap.add_argument("--input-dtype", choices=["float", "int64"], default="float",
                    help="float: random normal inputs; int64: random token ids below --vocab")
    ap.add_argument("--vocab", type=int, default=30522, help="token ids are drawn below this, with --input-dtype int64")
    ap.add_argument("--batch-size", type=int, default=32, help="samples per rank per step (default 32)")
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb in MiB (default 25, PyTorch's)")
    ap.add_argument("--amp", choices=["none", "bf16", "fp16"], default="none",
                    help="autocast forward and loss in this dtype (default none: the model's own dtype)")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd", help="default sgd (momentum 0.9)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3, at least 2)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps without the profiler (default 10)")
    ap.add_argument("--profile-steps", type=int, default=3, help="steps recorded by the profiler (default 3)")
    ap.add_argument("--memory", action="store_true", help="record the allocator too (profile_memory: activations)")
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                    help="cuda: NCCL, one device per rank (LOCAL_RANK); cpu: Gloo (default: cuda when available)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out-dir", required=True, help="directory for rank<R>.pt.trace.json.gz and steps.json")
    a = ap.parse_args(argv)
    a.shape = parse_shape(a.input_shape)
    for name, low in (("batch_size", 1), ("warmup", 2), ("steps", 1), ("profile_steps", 1), ("vocab", 1)):
        if getattr(a, name) < low or getattr(a, name) > 1_000_000:
            fail("--%s: expected an integer from %d to 1000000, got %d" % (name.replace("_", "-"), low, getattr(a, name)))
    if not 0 < a.bucket_mb <= 1_000_000:
        fail("--bucket-mb: expected a number of MiB above 0 and at most 1000000, got %g" % a.bucket_mb)
    if not os.path.isdir(a.out_dir):
        fail("--out-dir %s: not a directory (create it first)" % a.out_dir)
    if not os.access(a.out_dir, os.W_OK):
        fail("--out-dir %s: not writable" % a.out_dir)
    return a


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_group(torch, args):
    """The process group torchrun describes, or a world of one; the device this rank uses."""
    import torch.distributed as dist

    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    if use_cuda and not torch.cuda.is_available():
        fail("--device cuda: CUDA is not available to this PyTorch")
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(free_port()))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if use_cuda:
        if local_rank >= torch.cuda.device_count():
            fail("LOCAL_RANK %d: this host has %d CUDA device(s)" % (local_rank, torch.cuda.device_count()))
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    return dist, torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")


class Job:
    def __init__(self, torch, dist, device, args):
        self.torch, self.dist, self.device, self.args = torch, dist, device, args
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        torch.manual_seed(args.seed + self.rank)
        model = build_model(args.model, torch).to(device)
        model.train()
        if not any(p.requires_grad for p in model.parameters()):
            fail("the model has no trainable parameters")
        ids = [device.index] if device.type == "cuda" else None
        self.ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=args.bucket_mb)
        params = [p for p in self.ddp.parameters() if p.requires_grad]
        self.opt = (torch.optim.SGD(params, lr=1e-3, momentum=0.9) if args.optimizer == "sgd"
                    else torch.optim.Adam(params, lr=1e-4))
        shape = [args.batch_size] + args.shape
        self.x = (torch.randint(0, args.vocab, shape, device=device) if args.input_dtype == "int64"
                  else torch.randn(shape, device=device))
        gen = torch.Generator(device="cpu").manual_seed(args.seed + self.rank)
        self.targets = lambda classes: torch.randint(0, classes, (args.batch_size,), generator=gen).to(device)
        amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp)
        self.scaler = torch.cuda.amp.GradScaler() if args.amp == "fp16" and device.type == "cuda" else None
        self.autocast = (lambda: torch.autocast(device.type, dtype=amp)) if amp is not None else None

    def step(self):
        self.opt.zero_grad(set_to_none=True)
        if self.autocast is not None:
            with self.autocast():
                loss = make_loss(self.torch, self.ddp(self.x), "auto", self.targets)
        else:
            loss = make_loss(self.torch, self.ddp(self.x), "auto", self.targets)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()

    def sync(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def say(self, text):
        if self.rank == 0:
            print("%s: %s" % (PROG, text), file=sys.stderr, flush=True)


def timed_steps(job, n):
    """Each step's time on every rank; the slowest rank's per step (a MAX allreduce after the steps)."""
    torch = job.torch
    times = []
    for i in range(n):
        job.sync()
        t0 = time.perf_counter()
        job.step()
        job.sync()
        times.append(time.perf_counter() - t0)
        job.say("timed step %d/%d: %.1f ms" % (i + 1, n, times[-1] * 1e3))
    t = torch.tensor(times, dtype=torch.float64, device=job.device)
    job.dist.all_reduce(t, op=job.dist.ReduceOp.MAX)
    return [float(v) for v in t.cpu()]


def profiled_steps(job, n, path):
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if job.device.type == "cuda" else [])
    fd, plain = tempfile.mkstemp(prefix=".rank%d." % job.rank, suffix=".json", dir=os.path.dirname(path))
    os.close(fd)
    gz = plain + ".gz"
    try:
        # The trace is exported when the active steps end (on_trace_ready), as a schedule wants.
        with profile(activities=activities, record_shapes=True, profile_memory=job.args.memory,
                     schedule=schedule(wait=0, warmup=1, active=n),
                     on_trace_ready=lambda p: p.export_chrome_trace(plain)) as prof:
            for i in range(n + 1):
                job.step()
                job.sync()
                prof.step()
                job.say("profiled step %d/%d%s" % (i, n, " (profiler warm-up)" if i == 0 else ""))
        with open(plain, "rb") as f, gzip.open(gz, "wb", compresslevel=6) as g:
            shutil.copyfileobj(f, g)
        os.chmod(gz, 0o644)
        os.replace(gz, path)
    finally:
        for p in (plain, gz):
            if os.path.exists(p):
                os.unlink(p)


def main(argv=None):
    try:
        args = parse_args(argv)
        torch = import_torch()
        dist, device = init_group(torch, args)
        job = Job(torch, dist, device, args)
    except CaptureError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    for i in range(args.warmup):
        try:
            job.step()
        except RuntimeError as e:  # the model must run on this input at all
            print("%s: error: the model failed on an input of shape %s: %s" % (
                PROG, list(job.x.shape), (str(e).strip().splitlines() or ["?"])[0]), file=sys.stderr)
            return 2
        if i == 0:  # after the step that shows the model runs, so that a bad input is one line
            job.say("%d rank(s), %s on %s, %s buckets of %g MiB" % (
                job.world, args.model, torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU",
                dist.get_backend(), args.bucket_mb))
        job.say("warm-up step %d/%d" % (i + 1, args.warmup))
    step_s = timed_steps(job, args.steps)
    path = os.path.join(args.out_dir, "rank%d.pt.trace.json.gz" % job.rank)
    profiled_steps(job, args.profile_steps, path)
    dist.barrier()
    if job.rank == 0:
        summary = {"model": args.model, "world_size": job.world, "batch_size_per_rank": args.batch_size,
                   "bucket_mb": args.bucket_mb, "amp": args.amp, "backend": dist.get_backend(),
                   "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                   "torch": torch.__version__, "step_times_s": step_s, "median_step_s": statistics.median(step_s)}
        write_atomically(os.path.join(args.out_dir, "steps.json"), json.dumps(summary, indent=1) + "\n")
        print("median step %.2f ms over %d timed steps (slowest rank each step); profiles in %s" % (
            summary["median_step_s"] * 1e3, args.steps, args.out_dir))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
