"""Starting and placing ranks for ddp_steps.py: --local-ranks N on 127.0.0.1 with torchrun's
environment, the environment a rank joins from, and the core count its threads share."""

import contextlib
import os
import random
import socket
import statistics
import subprocess
import sys
import time


class UsageError(Exception):
    """Bad arguments or environment: the script prints one line and exits 2."""


def free_port():
    # Below the kernel's ephemeral range (32768-60999 by default): a port the kernel handed out
    # for port 0 can be handed again to another test's listener or outgoing connection before
    # rank 0's store binds it, which is how a run under `ctest -j2` failed once.
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(100):
        port = rng.randrange(20000, 32000)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise UsageError("no free TCP port for the store between 20000 and 32000 on 127.0.0.1")


def launch_local(script, n, argv):
    child_argv = []
    skip = False
    for a in argv:  # drop --local-ranks N / --local-ranks=N
        if skip:
            skip = False
            continue
        if a == "--local-ranks":
            skip = True
            continue
        if a.startswith("--local-ranks="):
            continue
        child_argv.append(a)
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(n),
                   NODE_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        env.pop("REDSIM_HOST_ADDR", None)
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(script)] + child_argv, env=env))
    status = 0
    live = list(procs)
    while live:
        for p in list(live):
            rc = p.poll()
            if rc is None:
                continue
            live.remove(p)
            if rc != 0 and status == 0:
                status = rc if rc > 0 else 128 - rc  # killed by a signal: 128 + its number
                for q in live:  # a failed rank leaves the others blocked in a collective
                    with contextlib.suppress(OSError):
                        q.terminate()
        time.sleep(0.05)
    return status


def env_int(name):
    v = os.environ.get(name)
    if v is None or not v.strip().lstrip("-").isdigit():
        raise UsageError("environment: %s is not set to an integer (run under torchrun/realexec/testbed, "
                         "or give --local-ranks N)" % name)
    return int(v)


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def median(v):
    return statistics.median(v) if v else 0.0

