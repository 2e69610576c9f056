# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the API server can take the DRA objects of ``gpufabric_k8s_device_allocation: dra``.

The plan writes DeviceClasses and ResourceClaimTemplates of ``resource.k8s.io/v1``, the version
Kubernetes serves from 1.34 on (Dynamic Resource Allocation GA; docs/facts.md, "DRA drivers").
An older API server refuses them when the rdma_networks role applies them, after the node layer
and the operators changed, so the cluster layer asks first and refuses before any change. Both
facts are asked for: the server's version and whether it serves ``resource.k8s.io/v1`` (a 1.34
server with the group turned off by ``--runtime-config`` fails as well).

Pure, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import API_VERSION, VARIABLE

MINIMUM = (1, 34)


def server_version(git_version: Any) -> Tuple[int, ...]:
    """(major, minor) of a server version such as ``v1.36.0`` or ``v1.34.2-eks-1a2b``; () if unreadable."""
    match = re.match(r"v?(\d+)\.(\d+)", str(git_version or "").strip())
    return (int(match.group(1)), int(match.group(2))) if match else ()


def refusal(git_version: Any, served: Iterable[str]) -> Optional[str]:
    """The message that refuses ``dra`` on this API server, or None when it serves the DRA API.

    ``served`` lists the group versions the server serves (``resource.k8s.io/v1``, ...), as the
    discovery API returns them.
    """
    version = server_version(git_version)
    has_api = API_VERSION in set(served or [])
    if version and version >= MINIMUM and has_api:
        return None
    found = str(git_version or "an unreadable version")
    why = []
    if not version or version < MINIMUM:
        why.append(f"Kubernetes {found}, older than {MINIMUM[0]}.{MINIMUM[1]}")
    if not has_api:
        why.append(f"it does not serve {API_VERSION}")
    return (
        f"{VARIABLE}: dra needs {API_VERSION} (Kubernetes {MINIMUM[0]}.{MINIMUM[1]} or later) for its DeviceClasses "
        f"and ResourceClaimTemplates, but the API server runs {found} ({'; '.join(why)}); nothing was changed. "
        f"Upgrade the cluster, or set {VARIABLE}: device_plugin"
    )
