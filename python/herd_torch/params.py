"""The parameter and buffer lists DistributedDataParallel's reducer sees.

Mirrors ``DistributedDataParallel._build_params_for_reducer`` (torch 1.13
through 2.x): walk ``named_modules()`` in order (a module reached twice is
visited once), take each module's ``named_parameters(recurse=False)`` that
require grad and are not in ``_ddp_params_and_buffers_to_ignore``, and keep
a tensor only the first time it is seen, so tied weights appear once under
the name of their first owner.  The index in the returned list is DDP's
parameter index: the one bucket assignments, ready orders and herd's model
files use.
"""

import torch

_DTYPES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
}


def dtype_name(dtype):
    """herd's name for a torch floating dtype (model files accept these)."""
    try:
        return _DTYPES[dtype]
    except KeyError:
        raise ValueError("dtype %s has no herd equivalent (expected one of %s)"
                         % (dtype, ", ".join(sorted(_DTYPES.values()))))


def _ignored(module):
    return set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()) or ())


def _expects_sparse(module, param):
    # DDP's _build_params_for_reducer: an Embedding/EmbeddingBag weight
    # with sparse=True produces a sparse gradient (its own bucket).
    return (isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag))
            and bool(getattr(module, "sparse", False))
            and param is module.weight)


def ddp_parameters(module):
    """[(name, param, sparse)] in DDP's reducer order, tied tensors once."""
    ignore = _ignored(module)
    seen = set()
    out = []
    for mname, sub in module.named_modules():
        for pname, p in sub.named_parameters(recurse=False):
            name = "%s.%s" % (mname, pname) if mname else pname
            if not p.requires_grad or name in ignore or id(p) in seen:
                continue
            seen.add(id(p))
            out.append((name, p, _expects_sparse(sub, p)))
    return out


def ddp_buffer_bytes(module):
    """Bytes DDP broadcasts from rank 0 as buffers (broadcast_buffers)."""
    ignore = _ignored(module)
    seen = set()
    total = 0
    for name, b in module.named_buffers():
        if name in ignore or id(b) in seen:
            continue
        seen.add(id(b))
        total += b.numel() * b.element_size()
    return total
