"""A module with exactly a herd job's parameters, and its compute as given.

``herd validate --torch`` describes the scenario's DDP job in a spec
(docs/testbed.md, "Real PyTorch as the reference"): the parameters in
DDP's order (shape, dtype), the gradient-ready order, and per parameter
the backward seconds herd's model gives it, plus forward, optimizer and
backward-tail seconds.  ``build`` turns that into an ``nn.Module`` whose
``DistributedDataParallel`` sees the same parameter list (one module per
parameter, registered in the spec's order) and whose gradients become
ready in the spec's order (the forward applies them in reverse ready
order, so autograd produces them in ready order).

Compute is spent, not modelled: each layer computes (small matrix
products, which release the GIL and keep a core busy as real kernels do)
until its time has passed.  The times run on a schedule per phase: forward
from the module's forward call, backward from ``BURN.begin()`` before
``backward()``; a layer ends when the sum of the phase's times so far has
passed, so time lost to other processes on a loaded machine is made up by
the layers after it instead of adding up layer by layer.  So the real job
computes for what herd predicts it computes, and what differs is what herd
models: DDP's buckets and their overlap, the copies, gloo on the links.
"""

import time

import torch
import torch.nn as nn

DTYPES = {"float32": torch.float32, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "float64": torch.float64}


class Burner:
    """Keeps one core busy on a schedule (perf_counter seconds)."""

    def __init__(self, n=48):
        self.a = torch.randn(n, n)
        self.b = torch.randn(n, n)
        self.out = torch.empty(n, n)
        self.target = None

    def begin(self):
        """A phase starts now: later spends are laid end to end from here."""
        self.target = time.perf_counter()

    def until(self, deadline):
        while time.perf_counter() < deadline:
            torch.mm(self.a, self.b, out=self.out)

    def spend(self, seconds):
        if self.target is None:
            self.begin()
        self.target += max(0.0, seconds)
        self.until(self.target)

    def block(self, seconds):
        """A stall on top of the schedule (a slow hook): `seconds` from
        now, never made up by time the phase is behind; later layers keep
        their times from its end."""
        now = time.perf_counter()
        if self.target is None or self.target < now:
            self.target = now
        self.spend(seconds)


BURN = Burner()


class _Layer(torch.autograd.Function):
    """Identity on the activation; spends fwd_s in forward and bwd_s in
    backward, then hands the parameter a gradient of its own shape."""

    @staticmethod
    def forward(ctx, x, weight, fwd_s, bwd_s):
        BURN.spend(fwd_s)
        ctx.bwd_s = bwd_s
        ctx.wshape, ctx.wdtype = weight.shape, weight.dtype
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        g = torch.full(ctx.wshape, 1e-6, dtype=ctx.wdtype)
        BURN.spend(ctx.bwd_s)  # the gradient's own fill included
        return grad, g, None, None


class Param(nn.Module):
    """One parameter of the job (DDP sees one per module)."""

    def __init__(self, shape, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(shape, dtype=dtype))


class Job(nn.Module):
    """The spec's parameters; forward spends the spec's compute."""

    def __init__(self, spec):
        super().__init__()
        ps = spec["params"]
        self.layers = nn.ModuleList(
            Param(p["shape"], DTYPES[p.get("dtype", "float32")]) for p in ps)
        order = spec.get("ready_order") or list(range(len(ps) - 1, -1, -1))
        if sorted(order) != list(range(len(ps))):
            raise ValueError("ready_order is not a permutation of the "
                             "%d parameter indices" % len(ps))
        self.forward_order = list(reversed(order))
        self.bwd_s = [float(p.get("backward_s", 0)) for p in ps]
        total = float(spec.get("forward_s", 0))
        self.fwd_s = total / len(ps) if ps else 0
        self.tail_s = float(spec.get("backward_tail_s", 0))
        buf = int(spec.get("buffer_bytes", 0))
        if buf > 0:  # broadcast by DDP before each forward
            self.register_buffer("state", torch.zeros((buf + 3) // 4))

    def forward(self, x):
        # The backward tail (after the last gradient) runs first in forward
        # order's reverse, i.e. last in backward: an extra node at the input.
        BURN.begin()  # after DDP's own pre-forward work (buffer broadcast)
        if self.tail_s > 0:
            x = _Tail.apply(x, self.tail_s)
        for i in self.forward_order:
            x = _Layer.apply(x, self.layers[i].weight, self.fwd_s,
                             self.bwd_s[i])
        return x.sum()


class _Tail(torch.autograd.Function):
    """Backward compute after the last gradient is ready."""

    @staticmethod
    def forward(ctx, x, seconds):
        ctx.seconds = seconds
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        BURN.spend(ctx.seconds)
        return grad, None


def build(spec):
    """The module for a spec (see the module docstring)."""
    return Job(spec)


def example_input():
    """The activation that flows through the stack (needs grad, so that
    backward reaches every layer)."""
    return torch.ones(4, requires_grad=True)
