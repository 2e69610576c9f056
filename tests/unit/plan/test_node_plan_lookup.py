"""lookup gpufabric.rollout.node_plan: the node's plan from the node's variables as the plan role leaves
them (the node check's result, the facts, the run's index reads), the same plan as the planner's
from those facts; a refused plan names the node and every problem."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleError
from conftest import check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.action import plan as plan_action
from ansible_collections.gpufabric.rollout.plugins.lookup.node_plan import LookupModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node

HOST = "gpu-node-01"
READ = {"name": "doca", "key": "doca|https://repo.example/doca|deb", "host": HOST}


def _values(specs, **overrides):
    variables = copy.deepcopy(lab_intent())
    variables["gpufabric_k8s_node_name"] = HOST
    variables.update(overrides)
    values, problems = check(specs, "node", variables)
    assert problems == []
    return values


def _variables(values, facts):
    """The node's variables as roles/plan/tasks/main.yml leaves them before its last task."""
    ansible = dict(
        facts["ansible"],
        gpufabric_topology=facts["topology"],
        gpufabric_gpudirect=facts["gpudirect"],
        gpufabric_doca=facts["doca"],
    )
    index = dict(facts["doca_index"], url="https://repo.example/doca", item=READ, changed=False)
    return {
        "inventory_hostname": HOST,
        plan_action.NODE_CHECK: {"gpufabric_intent": values, "index_reads": [READ]},
        "ansible_facts": ansible,
        "__plan_indexes": {"results": [index]},
    }


def test_the_plan_is_the_planners_from_the_same_facts(specs):
    values, facts = _values(specs), node_facts(1)
    (plan,) = LookupModule().run([], variables=_variables(values, facts))
    facts["doca_index"] = dict(facts["doca_index"], url="https://repo.example/doca")
    facts["driver_index"] = None
    assert plan == _plan_node.plan_node(values, facts)
    # the index was read: without it the DOCA part of the plan differs
    assert plan["doca_ofed"] != _plan_node.plan_node(values, dict(facts, doca_index=None))["doca_ofed"]


def test_an_unread_index_plans_without_it(specs):
    values, facts = _values(specs), node_facts(1)
    variables = _variables(values, facts)
    variables["__plan_indexes"] = {"results": [dict(variables["__plan_indexes"]["results"][0], skipped=True)]}
    expected = _plan_node.plan_node(values, dict(facts, doca_index=None, driver_index=None))
    assert LookupModule().run([], variables=variables) == [expected]


def test_a_refused_plan_names_the_node_and_every_problem(specs):
    values, facts = _values(specs), node_facts(1)
    facts["topology"] = dict(facts["topology"], gpus=[])
    with pytest.raises(_plan_node.PlanError) as refused:
        _plan_node.plan_node(values, facts)
    with pytest.raises(AnsibleError) as error:
        LookupModule().run([], variables=_variables(values, facts))
    message = str(error.value)
    assert message.startswith(f"The plan for node {HOST} is refused ({len(refused.value.problems)} problem(s))")
    for problem in refused.value.problems:
        assert problem in message
    # the failed task's result carries them one by one, as the plan action's refusals (the audit reads them)
    assert error.value.result == {"problems": list(refused.value.problems)}


def test_without_the_node_check_it_says_what_must_run_first():
    with pytest.raises(AnsibleError, match=r"__plan_check_node is not defined on gpu-node-01.*node check"):
        LookupModule().run([], variables={"inventory_hostname": HOST})
    with pytest.raises(AnsibleError, match="takes no terms"):
        LookupModule().run(["x"], variables={"inventory_hostname": HOST})
    with pytest.raises(AnsibleError, match=r"unknown option.*reprot; the only option is report"):
        LookupModule().run([], variables={"inventory_hostname": HOST}, reprot="node-report.j2")
