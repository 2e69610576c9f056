# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of gpufabric_storage that hold whatever the hardware (called from _intent_rules.NODE_RULES).

Names, addresses, exports, mount points and options, GDS over a transport that cannot carry it,
and Pod access a backend's CSI driver cannot give. What needs the node's NICs and drivers (a NIC
that does not exist, an RDMA mount without an RDMA NIC, GDS without the DOCA-OFED component) is
the node planner's (_plan_storage). Every problem names the variable path and the filesystem.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import (
    CHART_VERSION_RE,
    DNS_LABEL_RE,
    Problems,
    dns_label,
    dns_subdomain,
    in_range,
    keyring_file,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import host as _host
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import ipv4 as _ipv4
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.nvmeof import DHCHAP_KEYS

# Mount options the plan sets itself from the intent's keys; the intent may not set them again.
STORAGE_OWNED_OPTIONS = {name: dict(b.owned_options) for name, b in REGISTRY.items()}
# Every host mount gets nosuid,nodev unless the entry allows set-user-ID files or device nodes
# (mount(8) "FILESYSTEM-INDEPENDENT MOUNT OPTIONS"); these options are the plan's, from those keys.
SECURITY_OWNED_OPTIONS = {
    "suid": "allow_suid",
    "nosuid": "allow_suid",
    "dev": "allow_devices",
    "nodev": "allow_devices",
}
QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
MASK = "********"


def mask_secrets(values: Dict[str, Any]) -> Dict[str, Any]:
    """``values`` with every DH-HMAC-CHAP secret of gpufabric_storage replaced by a mask: the checked intent
    is returned by the plan action and feeds the plan files; the secrets stay in the inventory only
    (storage_client reads them from there, no_log)."""
    items = values.get("gpufabric_storage")
    if not isinstance(items, list):
        return values
    masked = []
    for fs in items:
        nvmeof = fs.get("nvmeof") if isinstance(fs, Mapping) else None
        if isinstance(nvmeof, Mapping) and any(nvmeof.get(k) for k in DHCHAP_KEYS):
            nvmeof = {k: (MASK if k in DHCHAP_KEYS and v else v) for k, v in nvmeof.items()}
            fs = {**fs, "nvmeof": nvmeof}
        masked.append(fs)
    return {**values, "gpufabric_storage": masked}


def storage_pods(fs: Mapping[str, Any]) -> Optional[str]:
    """How Pods get the filesystem: the intent's choice, else the backend's default."""
    return fs.get("pods") or (REGISTRY[fs["backend"]].default_pods if fs.get("backend") in REGISTRY else None)


def storage_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """gpufabric_storage: names, addresses, exports, mount points and options, GDS and Pod access that cannot work
    whatever the hardware; what needs the node's NICs and drivers is the node planner's (_plan_storage)."""
    items = values.get("gpufabric_storage")
    if not isinstance(items, list):
        return
    names: Dict[str, int] = {}
    points: Dict[str, int] = {}
    for index, fs in enumerate(items):
        if not isinstance(fs, Mapping) or fs.get("backend") not in REGISTRY:
            continue
        p = f"gpufabric_storage[{index}]"
        name = fs.get("name")
        if isinstance(name, str) and (len(name) > 40 or not DNS_LABEL_RE.fullmatch(name)):
            problems.append(
                f"{p}.name: {show(name)} is not a DNS label of at most 40 characters (lower-case letters, digits, '-')"
            )
        elif name in names:
            problems.append(f"{p}.name: {name!r} is already used by gpufabric_storage[{names[name]}]")
        names.setdefault(name, index)
        label = f"filesystem {name!r} ({fs['backend']})"
        _storage_fs_rules(fs, p, label, values, problems)
        point = fs.get("mount_point")
        if point:
            if point in points:
                problems.append(
                    f"{p}.mount_point: {point!r} is already the mount point of gpufabric_storage[{points[point]}]"
                )
            points.setdefault(point, index)


def storage_given_rules(values: Mapping[str, Any], given: Mapping[str, Any], problems: Problems) -> None:
    """gpufabric_storage as the inventory wrote it: a section named after another backend (an ``lustre:``
    mapping on an NFS filesystem) is read by no planner, so it is refused rather than silently dropped.
    (The checked values cannot tell: the argument specs fill every backend's section in.)"""
    items = given.get("gpufabric_storage")
    if not isinstance(items, list):
        return
    for index, fs in enumerate(items):
        if not isinstance(fs, Mapping) or fs.get("backend") not in REGISTRY:
            continue
        label = f"filesystem {fs.get('name')!r} ({fs['backend']})"
        for other in REGISTRY:
            if other != fs["backend"] and fs.get(other) is not None:
                problems.append(
                    f"gpufabric_storage[{index}].{other}: {label} carries a {other!r} section, which only a "
                    f"filesystem with backend {other!r} reads (its settings would not apply); remove it, or set "
                    f"backend: {other}"
                )


def _storage_fs_rules(fs: Mapping[str, Any], p: str, label: str, values: Mapping[str, Any], problems: Problems) -> None:
    backend = REGISTRY[fs["backend"]]
    transport = fs.get("transport") or "rdma"
    servers = list(fs.get("servers") or [])
    # --- servers and export
    why = backend.servers_problem(servers)
    if why:
        problems.append(f"{p}.servers: {label} {why}")
    for i, server in enumerate(servers):
        if not (_ipv4(server) if backend.ipv4_servers else _host(server)):
            want = "an IPv4 address" if backend.ipv4_servers else "an IPv4 address or a host name"
            problems.append(f"{p}.servers[{i}]: {show(server)} is not {want} ({label})")
    export = fs.get("export")
    if not export:
        problems.append(f"{p}.export: is required: {backend.export_what} of {label}")
    else:
        why = backend.export_problem(export, label)
        if why:
            problems.append(f"{p}.export: {why}")
    # --- transport, port and the backend's own settings
    if fs.get("port") is not None:
        in_range(problems, f"{p}.port", fs["port"], 1, 65535)
        if transport not in backend.ports:
            problems.append(f"{p}.port: {label} has no server port to set")
    nfs = fs.get("nfs") or {}
    if nfs.get("nconnect") is not None:
        in_range(problems, f"{p}.nfs.nconnect", nfs["nconnect"], 1, 16)
    backend.option_rules(fs, p, label, transport, problems)
    in_range(problems, f"{p}.weka.num_cores", (fs.get("weka") or {}).get("num_cores"), 1, 19)
    _mount_rules(fs, p, label, backend, problems)
    backend.auth_rules(fs, p, label, problems)
    # --- GDS
    gds = fs.get("gds")
    if gds and not values.get("gpufabric_gds_enabled", True):
        problems.append(f"{p}.gds: true, but gpufabric_gds_enabled is false ({label}); GDS is not set up on the nodes")
    if gds and transport != "rdma":
        problems.append(f"{p}.gds: true, but {label} uses transport {transport}; GPUDirect Storage needs RDMA")
    _pods_rules(fs, p, label, backend, servers, problems)
    _k8s_rules(fs.get("k8s") or {}, p, label, problems)


def _mount_rules(fs: Mapping[str, Any], p: str, label: str, backend: Any, problems: Problems) -> None:
    """The host mount: its point, its options, set-user-ID files and device nodes."""
    point = fs.get("mount_point")
    if not backend.host_mount and (point or fs.get("mount_options")):
        problems.append(
            f"{p}.mount_point: {label} gives block devices, not a filesystem; leave mount_point and mount_options "
            "empty (Pods get a namespace as a static PV)"
        )
    elif point and not (str(point).startswith("/") and point != "/" and os.path.normpath(point) == point):
        problems.append(f"{p}.mount_point: {show(point)} is not a normalised absolute path other than / ({label})")
    backend.mount_rules(fs, p, label, problems)
    owned = {**backend.owned_options, **SECURITY_OWNED_OPTIONS}
    for i, option in enumerate(fs.get("mount_options") or []):
        key = str(option).split("=", 1)[0].strip()
        if key in owned:
            problems.append(
                f"{p}.mount_options[{i}]: {show(option)} is set by the plan from {owned[key]} ({label}); set that "
                "instead"
            )
        elif key in ("noauto", "defaults") or not key or "," in str(option):
            problems.append(
                f"{p}.mount_options[{i}]: {show(option)} is not allowed; give one option per item, and no noauto "
                "(the mount must come back at boot)"
            )
    for key in ("allow_suid", "allow_devices"):
        if fs.get(key) and not point:
            problems.append(f"{p}.{key}: true, but {label} has no host mount (mount_point) it would apply to")


def _pods_rules(fs: Mapping[str, Any], p: str, label: str, backend: Any, servers: Any, problems: Problems) -> None:
    """Pod access the backend's CSI driver cannot give."""
    pods = storage_pods(fs)
    if pods == "storageclass" and not backend.dynamic:
        problems.append(
            f"{p}.pods: storageclass is not possible for {label}: its CSI driver provisions statically only; use "
            "static_pv or host"
        )
    if pods == "host" and not backend.host_mount:
        problems.append(f"{p}.pods: host is not possible for {label}: it has no host mount; use static_pv or none")
    elif pods == "host" and not fs.get("mount_point"):
        problems.append(f"{p}.pods: host needs a mount_point ({label})")
    backend.pods_rules(fs, p, label, pods, servers, problems)


def _k8s_rules(k8s: Mapping[str, Any], p: str, label: str, problems: Problems) -> None:
    if k8s.get("storage_class") is not None:
        dns_subdomain(problems, f"{p}.k8s.storage_class", k8s["storage_class"])
    for key in ("namespace", "secret_namespace"):
        if k8s.get(key) is not None:
            dns_label(problems, f"{p}.k8s.{key}", k8s[key])
    if k8s.get("secret") is not None:
        dns_subdomain(problems, f"{p}.k8s.secret", k8s["secret"])
    if k8s.get("capacity") is not None and not QUANTITY_RE.fullmatch(str(k8s["capacity"])):
        problems.append(f"{p}.k8s.capacity: {show(k8s['capacity'])} is not a Kubernetes quantity like 10Ti ({label})")


def storage_csi_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """storage_csi_*: pinned chart versions, a mirror given as a registry path, the wait timeout."""
    drivers = values.get("storage_csi_drivers")
    if isinstance(drivers, Mapping):
        for name, config in sorted(drivers.items()):
            if not isinstance(config, Mapping) or "chart_version" not in config:
                continue
            if not CHART_VERSION_RE.fullmatch(str(config.get("chart_version") or "")):
                problems.append(
                    f"storage_csi_drivers.{name}.chart_version: {show(config.get('chart_version'))} must be a pinned "
                    "chart version such as 4.13.4"
                )
            keyring_file(problems, f"storage_csi_drivers.{name}.chart_keyring", config.get("chart_keyring"))
    registry = values.get("storage_csi_image_registry")
    if registry and (not isinstance(registry, str) or "://" in registry or " " in registry or registry.endswith("/")):
        problems.append(
            f"storage_csi_image_registry: {show(registry)} is not a registry path like registry.example.com/mirror "
            "(no scheme, no trailing /)"
        )
    if values.get("storage_csi_wait_timeout") is not None:
        in_range(problems, "storage_csi_wait_timeout", values["storage_csi_wait_timeout"], 1, 86400)
