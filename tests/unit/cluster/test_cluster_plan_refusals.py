"""Every refusal of the cluster planner shows the rail (or node group) and the numbers (cases/refusals.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from intent_support import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "refusals.yml").read_text())


def _intent(case, facts):
    intent = dict(case.get("intent") or {})
    overrides = {k[len("rails_") :]: v for k, v in case.items() if k.startswith("rails_")}
    if overrides and "rails" not in intent:
        indexes = sorted({n["rail"] for f in facts.values() for n in f["nics"] if n.get("rail") is not None})
        rails = []
        for idx in indexes:
            rail = {"rail": idx}
            for key, per_rail in overrides.items():
                if idx in per_rail:
                    rail[key] = per_rail[idx]
            rails.append(rail)
        intent["rails"] = rails
    return intent


def _mutate(facts, mutations):
    for m in mutations or []:
        node = facts[m["node"]]
        nic = next(n for n in node["nics"] if n.get("rail") == m["rail"])
        if m.get("remove"):
            node["nics"].remove(nic)
            node["rails"] = [r for r in node["rails"] if r["rail"] != m["rail"]]
        if "mtu" in m:
            for port in nic["ports"]:
                port["mtu"] = m["mtu"]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_refusal_names_rail_and_numbers(case, dgx, mixed):
    facts = dgx if case["cluster"] == "dgx" else mixed
    _mutate(facts, case.get("facts"))
    with pytest.raises(ClusterPlanError) as err:
        cluster_plan(_intent(case, facts), facts, case.get("cidrs"), case.get("fabric"))
    assert str(err.value) == case["message"]


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.get("facts")], ids=[c["id"] + "-unmutated" for c in CASES if c.get("facts")]
)
def test_same_intent_plans_without_the_fault(case, dgx):
    """The refusal comes from the fault injected into the facts, not from the intent itself."""
    plan = cluster_plan(_intent(case, dgx), dgx, case.get("cidrs"))
    assert len(plan["rails"]) == 8
