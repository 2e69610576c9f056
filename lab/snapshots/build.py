#!/usr/bin/env python
"""Build hardware snapshots (sysroots) for the lab and the unit tests.

Usage:
    python3 lab/snapshots/build.py NAME OUTPUT.tar.gz     # write a tarball
    python3 lab/snapshots/build.py --list                 # list known names

From Python (stdlib only, importable from anywhere):
    spec = importlib.util.spec_from_file_location("snapshots_build", "lab/snapshots/build.py")
    ...; module.materialize("dgx-h200-8x8@3", "/tmp/sysroot")

NAME is a layout from ``layouts/<name>.json`` (a compact description of the PCIe tree, the NICs
and the CPUs, turned into a sysfs/procfs tree here), or ``h200-real`` (a capture of a real server
taken with playbooks/snapshot.yml, committed as ``h200-real/snapshot.tar.gz``).

A suffix ``@N`` (1..255) gives node N of a cluster of that hardware type: the same devices, but
distinct MAC addresses, node GUIDs and IPv4 GIDs.  Without a suffix the node number is 1.
Addressing scheme (documented in README.md):
    compute NIC on rail r of node N:  10.r.N.1/16 ... (GID ::ffff:10.r.N.1)
    storage NIC s of node N:          172.16.s.N
    MAC of NIC i on node N:           b8:3f:d2:<N hi>:<N lo>:<i>
    node GUID:                        b83f:d2ff:fe<N hi>:<N lo><i>

Tarball members are paths relative to the sysroot (``sys/...``, ``proc/...``,
``nvidia-smi-topo-m.txt``); symlinks are relative, as the kernel makes them.
The file formats follow the kernel ABI (see README.md for each file and its source).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import struct
import sys
import tarfile
import tempfile
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS = os.path.join(HERE, "layouts")
REAL_CAPTURES = {"h200-real": os.path.join(HERE, "h200-real", "snapshot.tar.gz")}


def _load_capture_script():
    """The capture script that playbooks/snapshot.yml ships to nodes; its tarball writer makes
    built snapshots byte-compatible with captured ones."""
    path = os.path.join(HERE, "..", "..", "playbooks", "files", "snapshot_capture.py")
    spec = importlib.util.spec_from_file_location("gpufabric_snapshot_capture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


write_tarball = _load_capture_script().write_tarball

# PCI identities of the hardware models used by the layouts.
# ids: torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/main.c (mlx5 table), pci.ids
# (NVIDIA GPUs, Broadcom/PLX switches, Intel/AMD root ports, NVMe).
MODELS: Dict[str, Dict[str, Any]] = {
    "h200": {"vendor": 0x10DE, "device": 0x2335, "class": 0x030200, "ssv": 0x10DE, "ssd": 0x18BF, "driver": "nvidia"},
    "h100": {"vendor": 0x10DE, "device": 0x2330, "class": 0x030200, "ssv": 0x10DE, "ssd": 0x16C1, "driver": "nvidia"},
    "l40s": {"vendor": 0x10DE, "device": 0x26B9, "class": 0x030200, "ssv": 0x10DE, "ssd": 0x1851, "driver": "nvidia"},
    "cx7": {
        "vendor": 0x15B3,
        "device": 0x1021,
        "class": 0x020000,
        "ssv": 0x15B3,
        "ssd": 0x0041,
        "driver": "mlx5_core",
        "hca_type": "MT4129",
        "board_id": "MT_0000000838",
        "fw_ver": "28.43.1014",
        "totalvfs": 16,
    },
    "cx6dx": {
        "vendor": 0x15B3,
        "device": 0x101D,
        "class": 0x020000,
        "ssv": 0x15B3,
        "ssd": 0x0016,
        "driver": "mlx5_core",
        "hca_type": "MT4125",
        "board_id": "MT_0000000359",
        "fw_ver": "22.41.1000",
        "totalvfs": 8,
    },
    "cx7vf": {
        "vendor": 0x15B3,
        "device": 0x101E,
        "class": 0x020000,
        "ssv": 0x15B3,
        "ssd": 0x0041,
        "driver": "mlx5_core",
        "hca_type": "MT4126",
        "board_id": "MT_0000000838",
        "fw_ver": "28.43.1014",
    },
    "nvme": {"vendor": 0x144D, "device": 0xA80A, "class": 0x010802, "ssv": 0x144D, "ssd": 0xA813, "driver": "nvme"},
    "pex89": {"vendor": 0x1000, "device": 0xC030, "class": 0x060400, "ssv": 0x1000, "ssd": 0x100B},
    "pex88": {"vendor": 0x10B5, "device": 0x8796, "class": 0x060400, "ssv": 0x10B5, "ssd": 0x8796},
    "intel_rp": {"vendor": 0x8086, "device": 0x352A, "class": 0x060400, "ssv": 0x8086, "ssd": 0x0000},
    "amd_rp": {"vendor": 0x1022, "device": 0x14AB, "class": 0x060400, "ssv": 0x1022, "ssd": 0x1453},
}

# PCIe capability port types (pci_regs.h PCI_EXP_TYPE_*)
PORT_TYPES = {"endpoint": 0x0, "root_port": 0x4, "switch_upstream": 0x5, "switch_downstream": 0x6}


class SnapshotError(Exception):
    """A snapshot name or layout is invalid."""


def parse_name(name: str) -> Tuple[str, int]:
    """Split ``layout@N`` into (layout, N); N defaults to 1."""
    m = re.fullmatch(r"([a-z0-9][a-z0-9-]*)(?:@(\d+))?", name)
    if not m:
        raise SnapshotError(f"invalid snapshot name {name!r} (expected NAME or NAME@N)")
    node = int(m.group(2)) if m.group(2) else 1
    if not 1 <= node <= 255:
        raise SnapshotError(f"node number in {name!r} must be 1..255")
    return m.group(1), node


def known_names() -> List[str]:
    names = sorted(f[:-5] for f in os.listdir(LAYOUTS) if f.endswith(".json"))
    return names + sorted(REAL_CAPTURES)


# ----------------------------------------------------------------------------------------------
# helpers


def parse_cpulist(text: str) -> List[int]:
    cpus: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-")
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def cpumask(cpus: List[int], ncpus: int) -> str:
    """Kernel cpumask text: comma-separated 32-bit hex words, most significant first."""
    words = max(1, (ncpus + 31) // 32)
    value = 0
    for c in cpus:
        value |= 1 << c
    return ",".join(f"{(value >> (32 * i)) & 0xFFFFFFFF:08x}" for i in reversed(range(words)))


def config_space(model: Dict[str, Any], port_type: int, bridge: bool, acs_ctl: Optional[int]) -> bytes:
    """A 4 KiB PCIe config space with the fields discovery reads (PCI/PCIe base spec layout).

    0x00 vendor, 0x02 device, 0x06 status (bit 4: capability list), 0x09 class (3 bytes),
    0x0e header type, 0x2c subsystem ids (type 0 only), 0x34 capability pointer -> PCIe
    capability (id 0x10) at 0x40 whose flags (0x42) carry the port type in bits 7:4;
    extended capabilities from 0x100: ACS (id 0x000d) with its control register at +6.
    """
    cfg = bytearray(4096)
    struct.pack_into("<HH", cfg, 0x00, model["vendor"], model["device"])
    struct.pack_into("<H", cfg, 0x06, 0x0010)
    cls = model["class"]
    cfg[0x09] = cls & 0xFF
    cfg[0x0A] = (cls >> 8) & 0xFF
    cfg[0x0B] = (cls >> 16) & 0xFF
    cfg[0x0E] = 0x01 if bridge else 0x00
    if not bridge:
        struct.pack_into("<HH", cfg, 0x2C, model["ssv"], model["ssd"])
    cfg[0x34] = 0x40
    cfg[0x40] = 0x10
    cfg[0x41] = 0x00
    struct.pack_into("<H", cfg, 0x42, 0x0002 | (port_type << 4))
    if acs_ctl is not None:
        # extended capability header: id 0x000d, version 1, next 0
        struct.pack_into("<I", cfg, 0x100, 0x000D | (1 << 16))
        struct.pack_into("<HH", cfg, 0x104, 0x005F, acs_ctl)
    return bytes(cfg)


class _Writer:
    def __init__(self, root: str):
        self.root = root

    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel)

    def file(self, rel: str, content: Any) -> None:
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        data = content if isinstance(content, bytes) else (str(content) + "\n").encode()
        with open(p, "wb") as fh:
            fh.write(data)

    def dir(self, rel: str) -> None:
        os.makedirs(self.path(rel), exist_ok=True)

    def link(self, rel: str, target_rel: str) -> None:
        """Relative symlink at rel pointing at target_rel (both relative to the sysroot)."""
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        target = os.path.relpath(target_rel, os.path.dirname(rel) or ".")
        if os.path.lexists(p):
            os.remove(p)
        os.symlink(target, p)


# ----------------------------------------------------------------------------------------------
# layout -> tree


class _Builder:
    def __init__(self, layout: Dict[str, Any], node: int, w: _Writer):
        self.L = layout
        self.node = node
        self.w = w
        self.ncpus = 0
        for n in layout.get("numa", []):
            self.ncpus = max(self.ncpus, max(parse_cpulist(n["cpulist"])) + 1)
        self.ncpus = max(self.ncpus, layout["cpu"].get("count", 0))
        self.iommu_group = 0
        self.nic_count = 0
        self.rdma_count = 0
        self.nvme_count = 0
        self.pci_devices: List[str] = []
        self.vlans: List[Tuple[str, int, str]] = []  # (VLAN netdev, VID, real device) for proc/net/vlan

    # identity of node N -------------------------------------------------------------------
    def mac(self, i: int) -> str:
        return f"b8:3f:d2:{(self.node >> 8) & 0xFF:02x}:{self.node & 0xFF:02x}:{i:02x}"

    def guid(self, i: int) -> str:
        return f"b83f:d2ff:fe{(self.node >> 8) & 0xFF:02x}:{self.node & 0xFF:02x}{i:02x}"

    def link_local_gid(self, i: int) -> str:
        return f"fe80:0000:0000:0000:ba3f:d2ff:fe{(self.node >> 8) & 0xFF:02x}:{self.node & 0xFF:02x}{i:02x}"

    def ipv4(self, addr: str) -> str:
        """Templates: 'rail:R' -> 10.R.N.1, 'storage:S' -> 172.16.S.N, else literal."""
        kind, _sep, val = addr.partition(":")
        if kind == "rail":
            return f"10.{int(val)}.{self.node}.1"
        if kind == "storage":
            return f"172.16.{int(val)}.{self.node}"
        return addr

    # tree -------------------------------------------------------------------------------
    def build(self) -> None:
        L = self.L
        w = self.w
        numa = L.get("numa", [])
        for n in numa:
            cpus = parse_cpulist(n["cpulist"])
            w.file(f"sys/devices/system/node/node{n['id']}/cpulist", n["cpulist"])
            w.file(f"sys/devices/system/node/node{n['id']}/cpumap", cpumask(cpus, self.ncpus))
        if numa:
            w.file("sys/devices/system/node/online", _ranges([n["id"] for n in numa]))
            w.file("sys/devices/system/node/possible", _ranges([n["id"] for n in numa]))
        w.file("sys/devices/system/cpu/online", f"0-{self.ncpus - 1}")
        w.file("proc/cpuinfo", self.cpuinfo())
        w.file("proc/cmdline", L.get("cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro"))
        dmi = L.get("dmi", {})
        for key in ("sys_vendor", "product_name"):
            if key in dmi:
                w.file(f"sys/class/dmi/id/{key}", dmi[key])
        w.dir("sys/kernel/iommu_groups")
        if L.get("iommu"):
            w.dir("sys/class/iommu/dmar0")
        for drv in ("nvidia", "mlx5_core", "nvme", "pcieport"):
            w.dir(f"sys/bus/pci/drivers/{drv}")
        for hb in L["host_bridges"]:
            base = f"sys/devices/pci{hb['bus']}"
            w.dir(base)
            for dev in hb["devices"]:
                self.device(dev, base, hb.get("numa", -1), None)
        if self.vlans:
            # net/8021q/vlanproc.c: the config table, and per VLAN netdev its VID line (statistics left out)
            rows = "".join(f"{name:<15}| {vid}  | {real}\n" for name, vid, real in self.vlans)
            w.file(
                "proc/net/vlan/config",
                "VLAN Dev name\t | VLAN ID\nName-Type: VLAN_NAME_TYPE_RAW_PLUS_VID_NO_PAD\n" + rows.rstrip("\n"),
            )
            for vname, vid, _real in self.vlans:
                w.file(f"proc/net/vlan/{vname}", f"{vname}  VID: {vid}\t REORDER_HDR: 1  dev->priv_flags: 1001")

    def cpuinfo(self) -> str:
        c = self.L["cpu"]
        flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2"
        flags += " ht syscall nx pdpe1gb rdtscp lm constant_tsc nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16"
        flags += " pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand"
        if c.get("hypervisor"):
            flags += " hypervisor"
        flags += " avx2 avx512f"
        numa = self.L.get("numa", [])
        sockets = c.get("sockets", 1)
        blocks = []
        for cpu in range(self.ncpus):
            socket = 0
            for n in numa:
                if cpu in parse_cpulist(n["cpulist"]):
                    socket = min(n["id"], sockets - 1)
            blocks.append(
                f"processor\t: {cpu}\nvendor_id\t: {c['vendor']}\ncpu family\t: {c['family']}\n"
                f"model\t\t: {c['model']}\nmodel name\t: {c['model_name']}\nstepping\t: {c.get('stepping', 8)}\n"
                f"physical id\t: {socket}\nsiblings\t: {self.ncpus // sockets}\n"
                f"cpu cores\t: {self.ncpus // sockets // c.get('threads_per_core', 2)}\nflags\t\t: {flags}\n"
            )
        return "\n".join(blocks)

    def device(self, dev: Dict[str, Any], parent: str, numa: int, parent_kind: Optional[str]) -> None:
        kind = dev["kind"]
        if kind == "switch":
            up = dict(dev["upstream"], kind="switch_upstream", model=dev.get("model", "pex89"))
            up["children"] = [
                dict(d, kind="switch_downstream", model=dev.get("model", "pex89")) for d in dev["downstream"]
            ]
            self.device(up, parent, numa, parent_kind)
            return
        model = MODELS[dev["model"]]
        bdf = dev["bdf"]
        path = f"{parent}/{bdf}"
        w = self.w
        self.pci_devices.append(path)
        bridge = kind in ("root_port", "switch_upstream", "switch_downstream")
        numa_node = dev.get("numa", numa)
        local = self._local_cpus(numa_node)
        w.file(f"{path}/vendor", f"0x{model['vendor']:04x}")
        w.file(f"{path}/device", f"0x{model['device']:04x}")
        w.file(f"{path}/subsystem_vendor", f"0x{model['ssv']:04x}")
        w.file(f"{path}/subsystem_device", f"0x{model['ssd']:04x}")
        w.file(f"{path}/class", f"0x{model['class']:06x}")
        w.file(f"{path}/numa_node", str(numa_node))
        w.file(f"{path}/local_cpulist", local[0])
        w.file(f"{path}/local_cpus", local[1])
        w.file(f"{path}/enable", "1")
        link = dev.get("link", "32.0 GT/s PCIe x16")
        max_link = dev.get("max_link", link)
        speed, width = _split_link(link)
        max_speed, max_width = _split_link(max_link)
        w.file(f"{path}/current_link_speed", speed)
        w.file(f"{path}/current_link_width", width)
        w.file(f"{path}/max_link_speed", max_speed)
        w.file(f"{path}/max_link_width", max_width)
        port_type = PORT_TYPES.get(kind, 0)
        w.file(f"{path}/config", config_space(model, port_type, bridge, dev.get("acs")))
        w.link(f"sys/bus/pci/devices/{bdf}", path)
        driver = "pcieport" if bridge else model.get("driver")
        if driver:
            w.link(f"{path}/driver", f"sys/bus/pci/drivers/{driver}")
            w.link(f"sys/bus/pci/drivers/{driver}/{bdf}", path)
        if self.L.get("iommu"):
            g = self.iommu_group
            self.iommu_group += 1
            w.link(f"sys/kernel/iommu_groups/{g}/devices/{bdf}", path)
            w.link(f"{path}/iommu_group", f"sys/kernel/iommu_groups/{g}")
        if bridge:
            buses = [int(c["bdf"].split(":")[1], 16) for c in self._flat_children(dev)]
            sec = min(buses) if buses else int(bdf.split(":")[1], 16) + 1
            sub = max(buses) if buses else sec
            w.file(f"{path}/secondary_bus_number", str(sec))
            w.file(f"{path}/subordinate_bus_number", str(sub))
            for child in dev.get("children", []):
                self.device(child, path, numa, kind)
        elif kind == "nic":
            self.nic(dev, path, model)
        elif kind == "nvme":
            name = f"nvme{self.nvme_count}"
            self.nvme_count += 1
            w.file(f"{path}/nvme/{name}/model", "SAMSUNG MZWLO3T8HCLS-00A07")
            w.link(f"sys/class/nvme/{name}", f"{path}/nvme/{name}")

    def _flat_children(self, dev: Dict[str, Any]) -> List[Dict[str, Any]]:
        out = []
        for c in dev.get("children", []):
            if c["kind"] == "switch":
                out.append(c["upstream"])
                out.extend(c["downstream"])
                for d in c["downstream"]:
                    out.extend(self._flat_children(d))
            else:
                out.append(c)
                out.extend(self._flat_children(c))
        return out

    def _local_cpus(self, numa_node: int) -> Tuple[str, str]:
        for n in self.L.get("numa", []):
            if n["id"] == numa_node:
                return n["cpulist"], cpumask(parse_cpulist(n["cpulist"]), self.ncpus)
        allcpus = list(range(self.ncpus))
        return f"0-{self.ncpus - 1}", cpumask(allcpus, self.ncpus)

    def nic(self, dev: Dict[str, Any], path: str, model: Dict[str, Any]) -> None:
        w = self.w
        i = self.nic_count
        self.nic_count += 1
        rdma = f"mlx5_{self.rdma_count}"
        self.rdma_count += 1
        netdev = dev["netdev"]
        port = dev.get("port", {})
        mtu = port.get("mtu", 9000)
        if dev.get("vf"):
            if dev.get("physfn"):
                w.link(f"{path}/physfn", f"sys/bus/pci/devices/{dev['physfn']}")
        elif "totalvfs" in model:
            w.file(f"{path}/sriov_totalvfs", model["totalvfs"])
            w.file(f"{path}/sriov_numvfs", dev.get("numvfs", 0))
        nd = f"{path}/net/{netdev}"
        up = port.get("state", "ACTIVE") == "ACTIVE"
        w.file(f"{nd}/address", self.mac(i))
        w.file(f"{nd}/mtu", mtu)
        w.file(f"{nd}/operstate", "up" if up else "down")
        w.file(f"{nd}/dev_port", 0)
        w.file(f"{nd}/type", 1)
        w.link(f"{nd}/device", path)
        w.link(f"sys/class/net/{netdev}", nd)
        ib = f"{path}/infiniband/{rdma}"
        w.link(f"{ib}/device", path)
        w.link(f"sys/class/infiniband/{rdma}", ib)
        w.file(f"{ib}/node_guid", self.guid(i))
        w.file(f"{ib}/sys_image_guid", self.guid(i))
        w.file(f"{ib}/fw_ver", model["fw_ver"])
        w.file(f"{ib}/hca_type", model["hca_type"])
        w.file(f"{ib}/board_id", model["board_id"])
        w.file(f"{ib}/node_type", "1: CA")
        p = f"{ib}/ports/1"
        w.file(f"{p}/link_layer", "Ethernet")
        w.file(f"{p}/state", "4: ACTIVE" if up else "1: DOWN")
        w.file(f"{p}/phys_state", "5: LinkUp" if up else "3: Disabled")
        w.file(f"{p}/rate", port.get("rate", "400 Gb/sec (4X NDR)") if up else "40 Gb/sec (4X QDR)")
        w.file(f"{p}/lid", "0x0")
        w.file(f"{p}/sm_lid", "0x0")
        # GID table: IPv6 link-local v1/v2 for the netdev, then per extra netdev (VLAN) its own
        # link-local pair, then per IPv4 address a v1 and a v2 entry, in the order the kernel's
        # GID cache adds them (drivers/infiniband/core/roce_gid_mgmt.c).
        entries: List[Tuple[str, str, str]] = []
        ll = self.link_local_gid(i)
        entries += [(ll, "IB/RoCE v1", netdev), (ll, "RoCE v2", netdev)]
        for vlan in dev.get("vlans", []):
            vname = f"{netdev}.{vlan['id']}"
            vd = f"sys/devices/virtual/net/{vname}"
            w.file(f"{vd}/address", self.mac(i))
            w.file(f"{vd}/mtu", vlan.get("mtu", mtu))
            w.file(f"{vd}/operstate", "up" if up else "down")
            w.file(f"{vd}/type", 1)
            w.link(f"{vd}/lower_{netdev}", nd)
            w.link(f"{nd}/upper_{vname}", vd)
            w.link(f"sys/class/net/{vname}", vd)
            self.vlans.append((vname, int(vlan["id"]), netdev))
            entries += [(ll, "IB/RoCE v1", vname), (ll, "RoCE v2", vname)]
        for addr in port.get("ipv4", []):
            ip, _sep, ndev = addr.partition("@")
            ndev = ndev or netdev
            octets = [int(o) for o in self.ipv4(ip).split(".")]
            gid = "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}".format(*octets)
            entries += [(gid, "IB/RoCE v1", ndev), (gid, "RoCE v2", ndev)]
        size = max(8, len(entries) + 2)
        for idx in range(size):
            if idx < len(entries):
                gid, typ, ndev = entries[idx]
                w.file(f"{p}/gids/{idx}", gid)
                w.file(f"{p}/gid_attrs/types/{idx}", typ)
                w.file(f"{p}/gid_attrs/ndevs/{idx}", ndev)
            else:
                # unused entries read as zeros; their attributes fail with EINVAL (not captured)
                w.file(f"{p}/gids/{idx}", "0000:0000:0000:0000:0000:0000:0000:0000")


def _ranges(ids: List[int]) -> str:
    ids = sorted(ids)
    if not ids:
        return ""
    if ids == list(range(ids[0], ids[-1] + 1)) and len(ids) > 1:
        return f"{ids[0]}-{ids[-1]}"
    return ",".join(str(i) for i in ids)


def _split_link(text: str) -> Tuple[str, str]:
    """'32.0 GT/s PCIe x16' -> ('32.0 GT/s PCIe', '16'); 'Unknown x0' -> ('Unknown', '0')."""
    speed, _sep, width = text.rpartition(" x")
    return speed, width


# ----------------------------------------------------------------------------------------------
# public API


def load_layout(layout: str) -> Dict[str, Any]:
    path = os.path.join(LAYOUTS, layout + ".json")
    if not os.path.isfile(path):
        raise SnapshotError(f"unknown snapshot {layout!r}; known: {', '.join(known_names())}")
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def materialize(name: str, dest_dir: str) -> str:
    """Write the sysroot of snapshot ``name`` (e.g. ``dgx-h200-8x8@3``) into ``dest_dir``.

    Returns dest_dir.  The directory is created if needed; it should be empty.
    """
    layout, node = parse_name(name)
    os.makedirs(dest_dir, exist_ok=True)
    if layout in REAL_CAPTURES:
        if "@" in name:
            raise SnapshotError(f"{layout!r} is a real capture; it has no @N node variants")
        tarball = REAL_CAPTURES[layout]
        if not os.path.isfile(tarball):
            raise SnapshotError(f"the real capture {layout!r} is not present ({os.path.relpath(tarball, HERE)})")
        _extract(tarball, dest_dir)
        return dest_dir
    spec = load_layout(layout)
    _Builder(spec, node, _Writer(dest_dir)).build()
    topo = os.path.join(LAYOUTS, layout + ".topo-m.txt")
    if os.path.isfile(topo):
        shutil.copyfile(topo, os.path.join(dest_dir, "nvidia-smi-topo-m.txt"))
    return dest_dir


def _extract(tarball: str, dest: str) -> None:
    with tarfile.open(tarball, "r:gz") as tf:
        members = []
        for m in tf.getmembers():
            if m.name.startswith("/") or ".." in m.name.split("/"):
                raise SnapshotError(f"unsafe member {m.name!r} in {tarball}")
            if not (m.isfile() or m.isdir() or m.issym()):
                continue
            members.append(m)
        tf.extractall(dest, members=members)


def build(name: str, output: str) -> None:
    layout = parse_name(name)[0]
    if layout in REAL_CAPTURES and "@" not in name:
        shutil.copyfile(REAL_CAPTURES[layout], output)
        return
    with tempfile.TemporaryDirectory() as tmp:
        materialize(name, tmp)
        write_tarball(tmp, output)


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    ap.add_argument("name", nargs="?", help="snapshot name, e.g. dgx-h200-8x8@2")
    ap.add_argument("output", nargs="?", help="output .tar.gz")
    ap.add_argument("--list", action="store_true", help="list the known snapshot names")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(known_names()))
        return 0
    if not args.name or not args.output:
        ap.error("NAME and OUTPUT are required")
    try:
        build(args.name, args.output)
    except SnapshotError as exc:
        print(f"build.py: {exc}", file=sys.stderr)
        return 2
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
