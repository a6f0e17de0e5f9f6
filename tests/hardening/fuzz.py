#!/usr/bin/env python3
"""Mutation fuzzing of redsim's JSON readers (issue 15): eight commands, Kineto read by two, the
measured timeline in its plain and its folded (version 3: stride runs, columns) forms.

Each reader gets COUNT inputs mutated from a valid seed (structured mutations of the parsed
JSON and byte-level ones), deterministically from --seed. Every run must:
  - exit 0 or 2 (validate may also exit 1, its verdict "error over --max-error", with nothing
    on stderr), never on a signal, never hang (--timeout-s);
  - on exit 2, print exactly one stderr line naming the mutated file, with a JSON path ($...)
    unless the message is about the file as a whole (cannot open, too large, work limits);
  - leave no file behind: nothing in the output directory on exit 2, only the named outputs on
    exit 0, nothing new beside the input, nothing in its private TMPDIR.

usage: fuzz.py REDSIM SOURCE_DIR [--count N] [--seed S] [--jobs J] [--readers a,b] [--report]
Prints one line per failure and a summary with counts; exits 1 on any failure.
"""
import argparse
import concurrent.futures
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

READERS = ["trace", "cluster", "config", "measured", "folded", "matrix", "kineto", "profile"]

# Values that have broken readers before, or that sit at a limit's edge. Strings starting with
# RAW: are pasted verbatim into the JSON text (numbers json.dumps cannot write).
HOSTILE = [
    -1, 0, 1, 2**31, 2**53 + 1, 2**62, 2**63 - 1, 2**64, -(2**63), 1e300, -1e300, 1e-300, 0.5, 3601,
    1e6, 1e7, "RAW:1e999", "RAW:-1e999", "RAW:1e-999", "", "x", "\u001b[31mred", "a\nb", "\u00e9\u4e2d",
    None, True, False, [], {}, [1, 2, 3], {"k": 1}, "A" * 5000, "RAW:" + "[" * 300 + "]" * 300,
    "fp8", "zero", "bogus", "nccl", "star", "fat-tree",
]
# Messages about a file as a whole: they name the file but have no JSON path.
WHOLE_FILE = ["cannot open", "expected a JSON file of at most", "expected a trace of at most", "(--max-ops)",
              "cannot read", "gzip"]


def paths(node, prefix=()):
    """Every (path, value) of a JSON value, the root included."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def get_parent(doc, path):
    for p in path[:-1]:
        doc = doc[p]
    return doc


def structured(rng, doc):
    """A mutated copy of doc and the JSON text for it (RAW: values pasted in)."""
    doc = copy.deepcopy(doc)
    raws = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        all_paths = [p for p, _ in paths(doc) if p]
        if not all_paths:
            break
        path = rng.choice(all_paths)
        parent = get_parent(doc, path)
        key = path[-1]
        op = rng.random()
        if op < 0.55:
            value = rng.choice(HOSTILE)
            if isinstance(value, str) and value.startswith("RAW:"):
                raws.append(value[4:])
                value = "@@RAW%d@@" % (len(raws) - 1)
            parent[key] = value
        elif op < 0.7:
            del parent[key]
        elif op < 0.8 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = parent[key] * rng.choice([-1, 1e6, 1e12, 1e-9, 2**40])
        elif op < 0.9 and isinstance(parent, list):
            parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(parent[key]))
        elif isinstance(parent, dict):
            parent[key + rng.choice(["", "_", "x"]) if isinstance(key, str) else key] = rng.choice(HOSTILE[:20])
    text = json.dumps(doc, indent=rng.choice([None, 1]))
    for i, raw in enumerate(raws):
        text = text.replace('"@@RAW%d@@"' % i, raw)
    return text.encode()


def bytewise(rng, data):
    data = bytearray(data)
    op = rng.random()
    if op < 0.3:
        return bytes(data[: rng.randrange(len(data))])
    if op < 0.55:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if op < 0.75:
        at = rng.randrange(len(data))
        return bytes(data[:at]) + rng.choice([b"\x00", b"\x1b[2J", b"\xff\xfe", b",", b"}", b"]", b'"', b"[" * 100000]) + bytes(data[at:])
    if op < 0.9:  # a duplicate key: repeat the first member of an object
        text = data.decode("utf-8", "replace")
        at = text.find("{\n \"") if "{\n \"" in text else text.find("{\"")
        if at >= 0:
            end = text.find(",", at)
            if end > at:
                return (text[: end + 1] + text[at + 1 : end + 1] + text[end + 1 :]).encode()
        return bytes(data)
    return b"[" * 200000 + b"]" * 200000


def folded_v3(measured):
    """The measured seed with timeline version 3's other forms, the same per-rank values: a
    collective's records as a stride run and out-of-order ranges, the next one as columns."""
    doc = copy.deepcopy(measured)
    ops = [op for op in doc["timeline"]["ops"] if "bytes_sent" in op["records"][0]]
    world = doc["timeline"]["world_size"]
    one = ops[0]["records"][0]
    evens, odds = dict(one, ranks=[[0, world - 2, 2]]), dict(one, ranks=[[r, r] for r in range(world - 1, 0, -2)])
    ops[0]["records"] = [evens, odds]
    col = ops[1]["records"][0]
    col["end_s"], col["bytes_received"] = [col["end_s"]] * world, [col["bytes_received"]] * world
    return doc


def with_memory_events(kineto):
    """The profile with profile_memory=True's events added (GPU 0 and the host), so that mutations
    reach the importer's memory reader too."""
    events = kineto["traceEvents"] if isinstance(kineto, dict) else kineto
    t0 = min(e["ts"] for e in events if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)))
    for i, (device_type, device_id, nbytes) in enumerate([(1, 0, 4096), (0, -1, 512), (1, 0, -1024)]):
        events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                       "ts": t0 + 1 + i, "args": {"Device Type": device_type, "Device Id": device_id,
                                                  "Addr": 4096 * (i + 1), "Bytes": nbytes,
                                                  "Total Allocated": 1 << 20, "Total Reserved": 2 << 20}})
    return kineto


class Seeds:
    """The valid inputs each reader's mutations start from, made once in WORK."""

    def __init__(self, redsim, src, work):
        self.src = src
        self.trace = os.path.join(src, "tests/data/tiny_trace.json")
        self.cluster = os.path.join(src, "tests/data/ideal_star_4.json")
        self.kineto = os.path.join(src, "tests/hardening/data/kineto_step.json")
        seed_dir = os.path.join(work, "seeds")
        os.makedirs(seed_dir)
        tuned, sim = os.path.join(seed_dir, "tuned.json"), os.path.join(seed_dir, "sim.json")
        for args in (["tune", "--trace", self.trace, "--cluster", self.cluster, "--out", tuned, "--no-snippets"],
                     ["simulate", "--trace", self.trace, "--cluster", self.cluster, "--out", sim]):
            subprocess.run([redsim] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        measured = json.load(open(sim))
        measured["measurement"] = {"step_times_s": [measured["summary"]["step_time_s"]] * 3}
        self.measured = os.path.join(seed_dir, "measured.json")
        json.dump(measured, open(self.measured, "w"))
        folded = folded_v3(measured)
        trace = json.load(open(self.trace))
        for i, layer in enumerate(trace["layers"]):  # so that mutations reach these readers too
            layer["activation_bytes"] = 4096 * (i + 1)
            layer["input_bytes"] = 1024 * (i + 1)
        docs = {
            "trace": trace,
            "cluster": json.load(open(self.cluster)),
            "config": json.load(open(tuned)),
            "measured": measured,
            "folded": folded,
            "matrix": [{"measured": self.measured, "label": "a"},
                       {"measured": self.measured, "strategy": "bucketed", "bucket_mb": 25, "label": "b"}],
            "kineto": with_memory_events(json.load(open(self.kineto))),
            "profile": with_memory_events(json.load(open(self.kineto))),
        }
        self.docs = docs

    def command(self, reader, f, out):
        t, c = self.trace, self.cluster
        sim_out = ["--out", os.path.join(out, "r.json"), "--timeline", os.path.join(out, "t.json")]
        val_out = ["--out", os.path.join(out, "v.json")]
        return {
            "trace": ["simulate", "--trace", f, "--cluster", c] + sim_out,
            "cluster": ["simulate", "--trace", t, "--cluster", f] + sim_out,
            "config": ["simulate", "--trace", t, "--cluster", c, "--config", f] + sim_out,
            "measured": ["validate", "--trace", t, "--cluster", c, "--measured", f] + val_out,
            "folded": ["validate", "--trace", t, "--cluster", c, "--measured", f] + val_out,
            "matrix": ["validate", "--trace", t, "--cluster", c, "--matrix", f, "--table",
                       os.path.join(out, "table.txt")] + val_out,
            "kineto": ["trace", "import", "--kineto", f, "--out", os.path.join(out, "t.json"), "--measured",
                       os.path.join(out, "m.json")],
            # The seed profile ran on 8 GPUs: a cluster it fits on.
            "profile": ["calibrate", "--from-profile", f, "--cluster", os.path.join(self.src, "configs/dgx-h100.json"),
                        "--out", os.path.join(out, "c.json")],
        }[reader]


def classify(reader, rc, err, f, out_files, extra_files):
    """(category, detail): ok, rejected, rejected_whole_file, or a failure category."""
    lines = err.splitlines()
    if rc is None:
        return "hang", ""
    if rc < 0:
        return "crash", "signal %d" % -rc
    if "internal error" in err:
        return "internal_error", err.strip()[:300]
    if extra_files:
        return "file_left_behind", " ".join(extra_files)
    if rc == 0 or (rc == 1 and reader in ("measured", "folded", "matrix") and not err.strip()):
        return "ok", ""
    if rc != 2:
        return "bad_exit", "exit %d: %s" % (rc, err.strip()[:300])
    if out_files:
        return "file_left_behind", "wrote " + " ".join(out_files)
    if len(lines) != 1:
        return "not_one_line", "%d lines: %s" % (len(lines), err[:300])
    if f not in lines[0]:
        return "no_file", lines[0][:300]
    # A mismatch between two inputs may be reported at the other file's path (the trace's
    # $.reference_device against a mutated cluster): the mutated file named and a path suffice.
    if "$" not in lines[0] and not any(w in lines[0] for w in WHOLE_FILE):
        return "no_path", lines[0][:300]
    return ("rejected_whole_file" if "$" not in lines[0] else "rejected"), ""


def run_one(redsim, seeds, work, reader, index, data, timeout_s):
    case = os.path.join(work, "%s-%04d" % (reader, index))
    out, tmpdir, indir = (os.path.join(case, d) for d in ("out", "tmp", "in"))
    for d in (out, tmpdir, indir):
        os.makedirs(d)
    f = os.path.join(indir, "input.json")
    with open(f, "wb") as fh:
        fh.write(data)
    env = dict(os.environ, TMPDIR=tmpdir)
    try:
        p = subprocess.run([redsim] + seeds.command(reader, f, out), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env, timeout=timeout_s, cwd=indir)
        rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = None, ""
    out_files = sorted(os.listdir(out))
    extra = [os.path.join("tmp", n) for n in os.listdir(tmpdir)] + [n for n in os.listdir(indir) if n != "input.json"]
    if rc == 0:  # only the named outputs
        extra += [n for n in out_files if n not in ("r.json", "t.json", "v.json", "table.txt", "m.json", "c.json")]
    category, detail = classify(reader, rc, err, f, out_files, extra)
    if category in ("ok", "rejected", "rejected_whole_file"):
        shutil.rmtree(case)
    return reader, index, category, detail, case


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("redsim")
    ap.add_argument("src")
    ap.add_argument("--count", type=int, default=100, help="inputs per reader")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--readers", default=",".join(READERS))
    ap.add_argument("--timeout-s", type=float, default=60)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    redsim = os.path.abspath(a.redsim)
    work = tempfile.mkdtemp(prefix="redsim-fuzz.")
    try:
        seeds = Seeds(redsim, os.path.abspath(a.src), work)
        rng = random.Random(a.seed)
        jobs = []
        for reader in a.readers.split(","):
            seed_text = json.dumps(seeds.docs[reader], indent=1).encode()
            for i in range(a.count):
                data = structured(rng, seeds.docs[reader]) if rng.random() < 0.7 else bytewise(rng, seed_text)
                jobs.append((reader, i, data))
        counts = {}
        failures = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            futures = [pool.submit(run_one, redsim, seeds, work, r, i, d, a.timeout_s) for r, i, d in jobs]
            for fut in futures:
                reader, index, category, detail, case = fut.result()
                counts.setdefault(reader, {}).setdefault(category, 0)
                counts[reader][category] += 1
                if category not in ("ok", "rejected", "rejected_whole_file"):
                    failures.append("FAIL %s #%d %s: %s (kept in %s)" % (reader, index, category, detail, case))
        for line in failures:
            print(line)
        total = {}
        for reader, c in counts.items():
            print("%-9s %s" % (reader, " ".join("%s=%d" % kv for kv in sorted(c.items()))))
            for k, v in c.items():
                total[k] = total.get(k, 0) + v
        print("total     %s (seed %d, %d inputs)" % (" ".join("%s=%d" % kv for kv in sorted(total.items())),
                                                      a.seed, len(jobs)))
        return 1 if failures else 0
    finally:
        if not a.keep and not failures_kept(work):
            shutil.rmtree(work, ignore_errors=True)


def failures_kept(work):
    """Failing cases stay for inspection; an all-clean run leaves nothing."""
    return os.path.isdir(work) and any(n != "seeds" for n in os.listdir(work))


if __name__ == "__main__":
    sys.exit(main())
