"""The report: text, JUnit and one self-contained HTML whose plots a headless Chromium loads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _validate_report

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
    checks += _gates.probe_checks("h200", doc, {}, g)
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


def test_text_lists_every_check_and_the_failures_with_numbers():
    checks = sample()[0]
    text = _validate_report.render_text(checks, META)
    assert "2 FAILED" in text.splitlines()[1]
    assert "== RDMA per rail (perftest) (1/2 passed)" in text
    assert (
        "FAIL rdma gpu-node-02 mlx5_3: rail 3 host memory = 231.0 Gb/s (threshold 360.0 = 0.90 x expected 400.0 Gb/s)"
        in text
    )
    assert "FAIL host gpu-node-02 mlx5_3: PCIe link at maximum = x8 32.0 GT/s (expected x16 32.0 GT/s)" in text
    assert text.index("Failing checks:") > text.index("== GPU probe")


def test_junit_has_a_suite_per_category_and_a_failure_per_failed_check():
    checks = sample()[0]
    root = ET.fromstring(_validate_report.render_junit(checks, META))
    assert root.get("tests") == str(len(checks)) and root.get("failures") == "2"
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"validate.host", "validate.rdma", "validate.gds", "validate.gpu"}
    failures = root.findall(".//failure")
    assert len(failures) == 2 and "231.0 Gb/s" in failures[1].get("message")
    assert suites["validate.rdma"].get("failures") == "1"


def test_all_passing_text_says_ready():
    checks = [_gates._ratio_check("gds", "n", "/fs", "gdsio read", 45.0, 50.0, 0.8, "GB/s")]
    assert "ready for training" in _validate_report.render_text(checks, META)


@pytest.fixture(scope="module")
def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    assert exe, "chromium renders the report headless: `make tools` installs it (mk/browser.mk)"
    return exe


def test_html_is_self_contained_and_its_plots_load_in_a_browser(chromium, tmp_path):
    checks, series = sample()
    figures = _validate_report.plots(checks, series)
    assert [f["title"] for f in figures] == [
        "RDMA bandwidth per rail and node pair",
        "NCCL all-reduce bus bandwidth",
        "GDS throughput",
        "GPU host<->device copies",
        "GPU device memory bandwidth",
        "NVLink all-reduce (GPU probe)",
    ]
    html = _validate_report.render_html(checks, figures, META)
    assert not re.search(r"""(src|href)=["'](?!data:)""", html), "the report must not load anything from outside"
    page = tmp_path / "report.html"
    page.write_text(html)
    # A tiny script reports each image's natural size into the DOM that --dump-dom prints.
    probe = tmp_path / "probe.html"
    probe.write_text(
        html.replace(
            "</body>",
            "<script>window.addEventListener('load',()=>{const s=[...document.images].map(i=>"
            "[i.complete,i.naturalWidth,i.naturalHeight]);const p=document.createElement('pre');"
            "p.id='sizes';p.textContent=JSON.stringify(s);document.body.appendChild(p);});</script></body>",
        )
    )
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [chromium, *flags, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    sizes = json.loads(re.search(r'<pre id="sizes">(.*?)</pre>', dom).group(1))
    assert len(sizes) == len(figures) == 6
    assert all(ok and w >= 600 and h >= 200 for ok, w, h in sizes), sizes
    shot = tmp_path / "report.png"
    subprocess.run(
        [chromium, *flags, "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 50_000  # a page of tables and plots, not a blank one
    keep = os.environ.get("VALIDATE_REPORT_KEEP")  # a directory to keep the page and its screenshot in
    if keep:
        shutil.copy(shot, Path(keep) / "report.png")
        shutil.copy(page, Path(keep) / "report.html")


def test_a_long_unbroken_value_wraps_instead_of_overflowing_at_1280_px(chromium, tmp_path):
    """Issue 44 point 1: no horizontal scrolling at 1280 px, even for a long value without spaces."""
    checks, _series = sample()
    checks[0] = dict(checks[0], detail="mlx5_0/" * 60, subject="rail-" + "x" * 200)
    html = _validate_report.render_html(checks, [], META)
    probe = tmp_path / "probe.html"
    probe.write_text(
        html.replace(
            "</body>",
            "<script>window.addEventListener('load',()=>{const d=document.documentElement;"
            "const p=document.createElement('pre');p.id='w';p.textContent=d.scrollWidth+' '+d.clientWidth;"
            "document.body.appendChild(p);});</script></body>",
        )
    )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}"]
    dom = subprocess.run(
        [chromium, *flags, "--window-size=1280,1000", "--virtual-time-budget=3000", "--dump-dom", probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    scroll, client = map(int, re.search(r'<pre id="w">(\d+) (\d+)</pre>', dom).groups())
    assert client >= 1200, (scroll, client)
    assert scroll <= client, f"the page is {scroll} px wide in a {client} px window"
