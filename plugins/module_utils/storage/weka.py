# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""WEKA: the stateless WEKA client (wekafs), and weka/csi-wekafs.

Sources: docs.weka.io "Mount filesystems" (type wekafs, net= and num_cores options, the agent
installer); weka/csi-wekafs v2.8.8 charts/csi-wekafsplugin (values images.*),
examples/dynamic_directory/storageclass-wekafs-dir-api.yaml and
examples/static_volume/static_filesystem/pv-wekafs-fs-static-api.yaml (driver csi.weka.io).
Pure Python (>= 3.8).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import (
    FS_NAME_RE,
    StorageBackend,
    mirrored,
    secret_params,
)

SHA256_RE = re.compile(r"[0-9a-fA-F]{64}")
# Images the chart references by default, so that a mirror can take each one.
WEKA_IMAGES = {
    "livenessprobesidecar": "registry.k8s.io/sig-storage/livenessprobe:v2.18.0",
    "attachersidecar": "registry.k8s.io/sig-storage/csi-attacher:v4.11.0",
    "provisionersidecar": "registry.k8s.io/sig-storage/csi-provisioner:v6.2.0",
    "registrarsidecar": "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.16.0",
    "resizersidecar": "registry.k8s.io/sig-storage/csi-resizer:v2.1.0",
    "snapshottersidecar": "registry.k8s.io/sig-storage/csi-snapshotter:v8.5.0",
    "csidriver": "quay.io/weka.io/csi-wekafs",
}


class Weka(StorageBackend):
    name = "weka"
    fstype = "wekafs"
    cufile_section = "weka"
    gdscheck_labels = ("WekaFS",)
    export_what = "the filesystem name"
    owned_options = {"net": "transport and nics", "num_cores": "weka.num_cores"}
    client_source = (
        "storage_client_weka_installer_url",
        "the WEKA agent installer (https://BACKEND:14000/dist/v1/install)",
    )
    default_secret_name = "csi-wekafs-api-secret"
    csi_driver = "csi.weka.io"
    csi_rank = 2

    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        return None if servers else "needs at least one backend host for the stateless client mount"

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        if not FS_NAME_RE.fullmatch(str(export)):
            return f"{show(export)} is not a filesystem name (letters, digits, '_', '.', '-')"
        return None

    def mount(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
        nets = [f"net={n['netdev']}" for n in nics] if fs["transport"] == "rdma" else ["net=udp"]
        cores = int((fs.get("weka") or {}).get("num_cores") or 1)
        return {
            "src": ",".join(fs["servers"]) + f"/{fs['export']}",
            "fstype": self.fstype,
            "options": [*nets, f"num_cores={cores}"],
            "host_options": [
                "_netdev",
                "x-systemd.requires=weka-agent.service",
                "x-systemd.after=weka-agent.service",
                "x-systemd.mount-timeout=infinity",
            ],
            "expect_fstype": self.fstype,
            "expect_options": {},
        }

    def client_rules(self, values: Mapping[str, Any], problems: List[str]) -> None:
        """The installer runs as root: it is verified against the digest the user pinned before it runs."""
        if not values.get("storage_client_weka_installer_url"):
            return
        digest = values.get("storage_client_weka_installer_sha256")
        if not (isinstance(digest, str) and SHA256_RE.fullmatch(digest)):
            problems.append(
                f"storage_client_weka_installer_sha256: {digest!r} is not a SHA-256 digest; it is required with "
                "storage_client_weka_installer_url (the installer runs as root, verified first); allowed: 64 "
                "hexadecimal digits, e.g. the output of sha256sum on the installer the backend serves"
            )

    def storage_class(
        self, fs: Mapping[str, Any], sc: Dict[str, Any], namespace: str, prefix: str
    ) -> List[Dict[str, Any]]:
        sc["parameters"] = {
            "volumeType": "dir/v1",
            "filesystemName": fs["export"],
            "capacityEnforcement": "HARD",
            **secret_params(
                fs["k8s"]["secret"],
                namespace,
                ("provisioner", "controller-publish", "controller-expand", "node-stage", "node-publish"),
            ),
        }
        if fs["mount_options"]:
            sc["parameters"]["mountOptions"] = ",".join(o for o in fs["mount_options"] if not o.startswith("net="))
        sc["allowVolumeExpansion"] = True
        return []

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        k8s = fs["k8s"]
        csi["volumeHandle"] = f"weka/v2/{fs['export']}"
        namespace = k8s.get("secret_namespace") or drivers["weka"]["namespace"]
        ref = {"name": k8s["secret"], "namespace": namespace}
        csi["nodePublishSecretRef"] = dict(ref)
        csi["controllerExpandSecretRef"] = dict(ref)
        return ["ReadWriteMany"], [o for o in fs["mount_options"] if not o.startswith("net=")]

    def helm_values(self, registry: str) -> Dict[str, Any]:
        if not registry:
            return {}
        return {"images": {key: mirrored(image, registry) for key, image in WEKA_IMAGES.items()}}

    def check_mount(self, fs: Mapping[str, Any], mount: Mapping[str, Any], problems: List[str]) -> None:
        # The client's NICs, where the mount shows them (the lab's does; check a real client with weka local resources).
        nets = [o for o in mount.get("option_list") or [] if o.startswith("net=")]
        planned = [o for o in fs["mount"].get("options") or [] if o.startswith("net=")]
        if nets and sorted(nets) != sorted(planned):
            problems.append(f"{fs['mount_point']} uses {', '.join(nets)}, planned {', '.join(planned)}")


BACKEND = Weka()
