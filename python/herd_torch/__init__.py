"""herd_torch: writes herd's DDP model file for any torch nn.Module.

    import herd_torch
    model = herd_torch.export_model(net, torch.randn(32, 3, 224, 224),
                                    device="cuda", name="mynet")
    herd_torch.write_model(model, "mynet.json")

or from the shell: ``python3 -m herd_torch export 'pkg.mod:factory' ...``.
Needs only torch (1.13 or later).  See python/README.md.
"""

from .export import __version__, default_loss, dumps, export_model, write_model
from .params import ddp_buffer_bytes, ddp_parameters

__all__ = ["export_model", "write_model", "dumps", "default_loss",
           "ddp_parameters", "ddp_buffer_bytes", "__version__"]
