# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mixes of device allocation that cannot coexist, refused by the cluster plan before any
change; each message names both sides.

- ``dra`` with the GPU Operator's device plugin: the device plugin advertises every GPU as
  ``nvidia.com/gpu`` while the GPU DRA driver publishes the same GPUs in ResourceSlices, so one
  GPU could go to two Pods. (In dra mode the gpu_operator role deploys the GPUCluster instead of
  the ClusterPolicy, plan/gpu_operator_values.py; which of the two the chart deploys is the plan's,
  so ``gpu_operator_extra_values.gpuCluster.deployCR`` is refused as a planned value.)
- ``dra`` with SR-IOV rails: the SR-IOV network device plugin (SriovNetworkNodePolicy) advertises
  the rail NICs' VFs while the NICs' DRA driver publishes the same NICs in ResourceSlices.

docs/facts.md, "DRA drivers: names and device attributes". Pure, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, List, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import GPU_DRIVER, NIC_DRIVER, VARIABLE


def refusals(values: Mapping[str, Any]) -> List[str]:
    """Every mix of `values` (the checked cluster variables) that cannot coexist."""
    problems: List[str] = []
    mode = values.get(VARIABLE) or "device_plugin"
    gpu_operator = "gpu_operator_chart_version" in values  # the role is part of the cluster layer
    if mode != "dra":
        return problems
    components = values.get("gpu_operator_components") or {}
    if gpu_operator and components.get("device_plugin", True):
        problems.append(
            f"{VARIABLE}: dra gives the GPUs through the GPU DRA driver ({GPU_DRIVER}, the GPU Operator's "
            "GPUCluster), but gpu_operator_components.device_plugin: true asks for the GPU Operator's device plugin, "
            "which advertises the same GPUs as nvidia.com/gpu; set gpu_operator_components.device_plugin: false, "
            f"or keep {VARIABLE}: device_plugin"
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
    tagged = [
        f"{r.get('name') or 'rail ' + str(r.get('rail'))}: vlan {r.get('vlan')}"
        for r in rails.get("rails") or []
        if r.get("vlan") not in (None, "")
    ]
    if tagged:
        problems.append(
            f"{VARIABLE}: dra hands a Pod the rail NIC's port itself ({NIC_DRIVER}) with the addresses it has on "
            f"the node, but gpufabric_rails.rails[].vlan ({', '.join(tagged)}) asks for the NADs' VLAN netdevs, "
            "which dra mode does not plan; drop the vlan and carry the rail untagged on the port, or keep "
            f"{VARIABLE}: device_plugin"
        )
    return problems
