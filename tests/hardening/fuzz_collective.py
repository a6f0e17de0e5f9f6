#!/usr/bin/env python3
"""Random option sets for `redsim collective` on the NCCL presets (the collective model's paths:
NVLS pipeline steps, ring channel shares, trees, chains, forced algorithms, protocols, channels
and rank subsets, nccl-tests' element types and reductions, both fidelities, nccl-tests' iteration counts, NCCL releases). Every run must exit 0 with rows whose
time and bus bandwidth are positive numbers, or exit 2 with one line on stderr; never a signal,
a hang or another status. Deterministic from --seed.

usage: fuzz_collective.py REDSIM SOURCE_DIR [--count N] [--seed S] [--timeout-s T]
"""
import os
import random
import subprocess
import sys

from fuzz_args import fuzz_arguments

PRESETS = ["dgx-a100", "dgx-h100", "dgx-h200", "dgx1-v100", "pcie-8gpu", "pcie-a10g-8gpu", "aws-p4d-x2",
           "dgx-h100-x2", "hgx-h100-8x400g-x2", "ethernet-100g-x8", "dgx-a100-x2", "dgx-b200", "dgx-b200-x2"]


def options(rng, src):
    args = ["collective", "--cluster", os.path.join(src, "configs", rng.choice(PRESETS) + ".json"),
            "--ops", rng.choice(["allreduce", "all", "reduce_scatter,allgather", "broadcast,reduce"]),
            "-b", str(rng.choice([1, 7, 64, 1000, 4096, 65536, 1 << 20, 3 << 20, (1 << 24) + 4])),
            "-e", str(rng.choice([1 << 20, 1 << 26, 1 << 28])), "-f", str(rng.choice([4, 16, 64])),
            "-d", rng.choice(["float", "half", "bfloat16", "double", "int8", "uint8", "int32", "uint32", "int64",
                              "uint64", "f8e4m3", "f8e5m2", "fp32"])]
    if rng.random() < 0.3:  # reductions NVLS does and does not run (NCCL_NVLS_SUPPORTS)
        args += ["-o", rng.choice(["sum", "prod", "max", "min", "avg", "mulsum"])]
    if rng.random() < 0.5:
        args += ["--algorithm", rng.choice(["ring", "tree", "nvls", "nvlstree", "auto", "NVLS", "Ring", "pat", "PAT"])]
    if rng.random() < 0.5:
        args += ["--protocol", rng.choice(["ll", "ll128", "simple", "auto", "LL128"])]
    if rng.random() < 0.4:
        args += ["--channels", str(rng.choice([1, 2, 3, 7, 16, 32, 64]))]
    if rng.random() < 0.4:
        args += ["--ranks", str(rng.choice([2, 3, 5, 8, 9, 16]))]
    if rng.random() < 0.5:
        args += ["--fidelity", rng.choice(["exact", "scalable"])]
    if rng.random() < 0.3:
        args += ["-n", str(rng.choice([1, 2, 5, 40, 0]))]  # 0 must be refused with exit 2
    if rng.random() < 0.4:  # each release's tuning model (collectives/nccl_releases.h), and older
        args += ["--nccl-version", rng.choice(["2.4.8", "2.6.4", "2.7.8", "2.9.9", "2.11.4", "2.12.12", "2.14.3",
                                               "2.15.5", "2.17.1", "2.18.1", "2.20.5", "2.23.4", "2.24.3", "2.25.1", "2.26.2", "2.27.3",
                                               "2.28.3", "2.28.7", "2.29.2", "2.29.7"])]
    elif "ethernet-100g-x8" in args[2] and rng.random() < 0.6:  # one GPU a node: PAT from 2.23
        args += ["--nccl-version", rng.choice(["2.23.4", "2.24.3", "2.26.2", "2.29.7"])]
    return args


def rows_ok(out):
    rows = [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]
    if not rows:
        return False
    for r in rows:
        try:
            # time (us) positive, algbw and busbw (printed to 0.01 GB/s) not negative, and finite
            time_us, algbw, busbw = float(r[5]), float(r[6]), float(r[7])
            if not (0 < time_us < 1e12 and 0 <= algbw < 1e6 and 0 <= busbw < 1e6):
                return False
        except (IndexError, ValueError):
            return False
    return True


def main():
    a = fuzz_arguments(count=40, seed=30)
    rng = random.Random(a.seed)
    counts, failures = {0: 0, 2: 0}, []
    for i in range(a.count):
        args = options(rng, a.src)
        try:
            p = subprocess.run([a.redsim] + args, capture_output=True, text=True, timeout=a.timeout_s)
        except subprocess.TimeoutExpired:
            failures.append("hang: " + " ".join(args))
            continue
        err = p.stderr.strip().splitlines()
        if p.returncode == 0 and rows_ok(p.stdout):
            counts[0] += 1
        elif p.returncode == 2 and len(err) == 1:
            counts[2] += 1
        else:
            failures.append("exit %d, %d stderr lines: %s -- %s" % (p.returncode, len(err), " ".join(args), p.stderr[-300:]))
    for f in failures:
        print("FAIL", f)
    print("collective option sets: ran %d, refused %d, failed %d (seed %d)" % (counts[0], counts[2], len(failures), a.seed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
