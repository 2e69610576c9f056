# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection knows of each storage backend, defined once.

The intent rules, the node planner (_plan_storage), the cluster planner (_plan_storage_csi),
the gdscheck parser and the read-back parser all take their backend facts from here.

Sources: nfs(5) and torvalds/linux Documentation/admin-guide/nfs/nfs-rdma.rst (NFS/RDMA port
20049); nvme-cli Documentation/nvme-discover.txt (RDMA port 4420); the Lustre manual and
lnet/utils/lnetconfig/liblnetconfig.c (LNet network names); docs.weka.io "Mount filesystems"
(type wekafs); NVIDIA GDS configuration guide (cuFile fs sections); NVIDIA/MagnumIO
gds-diag/checks/gds_report.py (gdscheck DRIVER CONFIGURATION label per filesystem type);
the CSI drivers' own repositories for the driver names (see _plan_storage_csi).

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Dict, Tuple

BACKENDS: Tuple[str, ...] = ("nfs", "lustre", "nvmeof", "weka", "gpfs")

# How Pods get the filesystem when the intent does not say: the Lustre (HPE) and NVMe-oF CSI
# drivers provision statically only.
DEFAULT_PODS: Dict[str, str] = {
    "nfs": "storageclass",
    "lustre": "static_pv",
    "nvmeof": "static_pv",
    "weka": "storageclass",
    "gpfs": "storageclass",
}
DYNAMIC: Dict[str, bool] = {"nfs": True, "lustre": False, "nvmeof": False, "weka": True, "gpfs": True}

# Default server ports per (backend, transport); None: the backend has no port option.
PORTS: Dict[Tuple[str, str], int] = {
    ("nfs", "rdma"): 20049,
    ("nfs", "tcp"): 2049,
    ("nvmeof", "rdma"): 4420,
    ("nvmeof", "tcp"): 4420,
}

# The filesystem type of the mount (fstab, mount -t); /proc/mounts shows NFS version 4.x as nfs4.
FSTYPE: Dict[str, str] = {"nfs": "nfs", "lustre": "lustre", "weka": "wekafs", "gpfs": "gpfs"}

# cuFile's fs.<section> for the filesystem (NVMe-oF is a block device: no fs section).
CUFILE_SECTION: Dict[str, str] = {"nfs": "nfs", "lustre": "lustre", "weka": "weka", "gpfs": "gpfs"}

# gdscheck -p DRIVER CONFIGURATION labels, newest first (Lustre was "DDN EXAScaler" before).
GDSCHECK_LABELS: Dict[str, Tuple[str, ...]] = {
    "nfs": ("NFS",),
    "lustre": ("Lustre", "DDN EXAScaler"),
    "nvmeof": ("NVMeOF",),
    "weka": ("WekaFS",),
    "gpfs": ("IBM Spectrum Scale",),
}

# The kernel modules of the host client (modprobe names) per (backend, transport).
MODULES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    ("nfs", "rdma"): ("rpcrdma",),
    ("nvmeof", "rdma"): ("nvme-fabrics", "nvme-rdma"),
    ("nvmeof", "tcp"): ("nvme-fabrics", "nvme-tcp"),
    ("lustre", "rdma"): ("lnet", "ko2iblnd"),
    ("lustre", "tcp"): ("lnet", "ksocklnd"),
}

# The DOCA-OFED storage component (doca_ofed_storage_components) and its DKMS module that GDS
# over the backend needs: nvidia-fs uses the MOFED/DOCA NFS-RDMA and NVMe-oF modules (facts §5.3).
DOCA_COMPONENT: Dict[str, Tuple[str, str]] = {
    "nfs": ("nfsrdma", "mlnx-nfsrdma"),
    "nvmeof": ("nvmf", "mlnx-nvme"),
}
