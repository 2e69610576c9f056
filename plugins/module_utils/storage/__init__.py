# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage backends, one module each, and their registry.

A new backend is a module here with a ``BACKEND`` (a base.StorageBackend) added to ``REGISTRY``;
its name must then be among the choices of gpufabric_storage[].backend in the argument specs and
in storage_csi_drivers (tests/unit/storage/test_backend_registry.py ties them together).

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.storage import beegfs, gpfs, lustre, nfs, nvmeof, weka
from ansible_collections.gpufabric.rollout.plugins.module_utils.storage.base import StorageBackend

# In the order the intent's checks go through them.
REGISTRY: Dict[str, StorageBackend] = {
    b.name: b for b in (nfs.BACKEND, lustre.BACKEND, nvmeof.BACKEND, weka.BACKEND, gpfs.BACKEND, beegfs.BACKEND)
}
NAMES: Tuple[str, ...] = tuple(REGISTRY)


def get(name: object) -> Optional[StorageBackend]:
    """The backend of that name, or None."""
    return REGISTRY.get(str(name))


def backend(name: object) -> StorageBackend:
    """The backend of a planned filesystem (its name was checked against the argument specs)."""
    return REGISTRY[str(name)]


def by_csi_rank() -> Tuple[StorageBackend, ...]:
    """The backends in the order the cluster plan lists their CSI drivers."""
    return tuple(sorted(REGISTRY.values(), key=lambda b: b.csi_rank))
