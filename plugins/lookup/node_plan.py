# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU node's plan, computed on the controller from the node's variables (the plan role's last task)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_plan
author:
  - gpufabric.rollout contributors (@gpufabric)
short_description: This GPU node's plan, from its checked variables, facts and package indexes
description:
  - Computes the node's plan, one section per host role, on the controller. The C(gpufabric.rollout.plan) role
    keeps it with M(ansible.builtin.set_fact) in the same task, so that each node costs the controller one task
    less (a worker, a copy of the node's variables and a registered result) than a task of its own.
  - Reads the node's variables, not terms, as the plan role leaves them (C(roles/plan/tasks/main.yml)) -
    the checked variables and package reads of the node check (C(__plan_check_node), the result of
    M(gpufabric.rollout.plan) with O(gpufabric.rollout.plan#module:part=check_node));
    the facts of M(ansible.builtin.setup) and M(gpufabric.rollout.plan_facts); and the run's package index reads
    (C(__plan_indexes)), of which it takes this node's. An index that could not be read (C(plan_index_optional))
    is left out.
  - A plan that the node's hardware and variables do not allow is an error naming the node and every problem; the
    failed task's result carries the problems as C(problems), one per entry, as the plan action's refusals do.
  - With O(report), returns the node's report section instead of its plan - the template rendered by
    P(ansible.builtin.template#lookup) with the plan as C(__plan_node) and no other variable of the node. The
    template lookup deep-copies every variable it is given, and a node's variables hold its whole package list
    and topology.
options:
  report:
    description:
      - A template of the calling role (found as P(ansible.builtin.template#lookup) finds it) to render with the
        node's plan as C(__plan_node); the lookup then returns the rendered text.
    type: str
"""

EXAMPLES = r"""
- name: Keep this node's plan and its report section
  ansible.builtin.set_fact:
    gpufabric_node_plan: "{{ lookup('gpufabric.rollout.node_plan') }}"
    node_report: "{{ lookup('gpufabric.rollout.node_plan', report='node-report.j2') }}"
"""

RETURN = r"""
_raw:
  description: The node's plan (one element), one section per host role; with O(report), the rendered text.
  type: list
  elements: raw
"""

from typing import Any, Dict

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.loader import lookup_loader
from ansible.plugins.lookup import LookupBase

from ansible_collections.gpufabric.rollout.plugins.action import plan as _plan_action
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as _intent
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import index_reads as _index_reads
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node


def node_facts(task_vars: Dict[str, Any]) -> Dict[str, Any]:
    """What the node's plan is computed from, read from the node's variables (facts and results are
    data, never templates, so nothing is templated; passing them as task arguments templated and
    copied the whole package list and topology once more per node): the setup and plan_facts facts,
    and this node's package indexes from the run's reads (tasks/main.yml: the check's index_reads and
    __plan_indexes). An index that could not be read (plan_index_optional) plans without one."""
    ansible = _plan_action.plain(task_vars.get("ansible_facts") or {})
    reads = _plan_action.plain((task_vars.get(_plan_action.NODE_CHECK) or {}).get("index_reads") or [])
    results = (task_vars.get("__plan_indexes") or {}).get("results") or []
    indexes = _index_reads.node_indexes(reads, results)
    facts = {
        "ansible": ansible,
        "topology": ansible.get("gpufabric_topology"),
        "gpudirect": ansible.get("gpufabric_gpudirect"),
        "doca": ansible.get("gpufabric_doca"),
    }
    for name in ("doca", "driver"):
        index = indexes.get(name)
        readable = index is not None and "packages" in index
        facts[f"{name}_index"] = (
            _plan_action.plain({k: index[k] for k in ("url", "packages", "depends") if k in index})
            if readable
            else None
        )
    return facts


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleError("node_plan takes no terms: it reads the node's variables")
        unknown = sorted(set(kwargs) - {"report"})
        if unknown:
            raise AnsibleError(f"node_plan: unknown option(s) {', '.join(unknown)}; the only option is report")
        variables = variables or {}
        host = variables.get("inventory_hostname")
        if _plan_action.NODE_CHECK not in variables:
            raise AnsibleError(
                f"node_plan: {_plan_action.NODE_CHECK} is not defined on {host}: the plan role's node check "
                "(roles/plan/tasks/main.yml) must run first"
            )
        check = variables.get(_plan_action.NODE_CHECK) or {}
        try:
            plan = _plan_node.plan_node(_plan_action.plain(check.get("gpufabric_intent") or {}), node_facts(variables))
        except _intent.IntentError as exc:
            # The task's result takes the problems (AnsibleActionFail contributes its result to the failed
            # task's), as the plan action's refusals carry them: the audit keeps each as a finding.
            raise AnsibleActionFail(
                _plan_action.refusal("node", host, exc.problems), result={"problems": list(exc.problems)}
            ) from None
        report = kwargs.get("report")
        if report:
            return self._report(report, plan, variables)
        return [plan]

    def _report(self, template: str, plan: Dict[str, Any], variables: Dict[str, Any]) -> list:
        """``template`` rendered by the template lookup with the plan as its only variable of the node
        (and the search path, where the lookup finds the role's templates)."""
        only = {"__plan_node": plan}
        for name in ("ansible_search_path", "role_path"):
            if name in variables:
                only[name] = variables[name]
        lookup = lookup_loader.get("ansible.builtin.template", loader=self._loader, templar=self._templar)
        return lookup.run([template], variables=only)
