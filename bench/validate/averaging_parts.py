#!/usr/bin/env python3
"""The pieces of PostLocalSGD's averaging for resnet18's parameters, timed on every rank at once
(bench/validate/README.md, "Where those 180 ms go"): a Gloo allreduce of one flat tensor, the same
of a fresh torch.cat, average_parameters itself, and the cat with the division alone. Every rank
runs it under realexec/testbed (root), which sets torchrun's environment:

    realexec/testbed run --nodes 4 --ranks-per-node 1 --rate 400mbit -- \\
        /usr/bin/python3 bench/validate/averaging_parts.py [--repeats 3]

Rank 0 prints each piece's times in ms.
"""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torchvision
from torch.distributed.algorithms.model_averaging.utils import average_parameters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="times each piece runs (default 3)")
    args = ap.parse_args()
    torch.set_num_threads(1)  # as ddp_steps.py runs 4 ranks on this machine's 2 cores
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=300))
    world = dist.get_world_size()
    params = list(torchvision.models.resnet18().parameters())
    elements = sum(p.numel() for p in params)

    def flat():
        return torch.cat([p.data.reshape(-1) for p in params])

    def timed(piece):
        times = []
        for _ in range(args.repeats):
            dist.barrier()
            t0 = time.perf_counter()
            piece()
            times.append(time.perf_counter() - t0)
        return times

    same = torch.randn(elements)
    mb = elements * 4 / 1e6
    pieces = [
        ("all_reduce of one %.2f MB tensor, the same each time" % mb, lambda: dist.all_reduce(same)),
        ("all_reduce of a fresh torch.cat, the cat included", lambda: dist.all_reduce(flat())),
        ("average_parameters", lambda: average_parameters(iter(params), None)),
        ("torch.cat and the division alone", lambda: flat().div_(world)),
    ]
    results = [(name, timed(piece)) for name, piece in pieces]
    if dist.get_rank() == 0:
        for name, times in results:
            print("%-56s %s ms" % (name, ", ".join("%.0f" % (t * 1e3) for t in times)), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
