"""gpufabric_switches in the cluster check: the documented example is valid and gets its defaults;
the bad shapes are in cases/bad_intent.yml (ids switch-*)."""

from __future__ import annotations

import yaml
from conftest import REPO, check, lab_intent, lab_switches, node_facts
from test_bad_intent import SKEW, node_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

EXAMPLE = yaml.safe_load((REPO / "tests" / "unit" / "switch" / "fixtures" / "switches.yml").read_text())


def test_the_example_switch_intent_is_valid_and_gets_its_defaults(specs):
    variables = dict(lab_intent())
    variables["gpufabric_rails"] = dict(variables["gpufabric_rails"], **EXAMPLE["gpufabric_rails"])
    variables["gpufabric_switches"] = EXAMPLE["gpufabric_switches"]
    values, problems = check(specs, "cluster", variables)
    assert problems == []
    switches = values["gpufabric_switches"]
    assert switches["mtu"] == 9216
    assert switches["ecn"] == {"min_threshold": 150000, "max_threshold": 1500000, "probability": 100}
    assert [leaf["os"] for leaf in switches["leaves"]] == ["nvue", "sonic"]


def test_discovered_rails_are_not_checked_against_the_leaves_here(specs):
    """Without gpufabric_rails.rails the rails come from discovery; the intent check cannot know them."""
    variables = dict(lab_intent())
    variables["gpufabric_switches"] = {
        "leaves": [{"name": "leaf-a", "os": "nvue", "rails": [{"rail": 9, "ports": "swp1"}]}]
    }
    assert check(specs, "cluster", variables)[1] == []


def test_without_switches_nothing_is_required(specs):
    values, problems = check(specs, "cluster", lab_intent())
    assert problems == []
    assert "gpufabric_switches" not in values or not (values["gpufabric_switches"] or {}).get("leaves")


def test_the_cluster_plan_carries_the_leaves_and_their_files(specs):
    """The example on the lab's two nodes: the plan has every leaf's QoS and the review files."""
    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        facts = node_facts(index)
        plan = node_plan(specs, dict(lab_intent(), gpufabric_k8s_node_name=name), facts)
        records[name] = _node_records.node_record(plan, facts["topology"])
    variables = dict(lab_intent())
    variables["gpufabric_rails"] = dict(variables["gpufabric_rails"], **EXAMPLE["gpufabric_rails"])
    variables["gpufabric_switches"] = EXAMPLE["gpufabric_switches"]
    values, problems = check(specs, "cluster", variables)
    assert problems == []
    result = _plan_cluster.plan(values, records, skew_rules=SKEW)
    switches = result["switches"]
    assert sorted(switches["leaves"]) == ["leaf-a", "leaf-b"]
    assert switches["leaves"]["leaf-a"]["intent"]["host_mtu"] == 9000
    assert "switch leaf-b (sonic): rails 4, 5, 6, 7" in result["summary"]
    assert _plan_cluster.plan(check(specs, "cluster", lab_intent())[0], records, skew_rules=SKEW)["switches"] is None


def test_the_switch_api_password_is_checked_then_masked(specs):
    """Apply mode with its credentials is valid; the checked intent the plan returns masks the password."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import switch_rules as _switch_rules

    variables = dict(lab_intent(), gpufabric_switch_api_user="cumulus", gpufabric_switch_api_password="s3cret")
    variables["gpufabric_rails"] = dict(variables["gpufabric_rails"], **EXAMPLE["gpufabric_rails"])
    nvue_only = [leaf for leaf in EXAMPLE["gpufabric_switches"]["leaves"] if leaf["os"] == "nvue"]
    rails = [{"rail": r["rail"]} for leaf in nvue_only for r in leaf["rails"]]
    variables["gpufabric_rails"]["rails"] = rails
    variables["gpufabric_switches"] = {"mode": "apply", "leaves": nvue_only}
    values, problems = check(specs, "cluster", variables)
    assert problems == []
    assert values["gpufabric_switch_api_validate_certs"] is True
    masked = _switch_rules.mask_secrets(values)
    assert masked["gpufabric_switch_api_password"] == "********"
    assert "s3cret" not in repr(masked) and values["gpufabric_switch_api_password"] == "s3cret"


def test_the_lab_inventorys_leaves_are_planned_for_its_two_nodes(specs):
    """inventory/lab/group_vars/all/switches.yml on the lab's nodes: valid, every rail on a leaf, and
    the n-th port of each rail's range faces the n-th node (what the lab's lldpctl stand-in reports)."""
    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        facts = node_facts(index)
        plan = node_plan(specs, dict(lab_intent(), gpufabric_k8s_node_name=name), facts)
        records[name] = _node_records.node_record(plan, facts["topology"])
    values, problems = check(specs, "cluster", dict(lab_intent(), gpufabric_switches=lab_switches()))
    assert problems == []
    leaves = _plan_cluster.plan(values, records, skew_rules=SKEW)["switches"]["leaves"]
    assert {leaf: plan["os"] for leaf, plan in leaves.items()} == {"leaf-a": "nvue", "leaf-b": "sonic"}
    faced = {
        (p["node"], p["rail"]): (leaf, port)
        for leaf, plan in leaves.items()
        for port, p in plan["ports"].items()
        if p["node"]
    }
    assert len(faced) == 16
    assert faced[("gpu-node-01", 0)] == ("leaf-a", "swp1") and faced[("gpu-node-02", 5)] == ("leaf-b", "Ethernet68")
