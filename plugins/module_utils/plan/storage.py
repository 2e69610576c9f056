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

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.storage import DHCHAP_KEYS, storage_pods
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import storage_backends as B

SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")
# NVMe-oF files of storage_client: the connections it makes (now and at boot, by
# gpufabric-nvmeof-connect) and the DH-HMAC-CHAP secrets, root only.
NVME_DIR = "/etc/nvme/gpufabric"
NVME_CONF = f"{NVME_DIR}/connect.conf"


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
    backend = fs["backend"]
    mode = values.get("gpudirect_storage_mode") or "nvidia_fs"
    if not values.get("gpufabric_gds_enabled"):
        return "gpufabric_gds_enabled is false"
    if fs.get("transport", "rdma") != "rdma":
        return f"transport {fs.get('transport')} (GPUDirect Storage needs RDMA)"
    if mode == "compat":
        return "gpudirect_storage_mode is compat (POSIX I/O only)"
    if mode == "p2pdma" and backend != "nvmeof":
        return f"gpudirect_storage_mode p2pdma serves NVMe and NVMe-oF only, not {backend} (nvidia_fs does)"
    if mode == "nvidia_fs" and backend in B.DOCA_COMPONENT:
        component, dkms = B.DOCA_COMPONENT[backend]
        if not _doca_has(component, dkms, doca_plan, doca):
            return (
                f"nvidia-fs needs DOCA-OFED's {dkms} kernel modules for {backend} over RDMA, and they are neither "
                f"installed nor planned; add {component} to doca_ofed_storage_components"
            )
    return None


# --------------------------------------------------------------------------------------------- per backend
def _nfs(fs: Mapping[str, Any], port: int) -> Dict[str, Any]:
    nfs = fs.get("nfs") or {}
    version = str(nfs.get("version") or "4.1")
    opts = [f"vers={version}", f"proto={'rdma' if fs['transport'] == 'rdma' else 'tcp'}", f"port={port}"]
    if nfs.get("nconnect"):
        opts.append(f"nconnect={nfs['nconnect']}")
    expect = {"proto": fs["transport"], "port": str(port), "vers": version}
    if (nfs.get("nconnect") or 1) > 1:
        expect["nconnect"] = str(nfs["nconnect"])
    return {
        "src": f"{fs['servers'][0]}:{fs['export']}",
        "fstype": B.FSTYPE["nfs"],
        "options": opts,
        "host_options": ["_netdev"],
        "expect_fstype": "nfs" if version == "3" else "nfs4",  # /proc/mounts names NFSv4.x nfs4
        "expect_options": expect,
    }


def _lustre_net(fs: Mapping[str, Any]) -> str:
    return str((fs.get("lustre") or {}).get("lnet_network") or ("o2ib" if fs["transport"] == "rdma" else "tcp"))


def _lustre(fs: Mapping[str, Any]) -> Dict[str, Any]:
    net = _lustre_net(fs)
    nids = [f"{server}@{net}" for server in fs["servers"]]
    return {
        "src": ":".join(nids) + f":/{fs['export']}",
        "fstype": B.FSTYPE["lustre"],
        "options": [],
        "host_options": ["_netdev", "x-systemd.requires=lnet.service", "x-systemd.after=lnet.service"],
        "expect_fstype": B.FSTYPE["lustre"],
        "expect_options": {},
        "nids": nids,
        "lnet_network": net,
    }


def _weka(fs: Mapping[str, Any], nics: List[Dict[str, Any]]) -> Dict[str, Any]:
    nets = [f"net={n['netdev']}" for n in nics] if fs["transport"] == "rdma" else ["net=udp"]
    cores = int((fs.get("weka") or {}).get("num_cores") or 1)
    return {
        "src": ",".join(fs["servers"]) + f"/{fs['export']}",
        "fstype": B.FSTYPE["weka"],
        "options": [*nets, f"num_cores={cores}"],
        "host_options": [
            "_netdev",
            "x-systemd.requires=weka-agent.service",
            "x-systemd.after=weka-agent.service",
            "x-systemd.mount-timeout=infinity",
        ],
        "expect_fstype": B.FSTYPE["weka"],
        "expect_options": {},
    }


def _mount(fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
    backend = fs["backend"]
    if backend == "nfs":
        mount = _nfs(fs, int(port or 0))
    elif backend == "lustre":
        mount = _lustre(fs)
    elif backend == "weka":
        mount = _weka(fs, nics)
    else:
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
    if fs["backend"] == "weka":
        k8s["secret"] = k8s.get("secret") or "csi-wekafs-api-secret"
    if fs["backend"] == "gpfs":
        k8s["secret"] = k8s.get("secret") or f"{fs['name']}-gui"
    return {
        "name": fs["name"],
        "backend": fs["backend"],
        "transport": fs["transport"],
        "servers": list(fs.get("servers") or []),
        "export": fs.get("export"),
        "port": port,
        "pods": pods,
        "mount_point": fs.get("mount_point") or None,
        "mount_options": list((mount or {}).get("options") or []),
        "lustre": {"nids": list((mount or {}).get("nids") or [])} if fs["backend"] == "lustre" else None,
        "nvmeof": _public(fs.get("nvmeof")) if fs["backend"] == "nvmeof" else None,
        "gpfs": dict(fs.get("gpfs") or {}) if fs["backend"] == "gpfs" else None,
        "k8s": k8s,
    }


def _public(nvmeof: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The NVMe-oF settings without the DH-HMAC-CHAP secrets (the record is stored and compared)."""
    return {k: v for k, v in (nvmeof or {}).items() if k not in DHCHAP_KEYS}


def _dhchap_files(name: str, nvmeof: Mapping[str, Any]) -> Dict[str, Optional[str]]:
    """Where storage_client keeps each secret the entry gives (0600, root); None for one it does not give."""
    return {key: (f"{NVME_DIR}/{name}.{key.replace('_', '-')}" if nvmeof.get(key) else None) for key in DHCHAP_KEYS}


def nvme_conf(connections: List[Mapping[str, Any]]) -> str:
    """The connections file gpufabric-nvmeof-connect reads: one path per line, '-' for none:
    NQN TRANSPORT TRADDR TRSVCID HOST_TRADDR HOST_SECRET_FILE CTRL_SECRET_FILE."""
    lines = ["# Managed by Ansible (gpufabric.rollout storage_client): the planned NVMe-oF paths, nothing else."]
    for c in connections:
        fields = [c["nqn"], c["transport"], c["traddr"], c["trsvcid"], c.get("host_traddr")]
        fields += [c["dhchap_files"].get(key) for key in DHCHAP_KEYS]
        lines.append(" ".join(str(f) if f else "-" for f in fields))
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------- node-wide
def lnet_conf(networks: List[Mapping[str, Any]]) -> str:
    """/etc/lnet.conf for ``lnetctl import`` (the layout of ``lnetctl export --backup``): one NI per interface."""
    lines = ["net:"]
    for net in networks:
        lines.append(f"    - net type: {net['net']}")
        lines.append("      local NI(s):")
        for netdev in net["interfaces"]:
            lines.append("        - interfaces:")
            lines.append(f"              0: {netdev}")
    return "\n".join(lines) + "\n"


def _unique(items: List[Any]) -> List[Any]:
    out: List[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


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
        port = fs.get("port") or B.PORTS.get((fs["backend"], fs["transport"]))
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
        if fs["backend"] == "lustre" and mount:
            entry["lustre"] = {"network": mount["lnet_network"], "nids": mount["nids"]}
        if fs["backend"] == "nvmeof":
            entry["nvmeof"] = {
                "nqn": fs["export"],
                "dhchap_files": _dhchap_files(fs["name"], fs.get("nvmeof") or {}),
                "transport": fs["transport"],
                "trsvcid": port,
                "paths": [
                    {"traddr": server, "host_traddr": nic.get("ipv4"), "netdev": nic["netdev"]}
                    for server in fs["servers"]
                    for nic in (nics or [{"netdev": None, "ipv4": None}])
                ],
                "multipath": bool((fs.get("nvmeof") or {}).get("multipath", True)),
            }
        if fs["backend"] == "gpfs":
            entry["gpfs"] = {"device": fs["export"]}
        filesystems.append(entry)
    section = _node_wide(filesystems, values, fabric, notes, problems)
    _client_sources(values, section["backends"], problems)
    section["gdscheck"] = values.get("gpudirect_storage_gdscheck")
    return section


def _client_sources(values: Mapping[str, Any], backends: List[str], problems: List[str]) -> None:
    """The proprietary and out-of-distribution clients come from where the user says; refuse a missing source."""
    if not values.get("storage_client_install", True):
        return
    needs = {
        "lustre": ("storage_client_lustre_repo_url", "the Debian repository of the Lustre client packages"),
        "weka": (
            "storage_client_weka_installer_url",
            "the WEKA agent installer (https://BACKEND:14000/dist/v1/install)",
        ),
        "gpfs": ("storage_client_gpfs_repo_url", "the Debian repository made from the Storage Scale installer"),
    }
    for backend in backends:
        if backend in needs and not values.get(needs[backend][0]):
            var, what = needs[backend]
            problems.append(
                f"{var}: is empty, and a {backend} filesystem is planned; give {what}, or set "
                "storage_client_install: false when the client is already installed"
            )
    # The repositories' keys are trusted only by the fingerprints the user pinned (the vendor's own key).
    for backend, var in (
        ("lustre", "storage_client_lustre_repo_key_fingerprints"),
        ("gpfs", "storage_client_gpfs_repo_key_fingerprints"),
    ):
        if backend in backends and values.get(needs[backend][0]) and not values.get(var):
            problems.append(
                f"{var}: is empty, and the {backend} client comes from {values.get(needs[backend][0])}; pin the "
                "fingerprint of the repository's signing key (allowed: a list of 40-hex-digit fingerprints, as "
                "gpg --show-keys prints them for the key you verified with the vendor)"
            )
    # The installer runs as root: it is verified against the digest the user pinned before it runs.
    if "weka" in backends and values.get("storage_client_weka_installer_url"):
        digest = values.get("storage_client_weka_installer_sha256")
        if not (isinstance(digest, str) and SHA256_RE.fullmatch(digest)):
            problems.append(
                f"storage_client_weka_installer_sha256: {digest!r} is not a SHA-256 digest; it is required with "
                "storage_client_weka_installer_url (the installer runs as root, verified first); allowed: 64 "
                "hexadecimal digits, e.g. the output of sha256sum on the installer the backend serves"
            )


def _node_wide(
    filesystems: List[Dict[str, Any]],
    values: Mapping[str, Any],
    fabric: Mapping[str, Any],
    notes: List[str],
    problems: List[str],
) -> Dict[str, Any]:
    backends = _unique([fs["backend"] for fs in filesystems])
    modules = _unique([m for fs in filesystems for m in B.MODULES.get((fs["backend"], fs["transport"]), ())])
    # LNet: one network per lnet_network, one NI per NIC that serves a Lustre filesystem on it.
    lnet_nets: Dict[str, List[str]] = {}
    for fs in filesystems:
        if fs["backend"] == "lustre":
            net = fs["lustre"]["network"]
            lnet_nets.setdefault(net, [])
            lnet_nets[net] = _unique(lnet_nets[net] + [n["netdev"] for n in fs["nics"]])
    lnet = None
    if lnet_nets:
        networks = [{"net": net, "interfaces": ifs} for net, ifs in lnet_nets.items()]
        by_netdev = {n["netdev"]: n for fs in filesystems for n in fs["nics"]}
        for net in networks:
            net["nids"] = [
                f"{by_netdev[i]['ipv4']}@{net['net']}" for i in net["interfaces"] if by_netdev[i].get("ipv4")
            ]
        lnet = {
            "networks": networks,
            "conf": lnet_conf(networks),
            # ko2iblnd's tos: the RoCE ToS of its RDMA-CM connections, the fabric's lossless class
            "o2ib_tos": int(fabric["roce_tos"]) if any(n["net"].startswith("o2ib") for n in networks) else None,
        }
    nvme = None
    nvmeof = [fs for fs in filesystems if fs["backend"] == "nvmeof"]
    if nvmeof:
        settings = {fs["nvmeof"]["multipath"] for fs in nvmeof}
        if len(settings) > 1:
            problems.append(
                "gpufabric_storage: nvmeof.multipath differs between the NVMe-oF filesystems "
                f"({', '.join(fs['name'] for fs in nvmeof)}); nvme_core multipath is one setting per node"
            )
        # Each planned path is one `nvme connect` of the planned NQN (never connect-all, which attaches every
        # subsystem a discovery controller offers this host).
        connections = _unique(
            [
                {
                    "name": fs["name"],
                    "nqn": fs["nvmeof"]["nqn"],
                    "transport": fs["transport"],
                    "traddr": path["traddr"],
                    "trsvcid": str(fs["nvmeof"]["trsvcid"]),
                    "host_traddr": path.get("host_traddr"),
                    "dhchap_files": fs["nvmeof"]["dhchap_files"],
                }
                for fs in nvmeof
                for path in fs["nvmeof"]["paths"]
            ]
        )
        nvme = {
            "connections": connections,
            "conf": nvme_conf(connections),
            "conf_path": NVME_CONF,
            "dir": NVME_DIR,
            "secret_files": [
                {"name": fs["name"], "key": key, "path": path}
                for fs in nvmeof
                for key, path in fs["nvmeof"]["dhchap_files"].items()
                if path
            ],
            # A secret no longer given: its file goes.
            "secret_files_absent": [
                f"{NVME_DIR}/{fs['name']}.{key.replace('_', '-')}"
                for fs in nvmeof
                for key, path in fs["nvmeof"]["dhchap_files"].items()
                if not path
            ],
            "multipath": bool(nvmeof[0]["nvmeof"]["multipath"]),
        }
    gpfs = None
    scale = [fs for fs in filesystems if fs["backend"] == "gpfs"]
    if scale:
        rdma = [n for fs in scale if fs["transport"] == "rdma" for n in fs["nics"]]
        ports = _unique([f"{n['rdma_device']}/{n['port']}" for n in rdma])
        gpfs = {
            "verbs_rdma": "enable" if ports else "disable",
            "verbs_rdma_cm": "enable" if ports else "disable",
            "verbs_ports": " ".join(ports),
            "verbs_gpudirect_storage": "enable" if any(fs["gds"] for fs in scale) else "disable",
            "devices": [fs["gpfs"]["device"] for fs in scale],
        }
    cufile: Dict[str, Dict[str, Any]] = {}
    for fs in filesystems:
        section = B.CUFILE_SECTION.get(fs["backend"])
        if not fs["gds"] or not section or not fs["addresses"]:
            continue
        entry = cufile.setdefault(section, {"rdma_dev_addr_list": []})
        entry["rdma_dev_addr_list"] = _unique(entry["rdma_dev_addr_list"] + fs["addresses"])
        if fs["mount_point"]:
            entry.setdefault("mount_table", {})[fs["mount_point"]] = {"rdma_dev_addr_list": list(fs["addresses"])}
    gds_addresses = _unique([a for fs in filesystems if fs["gds"] for a in fs["addresses"]])
    return {
        "filesystems": filesystems,
        "backends": backends,
        "modules": modules,
        "lnet": lnet,
        "nvme": nvme,
        "gpfs": gpfs,
        "cufile": cufile,
        "cufile_addresses": gds_addresses,
        "notes": notes,
        "sysroot": values.get("gpufabric_sysroot") or "/",
    }


def record(section: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The node record's storage part: each filesystem's definition as the cluster side needs it."""
    return [fs["record"] for fs in (section or {}).get("filesystems") or []]
