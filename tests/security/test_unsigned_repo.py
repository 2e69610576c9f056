"""Finding 5 (part): doca_ofed_gpg_check false silently became apt's [trusted=yes] (dnf gpgcheck=0), so root
installed whatever the repository, or anyone between it and the node, served. Now the plan refuses it
unless doca_ofed_insecure_repo_acknowledged is true, naming both variables, and the plan's summary reports
an acknowledged unsigned repository."""

from __future__ import annotations

import pytest
from storage_support import PLAN, REPO

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster_summary as _cluster_summary
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node


@pytest.fixture(scope="module")
def specs():
    return PLAN.load_specs(str(REPO))


def test_an_unsigned_repository_is_refused_without_the_acknowledgement(specs):
    _plan, problems = PLAN.check(specs, "node", {**PLAN.lab_intent(), "doca_ofed_gpg_check": False})
    lines = [p for p in problems if p.startswith("doca_ofed_gpg_check:")]
    assert lines and "doca_ofed_insecure_repo_acknowledged: true" in lines[0], problems


def test_an_acknowledged_unsigned_repository_is_reported_in_the_summary(specs):
    variables = {**PLAN.lab_intent(), "doca_ofed_gpg_check": False, "doca_ofed_insecure_repo_acknowledged": True}
    values, problems = PLAN.check(specs, "node", variables)
    assert problems == []
    facts = PLAN.node_facts(1)
    plan = _plan_node.plan_node(values, facts)
    assert plan["doca_ofed"], "the lab intent manages DOCA-OFED"
    assert "DOCA repository UNSIGNED" in _cluster_summary.node_summary(plan, facts["topology"])
    signed, _problems = PLAN.check(specs, "node", PLAN.lab_intent())
    assert "UNSIGNED" not in _cluster_summary.node_summary(_plan_node.plan_node(signed, facts), facts["topology"])
