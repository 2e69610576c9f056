# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IBM Storage Scale (GPFS): the Scale client, and IBM/ibm-spectrum-scale-csi.

Sources: IBM Storage Scale documentation (mmchconfig verbsRdma, verbsRdmaCm, verbsPorts,
verbsGPUDirectStorage; mmlsconfig; mmgetstate; mmchfs -o for mount options); IBM/ibm-spectrum-scale-csi
v3.0.0 generated/installer/ibm-spectrum-scale-csi-operator.yaml (operator, image defaults in its
CSI_*_IMAGE variables), operator/config/crd/bases/csi.ibm.com_csiscaleoperators.yaml (the CR schema),
driver/examples/version2/volume/storageclass.yaml (driver spectrumscale.csi.ibm.com). Pure Python (>= 3.8).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import (
    FS_NAME_RE,
    StorageBackend,
    merge,
    meta,
    mirrored,
    unique,
)

SCALE_IMAGES = {
    "spectrumScale": "quay.io/ibm-spectrum-scale/ibm-spectrum-scale-csi-driver@sha256:"
    "b367ac63080cf5f544ff3410817ac6a594ac1b2a4f7936eb0c140b2a108d2514",
    "snapshotter": "registry.k8s.io/sig-storage/csi-snapshotter@sha256:"
    "bc7be893ecc3ad524194aa6573b2f5c06cd469bdf21a500ab6c99c2ba1c4d64d",
    "attacher": "registry.k8s.io/sig-storage/csi-attacher@sha256:"
    "5aaefc24f315b182233c8b6146077f8c32e274d864cb03c632206e78bd0302da",
    "provisioner": "registry.k8s.io/sig-storage/csi-provisioner@sha256:"
    "bb057f866177d5f4139a1527e594499cbe0feeb67b63aaca8679dfdf0a6016f9",
    "livenessprobe": "registry.k8s.io/sig-storage/livenessprobe@sha256:"
    "88092d100909918ae0a768956cf78c88bc59cd7232720f7cdbdfb5d2e235001e",
    "driverRegistrar": "registry.k8s.io/sig-storage/csi-node-driver-registrar@sha256:"
    "5244abbe87e01b35adeb8bb13882a74785df0c0619f8325c9e950395c3f72a97",
    "resizer": "registry.k8s.io/sig-storage/csi-resizer@sha256:"
    "5e7cbb63fd497fa913caa21fee1a69f727c220c6fa83c5f8bb0995e2ad73a474",
}


class Gpfs(StorageBackend):
    name = "gpfs"
    fstype = "gpfs"
    cufile_section = "gpfs"
    gdscheck_labels = ("IBM Spectrum Scale",)
    export_what = "the filesystem device name"
    client_source = ("storage_client_gpfs_repo_url", "the Debian repository made from the Storage Scale installer")
    client_key_var = "storage_client_gpfs_repo_key_fingerprints"
    record_key = "gpfs"
    node_key = "gpfs"
    default_secret_name = "{name}-gui"
    csi_driver = "spectrumscale.csi.ibm.com"
    csi_rank = 3
    csi_install = "manifest"
    csi_manifest_what = (
        "the IBM Storage Scale CSI operator installer (IBM/ibm-spectrum-scale-csi "
        "generated/installer/ibm-spectrum-scale-csi-operator.yaml at the release you run, e.g. v3.0.0)"
    )
    crds = {"CSIScaleOperator": "csiscaleoperators.csi.ibm.com"}

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        if not FS_NAME_RE.fullmatch(str(export)):
            return f"{show(export)} is not a filesystem name (letters, digits, '_', '.', '-')"
        return None

    def mount_rules(self, fs: Mapping[str, Any], p: str, label: str, problems: List[str]) -> None:
        if fs.get("mount_options"):
            problems.append(
                f"{p}.mount_options: {label} is mounted by Storage Scale with the options of its filesystem "
                "(mmchfs -o); leave mount_options empty"
            )

    def pods_rules(
        self, fs: Mapping[str, Any], p: str, label: str, pods: Optional[str], servers: List[Any], problems: List[str]
    ) -> None:
        if pods == "static_pv":
            problems.append(
                f"{p}.pods: static_pv is not planned for {label}: a Storage Scale static volume handle needs the "
                "filesystem's UID from the Scale cluster; use storageclass or host"
            )
        if pods in ("storageclass", "static_pv"):
            cluster_id = (fs.get("gpfs") or {}).get("cluster_id")
            if not re.fullmatch(r"^[0-9]{1,20}$", str(cluster_id or "")):
                problems.append(
                    f"{p}.gpfs.cluster_id: {show(cluster_id)} is not a Scale cluster ID "
                    f"(digits, from mmlscluster); the CSI driver needs it for pods {pods} ({label})"
                )
            if not servers:
                problems.append(f"{p}.servers: {label} needs the Scale GUI hosts for the CSI driver (pods {pods})")

    def node_entry(
        self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int], mount: Optional[Mapping[str, Any]]
    ) -> Dict[str, Any]:
        return {"gpfs": {"device": fs["export"]}}

    def record_part(self, fs: Mapping[str, Any], mount: Optional[Mapping[str, Any]]) -> Any:
        return dict(fs.get("gpfs") or {})

    def node_wide(
        self, filesystems: List[Dict[str, Any]], fabric: Mapping[str, Any], problems: List[str]
    ) -> Optional[Dict[str, Any]]:
        if not filesystems:
            return None
        rdma = [n for fs in filesystems if fs["transport"] == "rdma" for n in fs["nics"]]
        ports = unique([f"{n['rdma_device']}/{n['port']}" for n in rdma])
        return {
            "verbs_rdma": "enable" if ports else "disable",
            "verbs_rdma_cm": "enable" if ports else "disable",
            "verbs_ports": " ".join(ports),
            "verbs_gpudirect_storage": "enable" if any(fs["gds"] for fs in filesystems) else "disable",
            "devices": [fs["gpfs"]["device"] for fs in filesystems],
        }

    def storage_class(
        self, fs: Mapping[str, Any], sc: Dict[str, Any], namespace: str, prefix: str
    ) -> List[Dict[str, Any]]:
        sc["parameters"] = {"volBackendFs": fs["export"], "clusterId": str((fs.get("gpfs") or {}).get("cluster_id"))}
        sc["allowVolumeExpansion"] = True
        return []

    def operators(
        self, fss: List[Mapping[str, Any]], config: Mapping[str, Any], registry: str, label: str, problems: List[str]
    ) -> List[Dict[str, Any]]:
        """The CSIScaleOperator of the local Scale cluster."""
        clusters = sorted({str((fs.get("gpfs") or {}).get("cluster_id")) for fs in fss})
        if len(clusters) > 1:
            problems.append(
                "gpufabric_storage: the gpfs filesystems name {} Scale clusters ({}); one CSIScaleOperator serves one "
                "local cluster here (remote clusters are not planned)".format(len(clusters), ", ".join(clusters))
            )
        hosts: List[str] = []
        for fs in fss:
            hosts += [h for h in fs["servers"] if h not in hosts]
        selector = [{"key": label, "value": "true"}]
        spec: Dict[str, Any] = {
            "localScaleCluster": clusters[0],
            "clusters": [
                {
                    "id": clusters[0],
                    "secrets": fss[0]["k8s"]["secret"],
                    "secureSslMode": False,
                    "restApi": [{"guiHost": host} for host in hosts],
                }
            ],
            "pluginNodeSelector": selector,
            "attacherNodeSelector": selector,
            "provisionerNodeSelector": selector,
            "snapshotterNodeSelector": selector,
            "resizerNodeSelector": selector,
        }
        if registry:
            spec.update({key: mirrored(image, registry) for key, image in SCALE_IMAGES.items()})
        cr = {
            "apiVersion": "csi.ibm.com/v1",
            "kind": "CSIScaleOperator",
            "metadata": meta(config["release_name"], config["namespace"]),
            "spec": merge(spec, config.get("values") or {}),
        }
        return [cr]

    def readback(
        self, fs: Mapping[str, Any], section: Mapping[str, Any], observed: Mapping[str, Any], problems: List[str]
    ) -> None:
        gpfs = observed.get("gpfs") or {}
        config = gpfs.get("config")
        if config is None:
            problems.append("Storage Scale is not configured on this node (mmlsconfig failed)")
            return
        plan = section.get("gpfs") or {}
        for key, attr in (
            ("verbs_rdma", "verbsRdma"),
            ("verbs_rdma_cm", "verbsRdmaCm"),
            ("verbs_ports", "verbsPorts"),
            ("verbs_gpudirect_storage", "verbsGPUDirectStorage"),
        ):
            want = plan.get(key)
            if want and config.get(attr, "") != want:
                problems.append(f"Scale {attr} is {config.get(attr) or '(unset)'}, planned {want}")
        if gpfs.get("state") != "active":
            problems.append(f"the Scale daemon is {gpfs.get('state') or 'not running'}")
        device = (fs.get("gpfs") or {}).get("device")
        mounts = [m for m in observed.get("mounts") or [] if m["fstype"] == self.fstype and m["source"] == device]
        if not mounts:
            problems.append(f"the Scale filesystem {device} is not mounted")
        elif fs.get("mount_point") and not any(m["target"] == fs["mount_point"] for m in mounts):
            at = mounts[0]["target"]
            problems.append(f"the Scale filesystem {device} is mounted at {at}, planned {fs['mount_point']}")


BACKEND = Gpfs()
