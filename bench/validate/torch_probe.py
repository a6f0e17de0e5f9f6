#!/usr/bin/env python3
"""Which of PyTorch's sharding and gradient-compression features run on Gloo on this machine's
torch (issue 18 item 7): FSDP (FULL_SHARD, SHARD_GRAD_OP), ZeroRedundancyOptimizer, DDP's
fp16_compress_hook, bf16_compress_hook, powerSGD_hook and batched_powerSGD_hook (one bucket), each tried for real for three training steps of a small model on 2 local
ranks over Gloo. Prints one line per feature: "ok", or "fails: <exception, first line>".

    /usr/bin/python3 bench/validate/torch_probe.py            # starts 2 ranks on 127.0.0.1

FSDP is tried twice: as imported (torch 1.13 under Python 3.11 fails at import), and with the
dataclass rule of Python 3.10 restored for the import, to see what fails next. Exit status 0 whatever runs; 2 if torch is missing.
"""

import dataclasses
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ddp_launch import launch_local  # noqa: E402


def restore_py310_dataclass_defaults():
    """Python 3.11 rejects any unhashable default (torch 1.13's ShardedTensorMetadata has a
    dataclass instance as one); 3.10 rejected only list, dict and set. Make such defaults
    hashable by identity while torch's modules are defined."""
    original = dataclasses._get_field

    def get_field(cls, name, type_, *rest):
        default = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            default = default.default
        if default is not dataclasses.MISSING and dataclasses.is_dataclass(type(default)) and type(default).__hash__ is None:
            type(default).__hash__ = object.__hash__
        return original(cls, name, type_, *rest)

    dataclasses._get_field = get_field


class Probe:
    """A small model trained for three steps on random data, with each feature in turn."""

    def __init__(self, torch):
        self.torch = torch
        self.x, self.y = torch.randn(8, 64), torch.randint(0, 10, (8,))

    def model(self, width=128):
        nn = self.torch.nn
        self.torch.manual_seed(0)
        return nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, 10))

    def train(self, m, opt):
        for _ in range(3):
            opt.zero_grad()
            self.torch.nn.functional.cross_entropy(m(self.x), self.y).backward()
            opt.step()

    def sgd(self, m):
        return self.torch.optim.SGD(m.parameters(), lr=0.01)

    def fsdp(self, strategy_name):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy

        m = FSDP(self.model(), sharding_strategy=getattr(ShardingStrategy, strategy_name))
        self.train(m, self.sgd(m))

    def zero(self):
        from torch.distributed.optim import ZeroRedundancyOptimizer
        from torch.nn.parallel import DistributedDataParallel as DDP

        m = DDP(self.model())
        self.train(m, ZeroRedundancyOptimizer(m.parameters(), optimizer_class=self.torch.optim.Adam, lr=0.01))

    def hook(self, name):
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
        from torch.nn.parallel import DistributedDataParallel as DDP

        # One bucket (the model is 35 kB): PowerSGD with several buckets races on Gloo and aborts
        # the process (ddp_variants.py), which would end the probe.
        m = DDP(self.model())
        if name in ("powerSGD_hook", "batched_powerSGD_hook"):
            state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
            m.register_comm_hook(state, getattr(powerSGD_hook, name))
        else:
            m.register_comm_hook(None, getattr(default_hooks, name))
        for _ in range(2):  # PowerSGD compresses from its 3rd iteration
            self.train(m, self.sgd(m))


def attempt(probe, dist, rank, name):
    """Runs one probe on every rank and prints its result on rank 0: "ok" or how it failed."""
    try:
        probe()
        result = "ok"
    except Exception as e:  # every failure is the answer, whatever its type
        result = "fails: %s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:160])
    dist.barrier()
    if rank == 0:
        print("%-40s %s" % (name, result), flush=True)
    return result


def retry_fsdp(p, dist, rank):
    """FSDP again after re-importing it under Python 3.10's dataclass rule: what fails next."""
    restore_py310_dataclass_defaults()
    for k in [k for k in sys.modules if k.startswith("torch.distributed.fsdp") or
              k.startswith("torch.distributed._shard")]:
        del sys.modules[k]
    for strategy in ("FULL_SHARD", "SHARD_GRAD_OP"):
        attempt(lambda: p.fsdp(strategy), dist, rank, "FSDP %s (3.10 dataclass rule)" % strategy)


def main():
    if "RANK" not in os.environ:
        return launch_local(__file__, 2, sys.argv[1:])
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("torch_probe: cannot import torch: %s" % e, file=sys.stderr)
        return 2
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    torch.set_num_threads(1)
    p = Probe(torch)
    probes = [
        ("FSDP FULL_SHARD (as imported)", lambda: p.fsdp("FULL_SHARD")),
        ("ZeroRedundancyOptimizer", p.zero),
        ("fp16_compress_hook", lambda: p.hook("fp16_compress_hook")),
        ("bf16_compress_hook", lambda: p.hook("bf16_compress_hook")),
        ("powerSGD_hook, one bucket", lambda: p.hook("powerSGD_hook")),
        ("batched_powerSGD_hook, one bucket", lambda: p.hook("batched_powerSGD_hook")),
    ]
    for name, probe in probes:
        if attempt(probe, dist, rank, name) != "ok" and name.startswith("FSDP"):
            retry_fsdp(p, dist, rank)
    if rank == 0:
        print("HYBRID_SHARD in this torch: %s" % hasattr(__import__("torch.distributed.fsdp", fromlist=["x"]).ShardingStrategy,
                                                         "HYBRID_SHARD"), flush=True)
    sys.stdout.flush()
    os._exit(0)  # Gloo's teardown after a failed collective can hang


if __name__ == "__main__":
    sys.exit(main())
