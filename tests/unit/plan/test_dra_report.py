"""The rollout report's cluster section (proof/cluster_report.py, roles/rdma_networks/templates/report.j2)
and the plan summary in dra mode: the rail rows name the claim that attaches the rail NIC and none of
the shared-device resources, IP pools or NADs dra mode does not plan; per node group the claim
templates and the GPU -> NIC pairs a claim gets, once. With the device plugins both read as before."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest
from test_dra_in_plan import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.filter.cluster_plan import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.cluster_report import report_text

DRA = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
GROUP = "h200-connectx-7-8r"
ROLE_REPORT = Path(__file__).resolve().parents[3] / "roles" / "rdma_networks" / "templates" / "report.j2"


@pytest.fixture(scope="module")
def plans(specs):
    return cluster_plan(specs)[1], cluster_plan(specs, DRA)[1]


def _rail_lines(text):
    lines = text.splitlines()
    start = lines.index("rails:") + 1
    return lines[start : start + 9]  # the header and eight rails


def test_dra_rail_rows_name_the_claim_and_no_shared_device_resource(plans):
    _before, plan = plans
    text = report_text(plan["network"], plan["dra"])
    header, *rows = _rail_lines(text)
    assert header.split() == ["rail", "subnet", "gateway", "attached", "by", "Pod", "addresses"]
    for rail, row in zip(plan["network"]["rails"], rows):
        assert row.split()[:3] == [rail["name"], rail["subnet"], rail["gateway"]]
        assert "claim (dra.net)" in row and row.endswith("the NIC's own, from its node, 2 nodes, mtu 9000"), row
        assert "/" not in row.split("claim (dra.net)")[1], "no pool capacity: dra mode plans no pool"
    assert "rdma/" not in text, "the shared-device resources are not planned in dra mode"
    assert "(whereabouts)" not in text and "NADs" not in text


def test_dra_lists_each_groups_templates_and_the_pairs_a_claim_gets_once(plans):
    _before, plan = plans
    text = report_text(plan["network"], plan["dra"])
    group = plan["dra"]["groups"][0]
    templates = f"{GROUP}-full (8 set(s)), {GROUP}-1x (1 set(s)), {GROUP}-2x (2 set(s)), {GROUP}-4x (4 set(s))"
    lines = text.splitlines()
    start = lines.index(f"  {GROUP}: {templates}")
    assert lines[start - 1] == "device allocation: DRA, GPUs from gpu.nvidia.com, rail NICs from dra.net"
    assert [ln.strip() for ln in lines[start + 1 : start + 9]] == group["pairs"]
    assert group["pairs"][0] == (
        "GPU0 -> mlx5_0 or mlx5_1 (PCIe root pci0000:15, NUMA 0); root shared by 2 rails: aligned to the root, "
        "not to mlx5_0's switch"
    )
    summary = plan["summary"]
    for pair in group["pairs"]:
        assert summary.count(pair) == 1, pair
    assert "rdma/rail0" not in summary and "claim (dra.net)" in summary


def test_device_plugin_report_reads_as_before(plans):
    plan, _after = plans
    text = report_text(plan["network"])
    assert report_text(plan["network"], None) == text
    header = _rail_lines(text)[0]
    assert header.split() == ["rail", "subnet", "gateway", "resource", "pool", "NADs", "capacity"]
    assert "rdma/rail0" in text and "device allocation" not in text and "claim (" not in text
    assert "device allocation" not in plan["summary"]


def _role_report(plan):
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["gpufabric.rollout.cluster_report"] = FilterModule().filters()["cluster_report"]
    template = env.from_string(ROLE_REPORT.read_text())
    return template.render(gpufabric_plan=plan, __rdma_networks_plan=plan["network"])


def test_the_rdma_networks_report_section_in_both_modes(plans):
    before, after = plans
    old = _role_report(before)
    assert "ipam: nv-ipam-ippool, NAD type: macvlan, pools in nvidia-network-operator, NADs in default" in old
    assert "rdma/rail0" in old and "DRA" not in old
    new = _role_report(after)
    assert "NAD type" not in new and "pools in" not in new and "rdma/" not in new
    assert "rail NICs by DRA claims (gpufabric_k8s_device_allocation: dra): no NADs, IP pools or shared device " in new
    assert "claim templates in default" in new
    for pair in after["dra"]["groups"][0]["pairs"]:
        assert new.count(pair) == 1, pair
