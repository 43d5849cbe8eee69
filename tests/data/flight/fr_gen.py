# Make PyTorch flight-recorder dumps on CPU/gloo: 2 ranks, a few collectives,
# then optionally a mismatch. Usage: fr_gen.py CASE OUTDIR
import os, sys, json, time
import torch, torch.distributed as dist
import torch.multiprocessing as mp
import torch._C._distributed_c10d as c10d

def run(rank, world, case, out, port):
    os.environ["TORCH_FR_BUFFER_SIZE"] = "100"
    os.environ["TORCH_NCCL_TRACE_BUFFER_SIZE"] = "100"
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world)
    t = torch.ones(1000)
    for i in range(3):
        dist.all_reduce(t)
    dist.broadcast(t, 0)
    g = torch.zeros(2000)
    dist.all_gather_into_tensor(g, t)
    if case == "size" :
        x = torch.ones(10 if rank == 0 else 20)
        # gloo aborts the process once the sizes meet: dump right after
        # posting, while the op is still on its way
        w = dist.all_reduce(x, async_op=True)
        s = c10d._dump_fr_trace_json(True, False)
        with open(os.path.join(out, "rank%d.json" % rank), "wb") as f:
            f.write(s)
        time.sleep(1.0)
        os._exit(0)
    elif case == "missing":
        if rank != 1:
            x = torch.ones(10)
            w = dist.all_reduce(x, async_op=True)
        time.sleep(1.0)
    elif case == "coll":
        x = torch.ones(10)
        if rank == 0:
            w = dist.all_reduce(x, async_op=True)
        else:
            w = dist.broadcast(x, 0, async_op=True)
        time.sleep(1.0)
    s = c10d._dump_fr_trace_json(True, False)
    with open(os.path.join(out, "rank%d.json" % rank), "wb") as f:
        f.write(s)
    os._exit(0)

if __name__ == "__main__":
    case, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    port = 29500 + (os.getpid() % 1000)
    mp.spawn(run, args=(2, case, out, port), nprocs=2, join=False)
    time.sleep(8)
