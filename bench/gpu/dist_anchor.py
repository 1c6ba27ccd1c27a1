#!/usr/bin/env python3
"""torch.distributed (NCCL) beside kiln's dist_bench, on the same GPUs in the same device call.

  python3 dist_anchor.py --allreduce [--ranks 2] [--results r.jsonl]
  python3 dist_anchor.py --tp [--ranks 1|2] [--results r.jsonl]

One process per rank (torch.multiprocessing), NCCL over localhost. --allreduce: all_reduce of f32
from 1 MiB to 1 GiB, time per call (a loop of calls, then a synchronize and a barrier) and bus
bandwidth = bytes * 2 (W - 1) / W / time. --tp: the Megatron MLP block of dist_bench (bf16, x
[16, 4096], W1 [4096, 16384] split by columns, W2 by rows, one all_reduce), eager, time per step
and host time per step. NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
"""
import argparse
import json
import os
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def emit(results, row):
    print("RESULT " + json.dumps(row), flush=True)
    if results:
        with open(results, "a") as f:
            f.write(json.dumps(row) + "\n")


def allreduce(rank, world, results):
    dev = torch.device("cuda", rank)
    size = 1 << 20
    while size <= 1 << 30:
        n = size // 4
        iters = max(10, min(200, (16 << 30) // size))
        x = torch.full((n,), 1.0 + rank, device=dev)
        for _ in range(3):
            y = x.clone()
            dist.all_reduce(y)
        torch.cuda.synchronize(dev)
        dist.barrier()
        ys = [x.clone() for _ in range(2)]
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for i in range(iters):
            dist.all_reduce(ys[i % 2])  # in place, as torch users call it
        torch.cuda.synchronize(dev)
        ms = (time.perf_counter() - t0) * 1e3 / iters
        t = torch.tensor([ms], device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        ms = t.item()
        if rank == 0:
            busbw = size * 2 * (world - 1) / world / (ms * 1e-3) / 1e9
            emit(results, {"sec": "dist", "wl": "allreduce", "fw": "torch.distributed", "ranks": world, "bytes": size, "ms": ms,
                           "busbw_GBps": round(busbw, 2), "iterations": iters, "device": torch.cuda.get_device_name(dev),
                           "nccl": ".".join(map(str, torch.cuda.nccl.version()))})
        size *= 4


def tp(rank, world, results):
    dev = torch.device("cuda", rank)
    B, D, H = 16, 4096, 16384
    part = H // world
    g = torch.Generator(device=dev).manual_seed(rank)
    x = (torch.randn(B, D, device=dev, generator=g) * 0.5).to(torch.bfloat16)
    w1 = (torch.randn(D, part, device=dev, generator=g) / 64).to(torch.bfloat16)
    w2 = (torch.randn(part, D, device=dev, generator=g) / 128).to(torch.bfloat16)

    def step():
        y = torch.nn.functional.gelu(x @ w1) @ w2
        if world > 1:
            dist.all_reduce(y)
        return y

    for _ in range(5):
        step()
    torch.cuda.synchronize(dev)
    if world > 1:
        dist.barrier()
    iters = 200
    t0 = time.perf_counter()
    for _ in range(iters):
        step()
    host = (time.perf_counter() - t0) * 1e3 / iters
    torch.cuda.synchronize(dev)
    ms = (time.perf_counter() - t0) * 1e3 / iters
    if rank == 0:
        emit(results, {"sec": "dist", "wl": "tp_mlp", "fw": "torch eager", "ranks": world,
                       "shape": "x[16,4096] W1[4096,16384] bf16", "ms": ms, "host_ms_per_step": host,
                       "device": torch.cuda.get_device_name(dev)})


def worker(rank, world, mode, results, port):
    torch.cuda.set_device(rank)
    if world > 1 or mode == "allreduce":
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                device_id=torch.device("cuda", rank))
    (allreduce if mode == "allreduce" else tp)(rank, world, results)
    if dist.is_initialized():
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--allreduce", action="store_true")
    p.add_argument("--tp", action="store_true")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--results", default="")
    a = p.parse_args()
    mode = "allreduce" if a.allreduce else "tp"
    port = 29500 + os.getpid() % 1000
    mp.spawn(worker, args=(a.ranks, mode, a.results, port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
