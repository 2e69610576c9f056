"""Filters of plugins/filter/cluster_plan.py as playbooks call them."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import FilterModule

F = FilterModule().filters()


def test_cluster_nodes_uses_k8s_node_name_and_facts(dgx):
    hostvars = {h: {"ansible_facts": {"gpufabric_topology": f}} for h, f in dgx.items()}
    hostvars["gpu-node-2"]["gpufabric_k8s_node_name"] = "node-b"
    nodes = F["cluster_nodes"](hostvars, sorted(dgx))
    assert sorted(nodes) == sorted([h for h in dgx if h != "gpu-node-2"] + ["node-b"])
    assert nodes["node-b"] is dgx["gpu-node-2"]


def test_cluster_nodes_refuses_hosts_without_facts(dgx):
    hostvars = {"a": {"ansible_facts": {}}, "b": {"ansible_facts": {"gpufabric_topology": dgx["gpu-node-1"]}}}
    with pytest.raises(AnsibleFilterError, match="no gpufabric_topology facts for a"):
        F["cluster_nodes"](hostvars, ["a", "b"])


def test_cluster_plan_filter_wraps_refusals(dgx):
    with pytest.raises(AnsibleFilterError, match=r"cluster plan refused: rail rail0: pool 10.1.0.0/28 is too small"):
        F["cluster_plan"]({"supernet": "10.1.0.0/24", "rail_prefix": 28}, dgx, {}, {"mtu": 9000})


def test_render_files_are_stable(dgx):
    plan = F["cluster_plan"]({"supernet": "10.200.0.0/16"}, dgx, {}, {"mtu": 9000})
    files = F["k8s_render_files"](plan["objects"]["rdma_networks"])
    assert files[0]["file"] == "ippool-nvidia-network-operator-rail0.yaml"
    assert "networkattachmentdefinition-default-rail0.yaml" in [f["file"] for f in files]
