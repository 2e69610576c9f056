"""gpufabric_k8s_device_allocation in the cluster plan: device_plugin (the default) leaves every object
as it was; dra adds the DRA section, owned like the rails' objects; the mixes that cannot coexist
are refused before any change (the bad-input suite has their messages)."""

from __future__ import annotations

import pytest
from conftest import check, lab_intent, node_facts
from test_bad_intent import SKEW, merged, node_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra_mixes import refusals


def cluster_plan(specs, changes=None, gpu0_root=None):
    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        variables = merged(lab_intent(), {"gpufabric_k8s_node_name": name})
        facts = node_facts(index)
        if gpu0_root:
            facts["topology"]["gpus"][0]["host_bridge"] = gpu0_root
        records[name] = _node_records.node_record(node_plan(specs, variables, facts), facts["topology"])
    values, problems = check(specs, "cluster", merged(lab_intent(), changes or {}))
    assert not problems, problems
    return values, _plan_cluster.plan(values, records, skew_rules=SKEW)


def test_device_plugin_is_the_default_and_plans_no_dra(specs):
    values, plan = cluster_plan(specs)
    assert values["gpufabric_k8s_device_allocation"] == "device_plugin"
    assert plan["device_allocation"] == "device_plugin"
    assert plan["dra"] is None
    assert "device allocation" not in plan["summary"]
    kinds = {o["kind"] for objs in plan["network"]["objects"].values() for o in objs}
    assert not kinds & {"DeviceClass", "ResourceClaimTemplate"}


def test_the_same_objects_in_both_modes_besides_the_dra_section(specs):
    _values, before = cluster_plan(specs)
    _values, after = cluster_plan(
        specs, {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
    )
    assert after["network"]["objects"] == before["network"]["objects"]
    assert after["dra"] is not None


def test_dra_plans_classes_and_templates_owned_by_the_instance(specs):
    _values, plan = cluster_plan(
        specs, {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
    )
    section = plan["dra"]
    assert section["drivers"] == {"gpu": "gpu.nvidia.com", "nic": "dra.net"}
    (group,) = section["groups"]
    assert group["nodes"] == ["gpu-node-01", "gpu-node-02"]
    kinds = [o["kind"] for o in section["objects"]]
    assert kinds == ["DeviceClass"] * 2 + ["ResourceClaimTemplate"] * 4
    for obj in section["objects"]:
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "gpufabric.rollout"
        assert labels["gpufabric.io/component"] == "rdma_networks"
        assert labels["gpufabric.io/instance"] == plan["instance"]
    templates = [o for o in section["objects"] if o["kind"] == "ResourceClaimTemplate"]
    assert {t["metadata"]["namespace"] for t in templates} == {plan["network"]["config"]["nad_namespace"]}
    assert "device allocation: DRA, GPUs from gpu.nvidia.com, rail NICs from dra.net" in plan["summary"]
    assert f"  {group['name']}: {group['name']}-full (8 set(s))" in plan["summary"]


def test_a_gpu_its_rail_nic_cannot_reach_refuses_the_plan(specs):
    dra_mode = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
    with pytest.raises(_plan_node.PlanError) as refused:
        cluster_plan(specs, dra_mode, gpu0_root="pci0000:14")
    assert refused.value.problems == [
        "gpufabric_k8s_device_allocation: dra, but node group h200-connectx-7-8r (gpu-node-01): GPU0 (0000:19:00.0, "
        "PCIe root pci0000:14) and its rail NIC mlx5_0 (0000:18:00.0, PCIe root pci0000:15) share no PCIe root, so "
        "resource.kubernetes.io/pcieRoot cannot align them (and the GPU driver publishes no NUMA attribute for a full "
        "GPU); keep device_plugin for this hardware"
    ]
    # The device plugins do not need the roots: the same hardware plans as before.
    assert cluster_plan(specs, gpu0_root="pci0000:14")[1]["dra"] is None


def test_refusals_name_both_sides():
    assert refusals({"gpufabric_k8s_device_allocation": "device_plugin"}) == []
    # Without the gpu_operator role nothing deploys a ClusterPolicy: no GPU refusal.
    assert refusals({"gpufabric_k8s_device_allocation": "dra", "gpufabric_rails": {"nad_type": "macvlan"}}) == []
    both = refusals(
        {
            "gpufabric_k8s_device_allocation": "dra",
            "gpu_operator_chart_version": "v26.7.0",
            "gpu_operator_components": {"device_plugin": True},
            "gpu_operator_extra_values": {"gpuCluster": {"deployCR": True}},
            "gpufabric_rails": {"nad_type": "macvlan", "rails": [{"rail": 0, "nad_type": "sriov"}, {"rail": 1}]},
        }
    )
    assert len(both) == 3
    assert "GPUCluster" in both[0] and "ClusterPolicy (clusterPolicy.deployCR: true)" in both[0]
    assert "gpu.nvidia.com" in both[1] and "device plugin" in both[1]
    assert "nad_type sriov (rail 0)" in both[2] and "dra.net" in both[2]
