# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology discovery: GPUs, RDMA NICs, PCIe tree, NUMA, path classes and rails, from sysfs.

Pure logic (no AnsibleModule): ``discover(sysroot, topo_text)`` reads a sysfs/procfs tree under
``sysroot`` (``/`` on a live host, an unpacked snapshot elsewhere) and returns the
``gpufabric_topology`` facts documented in docs/topology-facts.md.

Sources of the formats read here: torvalds/linux drivers/pci/pci-sysfs.c (PCI attributes),
include/uapi/linux/pci_regs.h (PCIe capability port type, ACS control bits),
Documentation/ABI/stable/sysfs-class-infiniband (ports, GIDs, gid_attrs), Mellanox/mlnx-tools
show_gids (RoCE v2 IPv4 GID selection), `nvidia-smi topo -m` public captures (path classes).
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import os
import re
import struct
from typing import Any, Dict, List, Optional, Tuple

SCHEMA_VERSION = 1

# nvidia-smi / NCCL path classes, best first
PATH_CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS")
_RANK = {c: i for i, c in enumerate(PATH_CLASSES)}
WARNING_CLASSES = ("acs_redirect", "numa_mismatch", "port_down", "roce_v2_gid_missing", "link_degraded")

# ACS control bits (pci_regs.h PCI_ACS_*): request redirect, completion redirect
ACS_RR = 0x04
ACS_CR = 0x08
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

# GPU models by PCI device id (pci.ids, NVIDIA). sm = CUDA compute capability x 10.
GPU_MODELS: Dict[str, Tuple[str, int]] = {
    "20b0": ("A100", 80),
    "20b2": ("A100", 80),
    "20b5": ("A100", 80),
    "20f1": ("A100", 80),
    "2230": ("RTX A6000", 86),
    "2235": ("A40", 86),
    "2236": ("A10", 86),
    "25b6": ("A16", 86),
    "2330": ("H100", 90),
    "2331": ("H100", 90),
    "2321": ("H100", 90),
    "2324": ("H800", 90),
    "2335": ("H200", 90),
    "233a": ("H800", 90),
    "233b": ("H200", 90),
    "2342": ("GH200", 90),
    "2348": ("GH200", 90),
    "26b5": ("L40", 89),
    "26b9": ("L40S", 89),
    "27b8": ("L4", 89),
    "2901": ("B200", 100),
    "2941": ("GB200", 100),
}
# Mellanox/NVIDIA networking device ids (torvalds/linux mlx5 core main.c PCI table)
NIC_MODELS: Dict[str, Tuple[str, bool]] = {
    "1017": ("ConnectX-5", False),
    "1018": ("ConnectX-5", True),
    "1019": ("ConnectX-5 Ex", False),
    "101a": ("ConnectX-5 Ex", True),
    "101b": ("ConnectX-6", False),
    "101c": ("ConnectX-6", True),
    "101d": ("ConnectX-6 Dx", False),
    "101e": ("ConnectX VF", True),
    "101f": ("ConnectX-6 Lx", False),
    "1021": ("ConnectX-7", False),
    "1023": ("ConnectX-8", False),
    "1025": ("ConnectX-9", False),
    "a2d6": ("BlueField-2", False),
    "a2dc": ("BlueField-3", False),
}

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_V4_PREFIX = "0000:0000:0000:0000:0000:ffff:"


class TopologyError(Exception):
    """The sysroot cannot be read as a sysfs tree."""


# ----------------------------------------------------------------------------------------------
# sysroot access


class Sysroot:
    """Read files and resolve symlinks inside a sysroot, re-rooting absolute link targets."""

    def __init__(self, root: str):
        self.root = os.path.abspath(root)
        self._dirs: Dict[str, Optional[str]] = {}

    def real(self, rel: str, _hops: int = 0) -> Optional[str]:
        """Sysroot-relative path of ``rel`` with every symlink resolved inside the sysroot.

        Absolute link targets are taken as sysroot-relative. Each distinct prefix is looked at
        once (cached), so a walk over sysfs costs about one lstat per directory. None on a loop.
        """
        rel = os.path.normpath(rel.strip("/")) if rel.strip("/") else ""
        if rel in ("", "."):
            return ""
        if rel.startswith(".."):
            rel = rel.lstrip("./") if rel.strip("./") else ""
            return self.real(rel, _hops)
        if rel in self._dirs:
            return self._dirs[rel]
        head, _sep, tail = rel.rpartition("/")
        base = self.real(head, _hops) if head else ""
        if base is None:
            return None
        cand = f"{base}/{tail}" if base else tail
        result: Optional[str] = cand
        full = os.path.join(self.root, cand)
        if os.path.islink(full):
            if _hops > 40:
                result = None
            else:
                target = os.readlink(full)
                joined = target.lstrip("/") if target.startswith("/") else f"{base}/{target}"
                result = self.real(os.path.normpath(joined) if joined else "", _hops + 1)
        self._dirs[rel] = result
        return result

    def resolve(self, rel: str) -> Optional[str]:
        return self.real(rel)

    def abspath(self, rel: str) -> str:
        real = self.real(rel)
        return os.path.join(self.root, real if real is not None else rel.lstrip("/"))

    def _file(self, rel: str) -> str:
        """Path of an attribute file: its directory resolved in-root; sysfs attribute files
        themselves are regular files, so the last component is not looked at."""
        head, _sep, tail = rel.strip("/").rpartition("/")
        base = self.real(head) if head else ""
        return os.path.join(self.root, base or "", tail) if base is not None else os.path.join(self.root, rel)

    def read(self, rel: str) -> Optional[str]:
        try:
            with open(self._file(rel), "rb", buffering=0) as fh:
                return fh.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return None

    def read_bytes(self, rel: str) -> Optional[bytes]:
        try:
            with open(self._file(rel), "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def listdir(self, rel: str) -> List[str]:
        try:
            return sorted(os.listdir(self.abspath(rel)))
        except OSError:
            return []

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(self.abspath(rel))

    def exists(self, rel: str) -> bool:
        head, _sep, tail = rel.strip("/").rpartition("/")
        parent = self.real(head) if head else ""
        return parent is not None and os.path.lexists(os.path.join(self.root, parent, tail))

    def link_name(self, rel: str) -> Optional[str]:
        """Basename of a symlink's target (e.g. a bound driver), or None."""
        head, _sep, tail = rel.strip("/").rpartition("/")
        parent = self.real(head) if head else ""
        if parent is None:
            return None
        try:
            return os.path.basename(os.readlink(os.path.join(self.root, parent, tail)).rstrip("/"))
        except OSError:
            return None


# ----------------------------------------------------------------------------------------------
# small parsers


def parse_hex(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


def parse_int(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    try:
        return int(text.strip(), 0)
    except ValueError:
        return None


def parse_speed(text: Optional[str]) -> Optional[float]:
    """'32.0 GT/s PCIe' / '8 GT/s' -> float GT/s; 'Unknown' / missing -> None."""
    if not text:
        return None
    m = re.match(r"\s*([0-9.]+)\s*GT/s", text)
    return float(m.group(1)) if m else None


def parse_cpulist(text: str) -> List[int]:
    cpus: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def parse_rate(text: Optional[str]) -> Optional[float]:
    """'400 Gb/sec (4X NDR)' / '2.5 Gb/sec (1X SDR)' -> Gb/s."""
    if not text:
        return None
    m = re.match(r"\s*([0-9.]+)\s*Gb/sec", text)
    return float(m.group(1)) if m else None


def parse_state(text: Optional[str]) -> Optional[str]:
    """'4: ACTIVE' -> 'ACTIVE'; '5: LinkUp' -> 'LinkUp'."""
    if not text:
        return None
    return text.split(":", 1)[-1].strip()


def gid_to_ipv4(gid: str) -> Optional[str]:
    """IPv4-mapped GID (::ffff:a.b.c.d in 8 groups) -> dotted quad."""
    g = gid.strip().lower()
    if not g.startswith(_V4_PREFIX):
        return None
    tail = g[len(_V4_PREFIX) :].split(":")
    if len(tail) != 2:
        return None
    raw = int(tail[0], 16) << 16 | int(tail[1], 16)
    return ".".join(str((raw >> s) & 0xFF) for s in (24, 16, 8, 0))


def parse_config(data: Optional[bytes]) -> Dict[str, Any]:
    """PCIe port type and ACS control from a config space dump (pci_regs.h layout).

    Only what is present is returned: a non-root read of `config` stops at 64 bytes, so the
    capability list (and the extended space at 0x100) may be missing.
    """
    out: Dict[str, Any] = {}
    if not data or len(data) < 0x40:
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


def parse_topo_matrix(text: str) -> Dict[str, Any]:
    """Parse `nvidia-smi topo -m`: both NIC naming styles (NIC# + legend, or mlx5_N), ANSI.

    Returns {"devices": [...], "matrix": {row: {col: cell}}, "nic_legend": {"NIC0": "mlx5_0"},
    "cpu_affinity": {gpu: str}, "numa_affinity": {gpu: str}} with NIC names already mapped
    to RDMA device names where a legend exists.
    """
    lines = [_ANSI.sub("", ln).rstrip("\r\n") for ln in text.splitlines()]
    header_idx = None
    for i, ln in enumerate(lines):
        cells = [c.strip() for c in ln.split("\t")]
        if ln.startswith("\t") and "GPU0" in cells:
            header_idx = i
            break
    if header_idx is None:
        raise ValueError("no nvidia-smi topo -m header (a line starting with a tab and naming GPU0)")
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


# ----------------------------------------------------------------------------------------------
# PCI model


class PciDev:
    __slots__ = (
        "acs_ctl",
        "attrs",
        "bdf",
        "chain",
        "class_code",
        "device_id",
        "host",
        "path",
        "port_type",
        "vendor_id",
    )

    def __init__(self, bdf: str, path: str):
        self.bdf = bdf
        self.path = path
        comps = path.split("/")
        # sys/devices/pciDDDD:BB/<bdf>/<bdf>/...
        try:
            start = next(i for i, c in enumerate(comps) if c.startswith("pci") and ":" in c)
        except StopIteration:
            start = len(comps) - 1
        self.host = comps[start][3:] if start < len(comps) - 1 else None
        self.chain = [c for c in comps[start + 1 : -1] if _BDF.match(c)]  # bridges above, top first
        self.attrs: Dict[str, Optional[str]] = {}
        self.vendor_id = ""
        self.device_id = ""
        self.class_code = 0
        self.port_type: Optional[str] = None
        self.acs_ctl: Optional[int] = None


_PCI_ATTRS = (
    "class",
    "vendor",
    "device",
    "subsystem_vendor",
    "subsystem_device",
    "numa_node",
    "current_link_speed",
    "max_link_speed",
    "current_link_width",
    "max_link_width",
)
_ENDPOINT_ATTRS = ("local_cpulist", "sriov_totalvfs", "sriov_numvfs")


class _Scan:
    """Everything read from the sysroot, indexed."""

    def __init__(self, sr: Sysroot):
        self.sr = sr
        self.pci: Dict[str, PciDev] = {}
        for bdf in sr.listdir("sys/bus/pci/devices"):
            path = sr.resolve(f"sys/bus/pci/devices/{bdf}")
            if not path or not sr.isdir(path):
                continue
            dev = PciDev(bdf.lower(), path)
            a = dev.attrs
            for name in _PCI_ATTRS:
                a[name] = sr.read(f"{path}/{name}")
            if (parse_hex(a["class"]) or 0) >> 8 != 0x0604:  # endpoints only
                for name in _ENDPOINT_ATTRS:
                    a[name] = sr.read(f"{path}/{name}")
            dev.vendor_id = "%04x" % (parse_hex(a["vendor"]) or 0)
            dev.device_id = "%04x" % (parse_hex(a["device"]) or 0)
            dev.class_code = parse_hex(a["class"]) or 0
            self.pci[dev.bdf] = dev
        # bridges: port type and ACS from config space; inferred from position otherwise
        for dev in self.pci.values():
            if dev.class_code >> 8 != 0x0604:
                continue
            cfg = parse_config(self.sr.read_bytes(f"{dev.path}/config"))
            dev.port_type = cfg.get("port_type")
            dev.acs_ctl = cfg.get("acs_ctl")
        for dev in self.pci.values():
            if dev.class_code >> 8 == 0x0604 and dev.port_type not in (
                "root_port",
                "switch_upstream",
                "switch_downstream",
                "pci_bridge",
            ):
                dev.port_type = self._infer_port_type(dev)

    def _infer_port_type(self, dev: PciDev) -> str:
        if not dev.chain:
            return "root_port"
        parent = self.pci.get(dev.chain[-1])
        ptype = parent.port_type if parent else None
        if ptype == "switch_upstream":
            return "switch_downstream"
        if ptype in ("root_port", "switch_downstream"):
            return "switch_upstream"
        return "pci_bridge"

    def numa(self, dev: PciDev) -> Optional[int]:
        n = parse_int(dev.attrs.get("numa_node"))
        return n if n is not None and n >= 0 else None


# ----------------------------------------------------------------------------------------------
# path classes


def _switch_id(scan: _Scan, bdf: str) -> Optional[str]:
    dev = scan.pci.get(bdf)
    if dev is None or dev.port_type == "root_port":
        return None
    if dev.port_type == "switch_downstream" and dev.chain:
        return dev.chain[-1]
    return bdf


def path_bridges(scan: _Scan, a: PciDev, b: PciDev) -> Tuple[List[str], int]:
    """Bridges a peer-to-peer transfer between a and b crosses, and the common-prefix length."""
    k = 0
    while k < len(a.chain) and k < len(b.chain) and a.chain[k] == b.chain[k]:
        k += 1
    if a.host != b.host or k == 0:
        return [], 0
    return [a.chain[k - 1], *a.chain[k:], *b.chain[k:]], k


def path_class(scan: _Scan, a: PciDev, b: PciDev, numa_count: int) -> str:
    """nvidia-smi topo -m class of the PCIe path between two functions."""
    if a.host != b.host:
        na, nb = scan.numa(a), scan.numa(b)
        if na is not None and nb is not None:
            return "NODE" if na == nb else "SYS"
        return "NODE" if numa_count <= 1 else "SYS"
    bridges, k = path_bridges(scan, a, b)
    if k == 0:
        return "PHB"
    switches = {s for s in (_switch_id(scan, x) for x in bridges) if s}
    if not switches:
        return "PHB"
    return "PIX" if len(switches) == 1 else "PXB"


# ----------------------------------------------------------------------------------------------
# assignment (rails)


def assign(cost: List[List[int]]) -> List[int]:
    """Minimum-cost assignment of n rows to distinct columns (n <= m), Hungarian method.

    Returns the column of each row. Deterministic for a given matrix.
    """
    n = len(cost)
    if n == 0:
        return []
    m = len(cost[0])
    if m < n:
        raise ValueError("more rows than columns")
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    result = [0] * n
    for j in range(1, m + 1):
        if p[j]:
            result[p[j] - 1] = j - 1
    return result


def plan_rails(classes: List[List[str]]) -> List[int]:
    """Assign each GPU (row) a NIC (column) from a GPU x NIC path-class matrix.

    Every NIC serves at most ceil(GPUs / NICs) GPUs; the total path-class rank is minimised,
    ties go to the NIC at the GPU's proportional position (GPU i of G prefers NIC i*N//G), so
    the result is deterministic and never gives two GPUs one NIC while another NIC is idle.
    """
    g = len(classes)
    if g == 0 or not classes[0]:
        return []
    nn = len(classes[0])
    cap = -(-g // nn)
    big = 10 * (g + nn + 1)
    cost = []
    for i, row in enumerate(classes):
        pref = i * nn // g
        line = []
        for j in range(nn):
            c = _RANK[row[j]] * big * big + abs(j - pref) * big
            line.extend(c + s for s in range(cap))
        cost.append(line)
    cols = assign(cost)
    return [c // cap for c in cols]


# ----------------------------------------------------------------------------------------------
# discovery


def _ident(dev: PciDev) -> Dict[str, Any]:
    """Identity fields shared by GPUs, NICs and bridges."""
    a = dev.attrs
    return {
        "class": f"0x{dev.class_code:06x}",
        "subsystem_vendor_id": "%04x" % (parse_hex(a.get("subsystem_vendor")) or 0),
        "subsystem_device_id": "%04x" % (parse_hex(a.get("subsystem_device")) or 0),
        "host_bridge": f"pci{dev.host}" if dev.host else None,
        "pci_path": list(dev.chain),
    }


def _link(dev: PciDev) -> Dict[str, Any]:
    a = dev.attrs
    cw = parse_int(a.get("current_link_width"))
    mw = parse_int(a.get("max_link_width"))
    return {
        "current_speed_gts": parse_speed(a.get("current_link_speed")),
        "max_speed_gts": parse_speed(a.get("max_link_speed")),
        "current_width": cw if cw else None,
        "max_width": mw if mw else None,
        "current_speed": a.get("current_link_speed"),
        "max_speed": a.get("max_link_speed"),
    }


def validate_sysroot(sysroot: str) -> None:
    if not sysroot:
        raise TopologyError("sysroot is empty")
    if not os.path.exists(sysroot):
        raise TopologyError(f"sysroot {sysroot} does not exist")
    if not os.path.isdir(sysroot):
        raise TopologyError(f"sysroot {sysroot} is not a directory")
    if not os.access(sysroot, os.R_OK | os.X_OK):
        raise TopologyError(f"sysroot {sysroot} is not readable")
    pci = os.path.join(sysroot, "sys/bus/pci/devices")
    if not os.path.isdir(pci):
        raise TopologyError(
            f"sysroot {sysroot} is not a sysfs root: {pci} is missing "
            "(expected a live / or an unpacked snapshot with sys/ and proc/)"
        )
    if not os.access(pci, os.R_OK | os.X_OK):
        raise TopologyError(f"sysroot {sysroot}: {pci} is not readable")


def _cpuinfo(sr: Sysroot) -> Dict[str, Any]:
    text = sr.read("proc/cpuinfo") or ""
    info: Dict[str, Any] = {
        "arch": None,
        "vendor": None,
        "family": None,
        "model": None,
        "model_name": None,
        "hypervisor": False,
    }
    for line in text.splitlines():
        key, _sep, val = line.partition(":")
        key = key.strip()
        val = val.strip()
        if key == "vendor_id" and info["vendor"] is None:
            info["vendor"] = val
        elif key == "cpu family" and info["family"] is None:
            info["family"] = parse_int(val)
        elif key == "model" and info["model"] is None:
            info["model"] = parse_int(val)
        elif key == "model name" and info["model_name"] is None:
            info["model_name"] = val
        elif key == "flags" and "hypervisor" in val.split():
            info["hypervisor"] = True
        elif key == "CPU implementer":
            info["arch"] = "arm64"
    if info["vendor"] and info["arch"] is None:
        info["arch"] = "x86_64"
    return info


def _gids(sr: Sysroot, port_path: str) -> Tuple[Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """(RoCE v2 IPv4 GID entry or None, all non-zero entries) for one port (show_gids logic)."""
    entries: List[Dict[str, Any]] = []
    names = sr.listdir(f"{port_path}/gids")
    for idx in sorted((n for n in names if n.isdigit()), key=int):
        gid = sr.read(f"{port_path}/gids/{idx}")
        if not gid or gid == _ZERO_GID:
            continue
        typ = sr.read(f"{port_path}/gid_attrs/types/{idx}")
        ndev = sr.read(f"{port_path}/gid_attrs/ndevs/{idx}")
        entries.append({"index": int(idx), "gid": gid, "type": typ, "ndev": ndev, "ipv4": gid_to_ipv4(gid)})
    v2 = None
    for e in entries:
        if e["ipv4"] and e["type"] == "RoCE v2":
            v2 = {"gid_index": e["index"], "gid": e["gid"], "ipv4": e["ipv4"], "ndev": e["ndev"]}
            break
    return v2, entries


def discover(sysroot: str, topo_text: Optional[str] = None, storage_nics: Optional[List[str]] = None) -> Dict[str, Any]:
    """Discover the topology under ``sysroot``.

    ``topo_text``: output of `nvidia-smi topo -m` (from the tool, or the snapshot's
    nvidia-smi-topo-m.txt); it adds NVLink counts. ``storage_nics``: RDMA device names, netdev
    names or BDFs kept out of the rails (role storage). Raises TopologyError on an unusable
    sysroot.
    """
    validate_sysroot(sysroot)
    sr = Sysroot(sysroot)
    scan = _Scan(sr)
    warnings: List[Dict[str, str]] = []

    # NUMA --------------------------------------------------------------------------------
    numa_nodes = []
    for name in sr.listdir("sys/devices/system/node"):
        m = re.match(r"^node(\d+)$", name)
        if m:
            cpulist = sr.read(f"sys/devices/system/node/{name}/cpulist") or ""
            cpumap = sr.read(f"sys/devices/system/node/{name}/cpumap")
            numa_nodes.append({"id": int(m.group(1)), "cpulist": cpulist, "cpumap": cpumap})
    numa_nodes.sort(key=lambda n: n["id"])
    numa_count = len(numa_nodes)

    cpu = _cpuinfo(sr)
    groups = [g for g in sr.listdir("sys/kernel/iommu_groups") if g.isdigit()]

    # GPUs --------------------------------------------------------------------------------
    gpu_devs = sorted(
        (d for d in scan.pci.values() if d.vendor_id == "10de" and d.class_code >> 16 == 0x03),
        key=lambda d: d.bdf,
    )
    gpus = []
    for i, d in enumerate(gpu_devs):
        model, sm = GPU_MODELS.get(d.device_id, (None, None))
        gpus.append(
            {
                "index": i,
                "name": f"GPU{i}",
                "bdf": d.bdf,
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **_ident(d),
                "model": model,
                "sm": sm,
                "numa_node": scan.numa(d),
                "local_cpulist": d.attrs.get("local_cpulist"),
                "driver": sr.link_name(f"{d.path}/driver"),
                "iommu_group": parse_int(sr.link_name(f"{d.path}/iommu_group")),
                "pcie": _link(d),
            }
        )

    # RDMA NICs ---------------------------------------------------------------------------
    rdma_by_bdf: Dict[str, List[str]] = {}
    for ibdev in sr.listdir("sys/class/infiniband"):
        dpath = sr.resolve(f"sys/class/infiniband/{ibdev}/device")
        if not dpath:
            continue
        bdf = dpath.rsplit("/", 1)[-1].lower()
        if bdf in scan.pci:
            rdma_by_bdf.setdefault(bdf, []).append(ibdev)
    nics = []
    for bdf in sorted(rdma_by_bdf):
        d = scan.pci[bdf]
        ibdev = sorted(rdma_by_bdf[bdf])[0]
        ib_path = sr.resolve(f"sys/class/infiniband/{ibdev}") or f"sys/class/infiniband/{ibdev}"
        model, is_vf_id = NIC_MODELS.get(d.device_id, (None, False))
        has_physfn = sr.exists(f"{d.path}/physfn")
        is_vf = has_physfn or is_vf_id
        netdevs = sr.listdir(f"{d.path}/net")
        total = parse_int(d.attrs.get("sriov_totalvfs"))
        sriov = None
        if total is not None:
            sriov = {"total_vfs": total, "num_vfs": parse_int(d.attrs.get("sriov_numvfs")) or 0}
        ports = []
        for pname in sorted((p for p in sr.listdir(f"{ib_path}/ports") if p.isdigit()), key=int):
            pp = f"{ib_path}/ports/{pname}"
            port_no = int(pname)
            netdev = None
            for nd in netdevs:
                dev_port = parse_int(sr.read(f"{d.path}/net/{nd}/dev_port"))
                if (dev_port or 0) + 1 == port_no or len(netdevs) == 1:
                    netdev = nd
                    break
            link_layer = sr.read(f"{pp}/link_layer")
            v2, entries = _gids(sr, pp)
            mtu = parse_int(sr.read(f"sys/class/net/{netdev}/mtu")) if netdev else None
            ports.append(
                {
                    "port": port_no,
                    "link_layer": link_layer,
                    "state": parse_state(sr.read(f"{pp}/state")),
                    "phys_state": parse_state(sr.read(f"{pp}/phys_state")),
                    "rate_gbps": parse_rate(sr.read(f"{pp}/rate")),
                    "netdev": netdev,
                    "mtu": mtu,
                    "mac": sr.read(f"sys/class/net/{netdev}/address") if netdev else None,
                    "roce_v2_ipv4": v2 if link_layer == "Ethernet" else None,
                    "gids": entries,
                }
            )
        nics.append(
            {
                "bdf": bdf,
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **_ident(d),
                "model": model,
                "function": "vf" if is_vf else "pf",
                "driver": sr.link_name(f"{d.path}/driver"),
                "numa_node": scan.numa(d),
                "local_cpulist": d.attrs.get("local_cpulist"),
                "netdevs": netdevs,
                "rdma_device": ibdev,
                "node_guid": sr.read(f"{ib_path}/node_guid"),
                "fw_ver": sr.read(f"{ib_path}/fw_ver"),
                "sriov": sriov,
                "physfn": (sr.resolve(f"{d.path}/physfn") or "").rsplit("/", 1)[-1] or None if has_physfn else None,
                "pcie": _link(d),
                "ports": ports,
                "role": "other",
                "rail": None,
            }
        )

    # PCIe tree ---------------------------------------------------------------------------
    hosts = sorted({d.host for d in scan.pci.values() if d.host})
    host_numa: Dict[str, Optional[int]] = {}
    for d in scan.pci.values():
        if d.host and host_numa.get(d.host) is None:
            host_numa[d.host] = scan.numa(d)
    bridges = []
    for d in sorted(scan.pci.values(), key=lambda x: x.bdf):
        if d.class_code >> 8 != 0x0604:
            continue
        acs = None
        if d.acs_ctl is not None:
            acs = {"ctl": d.acs_ctl, "redirect": bool(d.acs_ctl & (ACS_RR | ACS_CR))}
        bridges.append(
            {
                "bdf": d.bdf,
                "type": d.port_type,
                "parent": d.chain[-1] if d.chain else (f"pci{d.host}" if d.host else None),
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **_ident(d),
                "numa_node": scan.numa(d),
                "acs": acs,
                "pcie": _link(d),
            }
        )
    pcie = {
        "host_bridges": [{"name": f"pci{h}", "domain_bus": h, "numa_node": host_numa.get(h)} for h in hosts],
        "bridges": bridges,
    }

    # path classes ------------------------------------------------------------------------
    topo = None
    if topo_text:
        try:
            topo = parse_topo_matrix(topo_text)
        except ValueError:
            topo = None
    gpu_nic: Dict[str, Dict[str, str]] = {}
    for g, gd in zip(gpus, gpu_devs):
        gpu_nic[g["name"]] = {n["rdma_device"]: path_class(scan, gd, scan.pci[n["bdf"]], numa_count) for n in nics}
    gpu_gpu: Dict[str, Dict[str, str]] = {}
    nvlink: Dict[str, Dict[str, int]] = {}
    for g, gd in zip(gpus, gpu_devs):
        row: Dict[str, str] = {}
        nvrow: Dict[str, int] = {}
        for h, hd in zip(gpus, gpu_devs):
            if g is h:
                continue
            cell = None
            if topo:
                cell = topo["matrix"].get(g["name"], {}).get(h["name"])
            m = re.match(r"^NV(\d+)$", cell or "")
            if m:
                row[h["name"]] = cell
                nvrow[h["name"]] = int(m.group(1))
            else:
                row[h["name"]] = path_class(scan, gd, hd, numa_count)
        gpu_gpu[g["name"]] = row
        if nvrow:
            nvlink[g["name"]] = nvrow
    paths = {
        "gpu_nic": gpu_nic,
        "gpu_gpu": gpu_gpu,
        "nvlink": nvlink,
        "nvidia_smi": topo["matrix"] if topo else None,
    }

    # rails -------------------------------------------------------------------------------
    # Candidates: RDMA PFs with an Ethernet/IB port, and VFs whose PF is not on this host
    # (a VM's passthrough VF); minus NICs the caller reserves for storage. With more
    # candidates than GPUs, the matching (one NIC per GPU) leaves the farthest NICs out; those
    # become storage NICs. With fewer, each NIC serves ceil(GPUs / NICs) GPUs.
    excluded = {x.lower() for x in (storage_nics or [])}
    local_pfs = {n["bdf"] for n in nics if n["function"] == "pf"}
    candidates = [
        n
        for n in nics
        if (n["function"] == "pf" or not n["physfn"] or n["physfn"] not in local_pfs)
        and any(p["link_layer"] in ("Ethernet", "InfiniBand") for p in n["ports"])
    ]
    pool = [
        n
        for n in candidates
        if not ({n["bdf"], n["rdma_device"].lower(), *(x.lower() for x in n["netdevs"])} & excluded)
    ]
    rails: List[Dict[str, Any]] = []
    if gpus and pool:
        matrix = [[gpu_nic[g["name"]][n["rdma_device"]] for n in pool] for g in gpus]
        choice = plan_rails(matrix)
        served: Dict[int, int] = {}
        for gi, col in enumerate(choice):
            served.setdefault(col, gi)
        order = sorted(served, key=lambda c: served[c])
        rail_of = {col: r for r, col in enumerate(order)}
        for col, r in rail_of.items():
            pool[col]["role"] = "compute"
            pool[col]["rail"] = r
        for gi, col in enumerate(choice):
            n = pool[col]
            rails.append(
                {
                    "rail": rail_of[col],
                    "gpu": gpus[gi]["name"],
                    "gpu_bdf": gpus[gi]["bdf"],
                    "nic": n["rdma_device"],
                    "nic_bdf": n["bdf"],
                    "netdev": n["ports"][0]["netdev"] if n["ports"] else None,
                    "path": matrix[gi][col],
                }
            )
    for n in nics:
        if n["role"] != "compute" and n in candidates:
            n["role"] = "storage"

    compute = sorted((n for n in nics if n["role"] == "compute"), key=lambda n: n["rail"])
    ib_hca = None
    if compute:
        ib_hca = "=" + ",".join(f"{n['rdma_device']}:{n['ports'][0]['port'] if n['ports'] else 1}" for n in compute)
    gdr = None
    if rails:
        worst = max(_RANK[r["path"]] for r in rails)
        gdr = PATH_CLASSES[min(worst, _RANK["PHB"])]
    nccl = {"ib_hca": ib_hca, "net_gdr_level": gdr}

    # warnings ----------------------------------------------------------------------------
    acs_seen: Dict[str, List[str]] = {}
    for g, gd in zip(gpus, gpu_devs):
        for n in nics:
            nd = scan.pci[n["bdf"]]
            if _RANK[gpu_nic[g["name"]][n["rdma_device"]]] > _RANK["PXB"]:
                continue
            brs, _depth = path_bridges(scan, gd, nd)
            for b in brs:
                bd = scan.pci.get(b)
                if bd and bd.port_type != "root_port" and bd.acs_ctl is not None and bd.acs_ctl & (ACS_RR | ACS_CR):
                    acs_seen.setdefault(b, []).append(f"{g['name']}-{n['rdma_device']}")
    for b in sorted(acs_seen):
        ctl = scan.pci[b].acs_ctl
        warnings.append(
            {
                "class": "acs_redirect",
                "device": b,
                "message": f"PCIe bridge {b} has ACS redirect on (ACSCtl 0x{ctl:04x}) on the peer-to-peer path "
                f"of {', '.join(acs_seen[b])}; GPUDirect RDMA traffic is sent up to the root complex",
            }
        )
    for r in rails:
        g = gpus[int(r["gpu"][3:])]
        n = next(x for x in nics if x["rdma_device"] == r["nic"])
        if g["numa_node"] is not None and n["numa_node"] is not None and g["numa_node"] != n["numa_node"]:
            warnings.append(
                {
                    "class": "numa_mismatch",
                    "device": g["name"],
                    "message": f"{g['name']} ({g['bdf']}) is on NUMA node {g['numa_node']} but its rail NIC "
                    f"{n['rdma_device']} ({n['bdf']}) is on NUMA node {n['numa_node']} (path {r['path']})",
                }
            )
    for n in nics:
        for p in n["ports"]:
            dev = f"{n['rdma_device']}/{p['port']}"
            if p["state"] != "ACTIVE":
                warnings.append(
                    {
                        "class": "port_down",
                        "device": dev,
                        "message": f"{dev} ({p['netdev']}) is {p['state']} / {p['phys_state']}",
                    }
                )
            if p["link_layer"] == "Ethernet" and p["roce_v2_ipv4"] is None:
                warnings.append(
                    {
                        "class": "roce_v2_gid_missing",
                        "device": dev,
                        "message": f"{dev} ({p['netdev']}) has no RoCE v2 GID with an IPv4 address "
                        "(no IPv4 address on the netdev or its VLANs yet)",
                    }
                )
    for kind, items in (("GPU", gpus), ("NIC", nics)):
        for it in items:
            lk = it["pcie"]
            name = it.get("name") or it.get("rdma_device")
            low_width = lk["current_width"] and lk["max_width"] and lk["current_width"] < lk["max_width"]
            # GPUs lower their link speed when idle (power management): only width counts for them
            low_speed = (
                kind == "NIC"
                and lk["current_speed_gts"]
                and lk["max_speed_gts"]
                and lk["current_speed_gts"] < lk["max_speed_gts"]
            )
            if low_width or low_speed:
                warnings.append(
                    {
                        "class": "link_degraded",
                        "device": name,
                        "message": f"{name} ({it['bdf']}) PCIe link runs at {lk['current_speed_gts']} GT/s "
                        f"x{lk['current_width']} of {lk['max_speed_gts']} GT/s x{lk['max_width']}",
                    }
                )

    return {
        "schema_version": SCHEMA_VERSION,
        "sysroot": sysroot,
        "virtualized": bool(cpu["hypervisor"]),
        "cpu": cpu,
        "system": {
            "vendor": sr.read("sys/class/dmi/id/sys_vendor"),
            "product": sr.read("sys/class/dmi/id/product_name"),
        },
        "iommu": {"enabled": bool(groups), "groups": len(groups)},
        "numa_nodes": numa_nodes,
        "gpus": gpus,
        "nics": nics,
        "pcie": pcie,
        "paths": paths,
        "rails": rails,
        "nccl": nccl,
        "warnings": warnings,
    }


def format_report(facts: Dict[str, Any], hostname: str = "") -> str:
    """Human-readable report: GPUs, NICs, path-class matrix, rails, warnings."""
    out: List[str] = []
    title = f"Topology of {hostname}" if hostname else "Topology"
    out.append(title)
    out.append("=" * len(title))
    sysinfo = facts.get("system") or {}
    cpu = facts.get("cpu") or {}
    out.append(
        f"System: {sysinfo.get('vendor') or '?'} {sysinfo.get('product') or ''}".rstrip()
        + f"; CPU {cpu.get('model_name') or '?'}; NUMA nodes {len(facts['numa_nodes'])}; "
        + f"virtualized {'yes' if facts['virtualized'] else 'no'}; IOMMU "
        + (f"on ({facts['iommu']['groups']} groups)" if facts["iommu"]["enabled"] else "off")
    )
    out.append("")
    out.append(f"GPUs ({len(facts['gpus'])}):")
    for g in facts["gpus"]:
        lk = g["pcie"]
        out.append(
            f"  {g['name']:<5} {g['bdf']}  {g['model'] or g['device_id']:<6} numa {_na(g['numa_node']):<3} "
            f"PCIe {_na(lk['current_speed_gts'])}/{_na(lk['max_speed_gts'])} GT/s "
            f"x{_na(lk['current_width'])}/x{_na(lk['max_width'])}  driver {g['driver'] or '-'}"
        )
    out.append("")
    out.append(f"RDMA NICs ({len(facts['nics'])}):")
    for n in facts["nics"]:
        for p in n["ports"] or [{}]:
            v2 = p.get("roce_v2_ipv4") or {}
            out.append(
                f"  {n['rdma_device']:<8} {n['bdf']}  {(n['model'] or n['device_id']):<13} {n['function']} "
                f"numa {_na(n['numa_node']):<3} {p.get('netdev') or '-':<16} {p.get('state') or '-':<6} "
                f"{_na(p.get('rate_gbps'))} Gb/s mtu {_na(p.get('mtu'))}  "
                f"RoCEv2 {('idx ' + str(v2['gid_index']) + ' ' + v2['ipv4']) if v2 else '-'}  "
                f"{n['role']}{' rail ' + str(n['rail']) if n['rail'] is not None else ''}"
            )
    out.append("")
    nic_names = [n["rdma_device"] for n in facts["nics"]]
    gpu_names = [g["name"] for g in facts["gpus"]]
    if gpu_names:
        cols = gpu_names + nic_names
        width = max([6, *(len(c) + 1 for c in cols)])
        out.append("Path classes (GPU x GPU, GPU x NIC):")
        out.append(" " * 7 + "".join(c.ljust(width) for c in cols))
        for g in gpu_names:
            cells = []
            for c in cols:
                if c == g:
                    cells.append("X")
                elif c in facts["paths"]["gpu_gpu"].get(g, {}):
                    cells.append(facts["paths"]["gpu_gpu"][g][c])
                else:
                    cells.append(facts["paths"]["gpu_nic"][g].get(c, "?"))
            out.append(g.ljust(7) + "".join(x.ljust(width) for x in cells))
        out.append("")
    out.append("Rails:")
    if not facts["rails"]:
        out.append("  (none)")
    for r in facts["rails"]:
        out.append(f"  rail {r['rail']}: {r['gpu']} ({r['gpu_bdf']}) -> {r['nic']} {r['netdev'] or ''} [{r['path']}]")
    out.append(
        f"NCCL_IB_HCA={facts['nccl']['ib_hca'] or '-'}  NCCL_NET_GDR_LEVEL={facts['nccl']['net_gdr_level'] or '-'}"
    )
    out.append("")
    out.append(f"Warnings ({len(facts['warnings'])}):")
    if not facts["warnings"]:
        out.append("  (none)")
    for w in facts["warnings"]:
        out.append(f"  [{w['class']}] {w['device']}: {w['message']}")
    return "\n".join(out) + "\n"


def _na(v: Any) -> str:
    return "-" if v is None else str(v)
