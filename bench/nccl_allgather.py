"""All-gather time on this machine's GPUs through PyTorch's NCCL, for the sizes MultiGpuSpmv
gathers (y of 4-8 M rows in f32 = 16-32 MiB), next to a plain peer copy over NVLink: what an
all-gather of y can cost here, independent of augur. Writes CSV on stdout.

    python3 bench/nccl_allgather.py            # every GPU count from 2 to all present
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES_MIB = [1, 4, 16, 32, 64]


def worker(rank, world, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    for mib in SIZES_MIB:
        total = mib * 2**20 // 4 // world * world
        out = torch.empty(total, dtype=torch.float32, device="cuda")
        inp = torch.ones(total // world, dtype=torch.float32, device="cuda")
        for _ in range(10):
            dist.all_gather_into_tensor(out, inp)
        torch.cuda.synchronize()
        times = []
        for _ in range(50):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            dist.barrier()
            s.record()
            dist.all_gather_into_tensor(out, inp)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        times.sort()
        if rank == 0:
            t = times[len(times) // 2]
            recv = total * 4 * (world - 1) / world
            q.put(f"all_gather,{world},{mib},{t*1e6:.1f},{recv/t/1e9:.1f}")
    dist.destroy_process_group()


def peer_copy():
    rows = []
    for mib in SIZES_MIB:
        n = mib * 2**20 // 4
        a = torch.ones(n, dtype=torch.float32, device="cuda:0")
        b = torch.empty(n, dtype=torch.float32, device="cuda:1")
        for _ in range(5):
            b.copy_(a)
        torch.cuda.synchronize()
        times = []
        for _ in range(30):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record(torch.cuda.current_stream(0))
            b.copy_(a)
            e.record(torch.cuda.current_stream(0))
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        times.sort()
        t = times[len(times) // 2]
        rows.append(f"peer_copy_0_to_1,2,{mib},{t*1e6:.1f},{n*4/t/1e9:.1f}")
    return rows


if __name__ == "__main__":
    print("op,gpus,total_mib,median_us,received_gb_per_s_per_gpu")
    ngpu = torch.cuda.device_count()
    for r in peer_copy():
        print(r, flush=True)
    for world in range(2, ngpu + 1):
        q = mp.get_context("spawn").SimpleQueue()
        mp.spawn(worker, args=(world, 29500 + world, q), nprocs=world, join=True)
        while not q.empty():
            print(q.get(), flush=True)
