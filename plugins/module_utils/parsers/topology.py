# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of what topology discovery reads: sysfs attributes, PCI config space, RDMA GID
tables and the ``nvidia-smi topo -m`` matrix. Also the one RoCE v2 GID selection rule.

Formats: torvalds/linux drivers/pci/pci-sysfs.c (PCI attributes), include/uapi/linux/pci_regs.h
(PCIe capability port type, ACS control), Documentation/ABI/stable/sysfs-class-infiniband
(ports, ``gids/N``, ``gid_attrs/{types,ndevs}/N``), drivers/infiniband/core/cache.c (GID type
names "IB/RoCE v1" and "RoCE v2"), Mellanox/mlnx-tools show_gids (RoCE v2 IPv4 GID selection),
public ``nvidia-smi topo -m`` captures (lab/snapshots).

Contracts (the fuzz tests in tests/unit/fuzz hold every parser to them):
* sysfs value parsers (``parse_hex``, ``parse_int``, ``parse_speed``, ``parse_rate``,
  ``parse_state``, ``gid_to_ipv4``) return None for anything they cannot read;
* ``parse_config`` returns only what it can read from any bytes (possibly ``{}``);
* ``parse_cpulist`` and ``parse_topo_matrix`` raise ParseError naming the offending line.

Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import re
import struct
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import (
    ParseError,
    as_text,
    integer,
    integer_or_none,
    number_or_none,
    text_or_none,
)

PCI_EXP_TYPES = {
    0x0: "endpoint",
    0x1: "legacy_endpoint",
    0x4: "root_port",
    0x5: "switch_upstream",
    0x6: "switch_downstream",
    0x7: "pci_bridge",
    0x8: "pci_bridge",
    0x9: "rc_endpoint",
    0xA: "rc_event_collector",
}
# ACS control bits (pci_regs.h PCI_ACS_*): P2P request redirect, P2P completion redirect
ACS_RR = 0x04
ACS_CR = 0x08
ACS_REDIRECT_MASK = ACS_RR | ACS_CR
BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")  # PCI address DDDD:BB:DD.F
ROCE_V2 = "RoCE v2"  # gid_attrs/types/N (drivers/infiniband/core/cache.c gid_type_str)
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_V4_PREFIX = "0000:0000:0000:0000:0000:ffff:"
_GID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){7}", re.ASCII)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_CPUS = 65536  # a cpulist naming more is not a CPU list


# ----------------------------------------------------------------------------------------------
# sysfs attribute values: None when unreadable


def parse_hex(text: Optional[str]) -> Optional[int]:
    """'0x10de' / '10de' -> 0x10de."""
    return integer_or_none(text_or_none(text), base=16)


def parse_int(text: Optional[str]) -> Optional[int]:
    """'-1' / '16' / '0x10' -> int."""
    return integer_or_none(text_or_none(text), base=0)


def parse_speed(text: Optional[str]) -> Optional[float]:
    """'32.0 GT/s PCIe' / '8 GT/s' -> float GT/s; 'Unknown' / missing -> None."""
    m = re.match(r"\s*([0-9.]+)\s*GT/s", text_or_none(text) or "")
    return number_or_none(m.group(1)) if m else None


def parse_rate(text: Optional[str]) -> Optional[float]:
    """'400 Gb/sec (4X NDR)' / '2.5 Gb/sec (1X SDR)' -> Gb/s."""
    m = re.match(r"\s*([0-9.]+)\s*Gb/sec", text_or_none(text) or "")
    return number_or_none(m.group(1)) if m else None


def parse_state(text: Optional[str]) -> Optional[str]:
    """'4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'."""
    text = text_or_none(text)
    if not text:
        return None
    return text.split(":", 1)[-1].strip()


def parse_cpulist(text: str) -> List[int]:
    """'0-3,8' -> [0, 1, 2, 3, 8] (kernel bitmap_parselist format); ParseError when malformed."""
    text = as_text(text, "cpulist")
    cpus: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        first = integer(lo, "cpulist", 0, MAX_CPUS - 1, line=text)
        last = integer(hi, "cpulist", first, MAX_CPUS - 1, line=text) if dash else first
        if len(cpus) + last - first >= MAX_CPUS:
            raise ParseError(f"cpulist names more than {MAX_CPUS} CPUs", line=text)
        cpus.extend(range(first, last + 1))
    return cpus


# ----------------------------------------------------------------------------------------------
# RDMA GID tables and the RoCE v2 selection rule


def normalize_gid(text: Optional[str]) -> Optional[str]:
    """A GID as sysfs prints it (8 groups of 4 lower-case hex digits), or None when it is not one."""
    gid = (text_or_none(text) or "").strip().lower()
    return gid if _GID.fullmatch(gid) else None


def gid_to_ipv4(gid: Optional[str]) -> Optional[str]:
    """IPv4-mapped GID (::ffff:a.b.c.d in 8 groups) -> dotted quad; None for any other text."""
    g = normalize_gid(gid)
    if g is None or not g.startswith(_V4_PREFIX):
        return None
    high, low = g[len(_V4_PREFIX) :].split(":")
    raw = int(high, 16) << 16 | int(low, 16)
    return ".".join(str((raw >> s) & 0xFF) for s in (24, 16, 8, 0))


def read_gids(sr: Sysroot, port_path: str) -> List[Dict[str, Any]]:
    """Every non-zero GID entry of one port, in numeric index order (2 before 10, as the kernel
    numbers them; a directory listing sorts 10 before 2): ``{index, gid, type, ndev, ipv4}``."""
    entries: List[Dict[str, Any]] = []
    indexes = (integer_or_none(n, 0, 1 << 16) for n in sr.listdir(f"{port_path}/gids"))
    for idx in sorted(i for i in indexes if i is not None):
        gid = sr.read(f"{port_path}/gids/{idx}")
        if not gid or gid == ZERO_GID:
            continue
        typ = sr.read(f"{port_path}/gid_attrs/types/{idx}")
        ndev = sr.read(f"{port_path}/gid_attrs/ndevs/{idx}")
        entries.append({"index": idx, "gid": gid, "type": typ, "ndev": ndev, "ipv4": gid_to_ipv4(gid)})
    return entries


def select_roce_v2_gid(entries: List[Dict[str, Any]], ndev: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The RoCE v2 GID NCCL and discovery use: the lowest index whose type is ``RoCE v2`` and whose
    GID is IPv4-mapped (show_gids' choice), on netdev ``ndev`` when given. None when there is none.

    This is the one rule: discovery reports it as ``roce_v2_ipv4``, the nccl.conf planner takes its
    index for NCCL < 2.21, and the Pod-side script (cluster ConfigMap nccl-gid-index) implements the
    same rule in sh, tested against this function on the same GID tables.
    """
    for e in sorted(entries, key=lambda x: x["index"]):
        if e.get("ipv4") and e.get("type") == ROCE_V2 and (ndev is None or e.get("ndev") == ndev):
            return {"gid_index": e["index"], "gid": e["gid"], "ipv4": e["ipv4"], "ndev": e.get("ndev")}
    return None


def gid_index_script() -> str:
    """POSIX sh for a Pod's init step (NCCL < 2.21): ``select_roce_v2_gid`` for the Pod's own interface.

    Usage ``find-gid-index.sh [IFNAME] [OUTFILE]``: reads ``$GPUFABRIC_SYSFS`` (default /sys)
    ``class/infiniband/DEV/ports/P/gids/N`` with ``gid_attrs/types/N`` and ``gid_attrs/ndevs/N``,
    prints the lowest index N on IFNAME whose type is RoCE v2 and whose GID is IPv4-mapped, and
    writes ``NCCL_IB_GID_INDEX=N`` to OUTFILE (default /etc/nccl-gid/env). The lowest index, not
    the first in a listing: ``gids/10`` lists before ``gids/2``. tests/unit/cluster/test_gid_script.py
    runs it against ``select_roce_v2_gid`` on the same GID tables.
    """
    hexgroup = "[0-9a-f]" * 4
    ipv4_gid = f"{_V4_PREFIX}{hexgroup}:{hexgroup}"
    return "\n".join(
        [
            "#!/bin/sh",
            "# usage: find-gid-index.sh [IFNAME] [OUTFILE]  (managed by gpufabric.rollout)",
            "# Prints the lowest GID index on IFNAME whose type is RoCE v2 and whose GID is IPv4-mapped.",
            "set -eu",
            'ifname="${1:-net1}"',
            'out="${2:-/etc/nccl-gid/env}"',
            'sysfs="${GPUFABRIC_SYSFS:-/sys}"',
            'for port in "$sysfs"/class/infiniband/*/ports/*; do',
            '  best=""',
            '  for gid in "$port"/gids/*; do',
            '    [ -r "$gid" ] || continue',
            '    idx="${gid##*/}"',
            "    case \"$idx\" in ''|*[!0-9]*) continue ;; esac",
            '    if [ -n "$best" ] && [ "$idx" -ge "$best" ]; then continue; fi',
            '    ndev=$(cat "$port/gid_attrs/ndevs/$idx" 2>/dev/null || true)',
            '    [ "$ndev" = "$ifname" ] || continue',
            '    type=$(cat "$port/gid_attrs/types/$idx" 2>/dev/null || true)',
            f'    [ "$type" = "{ROCE_V2}" ] || continue',
            '    value=$(cat "$gid" 2>/dev/null || true)',
            f'    case "$value" in {ipv4_gid}) ;; *) continue ;; esac',
            '    best="$idx"',
            "  done",
            '  [ -n "$best" ] || continue',
            '  mkdir -p "$(dirname "$out")"',
            '  echo "NCCL_IB_GID_INDEX=$best" > "$out"',
            '  echo "$best"',
            "  exit 0",
            "done",
            'echo "no RoCE v2 IPv4 GID on $ifname" >&2',
            "exit 1",
            "",
        ]
    )


# ----------------------------------------------------------------------------------------------
# PCI config space


def parse_config(data: Optional[bytes]) -> Dict[str, Any]:
    """PCIe port type and ACS control from a config space dump (pci_regs.h layout).

    Only what is present is returned: a non-root read of `config` stops at 64 bytes, so the
    capability list (and the extended space at 0x100) may be missing. Never raises for bytes.
    """
    out: Dict[str, Any] = {}
    if not isinstance(data, (bytes, bytearray)) or len(data) < 0x40:
        return out
    status = struct.unpack_from("<H", data, 0x06)[0]
    if status & 0x10:
        ptr = data[0x34] & 0xFC
        seen = set()
        while ptr and ptr not in seen and ptr + 4 <= len(data):
            seen.add(ptr)
            cap_id = data[ptr]
            if cap_id == 0x10:
                flags = struct.unpack_from("<H", data, ptr + 2)[0]
                out["port_type"] = PCI_EXP_TYPES.get((flags >> 4) & 0xF, "other")
                break
            ptr = data[ptr + 1] & 0xFC
    if len(data) >= 0x104:
        off = 0x100
        seen = set()
        while off and off not in seen and off + 8 <= len(data):
            seen.add(off)
            hdr = struct.unpack_from("<I", data, off)[0]
            if hdr in (0, 0xFFFFFFFF):
                break
            if hdr & 0xFFFF == 0x000D:
                out["acs_ctl"] = struct.unpack_from("<H", data, off + 6)[0]
                break
            off = (hdr >> 20) & 0xFFC
    return out


# ----------------------------------------------------------------------------------------------
# nvidia-smi topo -m


def parse_topo_matrix(text: str) -> Dict[str, Any]:
    """Parse `nvidia-smi topo -m`: both NIC naming styles (NIC# + legend, or mlx5_N), ANSI.

    Returns {"devices": [...], "matrix": {row: {col: cell}}, "nic_legend": {"NIC0": "mlx5_0"},
    "cpu_affinity": {gpu: str}, "numa_affinity": {gpu: str}} with NIC names already mapped
    to RDMA device names where a legend exists. ParseError when there is no header line.
    """
    lines = [_ANSI.sub("", ln).rstrip("\r\n") for ln in as_text(text, "nvidia-smi topo -m").splitlines()]
    header_idx = None
    for i, ln in enumerate(lines):
        cells = [c.strip() for c in ln.split("\t")]
        if ln.startswith("\t") and "GPU0" in cells:
            header_idx = i
            break
    if header_idx is None:
        first = next((ln for ln in lines if ln.strip()), None)
        raise ParseError(
            "no nvidia-smi topo -m header (a line starting with a tab and naming GPU0)",
            line=first,
            lineno=None if first is None else lines.index(first) + 1,
        )
    header = [c.strip() for c in lines[header_idx].split("\t")][1:]
    devices: List[str] = []
    for cell in header:
        if cell in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID") or not cell:
            break
        devices.append(cell)
    legend: Dict[str, str] = {}
    for ln in lines:
        m = re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", ln)
        if m:
            legend[m.group(1)] = m.group(2)
    matrix: Dict[str, Dict[str, str]] = {}
    cpu_aff: Dict[str, str] = {}
    numa_aff: Dict[str, str] = {}
    for ln in lines[header_idx + 1 :]:
        if not ln.strip():
            break
        cells = ln.split("\t")
        name = cells[0].strip()
        if name not in devices:
            continue
        vals = [c.strip() for c in cells[1 : 1 + len(devices)]]
        matrix[name] = dict(zip(devices, vals))
        extra = [c.strip() for c in cells[1 + len(devices) :] if c.strip()]
        if name.startswith("GPU") and extra:
            cpu_aff[name] = extra[0]
            if len(extra) > 1:
                numa_aff[name] = extra[1]

    def rename(n: str) -> str:
        return legend.get(n, n)

    return {
        "devices": [rename(d) for d in devices],
        "matrix": {rename(r): {rename(c): v for c, v in row.items()} for r, row in matrix.items()},
        "nic_legend": legend,
        "cpu_affinity": cpu_aff,
        "numa_affinity": numa_aff,
    }


def nvlink_count(cell: Optional[str]) -> Optional[int]:
    """'NV18' -> 18; any other matrix cell -> None."""
    m = re.fullmatch(r"NV([0-9]{1,3})", text_or_none(cell) or "", re.ASCII)
    return int(m.group(1)) if m else None
