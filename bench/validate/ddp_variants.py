"""The training setups ddp_steps.py times, and the `redsim validate` knobs that model each.

  --variant bucketed  --bucket-mb B            DDP(bucket_cap_mb=B)
        redsim validate ... --strategy bucketed --bucket-mb B
  --variant accumulate --bucket-mb B --microbatches M
        M-1 micro-batches of --batch-size under ddp.no_sync(), then one synced, then the step
        redsim validate ... --strategy accumulate --bucket-mb B --microbatches M
  --variant zero --bucket-mb B
        DDP(bucket_cap_mb=B) + ZeroRedundancyOptimizer (parameters_as_bucket_view=False)
        redsim validate ... --strategy zero --zero-impl pytorch --bucket-mb B
  --variant localsgd --bucket-mb B --localsgd-period H
        DDP with post_localSGD_hook (PostLocalSGDState(start_localSGD_iter=0,
        post_local_gradient_allreduce=False): no gradient sync at all) and
        PostLocalSGDOptimizer(optimizer, PeriodicModelAverager(period=H, warmup_steps=0))
        redsim validate ... --strategy localsgd --localsgd-period H --bucket-mb B
  --variant fp16-hook --bucket-mb B
        DDP with default_hooks.fp16_compress_hook (each bucket cast to fp16, allreduced, divided by
        the world size and cast back)
        redsim validate ... --strategy bucketed --bucket-mb B --comm-hook fp16
  --variant powersgd --bucket-mb B --powersgd-rank R --powersgd-start-iter S
        DDP with powerSGD_hook(PowerSGDState(matrix_approximation_rank=R, start_powerSGD_iter=S,
        error feedback and warm start on, PyTorch's defaults)); iterations before S allreduce the
        bucket uncompressed, so --warmup should cover them (the script warns otherwise). On Gloo
        it needs ONE bucket (--bucket-mb and --first-bucket-mb above the gradients' size): the
        hook issues each bucket's P and Q allreduces from future callbacks on Gloo's worker
        threads while backward issues the next buckets' from the main thread, in an order that
        differs between ranks, and Gloo pairs collectives by issue order: with resnet18's 1 MiB
        first bucket and 25 MiB buckets it failed in the 4th step with "[enforce fail at
        gloo/transport/tcp/pair.cc:510] op.preamble.length <= op.nbytes. 5504 vs 2048", and with
        one Gloo worker thread (--gloo-threads 1) it hangs (the callback waits for an allreduce
        that the same, only, worker thread would run)
        redsim validate ... --strategy bucketed --bucket-mb B --comm-hook powersgd --powersgd-rank R
            --powersgd-start-iter S

Where PyTorch's algorithm differs from redsim's model:

  - Buckets. DDP 1.13 caps the first bucket at dist._DEFAULT_FIRST_BUCKET_BYTES = 1 MiB (redsim's
    --first-bucket-mb, default 1) and rebuilds its buckets in gradient-ready order after the
    first iteration (redsim's default --bucket-order execution); the warm-up steps cover that.
  - Copies. With gradient_as_bucket_view=False (the default) DDP copies every gradient into its
    bucket and back after the allreduce, and divides the bucket by the world size; redsim models
    the copies when the cluster file asks (`framework.bucket_copy`, at `device.copy_GBps`,
    configs/README.md), which calibrate's testbed clusters do.
  - Gloo threads. ProcessGroupGloo runs collectives on 2 worker threads, so two buckets may be
    in flight at once (on the testbed two concurrent rings are ~5% slower than the same two in
    turn); redsim's comm stream is FIFO, one bucket at a time. --gloo-threads 1 gives DDP its own
    Gloo group with one worker thread, which reduces the buckets in turn. DDP broadcasts the
    module buffers (BatchNorm statistics) from rank 0 before every forward, one coalesced
    broadcast per dtype, as redsim does (--no-broadcast-buffers turns it off in both).
  - accumulate: DDP broadcasts the buffers before every micro-batch's forward (no_sync does not
    stop that); redsim's accumulate plan broadcasts them once per step.
  - zero: PyTorch's ZeroRedundancyOptimizer is ZeRO-1 on top of DDP: gradients are fully
    allreduced in DDP's buckets, each rank steps SGD on its partition (parameters assigned
    greedily by size, not contiguous ranges), then every parameter is broadcast from its owner
    (one Gloo broadcast, a binomial tree, per tensor, all in flight, waited for at the end of
    step()). `--zero-impl pytorch` plans exactly that (DDP's bucket allreduces, the busiest
    owner's share of the optimizer, one broadcast per parameter from its owner, rank 0's first,
    on Gloo as gloo::broadcast's binomial tree on the group's two worker threads);
    redsim's default zero is DeepSpeed's (reduce to owners, allgather), which moves fewer bytes.
  - localsgd: PyTorch averages the parameters at averager steps 0, H, 2H, ... as one flat
    allreduce of all parameters (torch.cat, all_reduce, copy back), as redsim's default
    (--localsgd-averaging flat; bucketed and per-param are the other ways). A measured "step" is
    an H-step window divided by H (each window holds exactly one averaging), the same per-step
    cost redsim reports; DDP still runs its hook for every bucket (which returns the local
    gradient).
  - Shared cores. On realexec/testbed all "nodes" share this machine's cores, and the kernel's
    work for the shaped links and Gloo's reductions run on the same cores as the ranks' compute:
    compute that overlaps communication runs ~30% slower, and DDP's communication inside a step
    is slower than the same allreduces timed alone. redsim models compute and the network as
    independent resources, so it under-predicts DDP's step on the testbed (bench/validate/
    README.md has the numbers).
  - fp16-hook: the hook divides the bucket by the world size, casts it to fp16 on the CPU, allreduces
    half the bytes and casts back. redsim times the casts at the cluster's device memory bandwidth
    (`device.memory_GBps`, or the GPU's HBM by compute capability); on a CPU testbed, calibrate
    times the hook's casts on every rank at once and writes that figure, and Gloo's fp16 sums
    (software, element by element) at `device.reduce_GBps_by_dtype`, charged to the ranks' CPUs.
  - powersgd: PyTorch views a tensor of shape (n, ...) as an n x numel/n matrix and compresses it
    if (n + m) r < n m; redsim does the same with the parameter shapes a captured trace carries
    (a trace without shapes falls back to the most square factorisation, P and Q a few kB off per
    tensor, and to 1-D tensors by name: bias, norm layers). The matrix products and the
    Gram-Schmidt orthogonalisation run on the CPU here; redsim costs them as memory traffic at
    `device.memory_GBps`, as the casts above.

The optimizer is SGD (momentum 0.9, as redsim_capture.py's --optimizer sgd) or, with
--optimizer adam, Adam: redsim's memory model counts Adam's state (ZeRO paper), so memory is
compared with --optimizer adam.

Not variants, because they do not run on this platform (torch 1.13 from Debian, Python 3.11, CPU
only, Gloo; bench/validate/torch_probe.py tries each for real and prints why):
  - FSDP (FullyShardedDataParallel, every ShardingStrategy): `import torch.distributed.fsdp`
    fails under Python 3.11 (a dataclass with a mutable default in _shard/sharded_tensor/
    metadata.py, rejected since 3.11); with that patched, the constructor asks for a CUDA device
    (_get_compute_device calls torch.cuda.current_device() for CPU modules): "Torch not compiled
    with CUDA enabled". HYBRID_SHARD does not exist in 1.13.
  - bf16_compress_hook: refuses to run without CUDA 11+ and NCCL 2.10+ (TypeError).
"""

import collections

VARIANTS = ("bucketed", "accumulate", "zero", "localsgd", "fp16-hook", "powersgd")

Built = collections.namedtuple("Built", "ddp opt inner_opt hook_state micro period")


class Fp16InFlight:
    """fp16_compress_hook, run as is, with its compressed copies tracked: the hook makes one fp16
    copy of each bucket (buffer.to(torch.float16), 2 bytes per element) and frees it when its
    future's decompress callback has copied the result back. The bytes of the copies alive at once,
    from each hook call until its future completes, peak at `peak_bytes` (ddp_memory.py)."""

    def __init__(self):
        import threading

        self.lock = threading.Lock()  # the futures complete on Gloo's worker threads
        self.now_bytes = 0
        self.peak_bytes = 0

    def hook(self, state, bucket):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        copy_bytes = bucket.buffer().numel() * 2
        with self.lock:
            self.now_bytes += copy_bytes
            self.peak_bytes = max(self.peak_bytes, self.now_bytes)
        fut = default_hooks.fp16_compress_hook(state, bucket)

        def done(f):
            with self.lock:
                self.now_bytes -= copy_bytes
            return f.value()

        return fut.then(done)


def make_optimizer(torch, args):
    if args.optimizer == "adam":
        return torch.optim.Adam, dict(lr=1e-3)
    return torch.optim.SGD, dict(lr=1e-3, momentum=0.9)  # as redsim_capture.py's --optimizer sgd


def build(torch, model, args, pg):
    """The DDP module, the optimizer (and the inner one that holds the state), the comm hook's
    state, micro-batches per step and the steps per LocalSGD window."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    if args.first_bucket_mb:  # DDP 1.13 reads its first bucket's cap from here (the comment in DDP says so)
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(args.first_bucket_mb * 1024 * 1024)
    ddp = DDP(model, bucket_cap_mb=args.bucket_mb, process_group=pg)
    opt_class, opt_args = make_optimizer(torch, args)
    micro = args.microbatches if args.variant == "accumulate" else 1
    period = args.localsgd_period if args.variant == "localsgd" else 1
    hook_state = None
    if args.variant == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=opt_class, **opt_args)
        return Built(ddp, opt, opt.optim, None, micro, period)
    if args.variant == "localsgd":
        from torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook import (
            PostLocalSGDState, post_localSGD_hook)
        from torch.distributed.algorithms.model_averaging.averagers import PeriodicModelAverager
        from torch.distributed.optim import PostLocalSGDOptimizer

        hook_state = PostLocalSGDState(process_group=pg, subgroup=None, start_localSGD_iter=0,
                                       post_local_gradient_allreduce=False)
        ddp.register_comm_hook(hook_state, post_localSGD_hook)
        inner = opt_class(ddp.parameters(), **opt_args)
        opt = PostLocalSGDOptimizer(optim=inner, averager=PeriodicModelAverager(period=period, warmup_steps=0))
        return Built(ddp, opt, inner, None, micro, period)
    if args.variant == "fp16-hook":
        hook_state = Fp16InFlight()
        ddp.register_comm_hook(pg, hook_state.hook)
    elif args.variant == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook

        hook_state = powerSGD_hook.PowerSGDState(process_group=pg, matrix_approximation_rank=args.powersgd_rank,
                                                 start_powerSGD_iter=args.powersgd_start_iter)
        ddp.register_comm_hook(hook_state, powerSGD_hook.powerSGD_hook)
    opt = opt_class(ddp.parameters(), **opt_args)
    return Built(ddp, opt, opt, hook_state, micro, period)


def checkpoint_blocks(torch, model):
    """--checkpoint-blocks: wraps every repeated block (the module named up to its first numeric
    component, resnet's layer1.0, as redsim's --activation-checkpointing blocks finds them in the
    trace) in torch.utils.checkpoint, non-reentrant (the kind DDP runs with). Returns the wrappers:
    compute-only steps switch them off, so the trace they rescale stays the plain model's."""
    import torch.utils.checkpoint as checkpoint

    class Checkpointed(torch.nn.Module):
        def __init__(self, block):
            super().__init__()
            self.block, self.enabled = block, True

        def forward(self, *inputs):
            if not self.enabled:
                return self.block(*inputs)
            return checkpoint.checkpoint(self.block, *inputs, use_reentrant=False)

    names = [n for n, _ in model.named_modules()]
    blocks = [n for n in names if n and n.split(".")[-1].isdigit() and not any(c.isdigit() for c in n.split(".")[:-1])]
    wrappers = []
    for name in blocks:
        parent_name, _, leaf = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        wrappers.append(Checkpointed(getattr(parent, leaf)))
        setattr(parent, leaf, wrappers[-1])
    return wrappers


def redsim_knobs(args, micro, period):
    """The `redsim validate` (and simulate) knobs that model this variant."""
    knobs = variant_knobs(args, micro, period)
    return knobs + (["--activation-checkpointing", "blocks"] if getattr(args, "checkpoint_blocks", False) else [])


def variant_knobs(args, micro, period):
    bucket = ["--bucket-mb", "%g" % args.bucket_mb]
    if args.first_bucket_mb:
        bucket += ["--first-bucket-mb", "%g" % args.first_bucket_mb]
    if args.variant == "accumulate":
        return ["--strategy", "accumulate"] + bucket + ["--microbatches", str(micro)]
    if args.variant == "zero":
        return ["--strategy", "zero", "--zero-impl", "pytorch"] + bucket
    if args.variant == "localsgd":
        return ["--strategy", "localsgd"] + bucket + ["--localsgd-period", str(period)]
    if args.variant == "fp16-hook":
        return ["--strategy", "bucketed"] + bucket + ["--comm-hook", "fp16"]
    if args.variant == "powersgd":
        return ["--strategy", "bucketed"] + bucket + ["--comm-hook", "powersgd", "--powersgd-rank",
                                                      str(args.powersgd_rank), "--powersgd-start-iter",
                                                      str(args.powersgd_start_iter)]
    return ["--strategy", "bucketed"] + bucket
