"""One rank of a real PyTorch DDP job, timed: the measured side of
``herd validate --torch`` (docs/testbed.md).

Run once per testbed host by ``herd testbed run`` (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT from the testbed; gloo over the host's eth0):

    python3 -m herd_torch ddp-run --spec JOB.json -o DIR

JOB.json is written by herd (the scenario's DDP job: parameters, ready
order, compute, DDP options, stragglers).  The model is ``synth.build``'s
stack of parameters of exactly those shapes.  The gradients are reduced by
a communication hook that does what DDP's built-in reduction does (an
all_reduce with SUM) and records, per bucket, when DDP launched it and when
its all_reduce completed.  It does not divide by the world size: DDP's
built-in path folds that division into its copy of the gradients into the
bucket, at no cost of its own, where a hook would make a pass over the
bucket on the autograd thread (5.5 ms for 46.7 MB here) that a job
without a hook does not; the job updates no weights, so sums do as well
as means.  A one-gradient straggler is a hook
on that parameter on that rank that computes for the delay, blocking the
autograd thread as a slow layer (or a ``time.sleep`` in a hook) does.

Each rank writes DIR/torch-rank<R>.json: a herd timeline (Chrome trace
events, herd's fields) with a ``step`` mark at the start of each
iteration, forward/backward/optimizer compute spans and one all_reduce
record per bucket and step (label ``bucket K``), times in ns from rank 0's
clock at the start (one machine: one monotonic clock).  herd aligns those
records with its prediction and writes the timeline-rank<R>.json files the
report reads.
"""

import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

from . import synth


def _now_ns():
    return time.monotonic_ns()


class BucketTimer:
    """DDP communication hook: the built-in all_reduce, timed."""

    def __init__(self, world):
        self.world = world
        self.records = []  # (bucket index, launch ns, end ns, bytes, dtype)
        self.step = -1

    def hook(self, _state, bucket):
        t0 = _now_ns()
        buf = bucket.buffer()
        fut = dist.all_reduce(buf, async_op=True).get_future()
        idx, step = bucket.index(), self.step
        nbytes, dtype = buf.numel() * buf.element_size(), buf.dtype

        def done(f):
            self.records.append((step, idx, t0, _now_ns(), nbytes, dtype))
            return f.value()[0]

        return fut.then(done)


def _delay_hook(seconds):
    def hook(grad):
        synth.BURN.block(seconds)
        return grad
    return hook


def _event(name, cat, rank, start, end, args):
    e = {"name": name, "cat": cat, "ph": "X" if cat != "mark" else "i",
         "ts": start / 1e3, "pid": rank, "tid": rank}
    if cat == "mark":
        e["s"] = "t"
    else:
        e["dur"] = (end - start) / 1e3
    a = {"seq": 0, "group": 0, "start_ns": start, "end_ns": end}
    a.update(args)
    e["args"] = a
    return e


_DT_NAME = {v: k for k, v in synth.DTYPES.items()}


def run(spec, out, threads=1):
    torch.set_num_threads(threads)
    sys.setswitchinterval(1e-4)  # the hook's callbacks wait less for the GIL
    if os.environ.get("HERD_HOST_ADDR"):  # a testbed host: its link
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    # One clock for all ranks: rank 0's monotonic time now is zero.
    base = torch.tensor([_now_ns()], dtype=torch.int64)
    dist.broadcast(base, 0)
    base = int(base.item())

    torch.manual_seed(0)
    # A slow rank (stragglers.ranks[].compute): the testbed's factor.
    scale = float(os.environ.get("HERD_COMPUTE_SCALE", "1") or 1)
    spec = scaled(spec, scale)
    model = synth.build(spec)
    ddp_opts = spec.get("ddp", {})
    kwargs = {"bucket_cap_mb": float(ddp_opts.get("bucket_cap_mb", 25)),
              "broadcast_buffers": bool(ddp_opts.get("broadcast_buffers",
                                                     True)),
              "gradient_as_bucket_view": bool(
                  ddp_opts.get("gradient_as_bucket_view", False)),
              "find_unused_parameters": bool(
                  ddp_opts.get("find_unused_parameters", False))}
    ddp = nn.parallel.DistributedDataParallel(model, **kwargs)
    timer = BucketTimer(world)
    ddp.register_comm_hook(None, timer.hook)
    for d in spec.get("stragglers", []):
        if int(d["rank"]) == rank:
            p = model.layers[int(d["param"])].weight
            p.register_hook(_delay_hook(float(d["delay_s"])))
    opt_s = float(spec.get("optimizer_s", 0))
    steps = int(spec.get("steps", 4))
    x = synth.example_input()

    events, marks = [], []
    for it in range(steps):
        timer.step = it
        t0 = _now_ns()
        marks.append(t0)
        loss = ddp(x)
        t1 = _now_ns()
        synth.BURN.begin()
        loss.backward()
        t2 = _now_ns()
        synth.BURN.begin()
        synth.BURN.spend(opt_s)  # the optimizer step, as the spec times it
        for p in model.parameters():
            p.grad = None
        t3 = _now_ns()
        events.append(_event("forward", "compute", rank, t0, t1,
                             {"label": "forward"}))
        events.append(_event("backward", "compute", rank, t1, t2,
                             {"label": "backward"}))
        events.append(_event("optimizer", "compute", rank, t2, t3,
                             {"label": "optimizer"}))
    t_end = _now_ns()
    # No rank leaves while another still needs it (outside the timing).
    dist.barrier()
    for t in marks:
        events.append(_event("step", "mark", rank, t, t, {"label": "step"}))
    for step, idx, s, e, nbytes, dtype in sorted(timer.records):
        dname = _DT_NAME.get(dtype, "float32")
        size = torch.tensor([], dtype=dtype).element_size()
        events.append(_event("all_reduce", "coll", rank, s, e, {
            "label": "bucket %d" % idx, "bytes": nbytes,
            "count": nbytes // size, "dtype": dname, "op": "sum",
            "algorithm": "ring", "peer": -1, "step": step}))
    for e in events:  # relative to rank 0's start, never negative
        for k in ("start_ns", "end_ns"):
            e["args"][k] = max(0, e["args"][k] - base)
        e["ts"] = e["args"]["start_ns"] / 1e3
        if "dur" in e:
            e["dur"] = (e["args"]["end_ns"] - e["args"]["start_ns"]) / 1e3
    log = {}
    try:
        log = ddp._get_ddp_logging_data()
    except Exception:  # private API: informative only
        pass
    other = {"format": "herd-timeline", "version": 1, "engine": "torch",
             "torch": torch.__version__, "world_size": str(world),
             "bucket_sizes": str(log.get("rebuilt_bucket_sizes", "")),
             "span_s": "%.6f" % ((t_end - marks[0]) / 1e9 if marks else 0)}
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "torch-rank%d.json" % rank)
    with open(path + ".tmp", "w") as f:
        json.dump({"traceEvents": events, "otherData": other}, f)
    os.replace(path + ".tmp", path)
    dist.destroy_process_group()
    return 0


def scaled(spec, factor):
    """The spec with its compute (not the straggler delays) times factor."""
    if factor == 1:
        return spec
    out = dict(spec)
    for k in ("forward_s", "optimizer_s", "backward_tail_s"):
        out[k] = float(spec.get(k, 0)) * factor
    out["params"] = [dict(p, backward_s=float(p.get("backward_s", 0))
                          * factor) for p in spec["params"]]
    return out


def load_spec(path):
    with open(path) as f:
        spec = json.load(f)
    if not isinstance(spec, dict) or not spec.get("params"):
        raise ValueError("%s: expected a job spec with params" % path)
    return spec
