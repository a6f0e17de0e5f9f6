#!/usr/bin/env python3
"""PyTorch's CPU profile of resnet18 DDP steps on Gloo, with powerSGD_hook (rank 1, one 100 MiB
bucket), fp16_compress_hook or plain 25 MiB buckets (bench/validate/README.md, "What the hooks' kernels cost"). Every
rank runs it under realexec/testbed (root), which sets torchrun's environment:

    realexec/testbed run --nodes 4 --ranks-per-node 1 --rate 400mbit -- \\
        /usr/bin/python3 bench/validate/hook_profile.py --variant powersgd|fp16|bucketed [--steps 3]

Rank 0 prints its step times and the profile's operators by total CPU time (the main thread's:
the hook's future callbacks run on Gloo's threads, which the profile does not record).
"""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torchvision
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=("powersgd", "fp16", "bucketed"), default="powersgd")
    ap.add_argument("--steps", type=int, default=3, help="profiled steps (default 3, after 4 untimed)")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    torch.set_num_threads(1)  # as ddp_steps.py runs 4 ranks on this machine's 2 cores
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    if args.variant == "powersgd":
        dist._DEFAULT_FIRST_BUCKET_BYTES = 100 << 20  # one bucket, as hooks_memory_table.sh runs it (ddp_variants.py)
        ddp = DDP(model, bucket_cap_mb=100)
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    else:
        ddp = DDP(model, bucket_cap_mb=25)
        if args.variant == "fp16":
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.rand(8, 3, 64, 64), torch.randint(0, 1000, (8,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()
        return time.perf_counter() - t0

    for _ in range(4):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        times = [step() for _ in range(args.steps)]
    if dist.get_rank() == 0:
        print("steps ms", [round(t * 1e3) for t in times])
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=40))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
