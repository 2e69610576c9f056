# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mixes of device allocation that cannot coexist, refused by the cluster plan before any
change; each message names both sides.

- The GPU Operator's ClusterPolicy with a GPUCluster: the chart renders one of the two
  (``clusterPolicy.deployCR`` and ``gpuCluster.deployCR`` cannot both be true; its
  templates/validations.yaml fails the install otherwise, after the layers before it changed).
  The gpu_operator role always deploys the ClusterPolicy.
- ``dra`` with the ClusterPolicy's device plugin: the device plugin advertises every GPU as
  ``nvidia.com/gpu`` while the GPU DRA driver publishes the same GPUs in ResourceSlices, so one
  GPU could go to two Pods.
- ``dra`` with SR-IOV rails: the SR-IOV network device plugin (SriovNetworkNodePolicy) advertises
  the rail NICs' VFs while the NICs' DRA driver publishes the same NICs in ResourceSlices.

docs/facts.md, "DRA drivers: names and device attributes". Pure, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import GPU_DRIVER, NIC_DRIVER, VARIABLE


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes", "on", "1"))


def refusals(values: Mapping[str, Any]) -> List[str]:
    """Every mix of `values` (the checked cluster variables) that cannot coexist."""
    problems: List[str] = []
    mode = values.get(VARIABLE) or "device_plugin"
    gpu_operator = "gpu_operator_chart_version" in values  # the role is part of the cluster layer
    extra = values.get("gpu_operator_extra_values") or {}
    gpu_cluster = extra.get("gpuCluster") if isinstance(extra, Mapping) else None
    if gpu_operator and isinstance(gpu_cluster, Mapping) and _true(gpu_cluster.get("deployCR")):
        problems.append(
            "gpu_operator_extra_values.gpuCluster.deployCR: true asks the GPU Operator chart for a GPUCluster, but the "
            "gpu_operator role deploys the ClusterPolicy (clusterPolicy.deployCR: true), and the chart allows only "
            "one of the two; remove gpuCluster from gpu_operator_extra_values (the collection does not deploy a "
            "GPUCluster yet)"
        )
    if mode != "dra":
        return problems
    components = values.get("gpu_operator_components") or {}
    if gpu_operator and components.get("device_plugin", True):
        problems.append(
            f"{VARIABLE}: dra gives the GPUs through the GPU DRA driver ({GPU_DRIVER}), but the GPU Operator's "
            "ClusterPolicy runs its device plugin (gpu_operator_components.device_plugin: true), which advertises "
            "the same GPUs as nvidia.com/gpu; set gpu_operator_components.device_plugin: false, or keep "
            f"{VARIABLE}: device_plugin"
        )
    rails = values.get("gpufabric_rails") or {}
    default_type = rails.get("nad_type")
    sriov = [
        str(r.get("name") or f"rail {r.get('rail')}")
        for r in rails.get("rails") or []
        if (r.get("nad_type") or default_type) == "sriov"
    ]
    if default_type == "sriov" and not rails.get("rails"):
        sriov = ["every rail"]
    if sriov:
        problems.append(
            f"{VARIABLE}: dra gives the rail NICs through their DRA driver ({NIC_DRIVER}), but gpufabric_rails "
            f"nad_type sriov ({', '.join(sriov)}) has the SR-IOV network device plugin advertise the same NICs' VFs "
            "(SriovNetworkNodePolicy); use nad_type macvlan, ipvlan or host-device with dra, or keep "
            f"{VARIABLE}: device_plugin"
        )
    return problems
