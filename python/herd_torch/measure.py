"""Timing of real training iterations: forward, per-parameter backward,
optimizer, on the device the caller chose.

A gradient is ready when autograd has accumulated it into ``param.grad``:
that is the instant DDP's reducer hears of it (the reducer hooks the same
AccumulateGrad node).  Torch 2.1+ exposes it as
``Tensor.register_post_accumulate_grad_hook``; older releases (Debian's
1.13) only through the node itself, ``p.expand_as(p).grad_fn.next_functions
[0][0]``, which is how the 1.13 reducer finds it.  A parameter's backward
time is the time from the previous ready instant (or from the start of
backward) to its own: what herd's DDP walk spends before marking it ready.

On CUDA the clock is CUDA events recorded on the current stream from the
hooks, so the times are the device's, not the launch times of the CPU
thread (which runs ahead of the GPU).
"""

import statistics
import time

import torch


class _Clock:
    """perf_counter on CPU, CUDA events on a CUDA device."""

    def __init__(self, device):
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            return ev
        return time.perf_counter()

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def seconds(self, a, b):
        if self.cuda:
            return a.elapsed_time(b) / 1e3
        return b - a


class ReadyRecorder:
    """Records (parameter index, clock mark) as each gradient is ready."""

    def __init__(self, params, clock):
        self.clock = clock
        self.events = []
        self._handles = []
        self._keep = []  # AccumulateGrad nodes must stay alive (1.13 path)
        post = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
        for i, p in enumerate(params):
            if post:
                self._handles.append(p.register_post_accumulate_grad_hook(
                    self._post_hook(i)))
            else:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                self._keep.append(acc)
                self._handles.append(acc.register_hook(self._node_hook(i)))

    def _post_hook(self, i):
        def hook(_param):
            self.events.append((i, self.clock.mark()))
        return hook

    def _node_hook(self, i):
        def hook(*_args):
            self.events.append((i, self.clock.mark()))
        return hook

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []
        self._keep = []


def copy_GBps(device, nbytes, trials=9):
    """Device memory copy rate in GB/s (DDP's gradient <-> bucket copies):
    the median over ``trials`` timings of 3 copies each, so that one
    slice of time lost to another process (a shared CPU) does not become
    the model's rate: a single timing of 5 copies once measured 0.75 GB/s
    on a machine whose memcpy runs at 6 GB/s."""
    n = max(1 << 18, min(int(nbytes), 64 << 20) // 4)
    src = torch.ones(n, device=device)
    dst = torch.empty_like(src)
    clock = _Clock(device)
    dst.copy_(src)
    clock.sync()
    reps, rates = 3, []
    for _ in range(trials):
        t0 = clock.mark()
        for _ in range(reps):
            dst.copy_(src)
        t1 = clock.mark()
        clock.sync()
        s = clock.seconds(t0, t1)
        if s > 0:
            rates.append(n * 4 * reps / s / 1e9)
    return _median(rates) if rates else 0.0


def _median(xs):
    return statistics.median(xs) if xs else 0.0


def run_iterations(module, params, step, device, iters, warmup):
    """Run warmup + iters iterations of ``step`` and time them.

    ``step`` is an object with ``forward() -> loss``, ``optimizer_step()``
    and ``zero_grad()``.  Returns a dict of per-iteration lists and the
    ready order and per-parameter times of the measured iterations.
    """
    clock = _Clock(device)
    rec = ReadyRecorder(params, clock)
    fwd, bwd, opt, tails = [], [], [], []
    per_param = [[] for _ in params]
    offsets = [[] for _ in params]
    orders = []
    try:
        for it in range(warmup + iters):
            step.zero_grad()
            clock.sync()
            t0 = clock.mark()
            loss = step.forward()
            t1 = clock.mark()
            rec.events = []
            loss.backward()
            t2 = clock.mark()
            step.optimizer_step()
            t3 = clock.mark()
            clock.sync()
            if it < warmup:
                continue
            fwd.append(clock.seconds(t0, t1))
            bwd.append(clock.seconds(t1, t2))
            opt.append(clock.seconds(t2, t3))
            order, seen, prev = [], set(), t1
            for i, mark in rec.events:
                if i in seen:  # a tensor used twice accumulates twice
                    continue
                seen.add(i)
                order.append(i)
                per_param[i].append(max(0.0, clock.seconds(prev, mark)))
                offsets[i].append(clock.seconds(t1, mark))
                prev = mark
            tails.append(max(0.0, clock.seconds(prev, t2)))
            orders.append(order)
    finally:
        rec.remove()
    last = orders[-1] if orders else []
    ready = set(last)
    unused = [i for i in range(len(params)) if i not in ready]
    return {
        "forward_s": fwd, "backward_s": bwd, "optimizer_s": opt,
        "backward_tail_s": tails,
        "ready_order": last + unused, "unused": unused,
        "order_identical": all(o == last for o in orders),
        "param_backward_s": [_median(x) for x in per_param],
        "ready_offsets_s": [_median(x) for x in offsets],
    }
