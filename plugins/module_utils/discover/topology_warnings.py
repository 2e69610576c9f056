# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The warnings of topology discovery, one function per class: ACS redirect on a GPU-NIC
peer-to-peer path, a rail GPU and its NIC on different NUMA nodes, a port down, a port without a
RoCE v2 IPv4 GID, a PCIe link below its maximum (``WARNING_CLASSES``, documented in
docs/topology-facts.md).
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import (
    RANK,
    PciDev,
    Scan,
    path_bridges,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import ACS_REDIRECT_MASK

WARNING_CLASSES = ("acs_redirect", "numa_mismatch", "port_down", "roce_v2_gid_missing", "link_degraded")


def acs_redirect(
    scan: Scan,
    gpus: List[Dict[str, Any]],
    gpu_devs: List[PciDev],
    nics: List[Dict[str, Any]],
    gpu_nic: Dict[str, Dict[str, str]],
) -> List[Dict[str, Any]]:
    """Bridges below the root port with ACS redirect on, on a GPU-NIC path that stays below it."""
    acs_seen: Dict[str, List[str]] = {}
    for g, gd in zip(gpus, gpu_devs):
        for n in nics:
            nd = scan.pci[n["bdf"]]
            if RANK[gpu_nic[g["name"]][n["rdma_device"]]] > RANK["PXB"]:
                continue
            brs, _depth = path_bridges(scan, gd, nd)
            for b in brs:
                bd = scan.pci.get(b)
                if bd and bd.port_type != "root_port" and bd.acs_ctl is not None and bd.acs_ctl & ACS_REDIRECT_MASK:
                    acs_seen.setdefault(b, []).append(f"{g['name']}-{n['rdma_device']}")
    out = []
    for b in sorted(acs_seen):
        ctl = scan.pci[b].acs_ctl
        out.append(
            {
                "class": "acs_redirect",
                "device": b,
                "paths": list(acs_seen[b]),
                "message": f"PCIe bridge {b} has ACS redirect on (ACSCtl 0x{ctl:04x}) on the peer-to-peer path "
                f"of {', '.join(acs_seen[b])}; GPUDirect RDMA traffic is sent up to the root complex",
            }
        )
    return out


def numa_mismatch(
    rails: List[Dict[str, Any]], gpus: List[Dict[str, Any]], nics: List[Dict[str, Any]]
) -> List[Dict[str, Any]]:
    """Rails whose GPU and NIC are on different NUMA nodes."""
    out = []
    for r in rails:
        g = gpus[int(r["gpu"][3:])]
        n = next(x for x in nics if x["rdma_device"] == r["nic"])
        if g["numa_node"] is not None and n["numa_node"] is not None and g["numa_node"] != n["numa_node"]:
            out.append(
                {
                    "class": "numa_mismatch",
                    "device": g["name"],
                    "message": f"{g['name']} ({g['bdf']}) is on NUMA node {g['numa_node']} but its rail NIC "
                    f"{n['rdma_device']} ({n['bdf']}) is on NUMA node {n['numa_node']} (path {r['path']})",
                }
            )
    return out


def ports(nics: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Ports that are not ACTIVE, and Ethernet ports without a RoCE v2 IPv4 GID."""
    out = []
    for n in nics:
        for p in n["ports"]:
            dev = f"{n['rdma_device']}/{p['port']}"
            if p["state"] != "ACTIVE":
                out.append(
                    {
                        "class": "port_down",
                        "device": dev,
                        "message": f"{dev} ({p['netdev']}) is {p['state']} / {p['phys_state']}",
                    }
                )
            if p["link_layer"] == "Ethernet" and p["roce_v2_ipv4"] is None:
                out.append(
                    {
                        "class": "roce_v2_gid_missing",
                        "device": dev,
                        "message": f"{dev} ({p['netdev']}) has no RoCE v2 GID with an IPv4 address "
                        "(no IPv4 address on the netdev or its VLANs yet)",
                    }
                )
    return out


def link_degraded(gpus: List[Dict[str, Any]], nics: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """GPUs whose PCIe link is narrower than its maximum, NICs whose link is narrower or slower."""
    out = []
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
                out.append(
                    {
                        "class": "link_degraded",
                        "device": name,
                        "message": f"{name} ({it['bdf']}) PCIe link runs at {lk['current_speed_gts']} GT/s "
                        f"x{lk['current_width']} of {lk['max_speed_gts']} GT/s x{lk['max_width']}",
                    }
                )
    return out
