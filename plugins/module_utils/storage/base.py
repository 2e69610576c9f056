# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interface of a storage backend, and the small helpers the backends share.

A backend is one module of this package holding one ``StorageBackend`` subclass: its facts (the
class attributes) and its own part of each step (the methods): the intent rules
(intent/storage.py calls the ``*_rules`` hooks), the node mount plan (plan/storage.py calls
``mount``, ``node_entry``, ``record_part``, ``node_wide``), the CSI objects (plan/storage_csi.py
calls ``storage_class``, ``static_csi``, ``install_*``, ``operators``) and the read-back
(proof/storage_readback.py calls ``check_mount``, ``readback``). The registry (``__init__.py``)
lists the backends; the generic files never compare backend names.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.gpu_operator_values import MANAGED_BY

_LABEL = r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
HOSTNAME_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
FS_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


# --------------------------------------------------------------------------------------------- helpers
def ipv4(value: Any) -> bool:
    try:
        return ipaddress.ip_address(str(value)).version == 4
    except ValueError:
        return False


def host(value: Any) -> bool:
    return ipv4(value) or (isinstance(value, str) and len(value) <= 253 and bool(HOSTNAME_RE.fullmatch(value)))


def meta(name: str, namespace: Optional[str] = None, labels: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    out: Dict[str, Any] = {"name": name, "labels": {**MANAGED_BY, **(labels or {})}}
    if namespace:
        out["namespace"] = namespace
    return out


def fs_label(fs: Mapping[str, Any], prefix: str) -> Dict[str, str]:
    """The label that ties an object to its filesystem."""
    return {f"{prefix}/filesystem": fs["name"]}


def secret_params(name: str, namespace: str, kinds: Tuple[str, ...]) -> Dict[str, str]:
    out = {}
    for kind in kinds:
        out[f"csi.storage.k8s.io/{kind}-secret-name"] = name
        out[f"csi.storage.k8s.io/{kind}-secret-namespace"] = namespace
    return out


def mirrored(image: str, registry: str) -> str:
    """``image`` pulled from ``registry`` instead: its registry host is replaced (Docker Hub names get one)."""
    if not registry:
        return image
    first, _sep, rest = image.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return f"{registry.rstrip('/')}/{rest}"
    return f"{registry.rstrip('/')}/{image}"


def merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    out = dict(base)
    for key, value in (extra or {}).items():
        both = isinstance(value, Mapping) and isinstance(out.get(key), Mapping)
        out[key] = merge(out[key], value) if both else value
    return out


# --------------------------------------------------------------------------------------------- interface
def unique(items: List[Any]) -> List[Any]:
    """``items`` without repeats, in their first order (NIC, module and address lists)."""
    out: List[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


class StorageBackend:
    """One storage backend. The defaults are those of a backend that needs nothing special."""

    name = ""
    # How Pods get the filesystem when the intent does not say; whether the CSI driver provisions dynamically.
    default_pods = "storageclass"
    dynamic = True
    # Default server port per transport (a backend without a port option has none).
    ports: Dict[str, int] = {}
    # The mount type (fstab, mount -t); None: no host filesystem mount.
    fstype: Optional[str] = None
    # cuFile's fs.<section> (None: no section); gdscheck -p DRIVER CONFIGURATION labels, newest first.
    cufile_section: Optional[str] = None
    gdscheck_labels: Tuple[str, ...] = ()
    # Kernel modules of the host client per transport (modprobe names).
    modules: Dict[str, Tuple[str, ...]] = {}
    # The DOCA-OFED storage component and its DKMS module GDS over the backend needs.
    doca_component: Optional[Tuple[str, str]] = None
    # --- intent
    export_what = "the export"
    ipv4_servers = False  # the servers must be IPv4 addresses (else addresses or host names)
    host_mount = True  # False: block devices, no mount_point
    owned_options: Dict[str, str] = {}  # mount options the plan sets from the intent's keys
    # --- node plan: the installer source storage_client needs: (variable, what it is), its key fingerprints
    client_source: Optional[Tuple[str, str]] = None
    client_key_var: Optional[str] = None
    record_key: Optional[str] = None  # the key of the backend's own part of the node record
    node_key: Optional[str] = None  # the key of the backend's node-wide part of the storage section
    default_secret_name: Optional[str] = None  # the CSI Secret's default name ({name}: the filesystem's)
    # --- CSI driver
    csi_driver = ""
    csi_rank = 0  # the order of the drivers in the cluster plan
    csi_install = "helm"  # or "manifest"
    csi_manifest_what = ""
    csi_chart_hint = ""
    crds: Dict[str, str] = {}  # the kinds of custom resources of operators(), and their CRDs

    # ----------------------------------------------------------------------------------------- intent
    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        """What is wrong with the number of servers, as '... needs X; got Y' without the label, or None."""
        return None

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        """Why the (non-empty) export is not valid, a whole message after '{p}.export: ', or None."""
        return None

    def option_rules(self, fs: Mapping[str, Any], p: str, label: str, transport: str, problems: List[str]) -> None:
        """The backend's own settings (after the port)."""

    def mount_rules(self, fs: Mapping[str, Any], p: str, label: str, problems: List[str]) -> None:
        """The host mount (after the mount point)."""

    def auth_rules(self, fs: Mapping[str, Any], p: str, label: str, problems: List[str]) -> None:
        """Credentials (after the mount options); never repeats a secret."""

    def pods_rules(
        self, fs: Mapping[str, Any], p: str, label: str, pods: Optional[str], servers: List[Any], problems: List[str]
    ) -> None:
        """Pod access this backend's CSI driver cannot give (after the generic pods rules)."""

    # ----------------------------------------------------------------------------------------- node plan
    def mount(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
        """The host mount: src, fstype, options, host_options, expect_fstype, expect_options; None: none."""
        return None

    def node_entry(
        self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int], mount: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        """Keys the backend adds to the filesystem's entry of the node's storage section."""
        return {}

    def record_part(self, fs: Mapping[str, Any], mount: Optional[Mapping[str, Any]]) -> Any:
        """The backend's part of the node record (under ``record_key``)."""
        return None

    def node_wide(
        self, filesystems: List[Dict[str, Any]], fabric: Mapping[str, Any], problems: List[str]
    ) -> Optional[Dict[str, Any]]:
        """The node-wide settings of this backend's filesystems on the node (under ``node_key``)."""
        return None

    def client_rules(self, values: Mapping[str, Any], problems: List[str]) -> None:
        """More about the client's source when the backend is planned on the node."""

    # ----------------------------------------------------------------------------------------- CSI
    def storage_class(
        self, fs: Mapping[str, Any], sc: Dict[str, Any], namespace: str, prefix: str
    ) -> List[Dict[str, Any]]:
        """Fill the StorageClass ``sc`` in; return the objects it needs beside it."""
        return []

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        """Fill the static PV's ``csi`` in; return (access modes, mount options)."""
        return ["ReadWriteMany"], list(fs["mount_options"])

    def install_images(self, config: Mapping[str, Any], var: str, problems: List[str]) -> Dict[str, str]:
        """The images a manifest install references, mapped to where they are pulled from."""
        return {}

    def helm_values(self, registry: str) -> Dict[str, Any]:
        """The chart values the plan sets (a mirror registry)."""
        return {}

    def operators(
        self, fss: List[Mapping[str, Any]], config: Mapping[str, Any], registry: str, label: str, problems: List[str]
    ) -> List[Dict[str, Any]]:
        """Custom resources the driver needs beside the StorageClasses and volumes."""
        return []

    # ----------------------------------------------------------------------------------------- read-back
    def check_mount(self, fs: Mapping[str, Any], mount: Mapping[str, Any], problems: List[str]) -> None:
        """More about the host mount found at the mount point."""

    def readback(
        self, fs: Mapping[str, Any], section: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]
    ) -> None:
        """The backend's own state on the node (client daemons, connections)."""
