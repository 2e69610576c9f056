# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of gpufabric_storage that hold whatever the hardware (called from _intent_rules.NODE_RULES).

Names, addresses, exports, mount points and options, GDS over a transport that cannot carry it,
and Pod access a backend's CSI driver cannot give. What needs the node's NICs and drivers (a NIC
that does not exist, an RDMA mount without an RDMA NIC, GDS without the DOCA-OFED component) is
the node planner's (_plan_storage). Every problem names the variable path and the filesystem.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import os
import re
import zlib
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
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import storage_backends as _storage_backends

# Mount options the plan sets itself from the intent's keys; the intent may not set them again.
STORAGE_OWNED_OPTIONS = {
    "nfs": {
        "proto": "transport",
        "rdma": "transport",
        "tcp": "transport",
        "udp": "transport",
        "port": "port",
        "vers": "nfs.version",
        "nfsvers": "nfs.version",
        "minorversion": "nfs.version",
        "nconnect": "nfs.nconnect",
    },
    "lustre": {},
    "weka": {"net": "transport and nics", "num_cores": "weka.num_cores"},
}
# Every host mount gets nosuid,nodev unless the entry allows set-user-ID files or device nodes
# (mount(8) "FILESYSTEM-INDEPENDENT MOUNT OPTIONS"); these options are the plan's, from those keys.
SECURITY_OWNED_OPTIONS = {
    "suid": "allow_suid",
    "nosuid": "allow_suid",
    "dev": "allow_devices",
    "nodev": "allow_devices",
}
QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
# NVMe Base Specification, "NVMe Qualified Names": nqn.YYYY-MM.reverse-domain:owner-string, or the
# UUID form nqn.2014-08.org.nvmexpress:uuid:UUID; at most 223 bytes (UTF-8). The discovery NQN
# (nqn.2014-08.org.nvmexpress.discovery) names a discovery controller, never a subsystem to plan.
NQN_RE = re.compile(r"^nqn\.[0-9]{4}-(0[1-9]|1[0-2])\.[a-z0-9][-a-z0-9]*(\.[a-z0-9][-a-z0-9]*)+:[^\s,;=]+$")
NQN_UUID_RE = re.compile(r"^nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
NQN_MAX_BYTES = 223
# DH-HMAC-CHAP secrets in the NVMe Base Specification's representation ("Secret representation";
# what nvme-cli gen-dhchap-key prints): DHHC-1:HH:BASE64: where HH is the hash the secret is
# transformed with (00 none, 01 SHA-256, 02 SHA-384, 03 SHA-512) and BASE64 is the 32, 48 or 64
# byte secret followed by its CRC-32, little-endian (the kernel checks it: nvme_auth_extract_key).
DHCHAP_RE = re.compile(r"^DHHC-1:(0[0-3]):([A-Za-z0-9+/]+={0,2}):$")
DHCHAP_LENGTHS = {"00": (32, 48, 64), "01": (32,), "02": (48,), "03": (64,)}
DHCHAP_KEYS = ("dhchap_secret", "dhchap_ctrl_secret")
MASK = "********"
_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
HOSTNAME_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")


def nqn_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not the NQN of an NVMe subsystem, or None."""
    text = str(value)
    if len(text.encode("utf-8")) > NQN_MAX_BYTES:
        return f"is longer than {NQN_MAX_BYTES} bytes"
    if not (NQN_UUID_RE.fullmatch(text) or NQN_RE.fullmatch(text)):
        return (
            "is not an NVMe qualified name; allowed: nqn.YYYY-MM.reverse.domain:name (no spaces, commas, ';' or "
            "'='), or nqn.2014-08.org.nvmexpress:uuid:UUID"
        )
    return None


def dhchap_problem(value: Any) -> Optional[str]:
    """Why ``value`` is not a DH-HMAC-CHAP secret, or None; never repeats the value."""
    match = DHCHAP_RE.fullmatch(value) if isinstance(value, str) else None
    if not match:
        return "is not a DH-HMAC-CHAP secret; allowed: DHHC-1:00:BASE64: (00-03), as nvme gen-dhchap-key prints it"
    try:
        raw = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return "is not a DH-HMAC-CHAP secret: its key part is not base64"
    key, crc = raw[:-4], raw[-4:]
    if len(key) not in DHCHAP_LENGTHS[match.group(1)]:
        sizes = " or ".join(str(n) for n in DHCHAP_LENGTHS[match.group(1)])
        return f"is not a DH-HMAC-CHAP secret: hash {match.group(1)} needs a {sizes} byte key, it has {len(key)}"
    if zlib.crc32(key) != int.from_bytes(crc, "little"):
        return "is not a DH-HMAC-CHAP secret: its CRC-32 does not match (a character was changed or lost)"
    return None


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


def _ipv4(value: Any) -> bool:
    try:
        return ipaddress.ip_address(str(value)).version == 4
    except ValueError:
        return False


def _host(value: Any) -> bool:
    return _ipv4(value) or (isinstance(value, str) and len(value) <= 253 and bool(HOSTNAME_RE.fullmatch(value)))


def storage_pods(fs: Mapping[str, Any]) -> Optional[str]:
    """How Pods get the filesystem: the intent's choice, else the backend's default."""
    return fs.get("pods") or _storage_backends.DEFAULT_PODS.get(str(fs.get("backend")))


def storage_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """gpufabric_storage: names, addresses, exports, mount points and options, GDS and Pod access that cannot work
    whatever the hardware; what needs the node's NICs and drivers is the node planner's (_plan_storage)."""
    items = values.get("gpufabric_storage")
    if not isinstance(items, list):
        return
    names: Dict[str, int] = {}
    points: Dict[str, int] = {}
    for index, fs in enumerate(items):
        if not isinstance(fs, Mapping) or fs.get("backend") not in _storage_backends.BACKENDS:
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
        if not isinstance(fs, Mapping) or fs.get("backend") not in _storage_backends.BACKENDS:
            continue
        label = f"filesystem {fs.get('name')!r} ({fs['backend']})"
        for other in _storage_backends.BACKENDS:
            if other != fs["backend"] and fs.get(other) is not None:
                problems.append(
                    f"gpufabric_storage[{index}].{other}: {label} carries a {other!r} section, which only a "
                    f"filesystem with backend {other!r} reads (its settings would not apply); remove it, or set "
                    f"backend: {other}"
                )


def _storage_fs_rules(fs: Mapping[str, Any], p: str, label: str, values: Mapping[str, Any], problems: Problems) -> None:
    backend = fs["backend"]
    transport = fs.get("transport") or "rdma"
    servers = list(fs.get("servers") or [])
    export = fs.get("export")
    pods = storage_pods(fs)
    # --- servers and export
    if backend == "nfs" and len(servers) != 1:
        problems.append(f"{p}.servers: {label} needs exactly one NFS server address; got {show(servers)}")
    if backend in ("lustre", "nvmeof") and not 1 <= len(servers) <= (2 if backend == "lustre" else 8):
        what = "one MGS address, or two for a failover pair" if backend == "lustre" else "1-8 discovery controllers"
        problems.append(f"{p}.servers: {label} needs {what}; got {show(servers)}")
    if backend == "weka" and not servers:
        problems.append(f"{p}.servers: {label} needs at least one backend host for the stateless client mount")
    for i, server in enumerate(servers):
        ok = _ipv4(server) if backend in ("lustre", "nvmeof") else _host(server)
        if not ok:
            want = "an IPv4 address" if backend in ("lustre", "nvmeof") else "an IPv4 address or a host name"
            problems.append(f"{p}.servers[{i}]: {show(server)} is not {want} ({label})")
    if not export:
        what = {
            "nfs": "the export path",
            "lustre": "the filesystem name",
            "nvmeof": "the subsystem NQN",
            "weka": "the filesystem name",
            "gpfs": "the filesystem device name",
        }[backend]
        problems.append(f"{p}.export: is required: {what} of {label}")
    elif backend == "nfs" and not str(export).startswith("/"):
        problems.append(f"{p}.export: {show(export)} is not an absolute export path ({label})")
    elif backend == "lustre" and not re.fullmatch(r"^[A-Za-z0-9_-]{1,8}$", str(export)):
        problems.append(
            f"{p}.export: {show(export)} is not a Lustre filesystem name (1-8 letters, digits, '_' or '-') ({label})"
        )
    elif backend == "nvmeof" and nqn_problem(export):
        problems.append(f"{p}.export: {show(export)} {nqn_problem(export)} ({label})")
    elif backend in ("weka", "gpfs") and not re.fullmatch(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$", str(export)):
        problems.append(f"{p}.export: {show(export)} is not a filesystem name (letters, digits, '_', '.', '-')")
    # --- transport, port and the backend's own settings
    if fs.get("port") is not None:
        in_range(problems, f"{p}.port", fs["port"], 1, 65535)
        if (backend, transport) not in _storage_backends.PORTS:
            problems.append(f"{p}.port: {label} has no server port to set")
    nfs = fs.get("nfs") or {}
    if nfs.get("nconnect") is not None:
        in_range(problems, f"{p}.nfs.nconnect", nfs["nconnect"], 1, 16)
    lnet = (fs.get("lustre") or {}).get("lnet_network")
    if backend == "lustre" and lnet is not None:
        kind = "o2ib" if transport == "rdma" else "tcp"
        if not re.fullmatch(rf"^{kind}[0-9]{{0,4}}$", str(lnet)):
            problems.append(
                f"{p}.lustre.lnet_network: {show(lnet)} is not an LNet {kind} network (like {kind} or {kind}1) for "
                f"transport {transport} ({label})"
            )
    in_range(problems, f"{p}.weka.num_cores", (fs.get("weka") or {}).get("num_cores"), 1, 19)
    # --- host mount
    point = fs.get("mount_point")
    if backend == "nvmeof" and (point or fs.get("mount_options")):
        problems.append(
            f"{p}.mount_point: {label} gives block devices, not a filesystem; leave mount_point and mount_options "
            "empty (Pods get a namespace as a static PV)"
        )
    elif point and not (str(point).startswith("/") and point != "/" and os.path.normpath(point) == point):
        problems.append(f"{p}.mount_point: {show(point)} is not a normalised absolute path other than / ({label})")
    if backend == "gpfs" and fs.get("mount_options"):
        problems.append(
            f"{p}.mount_options: {label} is mounted by Storage Scale with the options of its filesystem (mmchfs -o); "
            "leave mount_options empty"
        )
    owned = {**STORAGE_OWNED_OPTIONS.get(backend, {}), **SECURITY_OWNED_OPTIONS}
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
    # --- NVMe-oF in-band authentication (secrets are never repeated in a problem)
    nvmeof = fs.get("nvmeof") or {}
    for key in DHCHAP_KEYS:
        secret = nvmeof.get(key)
        if secret in (None, ""):
            continue
        if backend != "nvmeof":
            continue
        why = dhchap_problem(secret)
        if why:
            problems.append(f"{p}.nvmeof.{key}: the value given (not shown) {why} ({label})")
    if backend == "nvmeof" and nvmeof.get("dhchap_ctrl_secret") and not nvmeof.get("dhchap_secret"):
        problems.append(
            f"{p}.nvmeof.dhchap_ctrl_secret: needs nvmeof.dhchap_secret as well (the controller is authenticated "
            f"only within a host authentication) ({label})"
        )
    # --- GDS
    gds = fs.get("gds")
    if gds and not values.get("gpufabric_gds_enabled", True):
        problems.append(f"{p}.gds: true, but gpufabric_gds_enabled is false ({label}); GDS is not set up on the nodes")
    if gds and transport != "rdma":
        problems.append(f"{p}.gds: true, but {label} uses transport {transport}; GPUDirect Storage needs RDMA")
    # --- Pods
    if pods == "storageclass" and not _storage_backends.DYNAMIC[backend]:
        problems.append(
            f"{p}.pods: storageclass is not possible for {label}: its CSI driver provisions statically only; use "
            "static_pv or host"
        )
    if pods == "host" and backend == "nvmeof":
        problems.append(f"{p}.pods: host is not possible for {label}: it has no host mount; use static_pv or none")
    elif pods == "host" and not point:
        problems.append(f"{p}.pods: host needs a mount_point ({label})")
    if backend == "nvmeof" and pods == "static_pv" and not (fs.get("nvmeof") or {}).get("device_id"):
        problems.append(
            f"{p}.nvmeof.device_id: is required for pods static_pv ({label}): the namespace the PV stands for, "
            "as uuid.UUID or eui.EUI"
        )
    if backend == "gpfs" and pods == "static_pv":
        problems.append(
            f"{p}.pods: static_pv is not planned for {label}: a Storage Scale static volume handle needs the "
            "filesystem's UID from the Scale cluster; use storageclass or host"
        )
    if backend == "gpfs" and pods in ("storageclass", "static_pv"):
        if not re.fullmatch(r"^[0-9]{1,20}$", str((fs.get("gpfs") or {}).get("cluster_id") or "")):
            problems.append(
                f"{p}.gpfs.cluster_id: {show((fs.get('gpfs') or {}).get('cluster_id'))} is not a Scale cluster ID "
                f"(digits, from mmlscluster); the CSI driver needs it for pods {pods} ({label})"
            )
        if not servers:
            problems.append(f"{p}.servers: {label} needs the Scale GUI hosts for the CSI driver (pods {pods})")
    k8s = fs.get("k8s") or {}
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
