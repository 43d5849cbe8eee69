"""bench/torch_validate/gloo_allreduce.py [--beside-compute] N...: a lone
gloo all_reduce of N float32 elements each, timed (median of 8 after 2
warm-ups, a barrier before each), under `herd testbed run` on 2 hosts.
With --beside-compute each size is timed twice, alone and while a second
thread computes (herd_torch's layers: small matrix products, which keep
a core busy), for cluster.compute_comm_slowdown (docs/network-model.md):

    herd testbed up --hosts 2 --bandwidth 800Mbit
    herd testbed run -- env GLOO_SOCKET_IFNAME=eth0 PYTHON \\
        bench/torch_validate/gloo_allreduce.py 11689512 2097152 262144

and compared with `herd perf --algo gloo --scenario CALIBRATION -b B -e B`
(the link as `herd calibrate` measured it). Rank 0 prints the medians."""

import os
import statistics
import sys
import threading
import time

import torch
import torch.distributed as dist


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))


class Beside:
    """A thread computing as herd_torch's layers do, until stopped."""

    def __init__(self):
        self.stop = False
        self.th = None

    def __enter__(self):
        from herd_torch import synth
        burn = synth.Burner()

        def run():
            while not self.stop:
                burn.spend(0.002)
        self.th = threading.Thread(target=run)
        self.th.start()
        time.sleep(0.01)  # computing before the collective starts
        return self

    def __exit__(self, *exc):
        self.stop = True
        self.th.join()


def bench(n, beside=False, reps=8):
    t = torch.zeros(n)
    out = []
    for _ in range(reps + 2):
        dist.barrier()
        if beside:
            with Beside():
                t0 = time.perf_counter()
                dist.all_reduce(t)
                out.append(time.perf_counter() - t0)
        else:
            t0 = time.perf_counter()
            dist.all_reduce(t)
            out.append(time.perf_counter() - t0)
    return statistics.median(out[2:])


def main():
    torch.set_num_threads(1)
    sys.setswitchinterval(1e-4)  # as herd_torch's ddp-run
    args = sys.argv[1:]
    beside = "--beside-compute" in args
    dist.init_process_group("gloo")
    for n in (int(a) for a in args if a != "--beside-compute"):
        t = bench(n)
        if dist.get_rank() == 0:
            print("n=%d bytes=%d median=%.2f ms rate=%.2f MB/s"
                  % (n, 4 * n, t * 1e3, 4 * n / t / 1e6), flush=True)
        if beside:
            b = bench(n, beside=True)
            if dist.get_rank() == 0:
                print("n=%d bytes=%d beside compute: median=%.2f ms "
                      "(%+.1f %%)" % (n, 4 * n, b * 1e3, (b / t - 1) * 100),
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
