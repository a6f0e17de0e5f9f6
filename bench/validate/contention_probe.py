#!/usr/bin/python3
"""How much slower a load runs when N copies of it share this machine's cores, against one alone.

calibrate's rank speed (the --compute-scale it prints for traces captured in a plain process) is
this ratio for its own load, a cache-resident matrix multiply. A model's training step also streams
its weights and activations through memory, which copies sharing the cores contend for as well, so
its ratio can be lower. This script measures the ratio for calibrate-like loads and for a real
torchvision model's training step, so the two can be compared on one machine:

    /usr/bin/python3 bench/validate/contention_probe.py --load mm --copies 4
    /usr/bin/python3 bench/validate/contention_probe.py --load resnet18 --copies 4

Loads: mm (128x128 fp32 matrix products, as calibrate's; --size sets the side), stream (an in-place
add over two 25 MiB buffers, memory-bound; --size sets the MiB of each), or a torchvision model name (forward, backward and an SGD step at
--batch-size on 3x64x64 inputs). Each copy is a process with one thread; all copies start their
timed pass together (a barrier) and keep running the load until every copy has finished its own,
so no copy gets an idle machine at its end. With --passes K the copies instead time K passes as a
job's steps run, a barrier before each (a copy that ends early waits for the slowest), and the
figures are medians over the passes. Prints the time alone, each copy's time, their mean and the
slowest, and the ratios alone/mean and alone/slowest.
"""
import argparse
import multiprocessing as mp
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")


def make_unit(load, batch, size=None):
    import torch
    torch.set_num_threads(1)
    if load == "mm":
        n = size or 128
        x, y = torch.rand(n, n), torch.rand(n, n)
        return lambda: torch.mm(x, y)
    if load == "stream":
        n = (size or 25) << 18  # fp32 elements in `size` MiB
        a, b = torch.ones(n), torch.ones(n)
        return lambda: a.add_(b)
    import torchvision
    model = getattr(torchvision.models, load)()
    inp = torch.rand(batch, 3, 64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        model(inp).sum().backward()
        opt.step()
    return step


def timed(unit, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        unit()
    return time.perf_counter() - t0


def copy_main(load, batch, size, reps, passes, start, done, results, index):
    unit = make_unit(load, batch, size)
    for _ in range(3):
        unit()
    copies = len(results) // passes
    if passes > 1:  # as steps: a barrier before each pass, an early copy idles until the next
        for p in range(passes):
            start.wait()
            results[p * copies + index] = timed(unit, reps)
        return
    start.wait()
    results[index] = timed(unit, reps)
    with done.get_lock():
        done.value += 1
    while done.value < copies:  # keep the cores as busy as a job's ranks keep them
        unit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", default="mm", help="mm, stream, or a torchvision model name (e.g. resnet18)")
    ap.add_argument("--copies", type=int, default=4, help="processes at once (the testbed runs 4 ranks)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--size", type=int, default=None,
                    help="mm: the matrices' side (default 128); stream: MiB in each of the two buffers (default 25)")
    ap.add_argument("--seconds", type=float, default=1.0, help="about how long the pass alone takes")
    ap.add_argument("--passes", type=int, default=1,
                    help="more than 1: time that many passes as steps, each after a barrier (the slowest copy "
                         "ends each), and report the medians over passes")
    a = ap.parse_args()
    if a.copies < 1 or a.batch_size < 1 or not 0 < a.seconds <= 60 or not 1 <= a.passes <= 100:
        ap.error("--copies and --batch-size must be at least 1, --seconds in (0, 60], --passes in [1, 100]")
    if a.size is not None and not 1 <= a.size <= 4096:
        ap.error("--size must be in [1, 4096]")
    unit = make_unit(a.load, a.batch_size, a.size)
    for _ in range(3):
        unit()
    once = timed(unit, 1)
    reps = max(1, int(a.seconds / max(once, 1e-6)))
    alone = timed(unit, reps)
    ctx = mp.get_context("fork")
    start, done = ctx.Barrier(a.copies), ctx.Value("i", 0)
    results = ctx.Array("d", a.copies * a.passes)
    procs = [ctx.Process(target=copy_main, args=(a.load, a.batch_size, a.size, reps, a.passes, start, done, results, i))
             for i in range(a.copies)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    per_pass = [list(results[p * a.copies:(p + 1) * a.copies]) for p in range(a.passes)]
    times = [statistics.median(t[i] for t in per_pass) for i in range(a.copies)]
    mean = statistics.median(statistics.mean(t) for t in per_pass)
    slowest = statistics.median(max(t) for t in per_pass)
    print("%s: %d units a pass; alone %.1f ms; %d copies at once %s ms (mean %.1f, slowest %.1f); "
          "rank speed %.3f (mean), %.3f (slowest)" % (
              a.load, reps, alone * 1e3, a.copies, ", ".join("%.1f" % (t * 1e3) for t in times),
              mean * 1e3, slowest * 1e3, alone / mean, alone / slowest))


if __name__ == "__main__":
    main()
