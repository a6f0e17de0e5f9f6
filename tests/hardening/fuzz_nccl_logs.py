#!/usr/bin/env python3
"""Mutated nccl-tests logs through the two commands that read them: `collective --compare` and
`calibrate --from-nccl-tests`. Each input is a real log of tests/data/nccl_tests with one mutation
(a line deleted, duplicated or cut short, the log cut off, a field replaced by a hostile value or
dropped), or two logs joined. Every run must:
  - exit 0 or 2, never on a signal, never hang;
  - on exit 2, print exactly one stderr line naming the mutated file (progress lines and
    "redsim: note:" lines aside), and write none of the named outputs;
  - on exit 0, write the named output.
Deterministic from --seed.

usage: fuzz_nccl_logs.py REDSIM SOURCE_DIR [--count N] [--calibrate-every K] [--seed S]
"""
import glob
import os
import random
import subprocess
import sys
import tempfile

from fuzz_args import fuzz_arguments

HOSTILE = ["-1", "0", "1e999", "nan", "inf", "-inf", "N/A", "abc", "99999999999999999999", "1e-300", "#",
           "0x10", "1.5.3", "-0", "4294967297", "\u00e9"]
# Single-node logs run on an 8-GPU node, the 16-rank ones on two such nodes.
CLUSTERS = {"16r": "dgx-h100-x2.json", "8r": "dgx-a100.json", "2r": "dgx-a100.json", "4r": "dgx-a100.json"}


def mutate(rng, logs):
    src = rng.choice(logs)
    lines = open(src, encoding="utf-8", errors="replace").read().split("\n")
    kind = rng.randrange(7)
    j = rng.randrange(len(lines))
    if kind == 0 and len(lines) > 2:
        del lines[j]
    elif kind == 1:
        lines = lines[:j]
    elif kind == 2 or kind == 5:
        fields = lines[j].split()
        if fields:
            at = rng.randrange(len(fields))
            if kind == 2:
                fields[at] = rng.choice(HOSTILE)
            else:
                del fields[at]
            lines[j] = " ".join(fields)
    elif kind == 3:
        lines.insert(j, lines[rng.randrange(len(lines))])
    elif kind == 4:
        lines[j] = lines[j][:rng.randrange(len(lines[j]) + 1)]
    else:
        lines += open(rng.choice(logs), encoding="utf-8", errors="replace").read().split("\n")
    ranks = next((k for k in CLUSTERS if src.endswith("_" + k + ".log")), "8r")
    return "\n".join(lines), CLUSTERS[ranks], os.path.basename(src), kind


def check(redsim, args, log, out, timeout_s):
    try:
        p = subprocess.run([redsim] + args, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return "hang"
    lines = [l for l in p.stderr.splitlines()
             if l.strip() and not l.startswith("redsim: note:") and not l.startswith("calibrate:")]
    if p.returncode == 2:
        if len(lines) != 1 or log not in lines[0]:
            return "exit 2 with %d stderr lines: %r" % (len(lines), p.stderr[:300])
        if os.path.exists(out):
            return "exit 2 but wrote " + out
        return None
    if p.returncode != 0:
        return "exit %d: %r" % (p.returncode, p.stderr[:300])
    if not os.path.exists(out):
        return "exit 0 without " + out
    return None


def main():
    a = fuzz_arguments(count=60, seed=53, extra=[("--calibrate-every", {"type": int, "default": 5,
                                                                        "help": "every K-th input through calibrate"})])
    rng = random.Random(a.seed)
    logs = sorted(glob.glob(os.path.join(a.src, "tests", "data", "nccl_tests", "*.log")))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.count):
            text, cluster, src, kind = mutate(rng, logs)
            log = os.path.join(tmp, "mutant_%d.log" % i)
            with open(log, "w", encoding="utf-8") as f:
                f.write(text)
            out = os.path.join(tmp, "out_%d.json" % i)
            cl = os.path.join(a.src, "configs", cluster)
            if a.calibrate_every > 0 and i % a.calibrate_every == 0:
                args = ["calibrate", "--from-nccl-tests", log, "--cluster", cl, "--out", out]
            else:
                args = ["collective", "--cluster", cl, "--compare", log, "--json", out]
            why = check(a.redsim, args, log, out, a.timeout_s)
            if why:
                failures += 1
                print("FAIL %d (%s, mutation %d, %s): %s" % (i, src, kind, args[0], why))
    print("%d mutated logs, %d failures" % (a.count, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
