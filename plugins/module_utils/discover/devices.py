# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The devices topology discovery reports, from sysfs and procfs: the CPU, NUMA nodes, GPUs, RDMA
NICs with their ports, and the PCIe tree's host bridges and bridges (``discover.topology`` puts
them together). Sources: torvalds/linux Documentation/ABI (sysfs-bus-pci, sysfs-class-infiniband,
sysfs-class-net, sysfs-devices-system-node), drivers/pci/pci-sysfs.c.
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import (
    BRIDGE_CLASS,
    GPU_MODELS,
    PciDev,
    Scan,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.registry import nic_model
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import (
    ACS_REDIRECT_MASK,
    parse_hex,
    parse_int,
    parse_rate,
    parse_speed,
    parse_state,
    read_gids,
    select_roce_v2_gid,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import integer_or_none


def ident(dev: PciDev) -> Dict[str, Any]:
    """Identity fields shared by GPUs, NICs and bridges."""
    a = dev.attrs
    return {
        "class": f"0x{dev.class_code:06x}",
        "subsystem_vendor_id": "%04x" % (parse_hex(a.get("subsystem_vendor")) or 0),
        "subsystem_device_id": "%04x" % (parse_hex(a.get("subsystem_device")) or 0),
        "host_bridge": f"pci{dev.host}" if dev.host else None,
        "pci_path": list(dev.chain),
    }


def link(dev: PciDev) -> Dict[str, Any]:
    """The PCIe link's current and maximum speed and width."""
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


def cpuinfo(sr: Sysroot) -> Dict[str, Any]:
    """The CPU's architecture, vendor, family, model and whether it runs under a hypervisor."""
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


def numa_nodes(sr: Sysroot) -> List[Dict[str, Any]]:
    """The NUMA nodes with their CPU lists, by id."""
    nodes = []
    for name in sr.listdir("sys/devices/system/node"):
        m = re.match(r"^node([0-9]{1,5})$", name)
        if m:
            cpulist = sr.read(f"sys/devices/system/node/{name}/cpulist") or ""
            cpumap = sr.read(f"sys/devices/system/node/{name}/cpumap")
            nodes.append({"id": int(m.group(1)), "cpulist": cpulist, "cpumap": cpumap})
    nodes.sort(key=lambda n: n["id"])
    return nodes


def gpus(sr: Sysroot, scan: Scan) -> Tuple[List[Dict[str, Any]], List[PciDev]]:
    """The NVIDIA display-class functions in BDF order, as GPU0.., with their PCI functions."""
    gpu_devs = sorted(
        (d for d in scan.pci.values() if d.vendor_id == "10de" and d.class_code >> 16 == 0x03),
        key=lambda d: d.bdf,
    )
    out = []
    for i, d in enumerate(gpu_devs):
        model, sm = GPU_MODELS.get(d.device_id, (None, None))
        out.append(
            {
                "index": i,
                "name": f"GPU{i}",
                "bdf": d.bdf,
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **ident(d),
                "model": model,
                "sm": sm,
                "numa_node": scan.numa(d),
                "local_cpulist": d.attrs.get("local_cpulist"),
                "driver": sr.link_name(f"{d.path}/driver"),
                "iommu_group": parse_int(sr.link_name(f"{d.path}/iommu_group")),
                "pcie": link(d),
            }
        )
    return out, gpu_devs


def _rdma_by_bdf(sr: Sysroot, scan: Scan) -> Dict[str, List[str]]:
    """The RDMA devices (sys/class/infiniband) of each scanned PCI function."""
    found: Dict[str, List[str]] = {}
    for ibdev in sr.listdir("sys/class/infiniband"):
        dpath = sr.real(f"sys/class/infiniband/{ibdev}/device")
        if not dpath:
            continue
        bdf = dpath.rsplit("/", 1)[-1].lower()
        if bdf in scan.pci:
            found.setdefault(bdf, []).append(ibdev)
    return found


def _ports(sr: Sysroot, d: PciDev, ib_path: str, netdevs: List[str]) -> List[Dict[str, Any]]:
    """The RDMA device's ports, each with its netdev, state, rate, MTU and GIDs."""
    ports = []
    port_numbers = (integer_or_none(p, 1, 0xFFFF) for p in sr.listdir(f"{ib_path}/ports"))
    for port_no in sorted(p for p in port_numbers if p is not None):
        pp = f"{ib_path}/ports/{port_no}"
        netdev = None
        for nd in netdevs:
            dev_port = parse_int(sr.read(f"{d.path}/net/{nd}/dev_port"))
            if (dev_port or 0) + 1 == port_no or len(netdevs) == 1:
                netdev = nd
                break
        link_layer = sr.read(f"{pp}/link_layer")
        entries = read_gids(sr, pp)
        v2 = select_roce_v2_gid(entries)
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
    return ports


def nics(sr: Sysroot, scan: Scan) -> List[Dict[str, Any]]:
    """The PCI functions with an RDMA device, in BDF order (role and rail still open)."""
    rdma = _rdma_by_bdf(sr, scan)
    out = []
    for bdf in sorted(rdma):
        d = scan.pci[bdf]
        ibdev = sorted(rdma[bdf])[0]
        ib_path = sr.real(f"sys/class/infiniband/{ibdev}") or f"sys/class/infiniband/{ibdev}"
        model, is_vf_id = nic_model(d.vendor_id, d.device_id)
        has_physfn = sr.exists(f"{d.path}/physfn")
        netdevs = sr.listdir(f"{d.path}/net")
        total = parse_int(d.attrs.get("sriov_totalvfs"))
        sriov = None
        if total is not None:
            sriov = {"total_vfs": total, "num_vfs": parse_int(d.attrs.get("sriov_numvfs")) or 0}
        out.append(
            {
                "bdf": bdf,
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **ident(d),
                "model": model,
                "function": "vf" if has_physfn or is_vf_id else "pf",
                "driver": sr.link_name(f"{d.path}/driver"),
                "numa_node": scan.numa(d),
                "local_cpulist": d.attrs.get("local_cpulist"),
                "netdevs": netdevs,
                "rdma_device": ibdev,
                "node_guid": sr.read(f"{ib_path}/node_guid"),
                "fw_ver": sr.read(f"{ib_path}/fw_ver"),
                "sriov": sriov,
                "physfn": (sr.real(f"{d.path}/physfn") or "").rsplit("/", 1)[-1] or None if has_physfn else None,
                "pcie": link(d),
                "ports": _ports(sr, d, ib_path, netdevs),
                "role": "other",
                "rail": None,
            }
        )
    return out


def pcie_tree(scan: Scan) -> Dict[str, Any]:
    """The host bridges (with their NUMA node) and the PCI bridges (type, parent, ACS control)."""
    hosts = sorted({d.host for d in scan.pci.values() if d.host})
    host_numa: Dict[str, Optional[int]] = {}
    for d in scan.pci.values():
        if d.host and host_numa.get(d.host) is None:
            host_numa[d.host] = scan.numa(d)
    bridges = []
    for d in sorted(scan.pci.values(), key=lambda x: x.bdf):
        if d.class_code >> 8 != BRIDGE_CLASS:
            continue
        acs = None
        if d.acs_ctl is not None:
            acs = {"ctl": d.acs_ctl, "redirect": bool(d.acs_ctl & ACS_REDIRECT_MASK)}
        bridges.append(
            {
                "bdf": d.bdf,
                "type": d.port_type,
                "parent": d.chain[-1] if d.chain else (f"pci{d.host}" if d.host else None),
                "vendor_id": d.vendor_id,
                "device_id": d.device_id,
                **ident(d),
                "numa_node": scan.numa(d),
                "acs": acs,
                "pcie": link(d),
            }
        )
    return {
        "host_bridges": [{"name": f"pci{h}", "domain_bus": h, "numa_node": host_numa.get(h)} for h in hosts],
        "bridges": bridges,
    }
