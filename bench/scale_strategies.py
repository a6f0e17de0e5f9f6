#!/usr/bin/env python3
"""Wall time and peak memory of `redsim simulate` per strategy at scale (issue 19, item 4).

Memory is the peak of the *sum* of resident memory over redsim and every process it forks
(the simulating children), sampled from /proc every 20 ms: /usr/bin/time reports only the
largest single process and so under-reports a parent + child run.

    bench/scale_strategies.py build/cli/redsim . --ranks 1024 16384 --strategies bucketed fsdp
    bench/scale_strategies.py build/cli/redsim . --ranks 16384 --outputs     # also with --out/--timeline

Clusters are configs/dgx-h100-x2048.json with `nodes` set to ranks / 8; the trace is GPT-2 XL.
Prints one line per run as it ends; a run over --timeout-s is reported as such, not waited for.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# STRATEGY+HOOK runs bucketed DDP with that comm hook (issue 18): bucketed+fp16, bucketed+powersgd;
# STRATEGY+ckpt runs the strategy with --activation-checkpointing blocks (GPT-2 XL's 48 blocks).
STRATEGIES = ["flat", "bucketed", "bucketed+fp16", "bucketed+powersgd", "zero", "accumulate", "localsgd", "fsdp",
              "hsdp", "bucketed+ckpt", "fsdp+ckpt"]


def strategy_args(name):
    strategy, _, extra = name.partition("+")
    if extra == "ckpt":
        return ["--strategy", strategy, "--activation-checkpointing", "blocks"]
    return ["--strategy", strategy] + (["--comm-hook", extra] if extra else [])


def tree_rss_kB(root_pid):
    """Resident memory of root_pid and all its descendants, in kB."""
    children = {}
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid, rss_pages = int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append((int(pid), rss_pages))
    stack = [root_pid]
    seen = {root_pid}
    try:
        with open(f"/proc/{root_pid}/stat") as f:
            total += int(f.read().rsplit(")", 1)[1].split()[21])
    except (OSError, IndexError, ValueError):
        return 0
    while stack:
        for pid, rss in children.get(stack.pop(), []):
            if pid not in seen:
                seen.add(pid)
                total += rss
                stack.append(pid)
    return total * os.sysconf("SC_PAGE_SIZE") // 1024


def run_one(cmd, timeout_s):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak_kB = 0
    while proc.poll() is None:
        peak_kB = max(peak_kB, tree_rss_kB(proc.pid))
        if time.monotonic() - start > timeout_s:
            proc.kill()
            proc.wait()
            return None, peak_kB, "timeout"
        time.sleep(0.02)
    wall_s = time.monotonic() - start
    out, err = proc.communicate()
    if proc.returncode != 0:
        return wall_s, peak_kB, "exit %d: %s" % (proc.returncode, err.strip().splitlines()[-1] if err.strip() else "")
    step = next((l.split()[2] + " ms" for l in out.splitlines() if l.strip().startswith("step time")), "?")
    return wall_s, peak_kB, "step " + step


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("redsim")
    ap.add_argument("source_dir")
    ap.add_argument("--ranks", type=int, nargs="+", default=[1024, 16384, 131072])
    ap.add_argument("--strategies", nargs="+", default=STRATEGIES)
    ap.add_argument("--outputs", action="store_true", help="also run with --out and --timeline")
    ap.add_argument("--timeout-s", type=float, default=300)
    a = ap.parse_args()
    base = json.load(open(os.path.join(a.source_dir, "configs", "dgx-h100-x2048.json")))
    trace = os.path.join(a.source_dir, "traces", "gpt2-xl.json")
    with tempfile.TemporaryDirectory(prefix="redsim-scale-") as tmp:
        print("%-18s %8s %8s %9s %10s  %s" % ("strategy", "ranks", "outputs", "wall s", "peak MiB", "result"), flush=True)
        for ranks in a.ranks:
            cluster = dict(base, nodes=ranks // base["devices_per_node"], name="dgx-h100-x%d" % (ranks // 8))
            cluster_file = os.path.join(tmp, "cluster-%d.json" % ranks)
            json.dump(cluster, open(cluster_file, "w"))
            for s in a.strategies:
                for outputs in ([False, True] if a.outputs else [False]):
                    cmd = [a.redsim, "simulate", "--trace", trace, "--cluster", cluster_file] + strategy_args(s) + [
                        "--fidelity", "scalable"]
                    if outputs:
                        cmd += ["--out", os.path.join(tmp, "r.json"), "--timeline", os.path.join(tmp, "t.json")]
                    wall_s, peak_kB, what = run_one(cmd, a.timeout_s)
                    print("%-18s %8d %8s %9s %10.0f  %s" % (s, ranks, "yes" if outputs else "no",
                                                          "%.2f" % wall_s if wall_s is not None else ">%.0f" % a.timeout_s,
                                                          peak_kB / 1024, what), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
