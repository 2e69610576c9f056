# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether this run may change the cluster's device allocation (``gpufabric_k8s_device_allocation``)
while GPU workloads run.

With the GPU Operator release the collection pins, the GPU stack is chosen per cluster: the chart
deploys a ClusterPolicy (device plugins) or a GPUCluster (DRA driver), never both
(docs/facts.md, "GPU Operator: ClusterPolicy or GPUCluster"). A run that changes the mode replaces one with the
other, removes or installs dranet and prunes the rails' NADs and pools (or the reverse): the
running Pods lose the device plugins, the NADs and the shared RDMA devices they were scheduled
with, and dranet takes the rail NICs that their macvlan interfaces sit on. So such a run belongs in
a maintenance window, and the plan refuses it, before any change, while a Pod outside the
operators' own namespaces still holds GPU or rail devices.

- ``mode_reads()``: the two custom resources to read (the names the plan gives them).
- ``cluster_mode(cluster_policies, gpu_clusters)``: the mode the cluster is in, read from the GPU
  Operator's custom resource the chart rendered (None: neither exists, a first run).
- ``device_users(pods, skip_namespaces)``: the Pods that hold devices: not finished, and with a
  container (or init container) that requests or limits an ``nvidia.com/`` resource (GPUs, MIG
  slices, the SR-IOV rails' VFs) or an ``rdma/`` one (the RDMA shared device plugin's), or with a
  ``spec.resourceClaims`` entry (DRA).
- ``refusal(planned, current, users)``: the message, or None.

Pure, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import VARIABLE
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.gpu_operator import (
    CLUSTER_POLICY,
    GPU_CLUSTER,
)

# The extended resources of the device plugins the collection deploys: the GPU Operator's
# (nvidia.com/gpu, nvidia.com/mig-*), the SR-IOV rails' (the Network Operator's nvidia.com/ prefix)
# and the RDMA shared device plugin's (rdma/).
RESOURCE_PREFIXES = ("nvidia.com/", "rdma/")
FINISHED = ("Succeeded", "Failed")
SHOWN = 10


def mode_reads() -> List[Dict[str, str]]:
    """The ClusterPolicy and the GPUCluster the chart renders, each with the mode it stands for."""
    return [
        {"api_version": "nvidia.com/v1", "kind": "ClusterPolicy", "name": CLUSTER_POLICY, "mode": "device_plugin"},
        {"api_version": "nvidia.com/v1alpha1", "kind": "GPUCluster", "name": GPU_CLUSTER, "mode": "dra"},
    ]


def cluster_mode(cluster_policies: Optional[Sequence[Any]], gpu_clusters: Optional[Sequence[Any]]) -> Optional[str]:
    """``dra`` where a GPUCluster exists, ``device_plugin`` where a ClusterPolicy does, else None.

    Both at once is what an interrupted mode change leaves (the chart and the operator refuse it as
    a steady state): the cluster is then read as in ``dra`` if the GPUCluster is there, the mode the
    collection only reaches by removing the ClusterPolicy after it."""
    if gpu_clusters:
        return "dra"
    if cluster_policies:
        return "device_plugin"
    return None


def _requested(container: Mapping[str, Any]) -> List[str]:
    resources = container.get("resources") or {}
    names = set()
    for part in ("requests", "limits"):
        for name in resources.get(part) or {}:
            if str(name).startswith(RESOURCE_PREFIXES):
                names.add(str(name))
    return sorted(names)


def device_users(pods: Optional[Iterable[Any]], skip_namespaces: Iterable[str] = ()) -> List[str]:
    """``namespace/name (what it holds)`` of each Pod that holds GPU or rail devices, sorted."""
    skip = {str(n) for n in skip_namespaces if n}
    found = []
    for pod in pods or []:
        if not isinstance(pod, Mapping):
            continue
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        namespace = str(meta.get("namespace") or "")
        if namespace in skip or (pod.get("status") or {}).get("phase") in FINISHED:
            continue
        held = set()
        for container in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
            if isinstance(container, Mapping):
                held.update(_requested(container))
        claims = [c for c in spec.get("resourceClaims") or [] if isinstance(c, Mapping)]
        if claims:
            held.add("resource claims " + ", ".join(str(c.get("name", "?")) for c in claims))
        if held:
            found.append("{}/{} ({})".format(namespace, meta.get("name", "?"), ", ".join(sorted(held))))
    return sorted(found)


def refusal(planned: str, current: Optional[str], users: Sequence[str]) -> Optional[str]:
    """Why this run may not change the device allocation now, or None."""
    if current is None or current == planned or not users:
        return None
    shown = "; ".join(users[:SHOWN])
    more = f" (and {len(users) - SHOWN} more)" if len(users) > SHOWN else ""
    return (
        f"{VARIABLE}: this run would move the cluster from {current} to {planned}, which replaces the GPU "
        f"Operator's ClusterPolicy and GPUCluster, the rails' NADs and device plugins and dranet, but "
        f"{len(users)} Pod(s) still hold GPU or rail devices: {shown}{more}. Nothing was changed. Stop "
        f"those workloads (a maintenance window), then rerun; or keep {VARIABLE}: {current}. "
        f"docs/dra.md, 'Moving a running cluster'."
    )
