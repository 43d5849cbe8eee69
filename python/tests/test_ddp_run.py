"""Tests of herd_torch's ddp-run (herd validate --torch's measured side):
the synthesized module has the spec's parameters in DDP's order and
produces gradients in the spec's ready order, and a one-rank gloo job
writes a herd timeline with per-bucket all_reduce records and step marks
(herd reads it back when HERD_BINARY is set)."""

import json
import os
import socket
import subprocess
import sys
import tempfile
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
sys.path[:0] = [PKG, HERE]

import herd_torch  # noqa: E402
from herd_torch import synth  # noqa: E402

SPEC = {
    "params": [
        {"name": "a.weight", "shape": [64, 3, 3, 3], "dtype": "float32",
         "backward_s": 0.002},
        {"name": "a.bias", "shape": [64], "dtype": "float32",
         "backward_s": 0.0005},
        {"name": "b.weight", "shape": [300, 1000], "dtype": "float32",
         "backward_s": 0.003},
        {"name": "b.bias", "shape": [300], "dtype": "float32",
         "backward_s": 0.0005},
    ],
    "ready_order": [3, 2, 0, 1],
    "forward_s": 0.004, "optimizer_s": 0.001, "backward_tail_s": 0.001,
    "buffer_bytes": 256, "steps": 3,
    "ddp": {"bucket_cap_mb": 0.5},
    "stragglers": [{"rank": 0, "param": 2, "delay_s": 0.005}],
}


class Synth(unittest.TestCase):
    def test_parameters_in_spec_order(self):
        model = synth.build(SPEC)
        shapes = [list(p.shape) for _, p, _ in
                  herd_torch.ddp_parameters(model)]
        self.assertEqual(shapes, [p["shape"] for p in SPEC["params"]])
        self.assertEqual(herd_torch.ddp_buffer_bytes(model), 256)

    def test_ready_order_and_compute(self):
        model = synth.build(SPEC)
        params = [p for _, p, _ in herd_torch.ddp_parameters(model)]
        order = []
        for i, p in enumerate(params):
            p.register_hook(lambda g, i=i: order.append(i))
        loss = model(synth.example_input())
        import time
        t0 = time.perf_counter()
        synth.BURN.begin()  # backward's schedule starts now (as ddp-run)
        loss.backward()
        spent = time.perf_counter() - t0
        self.assertEqual(order, SPEC["ready_order"])
        self.assertGreaterEqual(spent, 0.006)  # the backward_s spent
        for p in params:
            self.assertEqual(p.grad.shape, p.shape)

    def test_bad_ready_order(self):
        spec = dict(SPEC, ready_order=[0, 0, 1, 2])
        with self.assertRaises(ValueError):
            synth.build(spec)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OneRank(unittest.TestCase):
    def test_timeline(self):
        with tempfile.TemporaryDirectory(prefix="herd_ddp_run_") as tmp:
            spec = os.path.join(tmp, "job.json")
            with open(spec, "w") as f:
                json.dump(SPEC, f)
            env = dict(os.environ, RANK="0", WORLD_SIZE="1",
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
                       PYTHONPATH=PKG)
            p = subprocess.run([sys.executable, "-m", "herd_torch", "ddp-run",
                                "--spec", spec, "-o", tmp], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            path = os.path.join(tmp, "torch-rank0.json")
            with open(path) as f:
                tl = json.load(f)
            self.assertEqual(tl["otherData"]["engine"], "torch")
            ev = tl["traceEvents"]
            steps = [e for e in ev if e["cat"] == "mark"
                     and e["name"] == "step"]
            self.assertEqual(len(steps), 3)
            colls = [e for e in ev if e["cat"] == "coll"]
            labels = {e["args"]["label"] for e in colls}
            # 1.2 MB of gradients at a 0.5 MB cap: several buckets
            self.assertIn("bucket 0", labels)
            self.assertIn("bucket 1", labels)
            for e in colls:
                a = e["args"]
                self.assertEqual(e["name"], "all_reduce")
                self.assertGreaterEqual(a["end_ns"], a["start_ns"])
                self.assertGreater(a["bytes"], 0)
            herd = os.environ.get("HERD_BINARY")
            if herd:  # herd reads it as any timeline
                out = os.path.join(tmp, "cmp")
                r = subprocess.run([herd, "compare", path, path, "-o", out,
                                    "--no-plots"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE,
                                   universal_newlines=True)
                self.assertIn(r.returncode, (0, 1), r.stderr)
                self.assertNotIn("traceEvents[", r.stderr)
