#!/usr/bin/env python
"""Run a tiny NCCL all-reduce over every local GPU so NCCL writes its topology XML.

    NCCL_TOPO_DUMP_FILE=/tmp/nccl-topo.xml python3 tests/hardware/nccl_dump.py

One process per GPU (torch.multiprocessing), 64 MiB all-reduce; prints the bus bandwidth.
NCCL_NVLS_ENABLE=0 is forced (the shared H200 machine must not use NVLink SHARP).
"""

from __future__ import annotations

import os
import sys
import time


def worker(rank: int, world: int) -> None:
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    x = torch.ones(16 * 1024 * 1024, device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t = time.time()
    for _round in range(10):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dt = (time.time() - t) / 10
    if rank == 0:
        size = x.numel() * 4
        busbw = size / dt * 2 * (world - 1) / world / 1e9
        print(f"all_reduce {size >> 20} MiB x{world}: {dt * 1e3:.2f} ms, busbw {busbw:.1f} GB/s, value {x[0].item()}")
    dist.destroy_process_group()


def main() -> int:
    import torch
    import torch.multiprocessing as mp

    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    world = torch.cuda.device_count()
    if world < 1:
        print("no GPU", file=sys.stderr)
        return 1
    mp.spawn(worker, args=(world,), nprocs=world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
