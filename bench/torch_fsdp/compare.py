"""Predicted against measured for bench/torch_fsdp/run.sh: one herd
prediction per configuration (strategy x backward_prefetch) from the
exported model file (its compute, and the spread of its samples as the
compute jitter), FSDP's measured overhead (hook time and what is left of
a compute slowdown) and the links herd calibrate measured, beside the
median of the real steps (every rank, every round pooled).  Prints a TSV
table."""

import argparse
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys

SCENARIO = """name: fsdp-bench
cluster:
  nodes: {world}
  gpus_per_node: 1
  inter: {{bandwidth: {bw}, latency: {lat}}}
workload:
  fsdp:
    model: {model}
    backend: gloo
    strategy: {strategy}
    backward_prefetch: {prefetch}
    wrap: transformer_block
    compute_scale: {scale}
    hook_s: {hook}
    optim_states: 0
    steps: 16
stragglers:
  jitter: {{kind: lognormal, sigma: {sigma}}}
seed: 1
"""


def inter_link(path):
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*inter:\s*\{bandwidth:\s*([^,]+),\s*latency:\s*"
                         r"([^}]+)\}", line)
            if m:
                return m.group(1).strip(), m.group(2).strip()
    sys.exit("%s: no inter link" % path)


def measured(out, strategy, prefetch):
    steps, world = [], 0
    for f in glob.glob(os.path.join(out, "fsdp_%s_%s_r*_rank*.steps.json" %
                                    (strategy, prefetch))):
        with open(f) as fh:
            d = json.load(fh)
        steps += d["step_s"]
        world = d["world_size"]
    return (statistics.median(steps) if steps else None), world


def jitter_sigma(model, units):
    """The spread of the compute the exporter measured, as the sigma of a
    lognormal factor per unit: 1.4826 x the median absolute deviation of
    the log of every forward, backward and optimizer sample from its
    phase's median (robust to the odd outlier) is the spread of a whole
    phase; herd draws one factor per unit's compute, and `units`
    independent draws average out to a phase sqrt(units) times narrower,
    so a unit's sigma is the phase's times sqrt(units)."""
    with open(model) as f:
        m = json.load(f).get("measured", {})
    dev = []
    for k in ("forward_s", "backward_s", "optimizer_s"):
        logs = [math.log(x) for x in m.get(k, []) if x > 0]
        if logs:
            mid = statistics.median(logs)
            dev += [abs(x - mid) for x in logs]
    return 1.4826 * statistics.median(dev) * math.sqrt(units) if dev else 0.0


def run_herd(herd, path, world, bw, lat, model, strategy, prefetch, scale,
             hook, sigma):
    with open(path, "w") as f:
        f.write(SCENARIO.format(world=world, bw=bw, lat=lat, model=model,
                                strategy=strategy, prefetch=prefetch,
                                scale=scale, hook=hook, sigma="%.4f" % sigma))
    js = path[:-5] + ".json"
    subprocess.run([herd, "fsdp", "run", path, "--json", js, "--quiet"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(js) as f:
        return json.load(f)


def predicted(herd, out, strategy, prefetch, world, scale, hook):
    bw, lat = inter_link(os.path.join(out, "calibrate.yaml"))
    path = os.path.join(out, "predict_%s_%s.yaml" % (strategy, prefetch))
    model = os.path.join(out, "model.json")
    args = (herd, path, world, bw, lat, model, strategy, prefetch, scale,
            hook)
    units = run_herd(*args, 0.0)["units"]  # how herd wraps the module
    return run_herd(*args, jitter_sigma(model, units))["steady"]["step_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--herd", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--configs", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.out, "overhead.json")) as f:
        ov = json.load(f)
    # older captures measured no hooks: their overhead is all compute_scale
    scale, hook = ov["compute_scale"], ov.get("hook_s", 0)
    print("strategy\tbackward_prefetch\tmeasured_ms\tpredicted_ms\terror_pct")
    for c in a.configs.split():
        strategy, prefetch = c.split(":")
        m, world = measured(a.out, strategy, prefetch)
        if m is None:
            print("%s\t%s\t-\t-\t-" % (strategy, prefetch))
            continue
        p = predicted(a.herd, a.out, strategy, prefetch, world, scale, hook)
        print("%s\t%s\t%.1f\t%.1f\t%+.1f" % (strategy, prefetch, m * 1e3,
                                             p * 1e3, (p - m) / m * 100))


if __name__ == "__main__":
    main()
