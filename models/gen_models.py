#!/usr/bin/env python3
"""models/gen_models.py - write herd's DDP model files (models/*.json).

resnet50, bert_base and gpt2_small take their parameter lists and
gradient-ready orders from the PyTorch reference data
(tests/data/ddp/{models,buckets}, measured from PyTorch); gpt_1_3b and gpt_7b are built from
the published GPT-3 XL (24 x 2048) and GPT-3 6.7B (32 x 4096) shapes in the
GPT-2 layout. Every file gets a "compute" section estimated from FLOPs on
an A100-class device (312 TFLOP/s peak, 50% efficiency): per parameter the
backward FLOPs of the layer that produces its gradient, forward FLOPs,
optimizer (Adam, memory bound) and buffer bytes. These are estimates for
predictions, not measurements. Usage: gen_models.py [DATA_DIR] [OUT_DIR]
(DATA_DIR defaults to tests/data of this repository)
"""
import json
import os
import sys

TFLOPS, EFF, HBM = 312.0, 0.5, 1.5e12
OVERHEAD_S = 5e-6  # kernel launches per gradient


def compute(fwd, params, opt_bytes_per_param, buffer_bytes, note):
    numel = sum(p["numel"] for p in params)
    return {"note": note, "device_tflops": TFLOPS, "efficiency": EFF,
            "forward_flops": fwd, "optimizer_s": numel * opt_bytes_per_param / HBM,
            "kernel_overhead_s": OVERHEAD_S, "copy_GBps": 750,
            "buffer_bytes": buffer_bytes}


def param(i, name, shape, bwd_flops):
    n = 1
    for s in shape:
        n *= s
    return {"index": i, "name": name, "shape": list(shape), "dtype": "float32",
            "numel": n, "bytes": 4 * n, "backward_flops": float(bwd_flops)}


def transformer_flops(p, tokens, seq, d, kind):
    """Backward FLOPs behind one parameter's gradient: 4*n*T for matmul
    weights (grad input + grad weight), elementwise work for the rest; the
    attention scores' backward (8*s*d*T) lands on the QKV weight whose
    gradient waits for it."""
    n = p["numel"]
    if len(p["shape"]) == 2 and kind.get(p["name"]) != "embedding":
        f = 4.0 * n * tokens
        if kind.get(p["name"]) == "qkv":
            f += 8.0 * seq * d * tokens
        return f
    return 8.0 * n * tokens if kind.get(p["name"]) != "embedding" else 2.0 * n


def gpt_model(name, layers, d, vocab, ctx, tokens, seq, src):
    shapes = [("transformer.wte.weight", (vocab, d)),
              ("transformer.wpe.weight", (ctx, d))]
    for b in range(layers):
        h = "transformer.h.%d." % b
        shapes += [(h + "ln_1.weight", (d,)), (h + "ln_1.bias", (d,)),
                   (h + "attn.c_attn.weight", (d, 3 * d)),
                   (h + "attn.c_attn.bias", (3 * d,)),
                   (h + "attn.c_proj.weight", (d, d)),
                   (h + "attn.c_proj.bias", (d,)),
                   (h + "ln_2.weight", (d,)), (h + "ln_2.bias", (d,)),
                   (h + "mlp.c_fc.weight", (d, 4 * d)),
                   (h + "mlp.c_fc.bias", (4 * d,)),
                   (h + "mlp.c_proj.weight", (4 * d, d)),
                   (h + "mlp.c_proj.bias", (d,))]
    shapes += [("transformer.ln_f.weight", (d,)), ("transformer.ln_f.bias", (d,))]
    params = [param(i, nm, sh, 0) for i, (nm, sh) in enumerate(shapes)]
    return finish_gpt(name, params, layers, d, vocab, tokens, seq, src, ctx)


def finish_gpt(name, params, layers, d, vocab, tokens, seq, src, ctx):
    kind = {"transformer.wpe.weight": "embedding"}
    for p in params:
        if p["name"].endswith("attn.c_attn.weight"):
            kind[p["name"]] = "qkv"
    for p in params:
        p["backward_flops"] = transformer_flops(p, tokens, seq, d, kind)
    # wte is tied to lm_head: its gradient comes from the head's matmul
    params[0]["backward_flops"] = 4.0 * vocab * d * tokens
    fwd = sum(p["backward_flops"] for p in params) / 2.0
    n = len(params)
    order = [n - 2, n - 1]
    for b in reversed(range(layers)):
        base = 2 + 12 * b
        order += [base + j for j in (11, 10, 9, 8, 6, 7, 5, 4, 3, 2, 0, 1)]
    order += [1, 0]
    note = ("%d tokens per GPU per step (seq %d); FLOPs estimate" % (tokens, seq))
    return {"model": name, "source": src, "num_params": n,
            "total_numel": sum(p["numel"] for p in params),
            "total_bytes": sum(p["bytes"] for p in params),
            "compute": compute(fwd, params, 32, layers * ctx * ctx, note),
            "grad_ready_order": order, "params": params}


def from_reference(data, name):
    with open(os.path.join(data, "ddp/models/%s.json" % name)) as f:
        m = json.load(f)
    with open(os.path.join(data, "ddp/buckets/%s.json" % name)) as f:
        b = json.load(f)
    return m, b["grad_ready_order"]


def resnet_res(pname):
    if pname.startswith("conv1") or pname.startswith("bn1"):
        return 112
    for layer, res in (("layer1", 56), ("layer2", 28), ("layer3", 14), ("layer4", 7)):
        if pname.startswith(layer):
            return res
    return 1


def resnet50(data):
    m, order = from_reference(data, "resnet50")
    batch = 64
    bn_bytes = 0
    for p in m["params"]:
        hw = resnet_res(p["name"]) ** 2
        if len(p["shape"]) == 4:
            out_hw = hw
            p["backward_flops"] = 4.0 * p["numel"] * out_hw * batch
        elif len(p["shape"]) == 2:
            p["backward_flops"] = 4.0 * p["numel"] * batch
        else:  # BatchNorm weight/bias, fc bias: elementwise over the map
            p["backward_flops"] = 8.0 * p["numel"] * hw * batch
            if ".bn" in p["name"] or p["name"].startswith("bn") or "downsample.1" in p["name"]:
                if p["name"].endswith(".weight"):
                    bn_bytes += 2 * p["bytes"] + 8
    fwd = sum(p["backward_flops"] for p in m["params"]) / 2.0
    m["compute"] = compute(fwd, m["params"], 32, bn_bytes,
                           "batch %d images 224x224 per GPU; FLOPs estimate" % batch)
    m["grad_ready_order"] = order
    return m


def bert_base(data):
    m, order = from_reference(data, "bert_base")
    tokens, seq, d = 32 * 128, 128, 768
    kind = {}
    for p in m["params"]:
        if "embeddings" in p["name"] and len(p["shape"]) == 2:
            kind[p["name"]] = "embedding"
        if p["name"].endswith("attention.self.query.weight"):
            kind[p["name"]] = "qkv"
    for p in m["params"]:
        p["backward_flops"] = transformer_flops(p, tokens, seq, d, kind)
    fwd = sum(p["backward_flops"] for p in m["params"]) / 2.0
    m["compute"] = compute(fwd, m["params"], 32, 2 * 512 * 8,
                           "batch 32 x seq 128 per GPU; FLOPs estimate")
    m["grad_ready_order"] = order
    return m


def gpt2_small(data):
    m, order = from_reference(data, "gpt2_small")
    out = finish_gpt("gpt2_small", m["params"], 12, 768, 50257, 8 * 1024, 1024,
                     m["source"], 1024)
    out["grad_ready_order"] = order
    return out


def write(out_dir, m):
    path = os.path.join(out_dir, m["model"] + ".json")
    with open(path, "w") as f:
        f.write("{\n")
        keys = [k for k in m if k != "params"]
        for k in keys:
            f.write(" %s: %s,\n" % (json.dumps(k), json.dumps(m[k])))
        f.write(' "params": [\n')
        for i, p in enumerate(m["params"]):
            f.write("  %s%s\n" % (json.dumps(p), "," if i + 1 < len(m["params"]) else ""))
        f.write(" ]\n}\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../tests/data")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else here
    write(out_dir, resnet50(data))
    write(out_dir, bert_base(data))
    write(out_dir, gpt2_small(data))
    write(out_dir, gpt_model("gpt_1_3b", 24, 2048, 50257, 2048, 4 * 2048, 2048,
                             "GPT-3 XL shapes (24 layers, d 2048, 16 heads, ctx 2048) in the GPT-2 layout; generated"))
    write(out_dir, gpt_model("gpt_7b", 32, 4096, 50257, 2048, 2 * 2048, 2048,
                             "GPT-3 6.7B shapes (32 layers, d 4096, 32 heads, ctx 2048) in the GPT-2 layout; generated"))


if __name__ == "__main__":
    main()
