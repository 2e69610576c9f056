"""gpufabric_k8s_device_allocation in the cluster plan: device_plugin (the default) leaves every object
as it was; dra adds the DRA section, owned like the rails' objects; the mixes that cannot coexist
are refused before any change (the bad-input suite has their messages)."""

from __future__ import annotations

import json
from pathlib import Path

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


def _sections(plan):
    keys = ("objects", "crds", "namespaces", "rails", "nccl", "node_labels")
    return {
        "network": {k: plan["network"][k] for k in keys},
        "gpu_operator": plan["gpu_operator"],
        "storage": plan["storage"],
        "dra": plan["dra"],
    }


def test_device_plugin_plans_exactly_what_the_release_before_dra_applied_did(specs):
    """fixtures/device_plugin_plan.json: the previous release's plan of the lab fixtures (README.md)."""
    _values, plan = cluster_plan(specs)
    before = json.loads((Path(__file__).parent / "fixtures" / "device_plugin_plan.json").read_text())
    assert json.loads(json.dumps(_sections(plan))) == before


def test_dra_plans_no_rail_nads_pools_or_shared_device_plugin_and_keeps_the_rest(specs):
    """dra.net moves the rail NIC into the Pod: nothing else may attach it (plan/dra.py)."""
    _values, before = cluster_plan(specs)
    _values, after = cluster_plan(
        specs, {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
    )
    dropped = {"NetworkAttachmentDefinition", "IPPool", "CIDRPool", "NicNodePolicy"}
    kinds = {o["kind"] for objs in before["network"]["objects"].values() for o in objs}
    assert {"NetworkAttachmentDefinition", "IPPool"} <= kinds  # the lab's rails: macvlan NADs, nv-ipam pools
    for part, objs in before["network"]["objects"].items():
        kept = [o for o in objs if o["kind"] not in dropped]
        for obj in kept:
            if obj["kind"] == "NicClusterPolicy":
                assert "rdmaSharedDevicePlugin" in obj["spec"]
                obj["spec"] = {k: v for k, v in obj["spec"].items() if k != "rdmaSharedDevicePlugin"}
        assert after["network"]["objects"][part] == kept, part
    assert [o["kind"] for o in after["network"]["objects"]["rdma_networks"]] == ["ConfigMap"]
    assert after["network"]["crds"]["rdma_networks"] == []
    for key in ("rails", "nccl", "node_labels", "node_label_owned", "config"):
        assert after["network"][key] == before["network"][key], key


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
    # Without the gpu_operator role nothing deploys a device plugin: no GPU refusal.
    assert refusals({"gpufabric_k8s_device_allocation": "dra", "gpufabric_rails": {"nad_type": "macvlan"}}) == []
    both = refusals(
        {
            "gpufabric_k8s_device_allocation": "dra",
            "gpu_operator_chart_version": "v26.7.0",
            "gpu_operator_components": {"device_plugin": True},
            "gpufabric_rails": {"nad_type": "macvlan", "rails": [{"rail": 0, "nad_type": "sriov"}, {"rail": 1}]},
        }
    )
    assert len(both) == 2
    assert "gpu.nvidia.com" in both[0] and "device plugin" in both[0]
    assert "nad_type sriov (rail 0)" in both[1] and "dra.net" in both[1]


def test_a_rail_vlan_of_the_intent_is_refused_with_dra():
    """A rail's intent vlan tags the NADs' master netdev; dra plans no NAD and moves the untagged port."""
    (message,) = refusals(
        {
            "gpufabric_k8s_device_allocation": "dra",
            "gpufabric_rails": {"nad_type": "macvlan", "rails": [{"rail": 0, "vlan": 300}, {"rail": 1}]},
        }
    )
    assert message.startswith("gpufabric_k8s_device_allocation: dra hands a Pod the rail NIC's port itself")
    assert "gpufabric_rails.rails[].vlan (rail 0: vlan 300)" in message
    assert (
        refusals(
            {
                "gpufabric_k8s_device_allocation": "device_plugin",
                "gpufabric_rails": {"rails": [{"rail": 0, "vlan": 300}]},
            }
        )
        == []
    )
