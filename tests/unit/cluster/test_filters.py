"""Filters of plugins/filter/cluster_plan.py as the cluster roles call them."""

from __future__ import annotations

from intent_support import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import FilterModule

F = FilterModule().filters()


def test_render_files_are_stable(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16"}, dgx)
    files = F["k8s_render_files"](plan["objects"]["rdma_networks"])
    assert files[0]["file"] == "ippool-nvidia-network-operator-rail0.yaml"
    assert "networkattachmentdefinition-default-rail0.yaml" in [f["file"] for f in files]


def test_cluster_report_lists_every_rail(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16"}, dgx)
    text = F["cluster_report"](plan)
    assert [r["name"] for r in plan["rails"]] == [f"rail{i}" for i in range(8)]
    for rail in plan["rails"]:
        assert rail["subnet"] in text
