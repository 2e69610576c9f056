"""The leaves' agreement as validate checks (module_utils/proof/switch_qos.py): a leaf that agrees
is one passing check; each disagreement of a real agreement result (the fixtures' leaves with an
MTU lowered on one NVUE port and SONiC's DSCP map changed) is one failing check naming the leaf,
its ports, the nodes on them, the setting and both values; a leaf that was not read fails with the
reason. The checks reach the validate report's text like any other."""

from __future__ import annotations

import copy
import json

from support import FIXTURES, fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report, switch_qos
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import agreement, qos_plan

NVUE = json.loads((FIXTURES / "nvue-leaf-a.json").read_text())
SONIC = json.loads((FIXTURES / "sonic-leaf-b-config_db.json").read_text())


def result(nvue=NVUE, sonic=SONIC):
    return agreement.check(qos_plan.plan(fabric(), switches()), {"leaf-a": nvue, "leaf-b": sonic})


def test_leaves_that_agree_are_one_passing_check_each():
    checks = switch_qos.checks(result())
    assert [(c["category"], c["node"], c["subject"], c["passed"]) for c in checks] == [
        ("switches", "leaf-a", "leaf-a", True),
        ("switches", "leaf-b", "leaf-b", True),
    ]


def test_each_disagreement_is_a_failing_check_naming_leaf_ports_nodes_setting_and_both_values():
    nvue = copy.deepcopy(NVUE)
    nvue[1]["set"]["interface"]["swp9"] = {"type": "swp", "link": {"mtu": 1500}}
    sonic = copy.deepcopy(SONIC)
    for table in sonic["DSCP_TO_TC_MAP"].values():
        table["26"] = "1"
    agreed = result(nvue, sonic)
    assert not agreed["ok"] and len(agreed["findings"]) >= 2
    checks = switch_qos.checks(agreed)
    failing = [c for c in checks if not c["passed"]]
    assert len(failing) == len(agreed["findings"]) and not [c for c in checks if c["passed"]]
    mtu = next(c for c in failing if c["node"] == "leaf-a")
    assert mtu["subject"] == "leaf-a swp9" and mtu["measured"] == "1500" and ">= 9000" in mtu["expected"]
    assert mtu["detail"] == "ports facing gpu-node-01"
    dscp = next(c for c in failing if c["node"] == "leaf-b")
    assert "26" in dscp["name"] and dscp["subject"].startswith("leaf-b Ethernet")
    text = report.render_text(checks, {"generated": "now"})
    assert "  Switch QoS agreement" in text and "Failing checks (2):" in text, text
    assert any(line.startswith("  FAIL switches leaf-a leaf-a swp9: ") for line in text.splitlines()), text


def test_a_leaf_that_was_not_read_fails_with_the_reason():
    checks = switch_qos.checks(
        {"findings": [], "checked": ["leaf-a"], "missing": ["leaf-b: not read: no export in the directory"]}
    )
    assert [c["passed"] for c in checks] == [True, False]
    assert checks[1]["node"] == "leaf-b" and checks[1]["measured"] == "not read: not read: no export in the directory"
