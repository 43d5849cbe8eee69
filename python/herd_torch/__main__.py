"""python3 -m herd_torch export SPEC [options] -o FILE
python3 -m herd_torch ddp-run --spec JOB.json -o DIR   (herd validate --torch)

SPEC names a callable that returns the nn.Module: 'package.module:name'
(name may be dotted, e.g. 'mypkg.nets:Zoo.small'), called with the
keyword arguments of --kwargs.  The input is random: --batch N and
--input-shape (per sample) give its shape, --input-dtype its type (integer
types draw from [0, --input-high): token ids).
"""

import argparse
import importlib
import json
import sys

import torch

from . import export

_INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16,
                 "bfloat16": torch.bfloat16, "float64": torch.float64,
                 "int64": torch.int64, "long": torch.int64,
                 "int32": torch.int32}


def _die(msg):
    sys.stderr.write("herd_torch: %s\n" % msg)
    sys.exit(2)


def load_spec(spec, kwargs):
    """The module built by 'pkg.mod:callable'."""
    if ":" not in spec:
        _die("%s: expected MODULE:CALLABLE, e.g. "
             "torchvision.models:resnet50" % spec)
    modname, attr = spec.split(":", 1)
    try:
        obj = importlib.import_module(modname)
    except ImportError as e:
        _die("%s: cannot import %s (%s)" % (spec, modname, e))
    for part in attr.split("."):
        if not hasattr(obj, part):
            _die("%s: %s has no attribute %r" % (spec, modname, part))
        obj = getattr(obj, part)
    if not callable(obj):
        _die("%s: %s is not callable" % (spec, attr))
    module = obj(**kwargs)
    if not isinstance(module, torch.nn.Module):
        _die("%s: returned %s, not a torch.nn.Module"
             % (spec, type(module).__name__))
    return module


def _shape(text):
    try:
        dims = [int(d) for d in text.split(",") if d.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expected integers separated "
                                         "by commas, e.g. 3,224,224" % text)
    if any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError("%r: dimensions must be > 0" % text)
    return dims


def _parser():
    ap = argparse.ArgumentParser(prog="python3 -m herd_torch",
                                 description="Write herd's DDP model file "
                                 "for a torch nn.Module, measured.")
    sub = ap.add_subparsers(dest="cmd")
    ex = sub.add_parser("export", help="measure a module, write its model "
                        "file")
    ex.add_argument("spec", help="MODULE:CALLABLE returning the nn.Module")
    ex.add_argument("-o", "--output", required=True, help="model file")
    ex.add_argument("--batch", type=int, default=32)
    ex.add_argument("--input-shape", type=_shape, default=[3, 224, 224],
                    help="per-sample shape, comma separated "
                    "(default 3,224,224)")
    ex.add_argument("--input-dtype", choices=sorted(_INPUT_DTYPES),
                    default="float32")
    ex.add_argument("--input-high", type=int, default=1000,
                    help="integer inputs are drawn from [0, HIGH)")
    ex.add_argument("--kwargs", default="{}",
                    help="JSON object of keyword arguments for CALLABLE")
    ex.add_argument("--device", default="cpu",
                    help="cpu, cuda, cuda:1, ... (default cpu)")
    ex.add_argument("--dtype", choices=["float32", "float16", "bfloat16"],
                    help="cast the module's parameters (default: as built)")
    ex.add_argument("--optimizer", default="sgd",
                    choices=["sgd", "adam", "adamw", "none"])
    ex.add_argument("--iters", type=int, default=5)
    ex.add_argument("--warmup", type=int, default=2)
    ex.add_argument("--threads", type=int,
                    help="torch.set_num_threads (CPU)")
    ex.add_argument("--name", help="model name in the file "
                    "(default: the callable's name)")
    ex.add_argument("--seed", type=int, default=0)
    dr = sub.add_parser("ddp-run", help="one rank of a real DDP job from "
                        "herd's job spec, timed (herd validate --torch)")
    dr.add_argument("--spec", required=True, help="job spec (JSON)")
    dr.add_argument("-o", "--out", required=True, help="output folder")
    dr.add_argument("--threads", type=int, default=1,
                    help="torch.set_num_threads (default 1)")
    return ap


def _ddp_run(a):
    from . import ddp_run
    try:
        spec = ddp_run.load_spec(a.spec)
    except (OSError, ValueError) as e:
        _die("ddp-run: %s" % e)
    return ddp_run.run(spec, a.out, threads=a.threads)


def main(argv=None):
    ap = _parser()
    a = ap.parse_args(argv)
    if a.cmd == "ddp-run":
        return _ddp_run(a)
    if a.cmd != "export":
        ap.print_help(sys.stderr)
        return 2
    if a.batch < 1 or a.iters < 1 or a.warmup < 0:
        _die("--batch and --iters must be >= 1, --warmup >= 0")
    try:
        kwargs = json.loads(a.kwargs)
    except ValueError as e:
        _die("--kwargs: not JSON (%s)" % e)
    if not isinstance(kwargs, dict):
        _die("--kwargs: expected a JSON object")
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    try:
        device = torch.device(a.device)
    except RuntimeError as e:
        _die("--device %s: %s" % (a.device, e))
    if device.type == "cuda" and not torch.cuda.is_available():
        _die("--device %s: CUDA is not available in this torch" % a.device)
    module = load_spec(a.spec, kwargs)
    if a.dtype:
        module = module.to(_INPUT_DTYPES[a.dtype])
    shape = [a.batch] + a.input_shape
    idt = _INPUT_DTYPES[a.input_dtype]
    if idt.is_floating_point:
        x = torch.randn(shape).to(idt)
    else:
        x = torch.randint(0, a.input_high, shape, dtype=idt)
    name = a.name or a.spec.split(":", 1)[1].split(".")[-1]
    source = "herd_torch %s: torch %s, %s, %s, batch %d, input %s %s" % (
        export.__version__, torch.__version__, a.spec, device, a.batch,
        "x".join(str(d) for d in a.input_shape), a.input_dtype)
    model = export.export_model(module, x, optimizer=a.optimizer,
                                device=device, iters=a.iters,
                                warmup=a.warmup, name=name, source=source)
    export.write_model(model, a.output)
    m = model["measured"]
    print("%s: %d parameters, %.1f MB of gradients; forward %.2f ms, "
          "backward %.2f ms, optimizer %.2f ms (%s, median of %d)" % (
              a.output, model["num_params"], model["total_bytes"] / 1e6,
              model["compute"]["forward_s"] * 1e3,
              model["compute"]["backward_s"] * 1e3,
              model["compute"]["optimizer_s"] * 1e3, device, a.iters))
    if m["unused_params"]:
        print("warning: parameters %s got no gradient (placed last in "
              "grad_ready_order); DDP needs find_unused_parameters=True"
              % m["unused_params"], file=sys.stderr)
    if not m["order_identical_across_iterations"]:
        print("warning: the gradient-ready order changed between "
              "iterations; the file has the last one", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
