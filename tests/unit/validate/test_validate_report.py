"""The report: text, JUnit and one self-contained HTML whose plots a headless Chromium loads."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from browser import run_script

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import hardware_checks as _hardware_checks
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import plots as _plots
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _validate_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _report_html
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

FIX = Path(__file__).parent / "fixtures"
META = {"title": "lab validation", "generated": "2026-12-01 10:00 UTC"}


def sample():
    g = _gates.gates()
    checks = [
        _gates._check(
            "host",
            "gpu-node-02",
            "mlx5_3",
            "PCIe link at maximum",
            measured="x8 32.0 GT/s",
            expected="x16 32.0 GT/s",
            threshold="x16 32.0 GT/s",
            passed=False,
            detail="0000:3a:00.0",
        ),
        _gates._ratio_check("rdma", "gpu-node-01", "mlx5_0", "rail 0 host memory", 386.5, 400.0, 0.9, "Gb/s"),
        _gates._ratio_check(
            "rdma",
            "gpu-node-02",
            "mlx5_3",
            "rail 3 host memory",
            231.0,
            400.0,
            0.9,
            "Gb/s",
            "1048576 B messages, host memory, to gpu-node-01",
        ),
        _gates._ratio_check("gds", "gpu-node-01", "/mnt/weka", "gdsio read", 45.0, 50.0, 0.8, "GB/s"),
    ]
    doc = _gpuprobe.load((FIX / "gpu_probe/h200x1-2026-12-01.json").read_text())
    checks += _hardware_checks.probe_checks("h200", doc, {}, g)
    series = {
        "nccl": [
            {
                "name": "2 nodes",
                "bytes": [1 << i for i in range(20, 34)],
                "busbw": [min(368.0, 368.0 * (1 << i) / ((1 << i) + (4 << 20))) for i in range(20, 34)],
                "threshold": 288.0,
                "expected": 320.0,
            }
        ],
        "allreduce": [
            {
                "node": "x2",
                "bytes": [1 << 30, 4 << 30],
                "busbw": [330.0, 352.0],
                "plain_bytes": [4 << 30],
                "plain_busbw": [348.0],
                "limit": 450.0,
                "threshold": 337.5,
            }
        ],
    }
    return checks, series


RENDER_NCCL = _verdict.entry("nccl", "cluster", "gpufabric_k8s_mode is render: the NCCL Jobs need the cluster")


def test_text_opens_with_the_verdict_the_summary_and_the_failures_then_every_check():
    checks = sample()[0]
    text = _validate_report.render_text(checks, META)
    lines = text.splitlines()
    assert lines[1].endswith(f"{len(checks)} checks, {len(checks) - 2} passed, 2 failed, 0 gate(s) not run")
    assert lines[2] == f"FAILED: 2 of {len(checks)} checks failed; the cluster is not proven ready."
    head, details = text.split(_validate_report.DETAILS_MARK)
    assert "  RDMA per rail (perftest)       gpu-node-02      1      0      1       0" in head
    fail = (
        "FAIL rdma gpu-node-02 mlx5_3: rail 3 host memory = 231.0 Gb/s (threshold 360.0 = 0.90 x expected 400.0 Gb/s)"
    )
    assert fail in head and fail in details
    assert "FAIL host gpu-node-02 mlx5_3: PCIe link at maximum = x8 32.0 GT/s (expected x16 32.0 GT/s)" in head
    assert "PASS" not in head, "the passing checks are in the details only"
    assert "== RDMA per rail (perftest) gpu-node-01 (1/1 passed)" in details
    assert details.count("PASS ") == len(checks) - 2


def test_junit_has_a_suite_per_category_a_failure_per_failed_check_and_a_skip_per_gate_not_run():
    checks = sample()[0]
    root = ET.fromstring(_validate_report.render_junit(checks, META, [RENDER_NCCL]))
    assert root.get("tests") == str(len(checks) + 1) and root.get("failures") == "2" and root.get("skipped") == "1"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"validate.host", "validate.rdma", "validate.gds", "validate.gpu", "validate.nccl"}
    failures = root.findall(".//failure")
    assert len(failures) == 2 and "231.0 Gb/s" in failures[1].get("message")
    assert suites["validate.rdma"].get("failures") == "1"
    skipped = suites["validate.nccl"].find("testcase/skipped")
    assert "gpufabric_k8s_mode is render" in skipped.get("message")


def test_ready_for_training_only_when_every_needed_gate_ran_and_passed():
    checks = [_gates._ratio_check("gds", "n", "/fs", "gdsio read", 45.0, 50.0, 0.8, "GB/s")]
    assert "ready for training" in _validate_report.render_text(checks, META).lower()
    text = _validate_report.render_text(checks, META, [RENDER_NCCL])
    assert "ready for training" not in text.lower()
    assert "NOT PROVEN: the 1 checks that ran passed, but 1 gate(s) that readiness needs did not run" in text
    assert "NOT RUN nccl cluster: NCCL all-reduce across nodes: gpufabric_k8s_mode is render" in text
    html = _report_html.render_html(checks, [], META, [RENDER_NCCL])
    assert "ready for training" not in html.lower() and "NCCL all-reduce bus bandwidth: not run" in html
    prediction = _validate_report.render_text(checks, dict(META, prediction=True))
    assert "ready for training" not in prediction.lower() and _verdict.PREDICTION in prediction


def test_html_is_self_contained_and_its_plots_load_in_a_browser(chromium, tmp_path):
    checks, series = sample()
    figures = _plots.plots(checks, series)
    assert [(f["title"], f["key"]) for f in figures] == [
        ("RDMA bandwidth per rail and node pair", True),
        ("NCCL all-reduce bus bandwidth", True),
        ("GDS throughput", True),
        ("GPU probe: copies and device memory", True),
        ("NVLink all-reduce (GPU probe)", False),
    ]
    html = _report_html.render_html(checks, figures, META)
    assert not re.search(r"""(src|href)=["'](?!data:)""", html), "the report must not load anything from outside"
    sizes = run_script(
        chromium, html, "return [...document.images].map(i=>[i.complete,i.naturalWidth,i.naturalHeight]);", tmp_path
    )
    assert len(sizes) == len(figures) == 5
    assert all(ok and w >= 500 and h >= 200 for ok, w, h in sizes), sizes


def test_a_long_unbroken_value_wraps_instead_of_overflowing_at_1280_px(chromium, tmp_path):
    """Issue 44 point 1: no horizontal scrolling at 1280 px, even for a long value without spaces,
    with every detail open."""
    checks, _series = sample()
    checks[0] = dict(checks[0], detail="mlx5_0/" * 60, subject="rail-" + "x" * 200, node="gpu-node-" + "9" * 80)
    html = _report_html.render_html(checks, [], META)
    assert f'title="{"mlx5_0/" * 60}"' in html, "the whole value is kept for hover"
    scroll, client = run_script(
        chromium,
        html,
        "document.querySelectorAll('details').forEach(d=>d.open=true);"
        "const d=document.documentElement;return [d.scrollWidth,d.clientWidth];",
        tmp_path,
    )
    assert client >= 1200, (scroll, client)
    assert scroll <= client, f"the page is {scroll} px wide in a {client} px window"
