"""bench/torch_validate/gloo_allreduce.py N...: a lone gloo all_reduce of
N float32 elements each, timed (median of 8 after 2 warm-ups, a barrier
before each), under `herd testbed run` on 2 hosts:

    herd testbed up --hosts 2 --bandwidth 800Mbit
    herd testbed run -- env GLOO_SOCKET_IFNAME=eth0 PYTHON \\
        bench/torch_validate/gloo_allreduce.py 11689512 2097152 262144

and compared with `herd perf --algo gloo --scenario CALIBRATION -b B -e B`
(the link as `herd calibrate` measured it). Rank 0 prints the medians."""

import statistics
import sys
import time

import torch
import torch.distributed as dist


def bench(n, reps=8):
    t = torch.zeros(n)
    out = []
    for _ in range(reps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(t)
        out.append(time.perf_counter() - t0)
    return statistics.median(out[2:])


def main():
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    for n in (int(a) for a in sys.argv[1:]):
        t = bench(n)
        if dist.get_rank() == 0:
            print("n=%d bytes=%d median=%.2f ms rate=%.2f MB/s"
                  % (n, 4 * n, t * 1e3, 4 * n / t / 1e6), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
