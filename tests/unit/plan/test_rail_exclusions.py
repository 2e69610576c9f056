"""A GPU-local NIC that discovery left out of the rails (``rails_excluded``: port down, no RoCE v2
IPv4 GID, slower link) is refused by the cluster plan unless gpufabric_rails.min_rails allows the
rails that remain; allowed, the summary names what was left out. The discovery side is in
tests/unit/topology/test_rail_pool.py; here node 1 of the lab's discovery fixtures gets the shape
it produces for a down NIC: GPU5's NIC excluded, GPU5 on GPU4's rail."""

from __future__ import annotations

import copy

import pytest
from conftest import check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError


def with_down_nic(topology):
    topo = copy.deepcopy(topology)
    rails = {r["gpu"]: r for r in topo["rails"]}
    dead = dict(rails["GPU5"])
    rails["GPU5"].update({k: rails["GPU4"][k] for k in ("rail", "nic", "nic_bdf", "netdev")})
    for nic in topo["nics"]:
        if nic["rdma_device"] == dead["nic"]:
            nic["role"], nic["rail"] = "other", None
    topo["rails_excluded"] = [
        {"nic": dead["nic"], "bdf": dead["nic_bdf"], "state": f"{dead['nic']}/1 port is DOWN / Disabled",
         "gpus": ["GPU5"]}
    ]  # fmt: skip
    return topo, dead["nic"]


def cluster(specs, topo, **rails):
    node_vars = dict(copy.deepcopy(lab_intent()), gpufabric_k8s_node_name="gpu-node-01")
    values, problems = check(specs, "node", node_vars)
    assert problems == []
    facts = dict(node_facts(1), topology=topo)
    record = _node_records.node_record(_plan_node.plan_node(values, facts), topo)
    intent = copy.deepcopy(lab_intent())
    intent["gpufabric_rails"] = dict(intent.get("gpufabric_rails") or {}, **rails)
    cvalues, problems = check(specs, "cluster", intent)
    assert problems == []
    return record, _plan_cluster.plan(cvalues, {"gpu-node-01": record})


def test_a_left_out_rail_nic_is_refused_naming_nic_state_and_gpu(specs):
    topo, dead = with_down_nic(node_facts(1)["topology"])
    with pytest.raises(PlanError) as err:
        cluster(specs, topo)
    (problem,) = [p for p in err.value.problems if "min_rails" in p]
    assert dead in problem and "DOWN" in problem and "GPU5" in problem
    assert "gpufabric_rails.min_rails" in problem


def test_min_rails_allows_fewer_rails_and_the_summary_says_so(specs):
    topo, dead = with_down_nic(node_facts(1)["topology"])
    left = len({r["nic"] for r in topo["rails"]})
    record, result = cluster(specs, topo, min_rails=left)
    assert f"{left} rails" in record["summary"]
    assert f"not a rail: {dead}" in record["summary"]
    assert result["rail_notes"] and dead in result["rail_notes"][0]
    assert f"rails: gpu-node-01: {left} rail(s), left out {dead}" in result["summary"]


def test_min_rails_above_what_remains_is_refused(specs):
    topo, dead = with_down_nic(node_facts(1)["topology"])
    left = len({r["nic"] for r in topo["rails"]})
    with pytest.raises(PlanError) as err:
        cluster(specs, topo, min_rails=left + 1)
    assert any(f"at most {left}" in p and dead in p for p in err.value.problems)


def test_min_rails_out_of_range_is_refused(specs):
    intent = copy.deepcopy(lab_intent())
    intent["gpufabric_rails"] = dict(intent.get("gpufabric_rails") or {}, min_rails=0)
    _values, problems = check(specs, "cluster", intent)
    assert any("gpufabric_rails.min_rails" in p and "1-64" in p for p in problems)
