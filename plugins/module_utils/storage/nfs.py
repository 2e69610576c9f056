# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NFS (over RDMA or TCP): the kernel client, and kubernetes-csi/csi-driver-nfs.

Sources: nfs(5) (mount options; proto=rdma, port, vers, nconnect); torvalds/linux
Documentation/admin-guide/nfs/nfs-rdma.rst (NFS/RDMA port 20049); kubernetes-csi/csi-driver-nfs
deploy/example/storageclass-nfs.yaml and docs/driver-parameters.md (driver nfs.csi.k8s.io, the
server/share parameters, the provisioner secret's mountOptions). Pure Python (>= 3.8).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.words import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import (
    StorageBackend,
    fs_label,
    meta,
    secret_params,
)


class Nfs(StorageBackend):
    name = "nfs"
    ports = {"rdma": 20049, "tcp": 2049}
    fstype = "nfs"
    cufile_section = "nfs"
    gdscheck_labels = ("NFS",)
    modules = {"rdma": ("rpcrdma",)}
    doca_component = ("nfsrdma", "mlnx-nfsrdma")
    export_what = "the export path"
    owned_options = {
        "proto": "transport",
        "rdma": "transport",
        "tcp": "transport",
        "udp": "transport",
        "port": "port",
        "vers": "nfs.version",
        "nfsvers": "nfs.version",
        "minorversion": "nfs.version",
        "nconnect": "nfs.nconnect",
    }
    csi_driver = "nfs.csi.k8s.io"
    csi_rank = 0

    def servers_problem(self, servers: List[Any]) -> Optional[str]:
        return None if len(servers) == 1 else f"needs exactly one NFS server address; got {show(servers)}"

    def export_problem(self, export: Any, label: str) -> Optional[str]:
        if not str(export).startswith("/"):
            return f"{show(export)} is not an absolute export path ({label})"
        return None

    def mount(self, fs: Mapping[str, Any], nics: List[Dict[str, Any]], port: Optional[int]) -> Optional[Dict[str, Any]]:
        port = int(port or 0)
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
            "fstype": self.fstype,
            "options": opts,
            "host_options": ["_netdev"],
            "expect_fstype": "nfs" if version == "3" else "nfs4",  # /proc/mounts names NFSv4.x nfs4
            "expect_options": expect,
        }

    def storage_class(
        self, fs: Mapping[str, Any], sc: Dict[str, Any], namespace: str, prefix: str
    ) -> List[Dict[str, Any]]:
        k8s = fs["k8s"]
        extra: List[Dict[str, Any]] = []
        sc["parameters"] = {"server": fs["servers"][0], "share": fs["export"]}
        sc["mountOptions"] = list(fs["mount_options"])
        # DeleteVolume mounts the share without the class's mountOptions; an RDMA-only server needs them (facts §9.6).
        secret = k8s.get("secret") or f"{k8s['storage_class']}-mount-options"
        sc["parameters"].update(secret_params(secret, namespace, ("provisioner",)))
        if not k8s.get("secret"):
            extra.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": meta(secret, namespace, fs_label(fs, prefix)),
                    "type": "Opaque",
                    "stringData": {"mountOptions": ",".join(fs["mount_options"])},
                }
            )
        sc["allowVolumeExpansion"] = False
        return extra

    def static_csi(
        self, fs: Mapping[str, Any], csi: Dict[str, Any], drivers: Mapping[str, Any]
    ) -> Tuple[List[str], List[str]]:
        csi["volumeHandle"] = f"{fs['servers'][0]}#{fs['export']}#"
        csi["volumeAttributes"] = {"server": fs["servers"][0], "share": fs["export"]}
        return ["ReadWriteMany"], list(fs["mount_options"])

    def helm_values(self, registry: str) -> Dict[str, Any]:
        if not registry:
            return {}
        return {"image": {"baseRepo": registry, "nfs": {"repository": f"{registry}/sig-storage/nfsplugin"}}}


BACKEND = Nfs()
