#!/usr/bin/env python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read a file into GPU memory through cuFile and check every byte (real GPU servers only).

Proves that the GDS user space (libcufile + cufile.json) works on the host. Without the
nvidia-fs kernel module loaded, cuFile runs in compatibility mode (POSIX I/O staged through
host memory), which is what this script is meant to show on a host where nvidia-fs is absent.

Usage: gds_cufile_read.py DIR [--size-mib N] [--chunk-mib N]
Set CUFILE_ENV_PATH_JSON to point cuFile at a cufile.json other than /etc/cufile.json.
Prints one JSON object; exits 1 when the data read back differs from what was written.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import time


def _check(result):
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--size-mib", type=int, default=256)
    parser.add_argument("--chunk-mib", type=int, default=16)
    args = parser.parse_args()

    from cuda.bindings import cufile
    from cuda.bindings import driver as cuda

    size = args.size_mib << 20
    chunk = args.chunk_mib << 20
    path = os.path.join(args.directory, "gpufabric-gds-probe.bin")
    fstype = subprocess.run(
        ["findmnt", "-no", "FSTYPE", "-T", args.directory], capture_output=True, text=True, check=False
    ).stdout.strip()

    # Write a file with a known pattern through the page cache, then drop it from the cache.
    block = os.urandom(1 << 20)
    want = hashlib.sha256()
    with open(path, "wb") as handle:
        for i in range(args.size_mib):
            data = block[i % 1024 :] + block[: i % 1024]
            want.update(data)
            handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())

    result = {
        "path_fstype": fstype,
        "size_bytes": size,
        "chunk_bytes": chunk,
        "cufile_json": os.environ.get("CUFILE_ENV_PATH_JSON", "/etc/cufile.json"),
    }
    _check(cuda.cuInit(0))
    device = _check(cuda.cuDeviceGet(0))
    context = _check(cuda.cuDevicePrimaryCtxRetain(device))
    _check(cuda.cuCtxSetCurrent(context))
    dev_buf = _check(cuda.cuMemAlloc(chunk))
    host_buf = ctypes.create_string_buffer(chunk)
    got = hashlib.sha256()
    fd = -1
    try:
        result["cufile_version"] = cufile.get_version()
        cufile.driver_open()
        try:
            flags = os.O_RDONLY | os.O_DIRECT
            try:
                fd = os.open(path, flags)
                result["o_direct"] = True
            except OSError:
                fd = os.open(path, os.O_RDONLY)
                result["o_direct"] = False
            descr = cufile.Descr()
            descr.type = cufile.FileHandleType.OPAQUE_FD
            descr.handle.fd = fd
            descr.fs_ops = 0
            fh = cufile.handle_register(descr.ptr)
            cufile.buf_register(int(dev_buf), chunk, 0)
            elapsed = 0.0
            offset = 0
            while offset < size:
                start = time.perf_counter()
                count = cufile.read(fh, int(dev_buf), chunk, offset, 0)
                elapsed += time.perf_counter() - start
                if count <= 0:
                    raise RuntimeError(f"cuFileRead returned {count} at offset {offset}")
                _check(cuda.cuMemcpyDtoH(host_buf, dev_buf, count))
                got.update(host_buf.raw[:count])
                offset += count
            cufile.buf_deregister(int(dev_buf))
            cufile.handle_deregister(fh)
        finally:
            cufile.driver_close()
    finally:
        if fd >= 0:
            os.close(fd)
        cuda.cuMemFree(dev_buf)
        cuda.cuDevicePrimaryCtxRelease(device)
        os.unlink(path)

    result["bytes_read"] = offset
    result["read_seconds"] = round(elapsed, 4)
    result["read_gib_per_s"] = round(size / elapsed / (1 << 30), 3) if elapsed else None
    result["sha256_match"] = got.hexdigest() == want.hexdigest()
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0 if result["sha256_match"] else 1


if __name__ == "__main__":
    sys.exit(main())
