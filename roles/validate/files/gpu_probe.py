#!/usr/bin/env python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU probe of gpufabric.rollout: what the GPUs of this machine really move, as JSON.

Runs wherever PyTorch with CUDA is (an NGC PyTorch Pod, a node with torch installed); it needs
nothing else from the collection. It measures, per GPU:

* host<->device copy bandwidth from pinned host memory (H2D and D2H), over a few sizes;
* device memory bandwidth: a device-to-device copy, counted as bytes read + bytes written;

and, with two or more GPUs, an all-reduce across all of them (one process per GPU, NCCL through
torch.distributed): bus bandwidth by message size up to --max-bytes (busbw = algbw x 2(n-1)/n,
as nccl-tests computes it), timed with CUDA events, plus a plain all-reduce loop timed with the
wall clock at the largest size, the way a user script would measure it, as a cross-check.

NVLink SHARP / multicast is never used: NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1
and NVSHMEM_DISABLE_NVLS=1 are forced for this process and its workers.

Output: one JSON document (schema ``gpufabric.gpu_probe``, ``schema_version`` 1) on stdout or
in --json FILE. Units: bytes, microseconds, GB/s = 1e9 bytes per second. A section that fails is
reported in ``errors`` and the others still run; the exit status is 0 when the JSON was written,
3 when PyTorch or a CUDA device could not be used (the JSON says which), 2 on a usage error.

    python3 gpu_probe.py [--json probe.json] [--max-bytes 4G] [--skip-allreduce]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import socket
import sys
import tempfile
import time
import traceback

SCHEMA = "gpufabric.gpu_probe"
SCHEMA_VERSION = 1
FORCED_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
GB = 1e9
MIB = 1 << 20
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    """'4G' -> 4294967296, '256M', '1048576'."""
    text = str(text).strip().upper().rstrip("IB")
    if text and text[-1] in SUFFIX:
        return int(float(text[:-1]) * SUFFIX[text[-1]])
    return int(text)


def read_text(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def driver_version():
    text = read_text("/proc/driver/nvidia/version") or ""
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(p.isdigit() for p in parts):
            return word
    return None


def pcie_link(bdf):
    """The GPU's PCIe link from sysfs (None where it cannot be read, e.g. in a Pod without /sys)."""
    base = f"/sys/bus/pci/devices/{bdf}"
    out = {}
    for key in ("current_link_speed", "max_link_speed", "current_link_width", "max_link_width"):
        out[key] = read_text(os.path.join(base, key))
    return out if any(out.values()) else None


def gpu_identity(torch, index):
    props = torch.cuda.get_device_properties(index)
    domain = getattr(props, "pci_domain_id", None)
    bus = getattr(props, "pci_bus_id", None)
    dev = getattr(props, "pci_device_id", None)
    bdf = None
    if bus is not None and dev is not None:
        bdf = f"{domain or 0:04x}:{bus:02x}:{dev:02x}.0"
    return {
        "index": index,
        "name": props.name,
        "pci_bus_id": bdf,
        "sm": props.major * 10 + props.minor,
        "multiprocessors": props.multi_processor_count,
        "memory_bytes": props.total_memory,
        "pcie": pcie_link(bdf) if bdf else None,
    }


def timed(torch, fn, iters, warmup):
    """Mean time of fn() in microseconds, measured with CUDA events on the current stream."""
    for _warm in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _iter in range(iters):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / iters


def copy_bandwidth(torch, index, sizes, iters):
    """Pinned host <-> device copies on GPU `index`: [{bytes, h2d_gbps, d2h_gbps}]."""
    rows = []
    with torch.cuda.device(index):
        for size in sizes:
            host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
            dev = torch.empty(size, dtype=torch.uint8, device="cuda")
            host.fill_(1)
            h2d = timed(torch, lambda d=dev, h=host: d.copy_(h, non_blocking=True), iters, 2)
            d2h = timed(torch, lambda d=dev, h=host: h.copy_(d, non_blocking=True), iters, 2)
            rows.append({"bytes": size, "h2d_gbps": size / h2d * 1e6 / GB, "d2h_gbps": size / d2h * 1e6 / GB})
            del host, dev
        torch.cuda.empty_cache()
    return rows


def device_bandwidth(torch, index, size, iters):
    """Device-to-device copy of `size` bytes: GB/s counting read + write."""
    with torch.cuda.device(index):
        src = torch.empty(size, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        src.fill_(3)
        usec = timed(torch, lambda: dst.copy_(src), iters, 3)
    torch.cuda.empty_cache()
    return {"bytes": size, "time_us": usec, "copy_gbps": 2 * size / usec * 1e6 / GB}


def allreduce_sizes(max_bytes, min_bytes=MIB):
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def _allreduce_worker(rank, world, max_bytes, plain_iters, result_path):
    import torch
    import torch.distributed as dist

    os.environ.update(FORCED_ENV)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    factor = 2.0 * (world - 1) / world
    out = {"rows": [], "plain": [], "correct": None}

    def slowest(usec):
        t = torch.tensor([usec], dtype=torch.float64, device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    # Correctness first: every rank contributes rank + 1, the sum is n(n+1)/2 everywhere.
    check = torch.full((MIB // 4,), float(rank + 1), dtype=torch.float32, device="cuda")
    dist.all_reduce(check)
    ok = bool(torch.all(check == world * (world + 1) / 2).item())
    flags = torch.tensor([1 if ok else 0], dtype=torch.int32, device="cuda")
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    out["correct"] = bool(flags.item())
    del check

    for size in allreduce_sizes(max_bytes):
        x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        iters = 20 if size <= (1 << 30) else 10
        dist.barrier()
        usec = slowest(timed(torch, lambda x=x: dist.all_reduce(x), iters, 3))
        algbw = size / usec * 1e6 / GB
        out["rows"].append({"bytes": size, "time_us": usec, "algbw_gbps": algbw, "busbw_gbps": algbw * factor})
        del x
        torch.cuda.empty_cache()

    # The cross-check: a plain loop timed with the wall clock, as a user script would.
    for size in sorted({min(max_bytes, 256 * MIB), max_bytes}):
        x = torch.ones(size // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _iter in range(plain_iters):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        usec = slowest((time.perf_counter() - t0) * 1e6 / plain_iters)
        algbw = size / usec * 1e6 / GB
        out["plain"].append({"bytes": size, "time_us": usec, "algbw_gbps": algbw, "busbw_gbps": algbw * factor})
        del x
        torch.cuda.empty_cache()

    if rank == 0:
        with open(result_path, "w") as fh:
            json.dump(out, fh)
    dist.destroy_process_group()


def allreduce(torch, world, max_bytes, plain_iters):
    import torch.multiprocessing as mp

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    fd, path = tempfile.mkstemp(prefix="gpu-probe-", suffix=".json")
    os.close(fd)
    try:
        mp.spawn(_allreduce_worker, args=(world, max_bytes, plain_iters, path), nprocs=world, join=True)
        with open(path) as fh:
            result = json.load(fh)
    finally:
        os.unlink(path)
    result.update({"world": world, "backend": "nccl", "method": "torch.distributed, CUDA events, in place, float32"})
    return result


def run(args):
    doc = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "host": socket.gethostname(),
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
        "env": {k: os.environ.get(k) for k in sorted(FORCED_ENV)},
        "driver": driver_version(),
        "gpus": [],
        "allreduce": None,
        "errors": [],
    }
    try:
        import torch
    except ImportError as exc:
        doc["errors"].append({"section": "import", "error": f"PyTorch is not importable: {exc}"})
        return doc, 3
    doc.update({"torch": torch.__version__, "cuda": torch.version.cuda})
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        doc["errors"].append({"section": "cuda", "error": "no CUDA device is visible to PyTorch"})
        return doc, 3
    try:
        nccl = torch.cuda.nccl.version()
        doc["nccl"] = ".".join(str(p) for p in nccl) if isinstance(nccl, tuple) else str(nccl)
    except Exception as exc:  # a probe reports what it could not read
        doc["nccl"] = None
        doc["errors"].append({"section": "nccl_version", "error": str(exc)})

    count = torch.cuda.device_count()
    copy_sizes = [parse_size(s) for s in args.copy_sizes.split(",")]
    for index in range(count):
        gpu = {"index": index}
        try:
            gpu.update(gpu_identity(torch, index))
            gpu["copies"] = copy_bandwidth(torch, index, copy_sizes, args.iters)
            gpu["h2d_gbps"] = max(r["h2d_gbps"] for r in gpu["copies"])
            gpu["d2h_gbps"] = max(r["d2h_gbps"] for r in gpu["copies"])
            gpu["device_copy"] = device_bandwidth(torch, index, parse_size(args.device_bytes), args.iters)
        except Exception as exc:
            doc["errors"].append({"section": f"gpu{index}", "error": repr(exc), "trace": traceback.format_exc()})
        doc["gpus"].append(gpu)

    world = count if args.world is None else min(args.world, count)
    if args.skip_allreduce:
        doc["allreduce"] = {"world": world, "skipped": "--skip-allreduce"}
    elif world < 2:
        doc["allreduce"] = {"world": world, "skipped": "one GPU: no all-reduce between GPUs"}
    else:
        try:
            doc["allreduce"] = allreduce(torch, world, parse_size(args.max_bytes), args.plain_iters)
        except Exception as exc:
            doc["allreduce"] = {"world": world, "skipped": "failed"}
            doc["errors"].append({"section": "allreduce", "error": repr(exc), "trace": traceback.format_exc()})
    return doc, 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--json", help="write the JSON here instead of stdout")
    ap.add_argument("--copy-sizes", default="64M,256M,1G", help="host<->device copy sizes (default 64M,256M,1G)")
    ap.add_argument("--device-bytes", default="2G", help="device-to-device copy size (default 2G)")
    ap.add_argument("--iters", type=int, default=20, help="timed iterations per copy (default 20)")
    ap.add_argument("--max-bytes", default="4G", help="largest all-reduce message (default 4G)")
    ap.add_argument("--plain-iters", type=int, default=10, help="iterations of the plain all-reduce loop")
    ap.add_argument("--world", type=int, help="GPUs in the all-reduce (default: all)")
    ap.add_argument("--skip-allreduce", action="store_true")
    args = ap.parse_args(argv)
    os.environ.update(FORCED_ENV)
    try:
        for size in [*args.copy_sizes.split(","), args.max_bytes, args.device_bytes]:
            parse_size(size)
    except ValueError as exc:
        ap.error(f"bad size: {exc}")
    doc, status = run(args)
    text = json.dumps(doc, indent=1, sort_keys=True)
    if args.json:
        with open(args.json, "w") as fh:
            fh.write(text + "\n")
    else:
        sys.stdout.write(text + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
