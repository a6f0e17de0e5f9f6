"""--processes N: time the model as one of N ranks sharing this host's cores.

A rank of a job whose N ranks share one CPU host computes slower than a process alone, and by how
much depends on the model's kernels (matrix multiplies lose more to a shared core and cache than
memory-bound depthwise convolutions: bench/validate/README.md, issue 14). So rather than scale a
plain capture by one factor, the capture runs N copies of itself at once and keeps the slowest
copy's trace, scaled to the slowest copy's step iteration by iteration: a job's step waits for
its slowest rank in that step, and which rank that is may change from step to step, so the mean of
the per-step maximum is at least every single copy's mean.
"""
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from .common import PROG, CaptureError, write_atomically

# More copies than this is a mistake, not a host (each copy holds a model and its batch).
MAX_PROCESSES = 256
# How long a copy waits for the others at a meeting point before giving up.
SYNC_TIMEOUT_S = 1800


class CopySync:
    """The copies meet before their measured steps and keep computing after them until every copy
    has measured, so each measured step runs beside N - 1 busy copies (a copy that finished early
    would leave the others a faster host). Files in a private directory, one per copy and point."""

    def __init__(self, spec):
        try:
            d, index, n = spec.rsplit(":", 2)
            self.dir, self.index, self.n = d, int(index), int(n)
        except ValueError:
            raise CaptureError("--copy-sync: set by --processes for its copies (DIR:INDEX:N), got %r" % spec) from None
        if not os.path.isdir(self.dir) or not 0 <= self.index < self.n:
            raise CaptureError("--copy-sync: set by --processes for its copies (DIR:INDEX:N), got %r" % spec)

    def arrive(self, point):
        open(os.path.join(self.dir, "%s.%d" % (point, self.index)), "w").close()

    def count(self, point):
        return len(glob.glob(os.path.join(self.dir, point + ".*")))

    def wait_all(self, point):
        self.arrive(point)
        deadline = time.monotonic() + SYNC_TIMEOUT_S
        while self.count(point) < self.n:
            if time.monotonic() > deadline:
                raise CaptureError("--processes: the other copies did not reach '%s' within %d s" % (point, SYNC_TIMEOUT_S))
            time.sleep(0.01)

    def keep_busy(self, step):
        """Runs step() until every copy has finished measuring."""
        self.arrive("done")
        deadline = time.monotonic() + SYNC_TIMEOUT_S
        while self.count("done") < self.n and time.monotonic() < deadline:
            step()


def check_processes(args, device_is_cpu):
    if not 1 <= args.processes <= MAX_PROCESSES:
        raise CaptureError("--processes: expected 1 to %d copies, got %d" % (MAX_PROCESSES, args.processes))
    if args.processes > 1 and not device_is_cpu:
        raise CaptureError("--processes: copies share a CPU host; on a GPU each rank has a device of its own "
                           "(capture one process per GPU)")


def child_argv(script, args, out, raw_out, sync_dir, index):
    """The same capture, one copy, written to `out`: every option passed as a separate argument
    (no shell), so nothing from the command line is re-parsed as anything else."""
    argv = [sys.executable, script, "--model", args.model, "--input-shape", args.input_shape,
            "--batch-size", str(args.batch_size), "--input-dtype", args.input_dtype, "--vocab", str(args.vocab),
            "--dtype", args.dtype, "--loss", args.loss, "--optimizer", args.optimizer, "--warmup", str(args.warmup),
            "--iters", str(args.iters), "--threads", str(args.threads), "--seed", str(args.seed),
            "--processes", "1", "--out", out, "--raw-out", raw_out]
    argv += ["--copy-sync", "%s:%d:%d" % (sync_dir, index, args.processes)]
    if args.model_name:
        argv += ["--model-name", args.model_name]
    if args.device:
        argv += ["--device", args.device]
    if args.no_rescale:
        argv.append("--no-rescale")
    return argv


def relay(path, offset):
    """Prints the complete lines `path` gained since `offset` (the first copy's progress), prefixed;
    returns the new offset. Read through a handle of its own: the copy's writes keep their place."""
    with open(path) as f:
        f.seek(offset)
        text = f.read()
    end = text.rfind("\n") + 1
    for line in text[:end].splitlines():
        print("[copy 1] " + line, file=sys.stderr, flush=True)
    return offset + len(text[:end].encode())


def wait_copies(procs, progress_path):
    """Waits for every copy, relaying the first one's progress; the first to fail stops the others
    (they would wait for it). Returns its index, or None."""
    offset = 0
    while True:
        offset = relay(progress_path, offset)
        codes = [p.poll() for p in procs]
        bad = [i for i, c in enumerate(codes) if c not in (None, 0)]
        if bad:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            return bad[0]
        if all(c == 0 for c in codes):
            return None
        time.sleep(0.05)


def step_s(trace):
    return (sum(l["forward_s"] + l["backward_s"] for l in trace["layers"]) + trace.get("optimizer_s", 0.0))


def slowest_per_iteration_s(raws):
    """Iteration by iteration, the slowest copy's un-hooked step (the copies measure the same
    number of iterations, started together); their mean is the step a synchronised job sees."""
    per_copy = [r["per_iteration_step_s"] for r in raws]
    k = min(len(s) for s in per_copy)
    return [max(s[i] for s in per_copy) for i in range(k)]


def scale_trace(trace, factor):
    for l in trace["layers"]:
        l["forward_s"] *= factor
        l["backward_s"] *= factor
    trace["optimizer_s"] = trace.get("optimizer_s", 0.0) * factor


def run_copies(script, args):
    """Runs args.processes copies at once; writes the slowest copy's trace (and raw file) to the
    requested outputs and returns (trace, per-copy step seconds). Raises CaptureError, with the
    copy's own message, if any copy fails; nothing is written then."""
    n = args.processes
    with tempfile.TemporaryDirectory(prefix="redsim_capture.") as d:
        outs = [(os.path.join(d, "copy%d.json" % i), os.path.join(d, "copy%d.raw.json" % i)) for i in range(n)]
        print("%s: timing %d copies at once (--processes %d)" % (PROG, n, n), file=sys.stderr, flush=True)
        errs = [os.path.join(d, "copy%d.err" % i) for i in range(n)]
        procs = []
        for i, (o, r) in enumerate(outs):
            with open(errs[i], "w") as err:
                procs.append(subprocess.Popen(child_argv(script, args, o, r, d, i), stdout=subprocess.DEVNULL,
                                              stderr=err))
        failed = wait_copies(procs, errs[0])
        if failed is not None:
            lines = [l for l in open(errs[failed]).read().splitlines() if l.startswith(PROG + ": error:")]
            why = lines[-1][len(PROG + ": error: "):] if lines else "exit status %d" % procs[failed].returncode
            raise CaptureError("copy %d of %d failed: %s" % (failed + 1, n, why))
        traces = [json.load(open(o)) for o, _ in outs]
        raws = [json.load(open(r)) for _, r in outs]
        times = [step_s(t) for t in traces]
        slow = max(range(n), key=lambda i: times[i])
        trace = traces[slow]
        if slow != 0:  # the first copy's lines were relayed as they came; the kept copy's warnings too
            for line in open(errs[slow]).read().splitlines():
                if line.startswith(PROG + ": warning:"):
                    print(line, file=sys.stderr)
        per_iter = slowest_per_iteration_s(raws)
        target = sum(per_iter) / len(per_iter)
        factor = target / times[slow] if times[slow] > 0 else 1.0
        scale_trace(trace, factor)
        trace["source"] = trace["source"].rstrip(".") + (
            "; timed as one of %d copies running at once on this host (--processes %d: the slowest copy's times, "
            "%.1f ms a step; the copies took %.1f to %.1f ms; scaled x%.4f to %.1f ms, the mean over %d measured "
            "iterations of the slowest copy in each), as %d ranks sharing its cores compute and a job's step "
            "waits for its slowest rank"
            % (n, n, times[slow] * 1e3, min(times) * 1e3, max(times) * 1e3, factor, target * 1e3, len(per_iter), n))
        write_atomically(args.out, json.dumps(trace, indent=1) + "\n")
        if args.raw_out:
            raw = raws[slow]
            raw["copies"] = {"processes": n, "kept": slow, "step_s": times,
                             "per_iteration_step_s": [r["per_iteration_step_s"] for r in raws],
                             "slowest_per_iteration_s": per_iter, "scale": factor}
            write_atomically(args.raw_out, json.dumps(raw, indent=1) + "\n")
    return trace, times
