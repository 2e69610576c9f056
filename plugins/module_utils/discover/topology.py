# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology discovery: GPUs, RDMA NICs, PCIe tree, NUMA, path classes and rails, from sysfs.

Pure logic (no AnsibleModule): ``discover(sysroot, topo_text)`` reads a sysfs/procfs tree under
``sysroot`` (``/`` on a live host, an unpacked snapshot elsewhere) and returns the
``gpufabric_topology`` facts documented in docs/topology-facts.md.

The pieces: ``shared.host.Sysroot`` (reads inside the root), ``parsers.topology`` (attribute, GID,
config space and nvidia-smi formats, with their sources), ``discover.pci`` (the PCI tree and path
classes), ``discover.devices`` (CPU, NUMA, GPUs, NICs, bridges), ``discover.rails`` (GPU to NIC
matching), ``discover.topology_warnings`` (the warnings), ``discover.report`` (the report); this
module the steps in order, the path classes and the rails.
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import devices as _devices
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology_warnings as _warnings
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import PciDev, Scan, path_class
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.rails import (
    classify_pool,
    healthy_rails,
    name_key,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology_warnings import WARNING_CLASSES
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import nvlink_count, parse_topo_matrix
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.vlan import parse_vlan_config, parse_vlan_dev
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, integer_or_none

SCHEMA_VERSION = 1
# The warning classes (discover.topology_warnings), and the names tests and callers use from here.
__all__ = ["SCHEMA_VERSION", "WARNING_CLASSES", "TopologyError", "discover", "name_key", "validate_sysroot", "vlan_id"]


class TopologyError(Exception):
    """The sysroot cannot be read as a sysfs tree."""


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


def vlan_id(sr: Sysroot, netdev: Optional[str]) -> Optional[int]:
    """The 802.1Q VLAN id of ``netdev`` from the 8021q module's procfs files: ``proc/net/vlan/<netdev>``,
    else its line in ``proc/net/vlan/config``. None when it is not a VLAN netdev (in neither file), the
    files are missing (8021q not loaded, an older snapshot) or unreadable, or the two disagree."""
    if not netdev or "/" in netdev or netdev.startswith("."):
        return None
    from_dev = from_config = None
    text = sr.text(f"proc/net/vlan/{netdev}") if netdev != "config" else None
    if text is not None:
        try:
            parsed = parse_vlan_dev(text)
        except ParseError:
            parsed = None
        if parsed and parsed["name"] == netdev:
            from_dev = parsed["vid"]
    text = sr.text("proc/net/vlan/config")
    if text is not None:
        try:
            from_config = (parse_vlan_config(text).get(netdev) or {}).get("vid")
        except ParseError:
            from_config = None
    if from_dev is not None and from_config is not None and from_dev != from_config:
        return None
    return from_dev if from_dev is not None else from_config


def _paths(
    scan: Scan,
    gpus: List[Dict[str, Any]],
    gpu_devs: List[PciDev],
    nics: List[Dict[str, Any]],
    topo_text: Optional[str],
    numa_count: int,
) -> Dict[str, Any]:
    """Path classes GPU-NIC and GPU-GPU (NVLink from ``nvidia-smi topo -m`` when given), the matrix."""
    topo = None
    if topo_text:
        try:
            topo = parse_topo_matrix(topo_text)
        except ParseError:
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
            links = nvlink_count(cell)
            if links is not None:
                row[h["name"]] = cell
                nvrow[h["name"]] = links
            else:
                row[h["name"]] = path_class(scan, gd, hd, numa_count)
        gpu_gpu[g["name"]] = row
        if nvrow:
            nvlink[g["name"]] = nvrow
    return {
        "gpu_nic": gpu_nic,
        "gpu_gpu": gpu_gpu,
        "nvlink": nvlink,
        "nvidia_smi": topo["matrix"] if topo else None,
    }


def _rail_candidates(
    nics: List[Dict[str, Any]], storage_nics: Optional[List[str]]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(candidates, pool): RDMA PFs with an Ethernet/IB port and VFs whose PF is not on this host (a
    VM's passthrough VF); the pool is the candidates minus the NICs reserved for storage."""
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
    return candidates, pool


def _rail_entries(
    sr: Sysroot, pool: List[Dict[str, Any]], choice: List[int], gpus: List[Dict[str, Any]], gpu_nic: Dict[str, Any]
) -> List[Dict[str, Any]]:
    """One rail entry per GPU from the matching ``choice`` (GPU index -> pool column); marks the
    chosen NICs compute with their rail number (in the order of the first GPU each serves)."""
    matrix = [[gpu_nic[g["name"]][n["rdma_device"]] for n in pool] for g in gpus]
    served: Dict[int, int] = {}
    for gi, col in enumerate(choice):
        served.setdefault(col, gi)
    order = sorted(served, key=lambda c: served[c])
    rail_of = {col: r for r, col in enumerate(order)}
    for col, r in rail_of.items():
        pool[col]["role"] = "compute"
        pool[col]["rail"] = r
    rails = []
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
                # the netdev that carries the RoCE v2 IPv4 address and GID (a VLAN netdev or the PF's)
                "roce_netdev": ((n["ports"][0].get("roce_v2_ipv4") or {}).get("ndev") if n["ports"] else None)
                or (n["ports"][0]["netdev"] if n["ports"] else None),
                # its 802.1Q VLAN id when it is a VLAN netdev of the port's (None: untagged or unknown)
                "roce_vlan": None,
                "path": matrix[gi][col],
            }
        )
    for r in rails:
        if r["roce_netdev"] and r["roce_netdev"] != r["netdev"]:
            r["roce_vlan"] = vlan_id(sr, r["roce_netdev"])
    return rails


def _rails(
    sr: Sysroot,
    gpus: List[Dict[str, Any]],
    nics: List[Dict[str, Any]],
    gpu_nic: Dict[str, Dict[str, str]],
    storage_nics: Optional[List[str]],
    rail_nics: Optional[List[str]],
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(rails, rails_excluded, rail_pool_out); sets each NIC's role and rail.

    With more candidates than GPUs, the matching (one NIC per GPU) leaves the farthest NICs out; those
    become storage NICs. With fewer, each NIC serves ceil(GPUs / NICs) GPUs."""
    candidates, pool = _rail_candidates(nics, storage_nics)
    # Out of the matching by default (``rail_nics`` keeps them in): NICs on CPU root ports and
    # NICs of another speed class. NICs that cannot carry a rail now (port down, no RoCE v2
    # IPv4 GID, a slower link) are never matched; ``rails_excluded`` names them and the GPUs
    # that needed them. The pool is in numeric name order (mlx5_2 before mlx5_10).
    pool.sort(key=lambda n: name_key(n["rdma_device"]))
    pool, classified = classify_pool(pool, gpu_nic, {x.lower() for x in (rail_nics or [])})
    for item in classified:
        nic = next(n for n in nics if n["rdma_device"] == item["nic"])
        nic["role"] = item["role"]
    rails: List[Dict[str, Any]] = []
    rails_excluded: List[Dict[str, Any]] = []
    if gpus and pool:
        pool, choice, rails_excluded = healthy_rails(
            pool,
            [g["name"] for g in gpus],
            lambda ns: [[gpu_nic[g["name"]][n["rdma_device"]] for n in ns] for g in gpus],
        )
    if gpus and pool:
        rails = _rail_entries(sr, pool, choice, gpus, gpu_nic)
    kept_out: Set[str] = {x["nic"] for x in rails_excluded} | {c["nic"] for c in classified}
    for n in nics:
        if n["role"] == "other" and n in candidates and n["rdma_device"] not in kept_out:
            n["role"] = "storage"
    return rails, rails_excluded, classified


def discover(
    sysroot: str,
    topo_text: Optional[str] = None,
    storage_nics: Optional[List[str]] = None,
    rail_nics: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """Discover the topology under ``sysroot``.

    ``topo_text``: output of `nvidia-smi topo -m` (from the tool, or the snapshot's
    nvidia-smi-topo-m.txt); it adds NVLink counts. ``storage_nics``: RDMA device names, netdev
    names or BDFs kept out of the rails (role storage). ``rail_nics``: the same, kept in the GPU
    matching pool although on a CPU root port or of another speed class. Raises TopologyError on an unusable
    sysroot.
    """
    validate_sysroot(sysroot)
    sr = Sysroot(sysroot)
    scan = Scan(sr)
    numa_nodes = _devices.numa_nodes(sr)
    cpu = _devices.cpuinfo(sr)
    groups = [g for g in sr.listdir("sys/kernel/iommu_groups") if integer_or_none(g, 0) is not None]
    gpus, gpu_devs = _devices.gpus(sr, scan)
    nics = _devices.nics(sr, scan)
    pcie = _devices.pcie_tree(scan)
    paths = _paths(scan, gpus, gpu_devs, nics, topo_text, len(numa_nodes))
    rails, rails_excluded, classified = _rails(sr, gpus, nics, paths["gpu_nic"], storage_nics, rail_nics)
    warnings = [
        *_warnings.acs_redirect(scan, gpus, gpu_devs, nics, paths["gpu_nic"]),
        *_warnings.numa_mismatch(rails, gpus, nics),
        *_warnings.ports(nics),
        *_warnings.link_degraded(gpus, nics),
    ]
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
        "rails_excluded": rails_excluded,
        "rail_pool_out": classified,
        "warnings": warnings,
    }
