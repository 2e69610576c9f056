# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PCI side of topology discovery: device tables, the scanned PCI tree and path classes.

``Scan`` reads every PCI function under ``sys/bus/pci/devices`` once (attributes, and for bridges
the PCIe port type and ACS control from config space, inferred from the tree position when
config space is cut short); ``path_class`` gives the ``nvidia-smi topo -m`` class of the path
between two functions. Sources: torvalds/linux drivers/pci/pci-sysfs.c, pci_regs.h, pci.ids
(NVIDIA). NIC device ids are the NIC drivers' (plugins/module_utils/nic).
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import (
    BDF,
    parse_config,
    parse_hex,
    parse_int,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot

# nvidia-smi / NCCL path classes, best first
PATH_CLASSES = ("PIX", "PXB", "PHB", "NODE", "SYS")
RANK = {c: i for i, c in enumerate(PATH_CLASSES)}

BRIDGE_CLASS = 0x0604

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
        self.chain = [c for c in comps[start + 1 : -1] if BDF.match(c)]  # bridges above, top first
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


class Scan:
    """Everything read from the sysroot, indexed."""

    def __init__(self, sr: Sysroot):
        self.sr = sr
        self.pci: Dict[str, PciDev] = {}
        for bdf in sr.listdir("sys/bus/pci/devices"):
            path = sr.real(f"sys/bus/pci/devices/{bdf}")
            if not path or not sr.isdir(path):
                continue
            dev = PciDev(bdf.lower(), path)
            a = dev.attrs
            for name in _PCI_ATTRS:
                a[name] = sr.read(f"{path}/{name}")
            if (parse_hex(a["class"]) or 0) >> 8 != BRIDGE_CLASS:  # endpoints only
                for name in _ENDPOINT_ATTRS:
                    a[name] = sr.read(f"{path}/{name}")
            dev.vendor_id = "%04x" % (parse_hex(a["vendor"]) or 0)
            dev.device_id = "%04x" % (parse_hex(a["device"]) or 0)
            dev.class_code = parse_hex(a["class"]) or 0
            self.pci[dev.bdf] = dev
        # bridges: port type and ACS from config space; inferred from position otherwise
        for dev in self.pci.values():
            if dev.class_code >> 8 != BRIDGE_CLASS:
                continue
            cfg = parse_config(self.sr.read_bytes(f"{dev.path}/config"))
            dev.port_type = cfg.get("port_type")
            dev.acs_ctl = cfg.get("acs_ctl")
        for dev in self.pci.values():
            if dev.class_code >> 8 == BRIDGE_CLASS and dev.port_type not in (
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


def _switch_id(scan: Scan, bdf: str) -> Optional[str]:
    dev = scan.pci.get(bdf)
    if dev is None or dev.port_type == "root_port":
        return None
    if dev.port_type == "switch_downstream" and dev.chain:
        return dev.chain[-1]
    return bdf


def path_bridges(scan: Scan, a: PciDev, b: PciDev) -> Tuple[List[str], int]:
    """Bridges a peer-to-peer transfer between a and b crosses, and the common-prefix length."""
    k = 0
    while k < len(a.chain) and k < len(b.chain) and a.chain[k] == b.chain[k]:
        k += 1
    if a.host != b.host or k == 0:
        return [], 0
    return [a.chain[k - 1], *a.chain[k:], *b.chain[k:]], k


def path_class(scan: Scan, a: PciDev, b: PciDev, numa_count: int) -> str:
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
