"""Tests of herd_torch: DDP's parameter order, the measured times, and the
exported file against herd (HERD_BINARY) and against torch's own DDP
reducer (gloo, world size 1)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
sys.path[:0] = [PKG, HERE]

import herd_torch  # noqa: E402
import nets  # noqa: E402

torch.set_num_threads(1)


def herd_binary():
    path = os.environ.get("HERD_BINARY")
    if not path:
        raise unittest.SkipTest("HERD_BINARY is not set")
    return path


def herd(*args):
    p = subprocess.run([herd_binary()] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        raise AssertionError("herd %s: exit %d\n%s%s" % (
            " ".join(args), p.returncode, p.stdout, p.stderr))
    return p.stdout


def export_mlp(**kw):
    torch.manual_seed(0)
    return herd_torch.export_model(nets.mlp(), torch.randn(8, 256), iters=3,
                                   warmup=1, **kw)


class TmpDir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="herd_torch_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class ParamOrder(unittest.TestCase):
    def test_tied_frozen_shared(self):
        names = [n for n, _, _ in herd_torch.ddp_parameters(nets.tied_lm())]
        self.assertEqual(names, [
            "embed.weight", "frozen.bias", "block.0.weight", "block.0.bias",
            "block.1.weight", "block.1.bias", "norm.weight", "norm.bias"])

    def test_ignored_and_sparse(self):
        m = torch.nn.Sequential(torch.nn.Embedding(10, 4, sparse=True),
                                torch.nn.Linear(4, 4))
        m._ddp_params_and_buffers_to_ignore = ["1.bias"]
        got = [(n, s) for n, _, s in herd_torch.ddp_parameters(m)]
        self.assertEqual(got, [("0.weight", True), ("1.weight", False)])

    def test_buffer_bytes(self):
        # BatchNorm1d(64): running mean and var (float32), a step counter
        # (int64)
        self.assertEqual(herd_torch.ddp_buffer_bytes(nets.tied_lm()),
                         2 * 64 * 4 + 8)


class Measured(unittest.TestCase):
    def test_times_positive_and_ready_order_reversed(self):
        m = export_mlp()
        c = m["compute"]
        for k in ("forward_s", "backward_s", "optimizer_s"):
            self.assertGreater(c[k], 0, k)
        for p in m["params"]:
            self.assertGreater(p["backward_s"], 0, p["name"])
        order = m["grad_ready_order"]
        self.assertEqual(sorted(order), list(range(m["num_params"])))
        # a sequential net: layer k's gradients are ready before layer k-1's
        layers = [i // 2 for i in order]
        self.assertEqual(layers, sorted(layers, reverse=True))
        self.assertEqual(m["measured"]["unused_params"], [])

    def test_tied_model_file(self):
        torch.manual_seed(0)
        m = herd_torch.export_model(nets.tied_lm(),
                                    torch.randint(0, 500, (4, 16)),
                                    iters=2, warmup=1)
        self.assertEqual(m["num_params"], 8)
        self.assertEqual(m["params"][0]["shape"], [500, 64])
        self.assertEqual(m["compute"]["buffer_bytes"], 520)
        # the tied head is the first consumer of the embedding's gradient
        # in backward, so the embedding is not the last one ready; its
        # second use (the lookup) adds into the same accumulator: once
        self.assertEqual(sorted(m["grad_ready_order"]), list(range(8)))

    def test_unused_parameter_reported(self):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.used = nets.mlp(layers=2, width=32)
                self.unused = torch.nn.Linear(3, 3)

            def forward(self, x):
                return self.used(x)

        m = herd_torch.export_model(Net(), torch.randn(2, 32), iters=1,
                                    warmup=0)
        self.assertEqual(m["measured"]["unused_params"], [4, 5])
        self.assertEqual(m["grad_ready_order"][-2:], [4, 5])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            herd_torch.export_model(nets.mlp(1, 4), torch.randn(1, 4),
                                    iters=0)
        with self.assertRaises(ValueError):
            herd_torch.export_model(nets.mlp(1, 4), torch.randn(1, 4),
                                    optimizer="lbfgs2")


class AgainstHerd(TmpDir):
    def write(self, model, name="m.json"):
        path = os.path.join(self.tmp, name)
        herd_torch.write_model(model, path)
        return path

    def test_cli_export_check_and_run(self):
        out = os.path.join(self.tmp, "mlp.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([PKG, HERE]))
        p = subprocess.run(
            [sys.executable, "-m", "herd_torch", "export", "nets:mlp",
             "--batch", "8", "--input-shape", "256", "--iters", "2",
             "--warmup", "1", "--threads", "1", "-o", out],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("12 parameters", p.stdout)
        with open(out) as f:
            m = json.load(f)
        self.assertEqual(m["model"], "mlp")
        scen = os.path.join(self.tmp, "s.yaml")
        with open(scen, "w") as f:
            f.write("name: exported\ncluster:\n  nodes: 2\n"
                    "  gpus_per_node: 1\n"
                    "  intra: {bandwidth: 10GB/s, latency: 5us}\n"
                    "  inter: {bandwidth: 100Mbps, latency: 50us}\n"
                    "workload:\n  ddp:\n    model: mlp.json\n"
                    "    bucket_cap_mb: 1\n    steps: 3\n")
        self.assertIn("ok", herd("check", scen))
        report = os.path.join(self.tmp, "r.json")
        herd("ddp", "run", scen, "--quiet", "--json", report)
        with open(report) as f:
            self.assertIn("step", f.read())

    def test_cli_errors(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([PKG, HERE]))
        for spec, msg in (("nets", "expected MODULE:CALLABLE"),
                          ("nets:nothing", "has no attribute"),
                          ("no_such_mod_xyz:f", "cannot import")):
            p = subprocess.run(
                [sys.executable, "-m", "herd_torch", "export", spec, "-o",
                 os.path.join(self.tmp, "x.json")], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                universal_newlines=True)
            self.assertEqual(p.returncode, 2, spec)
            self.assertIn(msg, p.stderr)

    def test_buckets_load(self):
        path = self.write(export_mlp())
        b = json.loads(herd("ddp", "buckets", path, "--bucket-cap-mb",
                            "0.25", "--phase", "rebuilt"))
        self.assertEqual(sorted(i for bk in b["bucket_indices"] for i in bk),
                         list(range(12)))


def _parse_groups(text):
    return [[int(i) for i in g.split()] for g in text.split(",")]


class AgainstTorchDDP(TmpDir):
    """herd ddp buckets on the exported file gives the buckets the real
    reducer rebuilt, and the ready order DDP itself recorded."""

    @classmethod
    def setUpClass(cls):
        if not dist.is_available() or not dist.is_gloo_available():
            raise unittest.SkipTest("torch.distributed with gloo missing")
        cls.store = tempfile.mktemp(prefix="herd_torch_store_")
        dist.init_process_group("gloo", init_method="file://" + cls.store,
                                rank=0, world_size=1)

    @classmethod
    def tearDownClass(cls):
        dist.destroy_process_group()
        if os.path.exists(cls.store):
            os.unlink(cls.store)

    def check(self, factory, x, cap):
        """The buckets for one cap, or None where this herd cannot express
        this torch's first-bucket rule."""
        torch.manual_seed(0)
        m = herd_torch.export_model(factory(), x, iters=2, warmup=1)
        path = os.path.join(self.tmp, "m.json")
        herd_torch.write_model(m, path)
        torch.manual_seed(0)
        ddp = torch.nn.parallel.DistributedDataParallel(factory(),
                                                        bucket_cap_mb=cap)
        for _ in range(3):  # the rebuild is at the second forward
            herd_torch.default_loss(ddp(x)).backward()
        log = ddp._get_ddp_logging_data()
        order = [int(i) for i in
                 log["prev_iteration_grad_ready_order_indices"].split(",")]
        self.assertEqual(m["grad_ready_order"], order)
        # torch 1.13: the first bucket is 1 MiB (dist._DEFAULT_FIRST_BUCKET_
        # BYTES); later releases use the cap itself when bucket_cap_mb is
        # given (DDP.bucket_bytes_cap_default is False then).
        args = ["ddp", "buckets", path, "--bucket-cap-mb", str(cap),
                "--phase", "rebuilt"]
        if not getattr(ddp, "bucket_bytes_cap_default", True) and cap != 1:
            if "--first-bucket-mb" not in herd("ddp", "buckets", "--help"):
                return None
            args += ["--first-bucket-mb", str(cap)]
        b = json.loads(herd(*args))
        rebuilt = log["rebuilt_per_bucket_param_indices"]
        self.assertEqual(b["bucket_indices"], _parse_groups(rebuilt))
        self.assertEqual(b["bucket_bytes"],
                         [int(s) for s in
                          log["rebuilt_bucket_sizes"].split(",")])
        return b

    def test_mlp_several_caps(self):
        x = torch.randn(8, 256)
        for cap in (0.25, 1, 25):
            with self.subTest(cap=cap):
                b = self.check(lambda: nets.mlp(8, 256), x, cap)
                if b is None:
                    self.skipTest("herd ddp buckets has no --first-bucket-mb")
                if cap == 1:  # a 1 MiB first bucket, then 1 MiB ones
                    self.assertEqual(len(b["bucket_indices"]), 2)

    def test_tied_lm(self):
        self.check(nets.tied_lm, torch.randint(0, 500, (4, 16)), 0.01)


if __name__ == "__main__":
    unittest.main()
