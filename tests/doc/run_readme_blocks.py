#!/usr/bin/env python3
"""Runs every ```bash / ```sh block of README.md and the folder READMEs, as written, so the
commands the docs show keep working. Each block runs with bash -e in a scratch copy of the
repository's inputs (outputs land there, never in the source tree), with the build's redsim on
PATH and HOME in the scratch directory. A block is left out when the line before its fence is
  <!-- doctest: skip: REASON -->   (needs root, a GPU, PyTorch, or is a synopsis), or
  <!-- doctest: slow -->           (minutes of simulation: run with REDSIM_DOCTEST_SLOW=1).
Usage: run_readme_blocks.py SOURCE_DIR BUILD_DIR [FILTER]"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

FENCE = re.compile(r"^```(bash|sh)\s*$")
MARK = re.compile(r"^<!--\s*doctest:\s*(skip|slow)\b(.*?)-->\s*$")
# Inputs copied (small, and commands may write next to them); everything else is linked.
COPIED = {"configs", "traces"}
TIMEOUT_S = 600


def blocks(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            prev = next((l for l in reversed(lines[:i]) if l.strip()), "")
            mark = MARK.match(prev.strip())
            start = i + 1
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                i += 1
            yield start, "\n".join(lines[start:i]) + "\n", (mark.group(1), mark.group(2).strip(" :")) if mark else None
        i += 1


def scratch(src, build, root):
    for entry in src.iterdir():
        if entry.name in (".git", "build") or entry.name.startswith("build-"):
            continue
        if entry.name in COPIED:
            shutil.copytree(entry, root / entry.name, symlinks=True)
        else:
            (root / entry.name).symlink_to(entry)
    (root / "build").symlink_to(build)
    (root / "home").mkdir()


def main():
    src, build = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    slow = os.environ.get("REDSIM_DOCTEST_SLOW") == "1"
    readmes = [src / "README.md"] + sorted(p for p in src.glob("*/**/README.md")
                                           if not p.relative_to(src).parts[0].startswith("build"))
    passed = failed = skipped = 0
    for readme in readmes:
        rel = readme.relative_to(src)
        for line, text, mark in blocks(readme):
            name = f"{rel}:{line}"
            if only and only not in name:
                continue
            if mark and (mark[0] == "skip" or not slow):
                print(f"skip {name}: {mark[1] or 'slow (REDSIM_DOCTEST_SLOW=1 runs it)'}")
                skipped += 1
                continue
            with tempfile.TemporaryDirectory() as tmp:
                root = pathlib.Path(tmp) / "repo"
                root.mkdir()
                if (src.parent / "shared").is_dir():  # ../shared, as beside the checkout
                    (pathlib.Path(tmp) / "shared").symlink_to(src.parent / "shared")
                scratch(src, build, root)
                env = dict(os.environ, HOME=str(root / "home"), PATH=f"{build / 'cli'}:{os.environ['PATH']}")
                t0 = time.monotonic()
                try:
                    r = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=root, env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
                    rc, out = r.returncode, r.stdout.decode(errors="replace")
                except subprocess.TimeoutExpired as e:
                    rc, out = "timeout", (e.stdout or b"").decode(errors="replace")
                if rc == 0:
                    print(f"ok   {name} ({time.monotonic() - t0:.1f} s)")
                    passed += 1
                else:
                    print(f"FAIL {name}: exit {rc}\n{text}--- output (last 20 lines) ---")
                    print("\n".join(out.splitlines()[-20:]))
                    failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
