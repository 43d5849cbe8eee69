# Writes nccl_synth_rank{0,1}.json: a SYNTHETIC PyTorch 2.x profiler trace of a
# GPU DDP job on NCCL (no GPU was available to record a real one). It follows
# the documented Kineto schema: distributedInfo with nccl_version and pg_config,
# record_param_comms cpu_ops (nested in c10d::allreduce_) with Collective name,
# In/Out msg nelems, dtype, Group size, Process Group Name/Ranks, autograd on
# its own thread, compute kernels on stream 7 and ncclDevKernel_* on stream 20.
# Model: 4 parameters whose gradients become ready as A [256,1024], B [1024],
# C [512,512], D [512]; bucket_cap_mb 1 gives buckets [A], [B, C], [D].
import json, sys

GRADS = [([256, 1024], 1100), ([1024], 1300), ([512, 512], 1900), ([512], 2300)]
BUCKETS = [(262144, 1120, 0), (263168, 1920, 1), (512, 2320, 2)]  # count, launch us, last grad


def pg_args(n, dt="Float"):
    return {"Collective name": "allreduce", "In msg nelems": n, "Out msg nelems": n,
            "dtype": dt, "Group size": 2, "Process Group Name": "0",
            "Process Group Ranks": [0, 1]}


def step(ev, n, t0, slow):
    s = lambda us: t0 + us * slow
    ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % n,
               "pid": 100, "tid": 1, "ts": t0, "dur": 3600 * slow})
    ev.append({"ph": "X", "cat": "user_annotation", "name": "DistributedDataParallel.forward",
               "pid": 100, "tid": 1, "ts": s(10), "dur": 990 * slow})
    ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, "tid": 1,
               "ts": s(20), "dur": 5, "args": dict(pg_args(32), **{"Collective name": "broadcast"})})
    ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Broadcast_RING_LL",
               "pid": 0, "tid": 20, "ts": s(30), "dur": 15,
               "args": dict(pg_args(32), **{"Collective name": "broadcast"})})
    ev.append({"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel",
               "pid": 0, "tid": 7, "ts": s(50), "dur": 850 * slow})
    for shape, at in GRADS:
        ev.append({"ph": "X", "cat": "cpu_op",
                   "name": "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                   "pid": 100, "tid": 2, "ts": s(at), "dur": 30})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad",
                   "pid": 100, "tid": 2, "ts": s(at) + 1, "dur": 5,
                   "args": {"Input Dims": [shape], "Input type": ["float"]}})
    ev.append({"ph": "X", "cat": "cpu_op",
               "name": "autograd::engine::evaluate_function: AddmmBackward0",
               "pid": 100, "tid": 2, "ts": s(1010), "dur": 80})
    prev = s(1000)
    for count, launch, _ in BUCKETS:
        ev.append({"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 100, "tid": 2,
                   "ts": s(launch), "dur": 8,
                   "args": {"Input Dims": [[[count]], [], [], [], []],
                            "Input type": ["TensorList", "", "", "", ""]}})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 100, "tid": 2,
                   "ts": s(launch) + 1, "dur": 5, "args": pg_args(count)})
        # the compute kernel that made the bucket's last gradient, then NCCL
        ev.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn",
                   "pid": 0, "tid": 7, "ts": prev, "dur": s(launch) - prev - 20})
        ev.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                   "pid": 0, "tid": 20, "ts": s(launch) + 10, "dur": count / 1000 + 40,
                   "args": pg_args(count)})
        prev = s(launch)
    ev.append({"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#SGD.step",
               "pid": 100, "tid": 1, "ts": s(3200), "dur": 300 * slow})
    ev.append({"ph": "X", "cat": "kernel", "name": "void at::native::multi_tensor_apply_kernel",
               "pid": 0, "tid": 7, "ts": s(3210), "dur": 250 * slow})


for rank in (0, 1):
    ev = [{"ph": "M", "name": "thread_name", "pid": 100, "tid": 1, "args": {"name": "thread 1 (python)"}},
          {"ph": "M", "name": "thread_name", "pid": 100, "tid": 2, "args": {"name": "thread 2 (pt_autograd_0)"}}]
    slow = 1.0 + 0.1 * rank
    for n, t0 in ((2, 1000000), (3, 1005000)):
        step(ev, n, t0, slow)
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000,
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2, "pg_count": 1,
                               "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                              "backend_config": "cuda:nccl", "pg_size": 2,
                                              "ranks": [0, 1]}],
                               "nccl_version": "2.21.5"},
           "deviceProperties": [{"id": 0, "name": "synthetic GPU"}],
           "traceEvents": ev}
    with open("nccl_synth_rank%d.json" % rank, "w") as f:
        json.dump(doc, f, indent=0)
