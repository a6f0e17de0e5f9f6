#!/usr/bin/env python3
"""End-to-end test of redsim_capture.py --batch-sizes (the batch curve) with /usr/bin/python3 on CPU.

usage: test_capture_batch_curve.py REDSIM_BINARY SOURCE_DIR

- a small user module captured at batch 4 with --batch-sizes 2,8: the trace's curve holds the
  three batch sizes, each layer one time per size and its own time at batch 4; redsim reads it, and
  `simulate --batch-size` prices compute on the curve (checked against the curve's own numbers:
  at a point, and half way between two);
- the same through --processes 2, whose copies time every point;
- bad --batch-sizes: exit status 2, one line, nothing written.
"""

import json
import os
import sys
import tempfile

# The capture test's check/run helpers and failure list (test_capture.py beside this file).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_capture import check, finish, run, test_args  # noqa: E402

USER_MODEL = '''
import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 256)
        self.b = torch.nn.Linear(256, 256)
        self.head = torch.nn.Linear(256, 10)

    def forward(self, x):
        return self.head(torch.relu(self.b(torch.relu(self.a(x)))))

def build():
    return Net()
'''


def compute_s(redsim, trace, cluster, batch, d):
    """simulate's compute_time_s for the trace at --batch-size batch, or None."""
    out = os.path.join(d, "sim.json")
    r = run([redsim, "simulate", "--trace", trace, "--cluster", cluster, "--batch-size", str(batch), "--out", out])
    check(r.returncode == 0, "simulate --batch-size %d exited %d: %s" % (batch, r.returncode, r.stderr.strip()))
    if r.returncode != 0:
        return None
    res = json.load(open(out))
    check(res["trace"]["batch_size_per_rank"] == batch, "the result says batch %s" % res["trace"]["batch_size_per_rank"])
    return res["summary"]["compute_time_s"]


def check_curve(redsim, src, path, d, what):
    t = json.load(open(path))
    sizes = t.get("curve_batch_sizes")
    check(sizes == [2, 4, 8], "%s: curve_batch_sizes %r, expected [2, 4, 8]" % (what, sizes))
    if sizes != [2, 4, 8]:
        return
    for l in t["layers"]:
        for k in ("forward_s", "backward_s"):
            c = l.get(k + "_by_batch")
            check(c is not None and len(c) == 3 and c[1] == l[k], "%s: %s of %s: %r" % (what, k, l["name"], c))
    r = run([redsim, "trace", "show", path])
    check(r.returncode == 0 and "batch curve: forward + backward at batch 2" in r.stdout,
          "%s: trace show: %s" % (what, (r.stdout + r.stderr)[-300:]))
    # The reference: the curve's numbers added up by hand, at batch 8 and half way from 4 to 8.
    cluster = os.path.join(src, "tests", "data", "ideal_star_4.json")
    at = lambda k: sum(l["forward_s_by_batch"][k] + l["backward_s_by_batch"][k] for l in t["layers"])  # noqa: E731
    for batch, want in ((8, at(2)), (6, (at(1) + at(2)) / 2)):
        got = compute_s(redsim, path, cluster, batch, d)
        want += t["optimizer_s"]
        check(got is not None and abs(got - want) <= 1e-9 + 1e-9 * want,
              "%s: compute at batch %d is %r s, the curve gives %r s" % (what, batch, got, want))


def main():
    args = test_args(__doc__, ["torch"])
    if isinstance(args, int):
        return args
    redsim, src, capture = args
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "net.py")
        with open(model, "w") as f:
            f.write(USER_MODEL)
        base = [sys.executable, capture, "--model", model + ":build", "--input-shape", "64", "--batch-size", "4",
                "--warmup", "1", "--iters", "2", "--threads", "1"]
        out = os.path.join(d, "curve.json")
        r = run(base + ["--batch-sizes", "8,2", "--out", out])
        check(r.returncode == 0, "--batch-sizes 8,2 exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        check("batch curve: batch 2 (1 of 2 other batch sizes)" in r.stderr, "no progress line per batch size")
        if r.returncode == 0:
            check_curve(redsim, src, out, d, "one process")
        out2 = os.path.join(d, "curve2.json")
        r = run(base + ["--batch-sizes", "2,8", "--processes", "2", "--out", out2])
        check(r.returncode == 0, "--processes 2 --batch-sizes exited %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        if r.returncode == 0:
            check_curve(redsim, src, out2, d, "--processes 2")
            check("one of 2 copies" in json.load(open(out2))["source"], "the copies' source is lost")
        for value, words in (("2,x", "comma-separated positive integers"), ("4", "other than --batch-size (4)"),
                             ("0,8", "from 1 to 2^24, got 0")):
            bad = os.path.join(d, "never.json")
            r = run(base + ["--batch-sizes", value, "--out", bad])
            lines = r.stderr.strip().splitlines()
            check(r.returncode == 2 and len(lines) == 1 and words in lines[0],
                  "--batch-sizes %s gave %d: %r" % (value, r.returncode, r.stderr[-300:]))
            check(not os.path.exists(bad), "--batch-sizes %s wrote its output" % value)
    return finish("batch-curve capture")


if __name__ == "__main__":
    sys.exit(main())
