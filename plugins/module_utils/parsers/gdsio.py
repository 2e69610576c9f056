# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gdsio`` (GPUDirect Storage benchmark, /usr/local/cuda/gds/tools/gdsio): command lines and
result lines.

One result line per run (NVIDIA GDS Benchmarking and Configuration Guide, "gdsio Utility";
docs/facts.md, "gdscheck and gdsio")::

    IoType: READ XferType: GPUD Threads: 8 DataSetSize: 818796544/4096000(KiB) IOSize: 1024(KiB)
    Throughput: 6.524658 GiB/sec, Avg_Latency: 1197.370995 usecs ops: 799606 total_time 119.679102 secs

``IOSize`` is a range (``16384-32768-4096(KiB)``) with random sizes. Other lines (cuFile log
lines, ``Data Verification Success``) are ignored. Pure Python (>= 3.8), no Ansible imports;
``GdsioError`` is the only exception raised for bad input.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

GIB = 1 << 30
# -x transfer types and -I IO types (GDS Benchmarking and Configuration Guide, gdsio Utility)
XFER_TYPES = {0: "GPUD", 1: "CPUONLY", 2: "CPU_GPU", 3: "CPU_ASYNC_GPU", 4: "CPU_CACHED_GPU", 5: "GPU_DIRECT_ASYNC"}
XFER_TYPES.update({6: "GPU_BATCH", 7: "GPU_BATCH_STREAM"})
IO_TYPES = {0: "READ", 1: "WRITE", 2: "RANDREAD", 3: "RANDWRITE"}

# Numbers as ASCII digits, at most 20 of them (_parse.MAX_DIGITS): no output makes a conversion fail.
_U = r"[0-9]{1,20}"
_D = r"[0-9]{1,20}(?:\.[0-9]{1,20})?"
_LINE = re.compile(
    rf"IoType:\s*(?P<io>\w+)\s+XferType:\s*(?P<xfer>\w+)\s+Threads:\s*(?P<threads>{_U})\s+"
    rf"DataSetSize:\s*(?P<done>{_U})/(?P<total>{_U})\(KiB\)\s+IOSize:\s*(?P<iosize>{_U}(?:-{_U})*)\(KiB\)\s+"
    rf"Throughput:\s*(?P<gib>{_D})\s*GiB/sec,?\s+Avg_Latency:\s*(?P<lat>{_D})\s*usecs\s+"
    rf"ops:\s*(?P<ops>{_U})\s+total_time\s+(?P<secs>{_D})\s*secs",
    re.ASCII,
)


class GdsioError(ValueError):
    """gdsio output or arguments that cannot be used."""


def parse(text: str) -> List[Dict[str, Any]]:
    """Every gdsio result line in ``text`` as ``{io_type, xfer_type, threads, data_kib,
    dataset_kib, io_size_kib: [..], throughput_gib_s, throughput_gbps (10^9 bytes/s),
    avg_latency_us, ops, total_time_s}``. Raises GdsioError when there is none."""
    if not isinstance(text, str):
        raise GdsioError(f"gdsio output must be text, got {type(text).__name__}")
    results = []
    for match in _LINE.finditer(" ".join(text.split())):
        gib = float(match.group("gib"))
        results.append(
            {
                "io_type": match.group("io"),
                "xfer_type": match.group("xfer"),
                "threads": int(match.group("threads")),
                "data_kib": int(match.group("done")),
                "dataset_kib": int(match.group("total")),
                "io_size_kib": [int(x) for x in match.group("iosize").split("-") if x],
                "throughput_gib_s": gib,
                "throughput_gbps": gib * GIB / 1e9,
                "avg_latency_us": float(match.group("lat")),
                "ops": int(match.group("ops")),
                "total_time_s": float(match.group("secs")),
            }
        )
    if not results:
        raise GdsioError("no gdsio result line ('IoType: ... Throughput: N GiB/sec ...') in the output")
    return results


def command(
    directory: str,
    gpu: int,
    io_type: int,
    *,
    xfer_type: int = 0,
    threads: int = 8,
    file_size: str = "1G",
    io_size: str = "1M",
    duration: Optional[int] = 10,
    numa: Optional[int] = None,
    tool: str = "gdsio",
) -> List[str]:
    """argv of one gdsio run on ``directory`` (``-D``: one file per thread; write before read)."""
    if io_type not in IO_TYPES:
        raise GdsioError(f"io_type is {io_type}; allowed: {sorted(IO_TYPES)} ({', '.join(IO_TYPES.values())})")
    if xfer_type not in XFER_TYPES:
        raise GdsioError(f"xfer_type is {xfer_type}; allowed: {sorted(XFER_TYPES)}")
    for name, value in (("file_size", file_size), ("io_size", io_size)):
        if not re.fullmatch(r"\d+[KMG]?", str(value)):
            raise GdsioError(f"{name} is '{value}'; give bytes with an optional K, M or G suffix")
    if not directory.startswith("/"):
        raise GdsioError(f"directory '{directory}' must be an absolute path on a GDS filesystem")
    argv = [tool, "-D", directory, "-d", str(int(gpu)), "-w", str(int(threads)), "-s", str(file_size)]
    argv += ["-i", str(io_size), "-x", str(xfer_type), "-I", str(io_type)]
    if duration:
        argv += ["-T", str(int(duration))]
    if numa is not None:
        argv += ["-n", str(int(numa))]
    return argv
