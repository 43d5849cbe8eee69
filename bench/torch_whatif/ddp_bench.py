"""One rank of a real PyTorch DDP job (gloo, CPU) under torch.profiler:
the measured side of herd's what-if acceptance (issue 12).

Run by `herd testbed run -- python3 ddp_bench.py ...` (one process per
testbed host; RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT come from the
launcher).  The model is a deep MLP (width 512, --layers linear layers,
about 1 MiB of float32 gradient per layer) so that the bucket size
changes how much communication overlaps backward at 100-400 Mbit/s.
Each rank writes its profiler trace (gzipped Chrome/Kineto JSON) and its
per-step wall times (JSON) under --out.
"""

import argparse
import gzip
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def build(layers, width, classes):
    mods = [nn.Linear(width, width), nn.ReLU()]
    for _ in range(layers - 2):
        mods += [nn.Linear(width, width), nn.ReLU()]
    mods.append(nn.Linear(width, classes))
    return nn.Sequential(*mods)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bucket-cap-mb", type=float, required=True)
    ap.add_argument("--layers", type=int, default=20)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pin", action="store_true",
                    help="pin rank r to CPU r %% ncpu (the ranks of one "
                    "machine never share a core)")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if a.pin:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    torch.manual_seed(0)
    model = build(a.layers, a.width, 10)
    ddp = nn.parallel.DistributedDataParallel(model,
                                              bucket_cap_mb=a.bucket_cap_mb)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(a.batch, a.width, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    sched = torch.profiler.schedule(wait=0, warmup=a.warmup, active=a.steps,
                                    repeat=1)
    starts = []
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            record_shapes=True, schedule=sched) as prof:
        for _ in range(a.warmup + a.steps):
            starts.append(time.perf_counter())
            opt.zero_grad()
            loss = nn.functional.cross_entropy(ddp(x), y)
            loss.backward()
            opt.step()
            prof.step()
        starts.append(time.perf_counter())
    # One barrier after the timed loop so no rank exits while another
    # still needs it (not inside the loop: it would change the timing).
    dist.barrier()
    steps = [b - s for s, b in zip(starts, starts[1:])][a.warmup:]
    os.makedirs(a.out, exist_ok=True)
    base = os.path.join(a.out, "%s_rank%d" % (a.tag, rank))
    prof.export_chrome_trace(base + ".pt.trace.json")
    with open(base + ".pt.trace.json", "rb") as src, \
            gzip.open(base + ".pt.trace.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(base + ".pt.trace.json")
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    with open(base + ".steps.json", "w") as f:
        json.dump({"rank": rank, "world_size": world,
                   "torch": torch.__version__,
                   "bucket_cap_mb": a.bucket_cap_mb, "layers": a.layers,
                   "width": a.width, "batch": a.batch, "threads": a.threads,
                   "grad_bytes": grad_bytes, "warmup": a.warmup,
                   "step_s": steps}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
