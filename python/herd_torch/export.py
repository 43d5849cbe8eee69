"""Builds herd's model file (docs/ddp.md, "Model files") for an nn.Module
from real iterations, and writes it.

The file holds DDP's parameter list (params.py), the gradient-ready order
and per-parameter backward times, forward and optimizer time, the buffer
bytes DDP broadcasts, and the device's copy rate; everything under
"measured" is the raw record (per-iteration times, ready offsets) that herd
itself does not read.
"""

import json
import platform

import torch

from . import measure, params as ddp_params

__version__ = "0.1"


def _tensors(obj):
    """Floating tensors in a model output (tensor, sequence, dict, or an
    object with a to_tuple() such as HuggingFace's ModelOutput)."""
    if torch.is_tensor(obj):
        return [obj] if obj.is_floating_point() else []
    if hasattr(obj, "to_tuple"):
        obj = obj.to_tuple()
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        out = []
        for o in obj:
            out.extend(_tensors(o))
        return out
    return []


def default_loss(output):
    """A scalar that depends on every floating output: the sum of their
    mean squares (any loss gives the same backward graph shape)."""
    ts = [t for t in _tensors(output) if t.requires_grad]
    if not ts:
        raise ValueError("the model's output holds no floating tensor that "
                         "requires grad; pass loss_fn=")
    loss = ts[0].float().square().mean()
    for t in ts[1:]:
        loss = loss + t.float().square().mean()
    return loss


def _to_device(x, device):
    if torch.is_tensor(x):
        return x.to(device)
    if isinstance(x, dict):
        return {k: _to_device(v, device) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_device(v, device) for v in x)
    return x


class _Step:
    def __init__(self, module, inputs, loss_fn, optimizer):
        self.module, self.loss_fn, self.opt = module, loss_fn, optimizer
        if isinstance(inputs, dict):
            self.args, self.kwargs = (), inputs
        elif isinstance(inputs, (list, tuple)):
            self.args, self.kwargs = tuple(inputs), {}
        else:
            self.args, self.kwargs = (inputs,), {}

    def forward(self):
        return self.loss_fn(self.module(*self.args, **self.kwargs))

    def zero_grad(self):
        if self.opt is not None:
            self.opt.zero_grad(set_to_none=True)
        else:
            self.module.zero_grad(set_to_none=True)

    def optimizer_step(self):
        if self.opt is not None:
            self.opt.step()


def _make_optimizer(optimizer, plist):
    if optimizer is None or optimizer == "none":
        return None
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer
    if callable(optimizer):
        return optimizer(plist)
    names = {"sgd": lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9),
             "adam": lambda p: torch.optim.Adam(p, lr=1e-4),
             "adamw": lambda p: torch.optim.AdamW(p, lr=1e-4)}
    if optimizer not in names:
        raise ValueError("optimizer %r: expected one of %s, none, an "
                         "optimizer or a callable" % (optimizer,
                                                      ", ".join(names)))
    return names[optimizer](plist)


def export_model(module, example_inputs, loss_fn=None, optimizer="sgd",
                 device=None, iters=5, warmup=2, name=None, source=None):
    """Measure ``module`` and return herd's model file as a dict.

    example_inputs: a tensor, a tuple of positional inputs or a dict of
    keyword inputs (one batch; moved to ``device``).  loss_fn: output ->
    scalar (default: mean square of every floating output).  optimizer:
    "sgd", "adam", "adamw", "none", a torch optimizer or a callable taking
    the parameter list.  device: where to run (default: where the module's
    parameters are).  The module is put in train mode and trained for
    warmup + iters iterations (its weights change).
    """
    if iters < 1 or warmup < 0:
        raise ValueError("iters must be >= 1 and warmup >= 0")
    plist = ddp_params.ddp_parameters(module)
    if not plist:
        raise ValueError("the module has no parameter that requires grad")
    if device is None:
        device = plist[0][1].device
    device = torch.device(device)
    module.to(device)
    module.train()
    plist = ddp_params.ddp_parameters(module)  # .to() may replace tensors
    tensors = [p for _, p, _ in plist]
    opt = _make_optimizer(optimizer, tensors)
    step = _Step(module, _to_device(example_inputs, device),
                 loss_fn or default_loss, opt)
    m = measure.run_iterations(module, tensors, step, device, iters, warmup)
    med = measure._median
    total_bytes = sum(p.numel() * p.element_size() for p in tensors)

    params = []
    for i, (pname, p, sparse) in enumerate(plist):
        entry = {"index": i, "name": pname, "shape": list(p.shape),
                 "dtype": ddp_params.dtype_name(p.dtype),
                 "numel": p.numel(), "bytes": p.numel() * p.element_size(),
                 "backward_s": m["param_backward_s"][i]}
        if sparse:
            entry["sparse"] = True
        params.append(entry)
    name = name or type(module).__name__
    out = {
        "model": name,
        "source": source or "herd_torch %s: torch %s, %s, python %s" % (
            __version__, torch.__version__, device,
            platform.python_version()),
        "num_params": len(params),
        "total_numel": sum(p["numel"] for p in params),
        "total_bytes": total_bytes,
        "compute": {
            "note": "measured by herd_torch over %d iterations on %s "
                    "(medians)" % (iters, device),
            "forward_s": med(m["forward_s"]),
            "backward_s": med(m["backward_s"]),
            "optimizer_s": med(m["optimizer_s"]),
            "backward_tail_s": med(m["backward_tail_s"]),
            "kernel_overhead_s": 0,
            "copy_GBps": round(measure.copy_GBps(device, total_bytes), 3),
            "buffer_bytes": ddp_params.ddp_buffer_bytes(module),
        },
        "grad_ready_order": m["ready_order"],
        "measured": {
            "torch": torch.__version__, "device": str(device),
            "iters": iters, "warmup": warmup,
            "optimizer": (type(opt).__name__ if opt is not None else "none"),
            "forward_s": m["forward_s"], "backward_s": m["backward_s"],
            "optimizer_s": m["optimizer_s"],
            "backward_tail_s": m["backward_tail_s"],
            "order_identical_across_iterations": m["order_identical"],
            "unused_params": m["unused"],
            "grad_ready_offsets_us": [round(m["ready_offsets_s"][i] * 1e6, 3)
                                      for i in m["ready_order"]],
        },
        "params": params,
    }
    return out


def dumps(model):
    """The model as JSON in the layout of models/*.json: one parameter per
    line, so diffs and greps stay readable."""
    head = {k: v for k, v in model.items() if k != "params"}
    lines = ["{"]
    for k, v in head.items():
        lines.append(" %s: %s," % (json.dumps(k), json.dumps(v)))
    lines.append(' "params": [')
    ps = model.get("params", [])
    for i, p in enumerate(ps):
        lines.append("  %s%s" % (json.dumps(p), "," if i + 1 < len(ps)
                                 else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_model(model, path):
    with open(path, "w") as f:
        f.write(dumps(model))
