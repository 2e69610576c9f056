"""The bad-input suite (cases/bad_intent.yml): each case is refused by the plan with a message naming
the variable and the value. The plan runs before any change (playbooks/plan.yml); lab/bad_intent.py
(make lab-test) runs a chosen set of these cases through site.yml on the lab and checks that nothing
changed on the nodes or in the API server."""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

import pytest
import yaml
from conftest import HERE, check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_skew_rules, refusal
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

CASES = yaml.safe_load((HERE / "cases" / "bad_intent.yml").read_text())
SKEW = load_skew_rules(str(HERE.parents[2]))


def merged(base: Dict[str, Any], changes: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in (changes or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def variables_of(case: Dict[str, Any], extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    variables = merged(lab_intent(), case.get("set") or {})
    variables = merged(variables, extra or {})
    variables.update(case.get("replace") or {})
    for name in case.get("unset_vars") or []:
        variables.pop(name, None)
    return variables


def node_plan(specs, variables: Dict[str, Any], facts: Dict[str, Any]) -> Dict[str, Any]:
    values, problems = check(specs, "node", variables)
    assert not problems, problems
    return _plan_node.plan_node(values, facts)


def problems_of(case: Dict[str, Any], specs) -> List[str]:
    stage = case.get("stage", "check")
    if stage == "check":
        return check(specs, case["scope"], variables_of(case))[1]
    if stage == "node":
        facts = merged(node_facts(1), case.get("facts") or {})
        with pytest.raises(_plan_node.PlanError) as refused:
            node_plan(specs, variables_of(case), facts)
        return refused.value.problems
    records: Dict[str, Any] = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        # node_set / node_facts change both nodes, node2 / node2_facts the second one only.
        extra = merged(case.get("node_set") or {}, {"gpufabric_k8s_node_name": name})
        facts = merged(node_facts(index), case.get("node_facts") or {})
        if index == 2:
            extra = merged(extra, case.get("node2") or {})
            facts = merged(facts, case.get("node2_facts") or {})
        variables = merged(lab_intent(), extra)
        plan = node_plan(specs, variables, facts)
        records[name] = _node_records.node_record(plan, facts["topology"])
    if case.get("missing_node"):
        records["gpu-node-02"] = None
    values, problems = check(specs, "cluster", variables_of(case))
    assert not problems, problems
    with pytest.raises(_plan_node.PlanError) as refused:
        _plan_cluster.plan(values, records, stored_discovery=case.get("stored_discovery", True), skew_rules=SKEW)
    return refused.value.problems


def test_the_suite_covers_enough():
    assert len(CASES) >= 60
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids must be unique"
    typos = [c for c in CASES if any("did you mean" in e for e in c["expect"])]
    assert len(typos) >= 15, "typos (unknown keys, variables and choices) must be among the cases"
    scopes = {c["scope"] for c in CASES}
    assert scopes == {"node", "cluster", "upgrade"}


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_is_refused_by_the_plan(case, specs):
    problems = problems_of(case, specs)
    assert problems, f"{case['id']}: nothing was refused"
    wanted = case["expect"]
    assert any(all(text in line for text in wanted) for line in problems), (
        f"{case['id']}: no problem line contains all of {wanted}:\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("scope", ["node", "cluster", "upgrade"])
def test_the_lab_intent_is_valid(scope, specs):
    values, problems = check(specs, scope, lab_intent())
    assert problems == []
    if scope == "node":
        assert values["gpufabric_fabric"]["lossless_priority"] == 3
        assert values["roce_backend"] == "auto", "role defaults are filled in"
        assert values["doca_ofed_repo_release"] == "2.9.1", "templated defaults are rendered"


def test_the_refusal_names_the_plan_in_the_users_terms():
    """The cluster checks run on the controller's host (localhost): they refuse the cluster plan, not a node's."""
    for part in ("check_cluster", "cluster"):
        assert refusal(part, "localhost", ["x: bad"]) == "The cluster plan is refused (1 problem(s)):\n- x: bad"
    assert refusal("check_node", "gpu-node-01", ["a", "b"]).startswith("The plan for node gpu-node-01 is refused (2 ")
    assert refusal("upgrade", "localhost", ["a"]).startswith("The upgrade plan is refused")
