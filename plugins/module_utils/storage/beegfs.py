# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""BeeGFS: the BeeGFS client (kernel module beegfs, over RDMA or TCP), and ThinkParQ/beegfs-csi-driver.

Sources (docs/facts.md "BeeGFS"): the client's configuration file as the beegfs-client package
ships it (client_module/build/dist/etc/beegfs-client.conf: sysMgmtdHost, connMgmtdPort 8008,
connUseRDMA, connInterfacesFile; the mount options cfgFile and "mount -t beegfs beegfs_nodev DIR");
doc.beegfs.io "GPUDirect Storage Support" (the client's GDS build; CUDA 11.5.1 first supports
BeeGFS); NVIDIA GDS configuration guide (cufile.json fs.beegfs: rdma_dev_addr_list, mount_table);
ThinkParQ/beegfs-csi-driver docs/usage.md and examples (driver beegfs.csi.netapp.com; StorageClass
parameters sysMgmtdHost and volDirBasePath; static volumeHandle beegfs://HOST/PATH; deployed with
kustomize from deploy/k8s). Pure Python (>= 3.8).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import StorageBackend

CONF_DIR = "/etc/beegfs"
MGMTD_PORT = 8008  # connMgmtdPort's default
# Client settings the plan writes from the intent's keys; beegfs.client_config may not set them again.
OWNED_CONFIG = {
    "sysMgmtdHost": "servers",
    "connMgmtdPort": "port",
    "connUseRDMA": "transport",
    "connInterfacesFile": "nics",
}
CONFIG_KEY_RE = re.compile(r"^[a-z]+[A-Za-z0-9]*$")


def conf_path(name: str) -> str:
    """The client configuration file of the filesystem (one per mount: cfgFile= names it)."""
    return f"{CONF_DIR}/gpufabric-{name}-client.conf"


def interfaces_path(name: str) -> str:
    return f"{CONF_DIR}/gpufabric-{name}-interfaces"


def client_conf(config: Mapping[str, Any]) -> str:
    """The client configuration file: one "key = value" line per setting (the beegfs-client.conf syntax)."""
    lines = ["# Managed by Ansible (gpufabric.rollout storage_client): planned from gpufabric_storage."]
    for key, value in config.items():
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        lines.append(f"{key} = {shown}")
    return "\n".join(lines) + "\n"


class Beegfs(StorageBackend):
    name = "beegfs"
    ports = {"rdma": MGMTD_PORT, "tcp": MGMTD_PORT}
    fstype = "beegfs"
    cufile_section = "beegfs"
    gdscheck_labels = ("BeeGFS",)
    modules = {"rdma": ("beegfs",), "tcp": ("beegfs",)}
    export_what = "the BeeGFS directory the Kubernetes volumes live under"
    owned_options = {"cfgFile": "the plan (the filesystem's client configuration)"}
    client_source = ("storage_client_beegfs_repo_url", "the Debian repository of the BeeGFS client packages")
    client_key_var = "storage_client_beegfs_repo_key_fingerprints"
    csi_driver = "beegfs.csi.netapp.com"
    csi_rank = 5
    csi_install = "manifest"
    csi_manifest_what = (
        "the driver's manifests, rendered from its kustomize overlay (ThinkParQ/beegfs-csi-driver "
        "deploy/k8s/overlays/default at the release you run: kubectl kustomize DIR > FILE)"
    )

    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        if len(servers) == 1:
            return None
        return f"needs exactly one address: the host of its management service (sysMgmtdHost); got {show(servers)}"

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        text = str(export)
        if not (text.startswith("/") and text != "/" and posixpath.normpath(text) == text and " " not in text):
            return f"{show(export)} is not a normalised absolute directory of the filesystem other than / ({label})"
        return None

    def option_rules(self, fs: Mapping[str, Any], p: str, label: str, transport: str, problems: List[str]) -> None:
        config = (fs.get("beegfs") or {}).get("client_config") or {}
        for key, value in config.items():
            if key in OWNED_CONFIG:
                problems.append(
                    f"{p}.beegfs.client_config.{key}: is set by the plan from {OWNED_CONFIG[key]} ({label}); set that "
                    "instead"
                )
            elif not CONFIG_KEY_RE.fullmatch(str(key)):
                problems.append(
                    f"{p}.beegfs.client_config: {show(key)} is not a beegfs-client.conf setting name (like "
                    f"connMaxInternodeNum) ({label})"
                )
            elif not isinstance(value, (str, int, bool)) or "\n" in str(value):
                problems.append(
                    f"{p}.beegfs.client_config.{key}: {show(value)} is not one value (a string, number or boolean) "
                    f"({label})"
                )

    def config(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Dict[str, Any]:
        """The filesystem's client configuration: the plan's settings, then the intent's client_config."""
        config: Dict[str, Any] = {
            "sysMgmtdHost": fs["servers"][0],
            "connMgmtdPort": int(port or MGMTD_PORT),
            "connUseRDMA": fs["transport"] == "rdma",
        }
        if nics:
            config["connInterfacesFile"] = interfaces_path(fs["name"])
        config.update((fs.get("beegfs") or {}).get("client_config") or {})
        return config

    def mount(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
        path = conf_path(fs["name"])
        return {
            "src": "beegfs_nodev",
            "fstype": self.fstype,
            "options": [f"cfgFile={path}"],
            # beegfs-helperd (BeeGFS 7) logs for the client and resolves host names; ordering only, BeeGFS 8 has none
            "host_options": ["_netdev", "x-systemd.after=beegfs-helperd.service"],
            "expect_fstype": self.fstype,
            "expect_options": {"cfgFile": path},
        }

    def node_entry(
        self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int], mount: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        config = self.config(fs, nics, port)
        interfaces = [n["netdev"] for n in nics]
        return {
            "beegfs": {
                "conf_path": conf_path(fs["name"]),
                "conf": client_conf(config),
                "interfaces_path": interfaces_path(fs["name"]) if interfaces else None,
                "interfaces": "".join(f"{netdev}\n" for netdev in interfaces),
                "mgmtd": f"{fs['servers'][0]}:{config['connMgmtdPort']}",
                "rdma": bool(config["connUseRDMA"]),
            }
        }

    def _path(self, fs: Mapping[str, Any]) -> str:
        return str(fs["export"]).strip("/")

    def storage_class(
        self, fs: Mapping[str, Any], sc: Dict[str, Any], namespace: str, prefix: str
    ) -> List[Dict[str, Any]]:
        # One directory per volume under volDirBasePath, on the filesystem of that management service.
        sc["parameters"] = {"sysMgmtdHost": fs["servers"][0], "volDirBasePath": self._path(fs)}
        sc["allowVolumeExpansion"] = False  # the driver ignores capacity (docs/usage.md "Capacity")
        return []

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        csi["volumeHandle"] = f"beegfs://{fs['servers'][0]}/{self._path(fs)}"
        return ["ReadWriteMany"], []


BACKEND = Beegfs()
