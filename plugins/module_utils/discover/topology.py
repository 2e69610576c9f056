# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology discovery: GPUs, RDMA NICs, PCIe tree, NUMA, path classes and rails, from sysfs.

Pure logic (no AnsibleModule): ``discover(sysroot, topo_text)`` reads a sysfs/procfs tree under
``sysroot`` (``/`` on a live host, an unpacked snapshot elsewhere) and returns the
``gpufabric_topology`` facts documented in docs/topology-facts.md.

The pieces: ``_host.Sysroot`` (reads inside the root), ``_topology_parsers`` (attribute, GID,
config space and nvidia-smi formats, with their sources), ``_topology_pci`` (the PCI tree and
path classes), ``_topology_rails`` (GPU to NIC matching), ``_topology_report`` (the report).
Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import (
    BRIDGE_CLASS,
    GPU_MODELS,
    RANK,
    PciDev,
    Scan,
    path_bridges,
    path_class,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.rails import (
    classify_pool,
    healthy_rails,
    name_key,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.registry import nic_model
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import (
    ACS_REDIRECT_MASK,
    nvlink_count,
    parse_hex,
    parse_int,
    parse_rate,
    parse_speed,
    parse_state,
    parse_topo_matrix,
    read_gids,
    select_roce_v2_gid,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.vlan import parse_vlan_config, parse_vlan_dev
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, integer_or_none

SCHEMA_VERSION = 1
WARNING_CLASSES = ("acs_redirect", "numa_mismatch", "port_down", "roce_v2_gid_missing", "link_degraded")


class TopologyError(Exception):
    """The sysroot cannot be read as a sysfs tree."""


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
    warnings: List[Dict[str, str]] = []

    # NUMA --------------------------------------------------------------------------------
    numa_nodes = []
    for name in sr.listdir("sys/devices/system/node"):
        m = re.match(r"^node([0-9]{1,5})$", name)
        if m:
            cpulist = sr.read(f"sys/devices/system/node/{name}/cpulist") or ""
            cpumap = sr.read(f"sys/devices/system/node/{name}/cpumap")
            numa_nodes.append({"id": int(m.group(1)), "cpulist": cpulist, "cpumap": cpumap})
    numa_nodes.sort(key=lambda n: n["id"])
    numa_count = len(numa_nodes)

    cpu = _cpuinfo(sr)
    groups = [g for g in sr.listdir("sys/kernel/iommu_groups") if integer_or_none(g, 0) is not None]

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
        dpath = sr.real(f"sys/class/infiniband/{ibdev}/device")
        if not dpath:
            continue
        bdf = dpath.rsplit("/", 1)[-1].lower()
        if bdf in scan.pci:
            rdma_by_bdf.setdefault(bdf, []).append(ibdev)
    nics = []
    for bdf in sorted(rdma_by_bdf):
        d = scan.pci[bdf]
        ibdev = sorted(rdma_by_bdf[bdf])[0]
        ib_path = sr.real(f"sys/class/infiniband/{ibdev}") or f"sys/class/infiniband/{ibdev}"
        model, is_vf_id = nic_model(d.vendor_id, d.device_id)
        has_physfn = sr.exists(f"{d.path}/physfn")
        is_vf = has_physfn or is_vf_id
        netdevs = sr.listdir(f"{d.path}/net")
        total = parse_int(d.attrs.get("sriov_totalvfs"))
        sriov = None
        if total is not None:
            sriov = {"total_vfs": total, "num_vfs": parse_int(d.attrs.get("sriov_numvfs")) or 0}
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
                "physfn": (sr.real(f"{d.path}/physfn") or "").rsplit("/", 1)[-1] or None if has_physfn else None,
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
        matrix = [[gpu_nic[g["name"]][n["rdma_device"]] for n in pool] for g in gpus]
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
    kept_out = {x["nic"] for x in rails_excluded} | {c["nic"] for c in classified}
    for n in nics:
        if n["role"] == "other" and n in candidates and n["rdma_device"] not in kept_out:
            n["role"] = "storage"

    # warnings ----------------------------------------------------------------------------
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
    for b in sorted(acs_seen):
        ctl = scan.pci[b].acs_ctl
        warnings.append(
            {
                "class": "acs_redirect",
                "device": b,
                "paths": list(acs_seen[b]),
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
        "rails_excluded": rails_excluded,
        "rail_pool_out": classified,
        "warnings": warnings,
    }
