"""ddp_steps.py --trace-out: the capture's trace rescaled to the compute the DDP job measured."""

from ddp_launch import cpu_count


def to_job_compute(trace, compute, world, threads):
    """Rescales forward, backward and optimizer times to the compute-only totals of the DDP job."""
    fwd = sum(l["forward_s"] for l in trace["layers"])
    bwd = sum(l["backward_s"] for l in trace["layers"])
    opt = trace["optimizer_s"]
    sf = compute["forward_s"] / fwd if fwd > 0 else 1.0
    sb = compute["backward_s"] / bwd if bwd > 0 else 1.0
    so = compute["optimizer_s"] / opt if opt > 0 else 1.0
    t = dict(trace)
    t["layers"] = [dict(l, forward_s=l["forward_s"] * sf, backward_s=l["backward_s"] * sb) for l in trace["layers"]]
    t["optimizer_s"] = opt * so if opt > 0 else compute["optimizer_s"]
    t["reference_device"] = "%s, %d ranks computing at once on %d cores" % (trace["reference_device"], world,
                                                                               cpu_count())
    t["source"] = trace["source"] + (
        " Then rescaled by bench/validate/ddp_steps.py to the per-rank compute measured in the DDP job itself "
        "(%d ranks x %d thread(s) computing at once, no communication; per step the slowest rank, median over %d "
        "steps): forward x%.4f, backward x%.4f, optimizer x%.4f, to forward %.3f ms, backward %.3f ms, "
        "optimizer %.3f ms." % (world, threads, compute["steps"], sf, sb, so, compute["forward_s"] * 1e3,
                                compute["backward_s"] * 1e3, compute["optimizer_s"] * 1e3))
    return t
