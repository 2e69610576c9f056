# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection knows of each storage backend, as tables derived from the backend modules
(module_utils/storage/, one module per backend): for code that wants a table rather than a backend.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Dict, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import REGISTRY

BACKENDS: Tuple[str, ...] = tuple(REGISTRY)
# How Pods get the filesystem when the intent does not say; whether the CSI driver provisions dynamically.
DEFAULT_PODS: Dict[str, str] = {n: b.default_pods for n, b in REGISTRY.items()}
DYNAMIC: Dict[str, bool] = {n: b.dynamic for n, b in REGISTRY.items()}
# Default server ports per (backend, transport); a backend without a port option has none.
PORTS: Dict[Tuple[str, str], int] = {(n, t): port for n, b in REGISTRY.items() for t, port in b.ports.items()}
# The filesystem type of the mount (fstab, mount -t).
FSTYPE: Dict[str, str] = {n: b.fstype for n, b in REGISTRY.items() if b.fstype}
# cuFile's fs.<section> for the filesystem (a block device has none).
CUFILE_SECTION: Dict[str, str] = {n: b.cufile_section for n, b in REGISTRY.items() if b.cufile_section}
# gdscheck -p DRIVER CONFIGURATION labels, newest first.
GDSCHECK_LABELS: Dict[str, Tuple[str, ...]] = {n: b.gdscheck_labels for n, b in REGISTRY.items()}
# The kernel modules of the host client (modprobe names) per (backend, transport).
MODULES: Dict[Tuple[str, str], Tuple[str, ...]] = {
    (n, t): mods for n, b in REGISTRY.items() for t, mods in b.modules.items()
}
# The DOCA-OFED storage component and its DKMS module that GDS over the backend needs (facts §5.3).
DOCA_COMPONENT: Dict[str, Tuple[str, str]] = {n: b.doca_component for n, b in REGISTRY.items() if b.doca_component}
