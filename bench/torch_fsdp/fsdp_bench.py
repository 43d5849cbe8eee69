"""One rank of a real PyTorch FSDP job (gloo, CPU): the measured side of
herd's FSDP validation (issue 16).

Run by `herd testbed run -- python3 fsdp_bench.py ...` (one process per
testbed host; RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT come from the
launcher).  The model is a stack of residual MLP blocks (`h.N.fc1`,
`h.N.fc2`, then a `head`), each block its own FSDP unit (ModuleWrapPolicy),
the head in the root unit: the shape herd's `wrap: transformer_block`
gives from the parameter names.  `--export FILE` instead writes herd's
model file for the same module (herd_torch's exporter, on one process,
without FSDP), so that herd predicts from compute measured on this
machine.  Each rank writes its per-step wall times (JSON) under --out.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(x)))


class Net(nn.Module):
    def __init__(self, width=512, blocks=6):
        super().__init__()
        self.h = nn.ModuleList([Block(width) for _ in range(blocks)])
        self.head = nn.Linear(width, width)

    def forward(self, x):
        for b in self.h:
            x = b(x)
        return self.head(x)


def build(width, blocks):
    torch.manual_seed(0)
    return Net(width, blocks)


def wrap(model, a):
    from torch.distributed.fsdp import BackwardPrefetch
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    prefetch = {"BACKWARD_PRE": BackwardPrefetch.BACKWARD_PRE,
                "BACKWARD_POST": BackwardPrefetch.BACKWARD_POST,
                "none": None}[a.backward_prefetch]
    return FSDP(model, auto_wrap_policy=ModuleWrapPolicy({Block}),
                sharding_strategy=ShardingStrategy[a.strategy],
                backward_prefetch=prefetch,
                device_id=torch.device("cpu"))


def run(a):
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.pin:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    fsdp = wrap(build(a.width, a.blocks), a)
    opt = torch.optim.SGD(fsdp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(a.batch, a.width, generator=g)
    starts = []
    for _ in range(a.warmup + a.steps):
        starts.append(time.perf_counter())
        opt.zero_grad()
        fsdp(x).square().mean().backward()
        opt.step()
    starts.append(time.perf_counter())
    dist.barrier()  # after the timed loop: no rank leaves early
    steps = [b - s for s, b in zip(starts, starts[1:])][a.warmup:]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "%s_rank%d.steps.json" % (a.tag, rank)),
              "w") as f:
        json.dump({"rank": rank, "world_size": world,
                   "torch": torch.__version__, "strategy": a.strategy,
                   "backward_prefetch": a.backward_prefetch,
                   "width": a.width, "blocks": a.blocks, "batch": a.batch,
                   "threads": a.threads, "warmup": a.warmup,
                   "step_s": steps}, f)
    dist.destroy_process_group()


def overhead(a):
    """FSDP1's own CPU cost: one process (world size 1, gloo on loopback)
    times steps of the plain module and of the FSDP-wrapped one,
    interleaved so that load from other jobs falls on both alike, at the
    batch size and at batch 1.  The difference does not grow with the
    batch: it is the hooks' work, not slower compute.  Prints herd's
    fsdp.hook_s (the batch-1 difference over 4 hooks per unit and step)
    and fsdp.compute_scale (what is left at the batch size, as a factor
    on the plain step; 1 when nothing is)."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29641")
    dist.init_process_group("gloo", rank=0, world_size=1)
    plain = build(a.width, a.blocks)
    fsdp = wrap(build(a.width, a.blocks), a)
    xs = {"": torch.randn(a.batch, a.width), "1": torch.randn(1, a.width)}
    times = {}
    for rnd in range(a.warmup + a.steps):
        for b, x in xs.items():
            for name, mod in (("plain", plain), ("fsdp", fsdp)):
                opt = torch.optim.SGD(mod.parameters(), lr=1e-3)
                t = time.perf_counter()
                opt.zero_grad()
                mod(x).square().mean().backward()
                opt.step()
                if rnd >= a.warmup:
                    times.setdefault(name + b, []).append(
                        time.perf_counter() - t)
    dist.destroy_process_group()
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    units = a.blocks + 1  # one per block, and the root
    hooks = max(0.0, med["fsdp1"] - med["plain1"])
    rest = med["fsdp"] - hooks
    print(json.dumps({"plain_s": med["plain"], "fsdp_s": med["fsdp"],
                      "plain_batch1_s": med["plain1"],
                      "fsdp_batch1_s": med["fsdp1"],
                      "hook_s": hooks / (4 * units),
                      "compute_scale": max(1.0, rest / med["plain"]),
                      "torch": torch.__version__}))


def export(a):
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "python"))
    sys.path.insert(0, here)
    from herd_torch.__main__ import main as herd_torch_main
    return herd_torch_main([
        "export", "fsdp_bench:build", "-o", a.export,
        "--kwargs", json.dumps({"width": a.width, "blocks": a.blocks}),
        "--batch", str(a.batch), "--input-shape", str(a.width),
        "--optimizer", "sgd", "--threads", str(a.threads),
        "--iters", "30", "--warmup", "3", "--name", "fsdp_bench"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", default="FULL_SHARD",
                    choices=["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD"])
    ap.add_argument("--backward-prefetch", default="BACKWARD_PRE",
                    choices=["BACKWARD_PRE", "BACKWARD_POST", "none"])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pin", action="store_true",
                    help="pin rank r to CPU r %% ncpu")
    ap.add_argument("--tag", default="fsdp")
    ap.add_argument("--out", default=".")
    ap.add_argument("--export", metavar="FILE",
                    help="write herd's model file for the module and exit")
    ap.add_argument("--overhead", action="store_true",
                    help="print FSDP's compute overhead (world size 1)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.export:
        return export(a)
    if a.overhead:
        overhead(a)
        return 0
    run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
