"""The roce filters are thin wrappers: same results as the planner, registered under their names."""

from __future__ import annotations

from pathlib import Path

import yaml

from ansible_collections.gpufabric.rollout.plugins.filter.roce import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils import _qos_intent, _qos_plan

TOPOLOGY = yaml.safe_load((Path(__file__).parent / "cases" / "topology_dgx_subset.yml").read_text())
FABRIC = {"lossless_priority": 3, "data_dscp": 26, "cnp_dscp": 48, "cnp_priority": 6, "roce_tos": 106, "mtu": 9000}


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {
        "roce_plan",
        "roce_intent_errors",
        "roce_rail_summary",
        "roce_rail_consistency",
    }


def test_filters_match_the_planner():
    f = FilterModule().filters()
    plan = f["roce_plan"](FABRIC, {"include_storage": True}, TOPOLOGY, "/lab")
    assert plan == _qos_plan.build_plan(FABRIC, {"include_storage": True}, TOPOLOGY, sysroot="/lab")
    assert f["roce_intent_errors"](dict(FABRIC, mtu=1500), {}, TOPOLOGY) == _qos_intent.validate_intent(
        dict(FABRIC, mtu=1500), {}, TOPOLOGY
    )
    summary = f["roce_rail_summary"](plan)
    assert f["roce_rail_consistency"]({"a": summary, "b": dict(summary, **{"0": dict(summary["0"], mtu=4200)})})


def test_filters_accept_unset_inputs():
    f = FilterModule().filters()
    assert f["roce_plan"](None, None, None)["interfaces"] == []
    assert f["roce_rail_consistency"](None) == []
