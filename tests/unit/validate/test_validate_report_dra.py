"""The validate report in dra mode (gpufabric_k8s_device_allocation: dra): its text and HTML forms list,
after the summary, each node group's claim templates and the GPU -> NIC pairs a claim gets (the plan's
dra section, plan/dra.py summary_lines), once; with the device plugins neither form has them. The
validate_report module takes the section (option ``dra``) and the role passes the plan's."""

from __future__ import annotations

import html

import yaml
from module_support import run_module
from test_nccl_jobs import cluster_plan
from validate_support import REPO

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _plan_dra
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _validate_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _report_html
from ansible_collections.gpufabric.rollout.plugins.modules import validate_report as _module

META = {"title": "lab validation", "generated": "2026-12-01 10:00 UTC"}
DRA = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
TITLE = "Device allocation (gpufabric_k8s_device_allocation: dra):"


def _checks():
    return [
        _gates._ratio_check("gds", "gpu-node-01", "/fs", "gdsio read", 45.0, 50.0, 0.8, "GB/s"),
        _gates._ratio_check("rdma", "gpu-node-02", "mlx5_3", "rail 3 host memory", 231.0, 400.0, 0.9, "Gb/s"),
    ]


def _section():
    return cluster_plan(**DRA)["dra"]


def test_text_lists_the_pairs_after_the_summary_and_before_the_failures():
    section = _section()
    allocation = _plan_dra.summary_lines(section)
    text = _validate_report.render_text(_checks(), dict(META, allocation=allocation))
    lines = text.splitlines()
    start = lines.index(TITLE)
    assert lines.index("Summary by layer and node:") < start < lines.index("Failing checks (1):")
    assert lines[start + 1 : start + 1 + len(allocation)] == ["  " + line for line in allocation]
    group = section["groups"][0]
    assert lines[start + 1] == "  device allocation: DRA, GPUs from gpu.nvidia.com, rail NICs from dra.net"
    assert lines[start + 2].startswith(f"    {group['name']}: {group['name']}-full (8 set(s))")
    for pair in group["pairs"]:
        assert text.count(pair) == 1, pair
    assert text.index(TITLE) < text.index(_validate_report.DETAILS_MARK)


def test_html_has_the_pairs_escaped_in_their_own_section():
    section = _section()
    allocation = _plan_dra.summary_lines(section)
    page = _report_html.render_html(_checks(), [], dict(META, allocation=allocation))
    assert '<section id="device-allocation"><h2>Device allocation (gpufabric_k8s_device_allocation: dra)</h2>' in page
    for pair in section["groups"][0]["pairs"]:
        assert page.count(html.escape(pair)) == 1, pair
    assert "GPU0 -&gt; mlx5_0" in page and "GPU0 -> mlx5_0" not in page
    assert page.index('id="device-allocation"') < page.index("<details")


def test_device_plugin_reports_have_no_allocation_section():
    text = _validate_report.render_text(_checks(), META)
    assert (
        "Device allocation" not in text and _validate_report.render_text(_checks(), dict(META, allocation=[])) == text
    )
    page = _report_html.render_html(_checks(), [], META)
    assert "device-allocation" not in page


def test_the_module_renders_the_section_from_the_plans_dra_section(tmp_path, monkeypatch, capsys):
    section = _section()
    args = {
        "topology": {},
        "checks": [],
        "not_run": [],
        "plots": False,
        "text_path": str(tmp_path / "report.txt"),
        "html_path": str(tmp_path / "report.html"),
    }
    rc, out = run_module(_module, dict(args, dra=section), monkeypatch, capsys)
    assert rc == 0, out
    for path in ("report.txt", "report.html"):
        body = (tmp_path / path).read_text()
        assert "Device allocation (gpufabric_k8s_device_allocation: dra)" in body, path
    assert section["groups"][0]["pairs"][0] in out["text"]
    rc, out = run_module(_module, dict(args, dra=None), monkeypatch, capsys)
    assert rc == 0 and "Device allocation" not in out["text"]


def test_the_role_passes_the_plans_dra_section():
    tasks = yaml.safe_load((REPO / "roles/validate/tasks/report.yml").read_text())
    report = next(t for t in tasks if "gpufabric.rollout.validate_report" in t)
    assert report["gpufabric.rollout.validate_report"]["dra"] == "{{ gpufabric_plan.dra | default(none) }}"
