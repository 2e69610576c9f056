"""ACS redirect on GPU-NIC paths in the node plan and its summary line: every bridge with the paths
through it, and what the run does (pcie_acs clears it when roce_disable_acs_redirect is true, else
a warning of the peer-to-peer loss). Node 1 of the lab's 8-GPU fixture has ACS redirect left on the
top switch ports of its first PCIe complex (lab/snapshots/layouts/dgx-h200-8x8.json)."""

from __future__ import annotations

import copy

import pytest
from conftest import check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records


def planned(specs, clear):
    variables = dict(copy.deepcopy(lab_intent()), gpufabric_k8s_node_name="gpu-node-01")
    variables["roce_disable_acs_redirect"] = clear
    values, problems = check(specs, "node", variables)
    assert problems == []
    facts = node_facts(1)
    plan = _plan_node.plan_node(values, facts)
    return plan, _node_records.node_record(plan, facts["topology"])["summary"]


@pytest.mark.parametrize("clear", [False, True])
def test_every_acs_redirect_path_is_in_the_plan_and_summary(specs, clear):
    plan, summary = planned(specs, clear)
    acs = plan["roce"]["acs_redirect"]
    assert [(a["bridge"], a["paths"]) for a in acs] == [
        ("0000:17:00.0", ["GPU0-mlx5_0", "GPU1-mlx5_0"]),
        ("0000:17:01.0", ["GPU0-mlx5_0", "GPU0-mlx5_1"]),
    ]
    for a in acs:
        line = f"ACS redirect on {a['bridge']} ({', '.join(a['paths'])}): "
        assert line in summary
        if clear:
            assert "cleared by pcie_acs" in a["action"]
        else:
            assert "P2P lost" in a["action"] and "roce_disable_acs_redirect" in a["action"]
        assert a["action"] in summary
