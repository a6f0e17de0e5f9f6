#!/usr/bin/env python3
"""End-to-end test of traces/capture/redsim_profile_ddp.py with /usr/bin/python3 on CPU (Gloo).

usage: test_profile_ddp.py REDSIM_BINARY SOURCE_DIR

- a user module of four Linear layers whose weights are 1 MiB each, with 1 MiB buckets, on two
  ranks started as torchrun would (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): DDP closes a
  bucket once it holds at least its cap, so every layer's weight and bias are one bucket, 4 a step.
  Each rank's profile holds exactly --profile-steps ProfilerStep spans and 4 allreduces in each;
  steps.json has one time per timed step (the slower rank's) and their median;
- `redsim trace import --kineto` refuses a CPU profile in one line, saying it has no NCCL kernels;
- bad arguments and a missing PyTorch: exit status 2, one line, nothing written.
"""

import gzip
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_capture import check, failures, finish, run, test_args  # noqa: E402

USER_MODEL = '''
import torch

def make():
    # weights of 256 x 1024 fp32: 1 MiB each
    return torch.nn.Sequential(torch.nn.Linear(1024, 256), torch.nn.Linear(256, 1024),
                               torch.nn.Linear(1024, 256), torch.nn.Linear(256, 1024))
'''
BUCKETS_PER_STEP = 4  # one per layer: 1 MiB weight + bias >= the 1 MiB cap closes the bucket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events(path):
    with gzip.open(path, "rt") as f:
        t = json.load(f)
    return t if isinstance(t, list) else t["traceEvents"]  # PyTorch without Kineto writes a bare list


def inside(e, span):
    return span["ts"] <= e["ts"] and e["ts"] + e.get("dur", 0) <= span["ts"] + span["dur"]


def test_two_ranks(redsim, script, d):
    model = os.path.join(d, "mlp.py")
    with open(model, "w") as f:
        f.write(USER_MODEL)
    out = os.path.join(d, "prof")
    os.mkdir(out)
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, script, "--model", model + ":make", "--input-shape", "1024",
                                       "--batch-size", "4", "--bucket-mb", "1", "--steps", "3", "--profile-steps", "2",
                                       "--device", "cpu", "--out-dir", out],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = [p.communicate(timeout=240) for p in procs]
    for rank, (p, (so, se)) in enumerate(zip(procs, results)):
        check(p.returncode == 0, "rank %d exited %d: %s" % (rank, p.returncode, se[-2000:]))
    if failures:
        return
    check("median step" in results[0][0], "rank 0 printed no summary: %r" % results[0][0])
    check(sorted(os.listdir(out)) == ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz", "steps.json"],
          "the output directory holds %s" % sorted(os.listdir(out)))
    for rank in (0, 1):
        ev = events(os.path.join(out, "rank%d.pt.trace.json.gz" % rank))
        steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
        check(len(steps) == 2, "rank %d's profile has %d ProfilerStep spans, expected 2" % (rank, len(steps)))
        allreduces = [e for e in ev if e.get("name") == "c10d::allreduce_"]
        for s in steps:
            n = sum(1 for e in allreduces if inside(e, s))
            check(n == BUCKETS_PER_STEP, "rank %d %s holds %d allreduces, expected %d" % (
                rank, s["name"], n, BUCKETS_PER_STEP))
    with open(os.path.join(out, "steps.json")) as f:
        summary = json.load(f)
    check(summary["world_size"] == 2 and summary["backend"] == "gloo" and summary["bucket_mb"] == 1,
          "steps.json: %r" % summary)
    times = summary["step_times_s"]
    check(len(times) == 3 and all(t > 0 for t in times), "step_times_s: %r" % times)
    check(summary["median_step_s"] == statistics.median(times), "median_step_s is not the median")
    # validate --measured reads steps.json as it is (step times only), with its median.
    r = run([redsim, "validate", "--trace", os.path.join(os.path.dirname(__file__), "..", "data", "tiny_trace.json"),
             "--cluster", os.path.join(os.path.dirname(__file__), "..", "..", "configs", "dgx-h100.json"),
             "--layout", "2", "--compute-scale", "1", "--strategy", "bucketed",
             "--measured", os.path.join(out, "steps.json")])
    want = "measured %.3f ms median" % (statistics.median(times) * 1e3)
    check(r.returncode in (0, 1) and want in r.stdout and "step times only" in r.stdout,
          "validate --measured steps.json gave %d: %r %r" % (r.returncode, r.stdout, r.stderr))

    r = run([redsim, "trace", "import", "--kineto", os.path.join(out, "rank0.pt.trace.json.gz"),
             "--out", os.path.join(d, "imported.json")])
    check(r.returncode == 2 and "no NCCL kernels" in r.stderr and "rank0.pt.trace.json.gz" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, "import of a CPU profile gave %d: %r" % (r.returncode, r.stderr))
    check(not os.path.exists(os.path.join(d, "imported.json")), "the refused import wrote its output")


def test_errors(script, d):
    out = os.path.join(d, "errs")
    os.mkdir(out)
    cases = [
        (["--model", "resnet18", "--steps", "0"], "--steps"),
        (["--model", "resnet18", "--warmup", "1"], "--warmup"),
        (["--model", "resnet18", "--bucket-mb", "0"], "--bucket-mb"),
        (["--model", "resnet18", "--input-shape", "3,x"], "--input-shape"),
        (["--model", "no_such_model", "--device", "cpu"], "no_such_model"),
        (["--model", "resnet18", "--device", "cpu", "--input-shape", "3,64", "--batch-size", "2"],
         "failed on an input of shape [2, 3, 64]"),
    ]
    for args, word in cases:
        r = run([sys.executable, script] + args + ["--out-dir", out])
        check(r.returncode == 2 and word in r.stderr and len(r.stderr.strip().splitlines()) == 1,
              "%s gave %d: %r" % (" ".join(args), r.returncode, r.stderr))
    r = run([sys.executable, script, "--model", "resnet18", "--out-dir", os.path.join(d, "missing")])
    check(r.returncode == 2 and "not a directory" in r.stderr, "a missing --out-dir gave %d: %r" % (r.returncode, r.stderr))
    # Without PyTorch: -S leaves Debian's dist-packages (where python3-torch lives) off sys.path.
    r = run(["/usr/bin/python3", "-S", script, "--model", "resnet18", "--out-dir", out])
    check(r.returncode == 2 and "cannot import PyTorch" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          "without torch: %d %r" % (r.returncode, r.stderr))
    check(os.listdir(out) == [], "failed runs left %s" % os.listdir(out))


def main():
    args = test_args(__doc__, ["torch", "torchvision"])
    if isinstance(args, int):
        return args
    redsim, src, _ = args
    script = os.path.join(src, "traces", "capture", "redsim_profile_ddp.py")
    with tempfile.TemporaryDirectory() as d:
        test_two_ranks(redsim, script, d)
        test_errors(script, d)
    return finish("profile_ddp")


if __name__ == "__main__":
    sys.exit(main())
