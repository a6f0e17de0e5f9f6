#!/usr/bin/env python3
"""Times torch.distributed.all_reduce over Gloo of the same number of elements in fp32 and in
fp16 (what fp16_compress_hook sends), and the hook's casts alone, to separate the wire's share
of the fp16 hook's cost from the casts (bench/validate/README.md); the casts' bandwidth, counted
as redsim counts them, is what a CPU cluster file's device memory_GBps should say.

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

    def hook_casts():  # what fp16_compress_hook does around its allreduce (PyTorch 1.13)
        c = x32.to(torch.float16).div_(world)
        x32.copy_(c)

    casts = timed(hook_casts)
    a32 = timed(lambda: dist.all_reduce(x32))
    a16 = timed(lambda: dist.all_reduce(x16))
    if rank == 0:
        # redsim's model of the casts: 4 bytes read and 2 written per element, each way.
        print("%d elements, %d ranks: allreduce fp32 %.1f ms, fp16 %.1f ms (ratio %.2f; bytes ratio 0.50); "
              "the hook's casts (to fp16, divide, copy back) %.1f ms: %.3f GB/s at redsim's 12 bytes per element "
              "(a CPU cluster's memory_GBps)" % (n, world, a32, a16, a16 / a32, casts, 12 * n / casts / 1e6),
              flush=True)
    dist.barrier()
    os._exit(0)


if __name__ == "__main__":
    main()
