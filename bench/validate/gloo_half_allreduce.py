#!/usr/bin/env python3
"""Times torch.distributed.all_reduce over Gloo of the same number of elements in fp32 and in
fp16 (what fp16_compress_hook sends), and the hook's casts alone, to separate the wire's share
of the fp16 hook's cost from Gloo's CPU-side fp16 summation and the casts (bench/validate/README.md).

    realexec/testbed run --nodes 4 --ranks-per-node 1 --rate 400mbit -- \\
        /usr/bin/python3 bench/validate/gloo_half_allreduce.py [ELEMENTS]   (default 11,689,512: resnet18)
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 11_689_512
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    x32 = torch.ones(n)

    def timed(f, reps=4):
        f()
        out = []
        for _ in range(reps):
            dist.barrier()
            t = time.perf_counter()
            f()
            out.append(time.perf_counter() - t)
        return statistics.median(out) * 1e3

    x16 = x32.half()
    casts = timed(lambda: x32.div(world).half().float())
    a32 = timed(lambda: dist.all_reduce(x32))
    a16 = timed(lambda: dist.all_reduce(x16))
    if rank == 0:
        print("%d elements, %d ranks: allreduce fp32 %.1f ms, fp16 %.1f ms (ratio %.2f; bytes ratio 0.50); "
              "divide + cast to fp16 + cast back %.1f ms" % (n, world, a32, a16, a16 / a32, casts), flush=True)
    dist.barrier()
    os._exit(0)


if __name__ == "__main__":
    main()
