"""The plan: one answer per fact (the ToS byte), records that make sliced and unsliced runs plan the
same cluster objects, and the stored discovery."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster_summary as _cluster_summary
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records


def plan_nodes(specs, intent, nodes=(1, 2)):
    plans = {}
    for index in nodes:
        variables = copy.deepcopy(intent)
        variables["gpufabric_k8s_node_name"] = f"gpu-node-0{index}"
        values, problems = check(specs, "node", variables)
        assert problems == []
        plans[f"gpu-node-0{index}"] = (_plan_node.plan_node(values, node_facts(index)), node_facts(index)["topology"])
    return plans


def cluster_of(specs, intent, plans):
    values, problems = check(specs, "cluster", intent)
    assert problems == []
    records = {host: _node_records.node_record(plan, topo) for host, (plan, topo) in plans.items()}
    return _plan_cluster.plan(values, records)


DSCP_ECN = [(dscp, ecn) for dscp in range(64) for ecn in (True, False)]


@pytest.fixture(scope="module")
def checked(specs):
    """The lab's node and cluster values, checked once (the cases below change the fabric only)."""
    node, problems = check(specs, "node", dict(lab_intent(), gpufabric_k8s_node_name="gpu-node-01"))
    assert problems == []
    cluster, problems = check(specs, "cluster", lab_intent())
    assert problems == []
    return node, cluster


def test_nccl_ib_tc_is_one_value_on_hosts_pods_and_nics(checked):
    """For every valid DSCP and ECN setting: nccl.conf, the NICs and the Pods' ConfigMap agree."""
    node_values, cluster_values = checked
    facts = node_facts(1)
    for dscp, ecn in DSCP_ECN:
        values = copy.deepcopy(node_values)
        fabric = dict(values["gpufabric_fabric"], data_dscp=dscp, ecn=ecn, roce_tos=None)
        if dscp == fabric["cnp_dscp"]:
            fabric["cnp_dscp"] = 46
        values["gpufabric_fabric"] = fabric
        plan = _plan_node.plan_node(values, facts)
        expected = str((dscp << 2) | (2 if ecn else 0))
        assert plan["nccl"]["entries"]["NCCL_IB_TC"] == expected, (dscp, ecn)
        assert {str(i["traffic_class"]) for i in plan["roce"]["interfaces"]} == {expected}, (dscp, ecn)
        record = _node_records.node_record(plan, facts["topology"])
        cluster = _plan_cluster.plan(cluster_values, {"gpu-node-01": record})
        maps = [
            o
            for o in cluster["network"]["objects"]["rdma_networks"]
            if o["kind"] == "ConfigMap" and "NCCL_IB_TC" in o.get("data", {})
        ]
        assert maps and {m["data"]["NCCL_IB_TC"] for m in maps} == {expected}, (dscp, ecn)


def test_a_sliced_run_plans_the_same_cluster_objects(specs, tmp_path):
    intent = lab_intent()
    plans = plan_nodes(specs, intent)
    whole = cluster_of(specs, intent, plans)
    store = _node_records.DiscoveryStore(str(tmp_path / "discovery"))
    # Slice 1 ran gpu-node-01 only, after an earlier run stored gpu-node-02.
    plan2, topo2 = plans["gpu-node-02"]
    assert store.save("gpu-node-02", _node_records.node_record(plan2, topo2))
    values, problems = check(specs, "cluster", intent)
    assert problems == []
    plan1, topo1 = plans["gpu-node-01"]
    records = {"gpu-node-01": _node_records.node_record(plan1, topo1), "gpu-node-02": store.load("gpu-node-02")}
    sliced = _plan_cluster.plan(values, records)
    assert sliced["network"]["objects"] == whole["network"]["objects"]
    assert sliced["network"]["node_labels"] == whole["network"]["node_labels"]


def test_the_store_rewrites_a_record_only_when_it_changes(specs, tmp_path):
    plans = plan_nodes(specs, lab_intent(), nodes=(1,))
    plan, topo = plans["gpu-node-01"]
    store = _node_records.DiscoveryStore(str(tmp_path))
    record = _node_records.node_record(plan, topo)
    assert store.save("gpu-node-01", record) is True
    assert store.save("gpu-node-01", record) is False
    changed = dict(record, nccl_version="2.28.3")
    assert store.save("gpu-node-01", changed) is True
    assert store.load("gpu-node-01")["nccl_version"] == "2.28.3"
    (tmp_path / "gpu-node-01.json").write_text("{not json")
    assert store.load("gpu-node-01") is None, "an unreadable record is treated as missing, not trusted"


def test_the_plan_file_and_summary(specs, tmp_path):
    intent = lab_intent()
    cluster = cluster_of(specs, intent, plan_nodes(specs, intent))
    files = _cluster_summary.write_plan(str(tmp_path), cluster)
    assert sorted(p.split("/")[-1] for p in files) == ["plan.json", "summary.txt"]
    assert json.loads((tmp_path / "plan.json").read_text())["fabric"]["roce_tos"] == 106
    summary = (tmp_path / "summary.txt").read_text()
    assert "data DSCP 26 -> ToS 106" in summary
    assert "gpu-node-01: Debian 12.11" in summary
    assert "GPUDirect RDMA dmabuf" in summary


def test_record_keeps_only_what_the_cluster_plan_reads(specs):
    plan, topo = plan_nodes(specs, lab_intent(), nodes=(1,))["gpu-node-01"]
    record = _node_records.node_record(plan, topo)
    assert len(json.dumps(record)) < len(json.dumps(topo)) / 2
    assert record["topology"]["rails"] and record["topology"]["nics"][0]["ports"]
