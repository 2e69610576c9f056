# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVIDIA Network Operator releases whose custom resources the plan writes, and what differs
between them.

The plan renders the NicClusterPolicy, the NicNodePolicies and the nv-ipam pools for the release
``network_operator_chart_version`` names. Supported are the majors from ``OLDEST`` to ``NEWEST``
(every patch release of them): the unit tests validate the objects rendered for the oldest and
the newest release against the CRDs of that release (tests/unit/cluster/fixtures/crds). A
release outside the range is refused before anything changes, since nobody checked what it
accepts.

What differs inside the range (the CRDs of Mellanox/network-operator at the tags v25.10.0,
v26.1.2 and v26.4.1, deployment/network-operator/crds and manifests/state-nv-ipam-cni):

- NicNodePolicy (mellanox.com/v1alpha1) exists from 26.4.0 on; before it a cluster has one
  NicClusterPolicy, so node groups that need different RDMA shared device plugin selectors
  cannot be served (the plan refuses them).
- Before 26.4.0 every ImageSpec of the NicClusterPolicy requires image, repository and version;
  from 26.4.0 on only image is required.
- 26.1.0 added perNodeExclusions to IPPool and CIDRPool; the plan does not write it.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

# Majors (YY.MM) of the supported range, oldest and newest, inclusive.
OLDEST = (25, 10)
NEWEST = (26, 4)
NIC_NODE_POLICY_SINCE = (26, 4, 0)
IMAGE_SPEC_IMAGE_ONLY_SINCE = (26, 4, 0)


def release(version: Any) -> Optional[Tuple[int, int, int]]:
    """(YY, MM, patch) of a chart version such as 26.4.1 or v25.10.0-rc.1; None if it is not one."""
    numbers = version_numbers(version)
    return numbers if len(numbers) == 3 else None  # type: ignore[return-value]


def supported_range() -> str:
    return "{}.{}.0 to {}.{}.x".format(*OLDEST, *NEWEST)


def range_problem(variable: str, version: Any) -> Optional[str]:
    """A refusal naming the variable, the version and the range, or None when it is inside."""
    found = release(version)
    if found is None or OLDEST <= found[:2] <= NEWEST:
        return None
    return (
        f"{variable}: {version} is outside the Network Operator releases whose custom resources this "
        f"collection renders and validates ({supported_range()}); pin one of them"
    )


def features(version: Any) -> Dict[str, bool]:
    """What the release accepts, for the renderer. An unparsable or empty version means the newest."""
    found = release(version) or (NEWEST[0], NEWEST[1], 0)
    return {
        "nic_node_policy": found >= NIC_NODE_POLICY_SINCE,
        "image_spec_needs_all": found < IMAGE_SPEC_IMAGE_ONLY_SINCE,
    }
