"""The cabling check as validate checks (plugins/module_utils/proof/cabling.py and the
validate_cabling filter): one check per rail NIC of a node's plan, named in the text report, the
HTML report and the JUnit with node, NIC, expected and found switch and port; a node without an
LLDP source fails every rail NIC with the reason."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET

import pytest
from support import FIXTURES, REPO, fabric, switches

from ansible_collections.gpufabric.rollout.plugins.filter.validate import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import cabling
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _report_html
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan

NODE1 = json.loads((FIXTURES / "lldpctl-gpu-node-01.json").read_text())
NODE2 = json.loads((FIXTURES / "lldpctl-gpu-node-02.json0.json").read_text())
TOPOLOGY = REPO / "tests" / "unit" / "cluster" / "fixtures" / "topology"
META = {"title": "lab validation", "generated": "2026-12-06 12:00 UTC"}


def interfaces(node: int):
    """The node plan's roce.interfaces as the plan writes them (rail NICs, plus a storage NIC without a rail)."""
    topology = json.loads((TOPOLOGY / f"dgx-h200-8x8.node{node}.json").read_text())
    out = [
        {"netdev": r["netdev"], "rdma_device": r["nic"], "rail": r["rail"], "role": "compute"}
        for r in topology["rails"]
    ]
    return [*out, {"netdev": "enp41s0np0", "rdma_device": "mlx5_8", "rail": None, "role": "storage"}]


def leaves():
    return qos_plan.plan(fabric(), switches())


def collected(export):
    return {"changed": False, "source": "lldpd", "reason": "", "lldp": export, "neighbours": {}}


def test_a_well_cabled_node_passes_one_check_per_rail_nic():
    checks = cabling.checks("gpu-node-01", leaves(), interfaces(1), collected(NODE1))
    assert checks[0]["subject"] == "mlx5_0 (enp24s0np0, rail 0)"
    assert len(checks) == 8 and all(c["passed"] for c in checks)
    assert {c["category"] for c in checks} == {"cabling"}
    assert checks[0]["measured"] == checks[0]["expected"] == "leaf-a swp1"


def test_the_miscabled_and_the_silent_nic_fail_named_in_every_report():
    checks = cabling.checks("gpu-node-01", leaves(), interfaces(1), collected(NODE1))
    checks += cabling.checks("gpu-node-02", leaves(), interfaces(2), collected(NODE2))
    failed = [c for c in checks if not c["passed"]]
    assert [(c["node"], c["subject"]) for c in failed] == [
        ("gpu-node-02", "mlx5_6 (enp159s0np0, rail 5)"),
        ("gpu-node-02", "mlx5_9 (enp193s0np0, rail 7)"),
    ]
    line = (
        "FAIL cabling gpu-node-02 mlx5_6 (enp159s0np0, rail 5): LLDP neighbour = leaf-b Ethernet64 "
        "(expected leaf-b Ethernet36)"
    )
    text = _report.render_text(checks, META)
    assert line in text and "Cabling by LLDP gpu-node-02 (6/8 passed)" in text
    assert "no LLDP neighbour (expected leaf-b Ethernet100)" in text
    junit = ET.fromstring(_report.render_junit(checks, META))
    suite = next(s for s in junit if s.get("name") == "validate.cabling")
    assert (suite.get("tests"), suite.get("failures")) == ("16", "2")
    assert next(f.get("message") for f in suite.iter("failure")) == line
    html = _report_html.render_html(checks, [], META)
    assert "leaf-b Ethernet64" in html and "mlx5_6 (enp159s0np0, rail 5)" in html


@pytest.mark.parametrize(
    "result, reason",
    [
        (
            {"source": "none", "reason": "lldpctl not found: install and start lldpd on the GPU node", "lldp": None},
            "lldpctl not found: install and start lldpd on the GPU node",
        ),
        ({"failed": True, "msg": "lldpctl -f json printed no JSON (x)"}, "lldpctl -f json printed no JSON (x)"),
    ],
)
def test_no_lldp_source_fails_every_rail_nic_with_the_reason(result, reason):
    checks = cabling.checks("gpu-node-01", leaves(), interfaces(1), result)
    assert len(checks) == 8 and not any(c["passed"] for c in checks)
    assert {c["measured"] for c in checks} == {f"no LLDP source ({reason})"}


def test_unreadable_output_is_one_failing_check_for_the_node():
    (check,) = cabling.checks("gpu-node-01", leaves(), interfaces(1), collected({"neighbours": []}))
    assert (check["passed"], check["subject"]) == (False, "lldpctl")
    assert check["measured"].startswith("unreadable LLDP output")


def test_the_filter_takes_the_plan_and_the_module_result():
    flt = FilterModule().filters()["validate_cabling"]
    miscabled = copy.deepcopy(NODE1)
    for item in miscabled["lldp"]["interface"]:
        if "enp24s0np0" in item:
            item["enp24s0np0"]["port"]["id"]["value"] = item["enp24s0np0"]["port"]["descr"] = "swp2"
    checks = flt(leaves(), "gpu-node-01", interfaces(1), collected(miscabled))
    assert [(c["subject"], c["measured"]) for c in checks if not c["passed"]] == [
        ("mlx5_0 (enp24s0np0, rail 0)", "leaf-a swp2")
    ]


def test_a_neighbours_name_is_text_in_the_html_report():
    """The system name comes from whatever sends LLDP on the port: it is escaped, never markup."""
    hostile = copy.deepcopy(NODE1)
    for item in hostile["lldp"]["interface"]:
        if "enp24s0np0" in item:
            item["enp24s0np0"]["chassis"] = {"<img src=x onerror=alert(1)>": {"id": {"type": "mac", "value": "x"}}}
    checks = cabling.checks("gpu-node-01", leaves(), interfaces(1), collected(hostile))
    html = _report_html.render_html(checks, [], META)
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
