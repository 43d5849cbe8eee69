# Writes nccl_synth_rank{0,1}.json: a SYNTHETIC PyTorch 2.x profiler trace of a
# GPU DDP job on NCCL (no GPU was available to record a real one). It follows
# the documented Kineto schema: distributedInfo with nccl_version and pg_config,
# record_param_comms cpu_ops (nested in c10d::allreduce_) with Collective name,
# In/Out msg nelems, dtype, Group size, Process Group Name/Ranks, autograd on
# its own thread, cudaLaunchKernel runtime events and kernels tied by
# "correlation", compute kernels on stream 7 and ncclDevKernel_* on stream 20.
# The CPU runs ahead of the GPU, as on real GPUs: the backward's CPU events
# take ~0.1 ms while its kernels take 1.3 ms.
# Model: 4 parameters whose gradients become ready as A [256,1024], B [1024],
# C [512,512], D [512]; bucket_cap_mb 1 gives buckets [A], [B, C], [D].
import json

# shape, CPU instant of AccumulateGrad, GPU instant the gradient is made
GRADS = [([256, 1024], 1010, 1300), ([1024], 1030, 1500), ([512, 512], 1050, 1900),
         ([512], 1070, 2300)]
# count, CPU launch, GPU start (after its last gradient)
BUCKETS = [(262144, 1012, 1310), (263168, 1052, 1910), (512, 1072, 2310)]


def pg_args(n, coll="allreduce", dt="Float"):
    return {"Collective name": coll, "In msg nelems": n, "Out msg nelems": n,
            "dtype": dt, "Group size": 2, "Process Group Name": "0",
            "Process Group Ranks": [0, 1]}


class Gen:
    def __init__(self):
        self.ev, self.corr = [], 1000

    def x(self, **kw):
        self.ev.append(dict(ph="X", **kw))

    def kernel(self, name, tid, cpu_ts, ts, dur, cpu_tid, args=None):
        self.corr += 1
        self.x(cat="cuda_runtime", name="cudaLaunchKernel", pid=100, tid=cpu_tid,
               ts=cpu_ts, dur=3, args={"correlation": self.corr})
        a = dict(args or {}, correlation=self.corr, stream=tid)
        self.x(cat="kernel", name=name, pid=0, tid=tid, ts=ts, dur=dur, args=a)


def step(g, n, t0, slow):
    c = lambda us: t0 + us          # CPU instants (the CPU is not the bottleneck)
    s = lambda us: t0 + us * slow   # GPU instants (rank 1's GPU is 10 % slower)
    g.x(cat="user_annotation", name="ProfilerStep#%d" % n, pid=100, tid=1, ts=t0,
        dur=3600 * slow)
    g.x(cat="user_annotation", name="DistributedDataParallel.forward", pid=100, tid=1,
        ts=c(10), dur=190)
    g.x(cat="cpu_op", name="record_param_comms", pid=100, tid=1, ts=c(20), dur=5,
        args=pg_args(32, "broadcast"))
    g.kernel("ncclDevKernel_Broadcast_RING_LL", 20, c(21), s(30), 15, 1,
             pg_args(32, "broadcast"))
    g.kernel("void at::native::vectorized_elementwise_kernel", 7, c(15), s(50),
             850 * slow, 1)
    g.x(cat="cpu_op", name="autograd::engine::evaluate_function: AddmmBackward0",
        pid=100, tid=2, ts=c(1000), dur=8)
    prev = s(1000)
    for shape, cpu, gpu in GRADS:
        g.kernel("ampere_sgemm_128x64_nn", 7, c(cpu - 5), prev, s(gpu) - prev, 2)
        prev = s(gpu)
        g.x(cat="cpu_op",
            name="autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
            pid=100, tid=2, ts=c(cpu), dur=5)
        g.x(cat="cpu_op", name="torch::autograd::AccumulateGrad", pid=100, tid=2,
            ts=c(cpu) + 1, dur=2, args={"Input Dims": [shape], "Input type": ["float"]})
    for count, cpu, gpu in BUCKETS:
        g.x(cat="cpu_op", name="c10d::allreduce_", pid=100, tid=2, ts=c(cpu), dur=4,
            args={"Input Dims": [[[count]], [], [], [], []],
                  "Input type": ["TensorList", "", "", "", ""]})
        g.x(cat="cpu_op", name="record_param_comms", pid=100, tid=2, ts=c(cpu) + 1,
            dur=2, args=pg_args(count))
        g.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 20, c(cpu) + 2, s(gpu),
                 count / 1000 + 40, 2, pg_args(count))
    g.x(cat="user_annotation", name="Optimizer.step#SGD.step", pid=100, tid=1,
        ts=c(1100), dur=50)
    g.kernel("void at::native::multi_tensor_apply_kernel", 7, c(1110), s(2400),
             250 * slow, 1)


for rank in (0, 1):
    g = Gen()
    g.ev += [{"ph": "M", "name": "thread_name", "pid": 100, "tid": 1,
              "args": {"name": "thread 1 (python)"}},
             {"ph": "M", "name": "thread_name", "pid": 100, "tid": 2,
              "args": {"name": "thread 2 (pt_autograd_0)"}}]
    slow = 1.0 + 0.1 * rank
    for n, t0 in ((2, 1000000), (3, 1005000)):
        step(g, n, t0, slow)
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 1700000000000000000,
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2, "pg_count": 1,
                               "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                              "backend_config": "cuda:nccl", "pg_size": 2,
                                              "ranks": [0, 1]}],
                               "nccl_version": "2.21.5"},
           "deviceProperties": [{"id": 0, "name": "synthetic GPU"}],
           "traceEvents": g.ev}
    with open("nccl_synth_rank%d.json" % rank, "w") as f:
        json.dump(doc, f, indent=0)
