# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's storage plan: gpufabric_storage + the node's NICs and drivers -> what storage_client does.

``storage_section(values, topology, fabric, doca_plan, doca_facts, problems)`` is called from
``_plan_node.plan_node``. For every filesystem it chooses the NICs that serve it on this node
(the intent's ``nics``, else the discovered storage NICs, else the compute rails), refuses a NIC
that does not exist or cannot carry an RDMA mount, decides whether GPUDirect Storage runs on it
(refusing ``gds: true`` where it cannot), and plans the host client: kernel modules, mount
source and options (nfs(5); Lustre manual "Mounting a Lustre client"; docs.weka.io "Mount
filesystems"), the LNet networks and their lnetctl YAML (Lustre manual "LNet configuration",
lnet/utils/lnetconfig/liblnetconfig.c), the NVMe-oF connections of the planned subsystem NQNs
only (nvme-cli Documentation/nvme-connect.txt) and where their DH-HMAC-CHAP secrets are kept
(never the secrets: storage_client reads them from the inventory), the nosuid,nodev of every
host mount (mount(8)), the Storage Scale verbs settings (IBM Storage Scale RDMA tuning), the
cuFile ``fs`` sections (NVIDIA GDS configuration guide) and what the read-back must find.
``record(section)`` is the part the cluster planner needs.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.storage import storage_pods
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY, backend
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import unique


# --------------------------------------------------------------------------------------------- NICs
def _ports(topology: Mapping[str, Any]) -> List[Tuple[Mapping[str, Any], Mapping[str, Any]]]:
    out = []
    for nic in topology.get("nics") or []:
        for port in nic.get("ports") or [{}]:
            out.append((nic, port))
    return out


def _lookup(topology: Mapping[str, Any], name: str) -> Optional[Tuple[Mapping[str, Any], Mapping[str, Any]]]:
    for nic, port in _ports(topology):
        if name == port.get("netdev") or name in (nic.get("netdevs") or []) or name == nic.get("rdma_device"):
            return nic, port
    return None


def _rdma_problem(nic: Mapping[str, Any], port: Mapping[str, Any]) -> Optional[str]:
    """Why this NIC port cannot carry an RDMA mount, or None."""
    if not nic.get("rdma_device"):
        return "has no RDMA device"
    if port.get("state") not in (None, "ACTIVE"):
        return f"port {port.get('port', 1)} is {port.get('state')}"
    if not (port.get("roce_v2_ipv4") or {}).get("ipv4"):
        return "has no RoCE v2 IPv4 address"
    return None


def _nic_entry(nic: Mapping[str, Any], port: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "netdev": port.get("netdev") or (nic.get("netdevs") or [None])[0],
        "rdma_device": nic.get("rdma_device"),
        "port": int(port.get("port") or 1),
        "ipv4": (port.get("roce_v2_ipv4") or {}).get("ipv4"),
        "role": nic.get("role"),
        "rail": nic.get("rail"),
    }


def choose_nics(
    fs: Mapping[str, Any], p: str, label: str, topology: Mapping[str, Any], problems: List[str]
) -> List[Dict[str, Any]]:
    rdma = fs.get("transport", "rdma") == "rdma"
    named = list(fs.get("nics") or [])
    chosen: List[Dict[str, Any]] = []
    if named:
        known = sorted({n for nic, port in _ports(topology) for n in (port.get("netdev"), nic.get("rdma_device")) if n})
        for i, name in enumerate(named):
            found = _lookup(topology, str(name))
            if found is None:
                problems.append(
                    f"{p}.nics[{i}]: {name!r} is not a NIC of this node ({label}); "
                    f"discovered: {', '.join(known) or 'none'}"
                )
                continue
            why = _rdma_problem(*found) if rdma else None
            if why:
                problems.append(
                    f"{p}.nics[{i}]: {name!r} {why}, so it cannot carry the RDMA mount of {label}; name an RDMA NIC "
                    "whose port is up with a RoCE v2 IPv4 address, or set transport: tcp"
                )
                continue
            entry = _nic_entry(*found)
            if entry["netdev"] not in [c["netdev"] for c in chosen]:
                chosen.append(entry)
        return chosen
    for role in ("storage", "compute"):
        for nic, port in sorted(_ports(topology), key=lambda np: (np[0].get("rail") is None, np[0].get("rail") or 0)):
            if nic.get("role") == role and (not rdma or _rdma_problem(nic, port) is None):
                chosen.append(_nic_entry(nic, port))
        if chosen:
            return chosen
    problems.append(
        f"{p}.nics: empty, and discovery found no storage or compute NIC "
        f"{'with an active RoCE v2 IPv4 address ' if rdma else ''}on this node to serve {label}; an RDMA mount needs "
        "an RDMA NIC: name one in nics, or set transport: tcp"
    )
    return chosen


# --------------------------------------------------------------------------------------------- GDS
def _doca_has(component: str, dkms: str, doca_plan: Optional[Mapping[str, Any]], doca: Mapping[str, Any]) -> bool:
    """The DOCA-OFED storage component is there after the host layer: planned, or built now."""
    package = _doca.STORAGE_PACKAGES[component]
    if doca_plan and package in ((doca_plan.get("profile") or {}).get("install") or []):
        return True
    return any(item.get("module") == dkms for item in (doca or {}).get("dkms") or [])


def gds_blocker(
    fs: Mapping[str, Any], values: Mapping[str, Any], doca_plan: Optional[Mapping[str, Any]], doca: Mapping[str, Any]
) -> Optional[str]:
    """Why GPUDirect Storage cannot run on this filesystem on this node, or None."""
    name = fs["backend"]
    mode = values.get("gpudirect_storage_mode") or "nvidia_fs"
    component = backend(name).doca_component
    if not values.get("gpufabric_gds_enabled"):
        return "gpufabric_gds_enabled is false"
    if fs.get("transport", "rdma") != "rdma":
        return f"transport {fs.get('transport')} (GPUDirect Storage needs RDMA)"
    if mode == "compat":
        return "gpudirect_storage_mode is compat (POSIX I/O only)"
    if mode == "p2pdma" and backend(name).host_mount:
        return f"gpudirect_storage_mode p2pdma serves NVMe and NVMe-oF only, not {name} (nvidia_fs does)"
    if mode == "nvidia_fs" and component and not _doca_has(component[0], component[1], doca_plan, doca):
        return (
            f"nvidia-fs needs DOCA-OFED's {component[1]} kernel modules for {name} over RDMA, and they are neither "
            f"installed nor planned; add {component[0]} to doca_ofed_storage_components"
        )
    return None


# --------------------------------------------------------------------------------------------- per filesystem
def _mount(fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
    mount = backend(fs["backend"]).mount(fs, nics, port)
    if mount is None:
        return None
    mount["options"] = [*mount["options"], *list(fs.get("mount_options") or [])]
    mount["security_options"] = security_options(fs)
    mount["fstab_options"] = ",".join([*mount["options"], *mount["security_options"], *mount.pop("host_options")])
    return mount


def security_options(fs: Mapping[str, Any]) -> List[str]:
    """nosuid and nodev on a host mount unless the entry allows set-user-ID files or device nodes (mount(8))."""
    return [opt for opt, allow in (("nosuid", "allow_suid"), ("nodev", "allow_devices")) if not fs.get(allow)]


def _record(fs: Mapping[str, Any], port: Optional[int], mount: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """What the cluster side needs of the filesystem; equal on every node that has it."""
    k8s = dict(fs.get("k8s") or {})
    pods = storage_pods(fs)
    k8s["storage_class"] = k8s.get("storage_class") or f"gpufabric-{fs['name']}"
    k8s["reclaim_policy"] = k8s.get("reclaim_policy") or ("Delete" if pods == "storageclass" else "Retain")
    secret = backend(fs["backend"]).default_secret_name
    if secret:
        k8s["secret"] = k8s.get("secret") or secret.format(name=fs["name"])
    out = {
        "name": fs["name"],
        "backend": fs["backend"],
        "transport": fs["transport"],
        "servers": list(fs.get("servers") or []),
        "export": fs.get("export"),
        "port": port,
        "pods": pods,
        "mount_point": fs.get("mount_point") or None,
        "mount_options": list((mount or {}).get("options") or []),
    }
    # each backend's own part, None on the other backends' filesystems
    for other in REGISTRY.values():
        if other.record_key:
            out[other.record_key] = other.record_part(fs, mount) if other.name == fs["backend"] else None
    out["k8s"] = k8s
    return out


# --------------------------------------------------------------------------------------------- node-wide


def storage_section(
    values: Mapping[str, Any],
    topology: Mapping[str, Any],
    fabric: Mapping[str, Any],
    doca_plan: Optional[Mapping[str, Any]],
    doca: Mapping[str, Any],
    problems: List[str],
) -> Optional[Dict[str, Any]]:
    items = [fs for fs in values.get("gpufabric_storage") or [] if isinstance(fs, Mapping)]
    if not items:
        return None
    filesystems: List[Dict[str, Any]] = []
    notes: List[str] = []
    for index, raw in enumerate(items):
        fs = dict(raw)
        fs["transport"] = fs.get("transport") or "rdma"
        p = f"gpufabric_storage[{index}]"
        label = f"filesystem {fs.get('name')!r} ({fs.get('backend')})"
        nics = choose_nics(fs, p, label, topology, problems)
        blocker = gds_blocker(fs, values, doca_plan, doca)
        if fs.get("gds") and blocker:
            problems.append(
                f"{p}.gds: true, but GPUDirect Storage cannot run on {label} on this node: {blocker}; "
                "set gds: false or fix the cause"
            )
        gds = bool(fs.get("gds", True) is not False and blocker is None)
        if blocker and fs.get("gds") is None and values.get("gpufabric_gds_enabled"):
            notes.append(f"GDS off on {fs.get('name')}: {blocker}")
        port = fs.get("port") or backend(fs["backend"]).ports.get(fs["transport"])
        # Without a host mount the source and options still feed the CSI objects.
        mount = _mount(fs, nics, port)
        entry: Dict[str, Any] = {
            "name": fs["name"],
            "backend": fs["backend"],
            "transport": fs["transport"],
            "gds": gds,
            "gds_blocker": blocker,
            "pods": storage_pods(fs),
            "mount_point": fs.get("mount_point") or None,
            "nics": nics,
            "addresses": [n["ipv4"] for n in nics if n.get("ipv4")],
            "mount": mount if fs.get("mount_point") else None,
            "record": _record(fs, port, mount),
        }
        entry.update(backend(fs["backend"]).node_entry(fs, nics, port, mount))
        filesystems.append(entry)
    section = _node_wide(filesystems, values, fabric, notes, problems)
    _client_sources(values, section["backends"], problems)
    section["gdscheck"] = values.get("gpudirect_storage_gdscheck")
    return section


def _client_sources(values: Mapping[str, Any], backends: List[str], problems: List[str]) -> None:
    """The proprietary and out-of-distribution clients come from where the user says; refuse a missing source."""
    if not values.get("storage_client_install", True):
        return
    for name in backends:
        source = backend(name).client_source
        if source and not values.get(source[0]):
            var, what = source
            problems.append(
                f"{var}: is empty, and a {name} filesystem is planned; give {what}, or set "
                "storage_client_install: false when the client is already installed"
            )
    # The repositories' keys are trusted only by the fingerprints the user pinned (the vendor's own key).
    planned = [b for b in REGISTRY.values() if b.name in backends]
    for item in planned:
        var = item.client_key_var
        if var and item.client_source and values.get(item.client_source[0]) and not values.get(var):
            problems.append(
                f"{var}: is empty, and the {item.name} client comes from {values.get(item.client_source[0])}; pin the "
                "fingerprint of the repository's signing key (allowed: a list of 40-hex-digit fingerprints, as "
                "gpg --show-keys prints them for the key you verified with the vendor)"
            )
    for item in planned:
        item.client_rules(values, problems)


def _node_wide(
    filesystems: List[Dict[str, Any]],
    values: Mapping[str, Any],
    fabric: Mapping[str, Any],
    notes: List[str],
    problems: List[str],
) -> Dict[str, Any]:
    backends = unique([fs["backend"] for fs in filesystems])
    modules = unique([m for fs in filesystems for m in backend(fs["backend"]).modules.get(fs["transport"], ())])
    # each backend's node-wide settings (LNet networks, NVMe-oF connections, Scale verbs), None where it has none
    node: Dict[str, Any] = {}
    for item in REGISTRY.values():
        if item.node_key:
            own = [fs for fs in filesystems if fs["backend"] == item.name]
            node[item.node_key] = item.node_wide(own, fabric, problems)
    cufile: Dict[str, Dict[str, Any]] = {}
    for fs in filesystems:
        section = backend(fs["backend"]).cufile_section
        if not fs["gds"] or not section or not fs["addresses"]:
            continue
        entry = cufile.setdefault(section, {"rdma_dev_addr_list": []})
        entry["rdma_dev_addr_list"] = unique(entry["rdma_dev_addr_list"] + fs["addresses"])
        if fs["mount_point"]:
            entry.setdefault("mount_table", {})[fs["mount_point"]] = {"rdma_dev_addr_list": list(fs["addresses"])}
    gds_addresses = unique([a for fs in filesystems if fs["gds"] for a in fs["addresses"]])
    return {
        "filesystems": filesystems,
        "backends": backends,
        "modules": modules,
        **node,
        "cufile": cufile,
        "cufile_addresses": gds_addresses,
        "notes": notes,
        "sysroot": values.get("gpufabric_sysroot") or "/",
    }


def record(section: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The node record's storage part: each filesystem's definition as the cluster side needs it."""
    return [fs["record"] for fs in (section or {}).get("filesystems") or []]
