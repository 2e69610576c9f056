"""The whole machine's CPU time, for the benchmarks that print what a run left to the rest of the
machine (bench_lab, bench_cluster_layer)."""

from __future__ import annotations

import os


def machine_busy() -> tuple:
    """(busy, stolen): CPU-seconds the whole machine has spent busy (not idle, not waiting for I/O,
    not stolen), and those the hypervisor gave to other guests while this one had work (steal),
    /proc/stat (proc(5); guest time is already counted in user)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(v) for v in fh.readline().split()[1:]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick
