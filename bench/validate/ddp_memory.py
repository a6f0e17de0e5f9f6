"""What one rank of ddp_steps.py holds, measured: the bytes of the tensors PyTorch keeps for the
model state (parameters, gradients, the optimizer state of this rank, DDP's gradient buckets, a
comm hook's persistent state) and the process's resident memory (VmRSS before the model exists,
VmHWM after the timed steps), for comparison with redsim's memory model (memory_compare.py).

Tensor bytes are counted from the objects themselves after the last timed step, when gradients
and optimizer state exist: parameters from the module, gradients from .grad, optimizer state
from the optimizer that holds it (ZeroRedundancyOptimizer's local one: this rank's partition),
DDP's buckets from DDP's own logging data (bucket_sizes, bytes: with gradient_as_bucket_view=False
DDP keeps them besides the gradients), PowerSGD's error feedback and P/Q matrices from its state.
The fp16 hook's compressed copies live only while a bucket is in flight: their peak over the
steps is tracked from each hook call to its future's completion (ddp_variants.Fp16InFlight).

The allocator's peak (ddp_steps.py --allocator-peak) is what torch.cuda.max_memory_allocated
reports on a GPU, measured on the CPU: one more window of steps runs under PyTorch's legacy
profiler with profile_memory, whose CPU allocator then reports each allocation and free made on
the profiled threads (the caller's and autograd's) in order. The peak is the tensors held when
the window began (those held after it, less what it left allocated) plus the most the running
sum of those reports reached above that start. The window starts with the gradients freed
(zero_grad(set_to_none=True), as every step does): a free of a tensor allocated before the
profiler started is not reported, so nothing alive at the start may be freed inside.
"""


def _status_bytes(field):
    """A VmXXX field of /proc/self/status in bytes (0 where it cannot be read)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes():
    return _status_bytes("VmRSS")


def peak_rss_bytes():
    return _status_bytes("VmHWM")


def _tensor_bytes(t):
    return t.numel() * t.element_size()


def _state_bytes(torch, obj):
    """Bytes of every tensor in a (nested) dict/list/tuple of optimizer or hook state."""
    if torch.is_tensor(obj):
        return _tensor_bytes(obj)
    if isinstance(obj, dict):
        return sum(_state_bytes(torch, v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_state_bytes(torch, v) for v in obj)
    return 0


def bucket_bytes(ddp):
    data = ddp._get_ddp_logging_data()
    sizes = str(data.get("bucket_sizes", "") or "")
    return sum(int(s) for s in sizes.split(",") if s.strip().isdigit())


def hook_state_bytes(torch, state):
    """PowerSGD: error feedback per bucket and the P and Q matrices it keeps warm between steps;
    the fp16 hook: the most bytes of compressed copies in flight at once."""
    if state is None:
        return 0
    if hasattr(state, "peak_bytes"):
        return state.peak_bytes
    total = 0
    for name in ("error_dict", "p_memory_dict", "q_memory_dict"):
        total += _state_bytes(torch, getattr(state, name, {}))
    return total


def held(torch, model, built):
    params = list(model.parameters())
    return {
        "params_bytes": sum(_tensor_bytes(p) for p in params),
        "grads_bytes": sum(_tensor_bytes(p.grad) for p in params if p.grad is not None),
        "optimizer_bytes": _state_bytes(torch, dict(built.inner_opt.state)),
        "bucket_bytes": bucket_bytes(built.ddp),
        "hook_bytes": hook_state_bytes(torch, built.hook_state),
    }


def _legacy_profile(torch, fn):
    """fn() under the legacy profiler with memory profiling; its per-thread records, or None where
    this torch build lacks that profiler (it is torch 1.13's; Debian's has no Kineto)."""
    autograd = torch.autograd
    try:
        cfg = autograd.ProfilerConfig(autograd.ProfilerState.CPU, False, True, False, False, False,
                                      torch.profiler._ExperimentalConfig())
        autograd._enable_profiler_legacy(cfg)
    except (AttributeError, TypeError, RuntimeError):
        fn()
        return None
    try:
        fn()
    finally:
        records = autograd._disable_profiler_legacy()
    return records


def allocator_peak(torch, fn, held_now):
    """Runs fn() (whole steps) once, profiled. held_now() counts the tensors alive, called before
    and after. Returns {"peak_bytes", "rise_bytes", "net_bytes", "unseen_free_bytes"}: the most
    tensor bytes allocated at once, the rise above the start, the bytes the reports left allocated,
    and the bytes allocated on a profiled thread but freed on another (a comm hook's callback runs
    on Gloo's threads): those stay in the running sum, so the peak is an upper bound by at most
    that much. None where it cannot be measured."""
    begin = held_now()
    records = _legacy_profile(torch, fn)
    if records is None:
        return None
    start = next((r for thread in records for r in thread if r.kind() == "mark" and r.name() == "__start_profile"), None)
    if start is None:
        return None
    events = sorted((start.cpu_elapsed_us(r), r.cpu_memory_usage())
                    for thread in records for r in thread if r.kind() == "memory_alloc")
    running = rise = 0
    for _, delta in events:
        running += delta
        rise = max(rise, running)
    return {"peak_bytes": begin + rise, "rise_bytes": rise, "net_bytes": running,
            "unseen_free_bytes": max(0, begin + running - held_now())}


def held_now_bytes(torch, model, built, batch):
    """The tensor bytes alive now: held() less the fp16 hook's peak of copies (none is alive
    between steps), plus the input batch."""
    h = held(torch, model, built)
    if hasattr(built.hook_state, "peak_bytes"):
        h["hook_bytes"] = 0
    return sum(h.values()) + sum(_tensor_bytes(t) for t in batch)


def gather(torch, dist, model, built, rss_before_model, world, extra_state, peak=None):
    """Every rank's held tensor bytes and resident memory (ddp_memory.py), gathered on all ranks."""
    mine = held(torch, model, built)
    mine["rss_before_model_bytes"] = rss_before_model
    mine["peak_rss_bytes"] = peak_rss_bytes()
    if peak is not None:
        mine["allocator"] = peak
    ranks = [None] * world
    dist.all_gather_object(ranks, mine)
    for r, m in enumerate(ranks):
        m["rank"] = r
    note = ("tensor bytes after the last timed step (ddp_memory.py); peak_rss_bytes: VmHWM then; "
            "rss_before_model_bytes: VmRSS after init_process_group, before the model was built"
            + ("; allocator: the most tensor bytes allocated at once over one more window of steps, run under "
               "PyTorch's profiler with profile_memory (ddp_memory.allocator_peak)" if peak is not None else ""))
    if extra_state:
        note += ("; the trace capture and/or the compute-only steps' optimizer ran in this process too, so the "
                 "peak RSS includes them: measure memory with --compute-steps 0 and no --trace-out")
    return {"ranks": ranks, "note": note}
