#!/usr/bin/env python3
"""The elementwise pieces of powerSGD_hook and fp16_compress_hook on one resnet18-sized bucket,
timed on every rank at once (bench/validate/README.md, "What the hooks' kernels cost"): the error
feedback's in-place add, the clone kept for the next error, the new error `cp - input` (both
fresh allocations), the fp16 hook's casts, and an in-place copy. Each piece runs after a barrier;
its time is the mean over ranks, the median of --repeats. Every rank runs it under
realexec/testbed (root), which sets torchrun's environment:

    realexec/testbed run --nodes 4 --ranks-per-node 1 --rate 400mbit -- \\
        /usr/bin/python3 bench/validate/hook_parts.py [--repeats 5]

Rank 0 prints each piece's time in ms and the rate at the bytes it moves.
"""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="times each piece runs (default 5)")
    args = ap.parse_args()
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    torch.set_num_threads(1)  # as ddp_steps.py runs 4 ranks on this machine's 2 cores
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    world = dist.get_world_size()
    n = sum(p.numel() for p in torchvision.models.resnet18().parameters())
    buf, err = torch.randn(n), torch.randn(n) * 1e-3
    keep = {}

    def cast():
        half = buf.to(torch.float16).div_(world)
        buf.copy_(half)

    def clone():
        keep["cp"] = torch.clone(buf)

    def new_error():
        keep["err"] = keep["cp"] - buf

    # (name, bytes per element as moved, piece)
    pieces = [
        ("error feedback: input.add_(error), in place", 12, lambda: buf.add_(err)),
        ("torch.clone(input), fresh", 8, clone),
        ("new error cp - input, fresh", 12, new_error),
        ("fp16 hook: to(fp16).div_(), copy back", 12, cast),
        ("copy_ in place", 8, lambda: err.copy_(buf)),
    ]
    for name, per_elem, piece in pieces:
        piece()  # warm-up (and the tensors the next pieces read)
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            t0 = time.perf_counter()
            piece()
            x = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
            dist.all_reduce(x)
            times.append(x.item() / world)
        times.sort()
        t = times[len(times) // 2]
        if dist.get_rank() == 0:
            print("%-46s %7.1f ms  %6.2f GB/s at %d B/element  (%s)" % (
                name, t * 1e3, n * per_elem / t / 1e9, per_elem, ", ".join("%.0f" % (v * 1e3) for v in times)),
                flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
