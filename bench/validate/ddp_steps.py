#!/usr/bin/env python3
"""Measure real PyTorch DDP step times in redsim's measured format (bench/validate/README.md).

Trains a torchvision model with torch.nn.parallel.DistributedDataParallel over Gloo on random
inputs and writes the step times as {"step_times_s": [...], ...}, which
`redsim validate --measured FILE` compares with redsim's prediction for the same trace, cluster
and knobs. Run it with Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision):

    # 4 nodes x 1 rank on the namespace testbed (root); every rank runs the script:
    realexec/testbed run --nodes 4 --ranks-per-node 1 --rate 400mbit -- \\
        /usr/bin/python3 bench/validate/ddp_steps.py --variant bucketed --bucket-mb 25 \\
        --out ddp-b25.json --trace-out resnet18-ddp.json
    redsim validate --measured ddp-b25.json --trace resnet18-ddp.json --cluster testbed-4x1.json \\
        --strategy bucketed --bucket-mb 25
    # 2 local ranks on 127.0.0.1 (tests):
    /usr/bin/python3 bench/validate/ddp_steps.py --local-ranks 2 --batch-size 2 --input-shape 3,32,32 ...

Ranks join from torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; realexec/testbed and torchrun set them). Inside a network namespace
GLOO_SOCKET_IFNAME must name the namespace's interface (the testbed sets it), or Gloo binds to
loopback. --local-ranks N starts N such ranks itself on 127.0.0.1 (GLOO_SOCKET_IFNAME=lo).

Variants (--variant), the `redsim validate` knobs that model each, and the PyTorch features that
do not run here (FSDP, bf16_compress_hook): ddp_variants.py. Per-rank memory (tensor bytes and
resident memory, in the measured file's "memory"): ddp_memory.py; memory_compare.py sets it
against redsim's memory model.

Where PyTorch's algorithm differs from redsim's model, variant by variant: ddp_variants.py.

What a step time is: every rank leaves a dist.barrier(), takes time.perf_counter(), runs the step
(forward, loss, backward for each micro-batch, optimizer.step()) and takes the time again. On the
CPU nothing is asynchronous after that: DDP's backward returns only once every bucket's allreduce
has completed and been copied back, ZeroRedundancyOptimizer.step() waits for its broadcasts, the
averager's all_reduce is blocking. The step time written is the maximum over ranks of these
durations (an all_reduce MAX after each step, outside the timed interval), i.e. until the slowest
rank has finished its work, like redsim's step end (the last op of any rank). The barrier skew
is one network latency, negligible against steps of tenths of seconds.

The trace (--trace-out). The prediction needs compute times that match what each rank computes
under the same CPU contention as in the DDP job (all ranks computing at once on the machine's
cores). Every rank runs traces/capture/redsim_capture.py's capture concurrently (imported; its
hooks give per-layer times, the gradient-ready order, parameters and buffers), and rank 0 keeps
its trace. Then all ranks run steps of pure compute together (the same forward, loss and
backward on the DDP module's underlying model, and a plain SGD step over all parameters: no
communication, no buffer broadcast), each started by a barrier, one after each timed step (so a
drift of the shared machine's load hits both alike; --compute-steps, default --steps). Ranks
wait for each other at every collective and a step ends with the last rank, so the times an SPMD
plan should carry are the slowest rank's: per step the maximum over ranks of forward, backward
and optimizer, then the median over steps.
The trace's layer forward times, backward times and optimizer time are each rescaled so their
totals equal these, and the factors are stated in the trace's "source". The model's state is
saved before and restored after each of these steps, so they do not disturb training.
A full-model optimizer time is what the trace format asks for (redsim's zero divides it by the
world size).

Threads: torch.set_num_threads(max(1, cores // ranks_on_this_machine)), --threads overrides.
Ranks on this machine are LOCAL_WORLD_SIZE, except under realexec/testbed (REDSIM_HOST_ADDR set),
whose "nodes" are namespaces of one machine, where it is WORLD_SIZE: more threads than cores
would time-slice the ranks' compute threads against each other and make compute times erratic.

The measured file holds step_times_s plus descriptive members, which `redsim validate` ignores
(it reads step_times_s and engine.name): the variant and knobs, every step's time (slowest rank)
and rank 0's time with its forward, backward (to the last gradient, and to the end of DDP's
backward, allreduces included) and optimizer phases, the compute-only times (and the compute
times measured inside the timed steps, by hooks on the gradients' AccumulateGrad nodes, for
comparison), and the `redsim validate` knobs that model the run.

Exit status: 0 on success, 2 on bad arguments or when PyTorch cannot be imported, 1 when a rank
fails.
"""

import argparse
import contextlib
import datetime
import json
import os
import shlex
import sys
import threading
import time

import ddp_memory
import ddp_variants
import trace_scaling
from ddp_launch import UsageError, cpu_count, env_int, launch_local, median

PROG = "ddp_steps"
HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE_DIR = os.path.join(HERE, "..", "..", "traces", "capture")
VARIANTS = ddp_variants.VARIANTS


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Time real PyTorch DDP steps (Gloo) and write them in redsim's measured format; "
        "optionally a redsim trace of the same model scaled to the job's own compute times.",
    )
    ap.add_argument("--model", default="resnet18", help="torchvision model name (default resnet18)")
    ap.add_argument("--batch-size", type=int, default=8, help="samples per rank per (micro-)batch (default 8)")
    ap.add_argument("--input-shape", default="3,64,64",
                    help="one sample's shape (default 3,64,64: small compute, so communication dominates at 400 Mbit/s)")
    ap.add_argument("--variant", choices=VARIANTS, default="bucketed", help="default bucketed")
    ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb in MiB (default 25)")
    ap.add_argument("--first-bucket-mb", type=float, default=0,
                    help="DDP's first bucket cap in MiB (default 0: PyTorch's 1 MiB, dist._DEFAULT_FIRST_BUCKET_BYTES)")
    ap.add_argument("--microbatches", type=int, default=4, help="accumulate: micro-batches per step, M (default 4)")
    ap.add_argument("--localsgd-period", type=int, default=4, help="localsgd: steps between averagings, H (default 4)")
    ap.add_argument("--powersgd-rank", type=int, default=1, help="powersgd: matrix_approximation_rank (default 1)")
    ap.add_argument("--powersgd-start-iter", type=int, default=2,
                    help="powersgd: start_powerSGD_iter (default 2, the least PyTorch allows with error feedback; "
                         "keep --warmup at or above it so the timed steps compress)")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                    help="sgd (momentum 0.9, default) or adam (whose state redsim's memory model counts)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (default 2; DDP rebuilds buckets in the 2nd)")
    ap.add_argument("--steps", type=int, default=5,
                    help="timed steps (default 5; localsgd: rounded up to whole windows of H steps)")
    ap.add_argument("--compute-steps", type=int, default=-1,
                    help="compute-only steps, one after each timed step, timed for the trace scaling (default: as "
                         "many as --steps; 0: none, not allowed with --trace-out)")
    ap.add_argument("--capture-iters", type=int, default=3, help="measured iterations of the trace capture (default 3)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads per rank (default: cores / ranks on this machine)")
    ap.add_argument("--gloo-threads", type=int, default=0,
                    help="worker threads of a Gloo process group made for DDP's gradient allreduces and buffer "
                         "broadcasts (default 0: DDP uses PyTorch's default group, 2 threads, so two buckets may "
                         "be reduced at once; 1: one at a time, in order, as redsim models it). ZeRO's broadcasts "
                         "and LocalSGD's averaging stay on the default group")
    ap.add_argument("--checkpoint-blocks", action="store_true",
                    help="activation checkpointing of every repeated block (ddp_variants.checkpoint_blocks)")
    ap.add_argument("--allocator-peak", action="store_true",
                    help="after the timed steps, run one more window of steps under PyTorch's profiler and record "
                         "the most tensor bytes allocated at once (torch.cuda.max_memory_allocated's figure, on CPUs)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=600, help="process-group timeout in seconds (default 600)")
    ap.add_argument("--local-ranks", type=int, default=0,
                    help="start this many ranks on 127.0.0.1 instead of joining from RANK/WORLD_SIZE")
    ap.add_argument("--out", required=True, help="measured step times (rank 0 writes it)")
    ap.add_argument("--trace-out", help="also write a redsim trace of the model scaled to this job's compute times")
    args = ap.parse_args(argv)
    checks = [
        (args.batch_size >= 1, "--batch-size: expected a positive integer"),
        (args.bucket_mb > 0, "--bucket-mb: expected a positive size in MiB"),
        (args.microbatches >= 1, "--microbatches: expected at least 1"),
        (args.first_bucket_mb >= 0, "--first-bucket-mb: expected 0 (PyTorch's default) or a size in MiB"),
        (args.localsgd_period >= 1, "--localsgd-period: expected at least 1"),
        (args.powersgd_rank >= 1, "--powersgd-rank: expected at least 1"),
        (args.powersgd_start_iter >= 2, "--powersgd-start-iter: expected at least 2 (PyTorch's minimum with error "
                                        "feedback)"),
        (args.warmup >= 0, "--warmup: expected 0 or more"),
        (args.steps >= 1, "--steps: expected at least 1"),
        (args.compute_steps >= -1, "--compute-steps: expected 0 or more"),
        (not args.trace_out or args.compute_steps != 0, "--trace-out needs compute-only steps (--compute-steps 0 given)"),
        (args.capture_iters >= 1, "--capture-iters: expected at least 1"),
        (args.threads >= 0, "--threads: expected 0 (automatic) or more"),
        (args.gloo_threads >= 0, "--gloo-threads: expected 0 (PyTorch's default) or more"),
        (args.local_ranks >= 0, "--local-ranks: expected 0 or more"),
        (args.timeout_s > 0, "--timeout-s: expected a positive number of seconds"),
    ]
    for ok, msg in checks:
        if not ok:
            raise UsageError(msg)
    try:
        shape = [int(d) for d in args.input_shape.replace("x", ",").split(",")]
    except ValueError:
        shape = []
    if not shape or any(d <= 0 for d in shape):
        raise UsageError("--input-shape: expected positive integers separated by commas, got %r" % args.input_shape)
    args.shape = shape
    if args.compute_steps < 0:
        args.compute_steps = args.steps
    return args


# ---------------------------------------------------------------------------------------------
# One rank.


class RankRun:
    """One rank of the job: the steps of run_rank, sharing the rank's state."""

    def __init__(self, args):
        self.args = args
        self.rank, self.world = env_int("RANK"), env_int("WORLD_SIZE")
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
        self.on_host = self.world if os.environ.get("REDSIM_HOST_ADDR") else local_world
        self.threads = args.threads or max(1, cpu_count() // max(1, self.on_host))
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if not os.environ.get(name):
                raise UsageError("environment: %s is not set" % name)
        sys.path.insert(0, os.path.abspath(CAPTURE_DIR))
        import redsim_capture as capture  # traces/capture/redsim_capture.py

        try:
            import torch
            import torch.distributed as dist
            import torch.nn.functional as F
        except Exception as e:  # ImportError, or a broken install
            raise UsageError("cannot import PyTorch with %s (%s): install python3-torch and python3-torchvision"
                             % (sys.executable, e))
        self.capture, self.torch, self.dist, self.F = capture, torch, dist, F
        torch.set_num_threads(self.threads)
        self.say = (lambda *a: print(*a, flush=True)) if self.rank == 0 else (lambda *a: None)
        dist.init_process_group("gloo", init_method="env://", rank=self.rank, world_size=self.world,
                                timeout=datetime.timedelta(seconds=args.timeout_s))
        self.rss_before_model = ddp_memory.rss_bytes()  # PyTorch, Gloo and the interpreter, no model yet
        self.say("%s: %d rank(s), %d thread(s) each (%d cores, %d rank(s) on this machine); torch %s; %s, batch %d, "
                 "input %s, variant %s" % (PROG, self.world, self.threads, cpu_count(), self.on_host, torch.__version__,
                                           args.model, args.batch_size, "x".join(map(str, args.shape)), args.variant))
        self.pg = self.gloo_group() if args.gloo_threads else None  # None: the default group (2 worker threads)
        self.trace = None
        self.fwd, self.bwd, self.optim = [], [], []

    def gloo_group(self):
        dist, args = self.dist, self.args
        opts = dist.ProcessGroupGloo._Options()
        opts._timeout = datetime.timedelta(seconds=args.timeout_s)
        ifname = os.environ.get("GLOO_SOCKET_IFNAME")
        opts._devices = [dist.ProcessGroupGloo.create_device(interface=ifname) if ifname
                         else dist.ProcessGroupGloo.create_default_device()]
        opts._threads = args.gloo_threads
        store = dist.PrefixStore("ddp_steps_gloo", dist.distributed_c10d._get_default_store())
        return dist.ProcessGroupGloo(store, self.rank, self.world, opts)

    def capture_trace(self):
        """1. The trace capture, on every rank at once (same contention); rank 0 keeps its trace."""
        args, capture = self.args, self.capture
        cap_args = argparse.Namespace(
            model=args.model, model_name=None, input_shape=",".join(map(str, args.shape)), batch_size=args.batch_size,
            input_dtype="float", vocab=30522, dtype="float32", loss="ce", optimizer=args.optimizer, warmup=1,
            iters=args.capture_iters, device="cpu", threads=self.threads, seed=args.seed, no_rescale=False,
            out=args.trace_out, raw_out=None, shared_cores=True)
        try:
            self.trace, _raw, warnings, _totals = capture.run(cap_args)
        except capture.CaptureError as e:
            raise UsageError("trace capture: %s" % e)
        for w in warnings:
            self.say("%s: capture warning: %s" % (PROG, w))
        self.dist.barrier()
        self.say("%s: captured the per-layer trace (%d layers)" % (PROG, len(self.trace["layers"])))

    def build(self):
        """2. The model, the DDP wrapper, the variant's optimizer, the batch and the gradient hooks."""
        args, torch = self.args, self.torch
        torch.manual_seed(args.seed)
        try:
            self.model = self.capture.build_model(args.model, torch)
        except self.capture.CaptureError as e:
            raise UsageError(str(e))
        model = self.model
        model.train()
        self.checkpointed = ddp_variants.checkpoint_blocks(torch, model) if args.checkpoint_blocks else []
        self.built = ddp_variants.build(torch, model, args, self.pg)
        if args.variant == "powersgd" and args.warmup < args.powersgd_start_iter:
            self.say("%s: warning: --warmup %d < --powersgd-start-iter %d: the first timed steps allreduce "
                     "uncompressed" % (PROG, args.warmup, args.powersgd_start_iter))
        gen = torch.Generator().manual_seed(args.seed * 1000 + self.rank)
        self.x = torch.randn([args.batch_size] + args.shape, generator=gen)
        model.eval()  # the class count, from one sample (BatchNorm in train mode needs more than one)
        with torch.no_grad():
            classes = model(self.x[:1]).shape[1]
        model.train()
        self.y = torch.randint(0, classes, (args.batch_size,), generator=gen)
        # The time each rank's backward finishes computing: the last gradient accumulated (hooks on
        # the parameters' AccumulateGrad nodes, where DDP's reducer hooks in too). DDP's backward
        # then still waits for its allreduces.
        self.last_ready = [0.0]
        self.grad_accs = []

        def on_ready(*_):
            self.last_ready[0] = time.perf_counter()

        for p in model.parameters():
            if p.requires_grad:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(on_ready)
                self.grad_accs.append(acc)
        opt_class, opt_args = ddp_variants.make_optimizer(torch, args)
        self.cal_opt = opt_class(model.parameters(), **opt_args) if args.compute_steps else None

    def train_step(self, t0):
        """One step; returns this rank's forward, backward compute (to the last gradient),
        backward (to the end of DDP's backward, its allreduces included) and optimizer seconds,
        summed over micro-batches."""
        b_ = self.built
        b_.opt.zero_grad(set_to_none=True)
        f = bc = b = 0.0
        for m in range(b_.micro):
            ctx = b_.ddp.no_sync() if m < b_.micro - 1 else contextlib.nullcontext()
            with ctx:
                loss = self.F.cross_entropy(b_.ddp(self.x), self.y)
                t1 = time.perf_counter()
                loss.backward()
                t2 = time.perf_counter()
            f, bc, b, t0 = f + (t1 - t0), bc + (self.last_ready[0] - t1), b + (t2 - t1), t2
        b_.opt.step()
        return [f, bc, b, time.perf_counter() - t0]

    def compute_only_step(self, record=True):
        """3. Compute only, all ranks at once: the underlying module (no DDP hooks fire, no buffer
        broadcast) and a plain optimizer over all parameters; the model's state is restored after."""
        model, cal_opt = self.model, self.cal_opt
        saved = {k: v.clone() for k, v in model.state_dict().items()}
        for w in self.checkpointed:  # the plain model's compute: redsim adds the recompute itself
            w.enabled = False
        self.built.opt.zero_grad(set_to_none=True)
        cal_opt.zero_grad(set_to_none=True)
        self.dist.barrier()
        t0 = time.perf_counter()
        loss = self.F.cross_entropy(model(self.x), self.y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        cal_opt.step()
        t3 = time.perf_counter()
        for w in self.checkpointed:
            w.enabled = True
        with self.torch.no_grad():
            model.load_state_dict(saved)
        cal_opt.zero_grad(set_to_none=True)
        if record:
            self.fwd.append(t1 - t0)
            self.bwd.append(t2 - t1)
            self.optim.append(t3 - t2)

    def max_over_ranks(self, values):
        t = self.torch.tensor(values, dtype=self.torch.float64)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return t.tolist()

    def timed_steps(self):
        """4. Warm-up, then the timed steps, each followed by a compute-only step while there are
        any to run (so a drift in the machine's load, which is shared, hits both alike)."""
        args, period = self.args, self.built.period
        for i in range(args.warmup):
            self.dist.barrier()
            t0 = time.perf_counter()
            self.train_step(t0)
            self.say("%s: warm-up %d/%d: %.1f ms (rank 0)" % (PROG, i + 1, args.warmup, (time.perf_counter() - t0) * 1e3))
        if args.compute_steps:
            self.compute_only_step(record=False)  # warm-up of the calibration optimizer's state
        steps = -(-args.steps // period) * period
        self.per_step, self.rank0, self.phases = [], [], []
        for i in range(max(steps, args.compute_steps)):
            if i < steps:
                self.dist.barrier()
                t0 = time.perf_counter()
                ph = self.train_step(t0)
                d = time.perf_counter() - t0
                slowest = self.max_over_ranks([d])[0]
                self.per_step.append(slowest)
                self.rank0.append(d)
                self.phases.append({"forward_s": ph[0], "backward_compute_s": ph[1], "backward_s": ph[2],
                                    "optimizer_s": ph[3]})
                self.say("%s: step %d/%d: %.1f ms (slowest rank; rank 0 %.1f ms: forward %.1f, backward %.1f "
                         "computing, %.1f with the allreduces, optimizer %.1f)"
                         % (PROG, i + 1, steps, slowest * 1e3, d * 1e3, ph[0] * 1e3, ph[1] * 1e3, ph[2] * 1e3,
                            ph[3] * 1e3))
            if i < args.compute_steps:
                self.compute_only_step()
        # localsgd: one value per H-step window (each holds exactly one averaging), per step.
        self.step_times = [sum(self.per_step[w:w + period]) / period for w in range(0, steps, period)]

    def profile_allocator(self):
        """5. With --allocator-peak: one more window of steps (a LocalSGD period, so it holds one
        averaging) under the profiler; its peak of allocated tensor bytes (ddp_memory.allocator_peak)."""
        self.peak = None
        if not self.args.allocator_peak:
            return
        self.built.opt.zero_grad(set_to_none=True)  # see ddp_memory.allocator_peak
        self.dist.barrier()
        t0 = time.perf_counter()

        def window():
            for _ in range(self.built.period):
                self.train_step(time.perf_counter())

        self.peak = ddp_memory.allocator_peak(self.torch, window, lambda: ddp_memory.held_now_bytes(
            self.torch, self.model, self.built, (self.x, self.y)))
        self.say("%s: allocator's peak over %d profiled step(s) (%.1f s): %s" % (
            PROG, self.built.period, time.perf_counter() - t0,
            "%.1f MiB (rank 0)" % (self.peak["peak_bytes"] / 2**20) if self.peak else "not measurable with this torch"))

    def summarize_compute(self):
        """The compute an SPMD plan should carry: ranks wait for each other at every collective and
        a step ends with the last one, so per step the slowest rank, then the median over steps
        (the mean over ranks is reported too); and the compute inside the timed steps themselves."""
        torch, dist, args = self.torch, self.dist, self.args
        ins = torch.tensor([[p["forward_s"] for p in self.phases], [p["backward_compute_s"] for p in self.phases]],
                           dtype=torch.float64)
        dist.all_reduce(ins, op=dist.ReduceOp.MAX)
        self.in_step = {"forward_s": median(ins[0].tolist()), "backward_s": median(ins[1].tolist())}
        self.compute = None
        if args.compute_steps:
            mine = torch.tensor([self.fwd, self.bwd, self.optim], dtype=torch.float64)
            hi, tot = mine.clone(), mine.clone()
            dist.all_reduce(hi, op=dist.ReduceOp.MAX)
            dist.all_reduce(tot, op=dist.ReduceOp.SUM)
            slow = [median(row) for row in hi.tolist()]
            mean = [median(row) / self.world for row in tot.tolist()]
            self.compute = {"forward_s": slow[0], "backward_s": slow[1], "optimizer_s": slow[2],
                            "steps": args.compute_steps, "statistic": "per step the slowest rank, median over steps",
                            "mean_over_ranks_s": {"forward": mean[0], "backward": mean[1], "optimizer": mean[2]}}
            self.say("%s: compute only (%d steps, all ranks at once; slowest rank per step, median over steps): "
                     "forward %.1f ms, backward %.1f ms, optimizer %.1f ms, total %.1f ms (mean over ranks %.1f / "
                     "%.1f / %.1f ms)" % (PROG, args.compute_steps, slow[0] * 1e3, slow[1] * 1e3, slow[2] * 1e3,
                                          sum(slow) * 1e3, mean[0] * 1e3, mean[1] * 1e3, mean[2] * 1e3))
        self.say("%s: compute in the timed steps (slowest rank per step, median over steps): forward %.1f ms, "
                 "backward %.1f ms to the last gradient" % (PROG, self.in_step["forward_s"] * 1e3,
                                                            self.in_step["backward_s"] * 1e3))

    def write(self):
        """The measured file (and the scaled trace), by rank 0; memory is gathered on every rank."""
        args, b_ = self.args, self.built
        memory = ddp_memory.gather(self.torch, self.dist, self.model, b_, self.rss_before_model, self.world,
                                   self.trace is not None or args.compute_steps > 0, self.peak)
        if self.rank != 0:
            return
        knobs = ddp_variants.redsim_knobs(args, b_.micro, b_.period)
        period = b_.period
        out = {
            "step_times_s": self.step_times,
            "engine": {"name": "pytorch-ddp"},
            "source": ("bench/validate/ddp_steps.py: torch %s DistributedDataParallel over Gloo, %d ranks x %d "
                       "thread(s); step = barrier to the end of optimizer.step(), slowest rank%s"
                       % (self.torch.__version__, self.world, self.threads,
                          "; one value per %d-step window, divided by %d" % (period, period) if period > 1 else "")),
            "model": args.model, "batch_size_per_rank": args.batch_size, "input_shape": args.shape,
            "variant": args.variant, "bucket_cap_mb": args.bucket_mb, "microbatches": b_.micro,
            "localsgd_period": period, "world_size": self.world, "threads_per_rank": self.threads,
            "gloo_threads": args.gloo_threads or 2, "warmup": args.warmup,
            "per_step_s": self.per_step, "rank0_step_s": self.rank0, "rank0_phases": self.phases,
            "compute_only": self.compute, "compute_in_steps": self.in_step, "optimizer": args.optimizer,
            "powersgd_rank": args.powersgd_rank if args.variant == "powersgd" else None,
            "powersgd_start_iter": args.powersgd_start_iter if args.variant == "powersgd" else None,
            "redsim_knobs": knobs, "memory": memory,
        }
        capture = self.capture
        capture.write_atomically(args.out, json.dumps(out, indent=1) + "\n")
        self.say("%s: wrote %s: %d step time(s), median %.1f ms" % (PROG, args.out, len(self.step_times),
                                                                    median(self.step_times) * 1e3))
        if self.trace is not None:
            scaled = trace_scaling.to_job_compute(self.trace, self.compute, self.world, self.threads)
            capture.write_atomically(args.trace_out, json.dumps(scaled, indent=1) + "\n")
            self.say("%s: wrote %s (compute scaled to this job's compute-only times)" % (PROG, args.trace_out))
        self.say("%s: compare: redsim validate --measured %s --trace %s --cluster CLUSTER %s"
                 % (PROG, shlex.quote(args.out), shlex.quote(args.trace_out) if args.trace_out else "TRACE",
                    " ".join(knobs)))

    def finish(self):
        self.dist.barrier()
        # Tearing the Gloo group down has been seen to hang once (a transport thread spinning after
        # the peers had gone): the results are written by now, so a rank stuck here for 30 s leaves.
        rank = self.rank

        def give_up():
            print("%s: rank %d: process-group teardown hung for 30 s; exiting" % (PROG, rank), file=sys.stderr,
                  flush=True)
            os._exit(0)

        watchdog = threading.Timer(30.0, give_up)
        watchdog.daemon = True
        watchdog.start()
        self.dist.destroy_process_group()
        # Leave without the interpreter's teardown of torch's C++ objects, for the same reason.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def run_rank(args):
    r = RankRun(args)
    if args.trace_out:
        r.capture_trace()
    r.build()
    r.timed_steps()
    r.profile_allocator()
    r.summarize_compute()
    r.write()
    r.finish()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parse_args(argv)
        if args.local_ranks and "RANK" not in os.environ:
            return launch_local(__file__, args.local_ranks, argv)
        return run_rank(args)
    except UsageError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
