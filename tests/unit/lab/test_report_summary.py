"""lab/report-summary.sh, the end of `make lab` and `make site`: the summary part of the
validation report this run wrote (never the per-check details, at most 30 lines) and the paths of
the reports it wrote; a report older than the run is not shown as its.

The script runs from a copy of lab/ in a temporary checkout, whose .lab/ holds the reports."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

REPO = Path(__file__).resolve().parents[3]
META = {"title": "lab", "generated": "2026-12-04 10:00 UTC"}


def checks(failing: int, passing: int = 200):
    rate = _gates._ratio_check
    out = [
        rate("rdma", "gpu-node-01", f"mlx5_{i}", f"rail {i} host memory", 390.0, 400.0, 0.9, "Gb/s")
        for i in range(passing)
    ]
    out += [
        rate("rdma", "gpu-node-02", f"mlx5_{i}", f"rail {i} host memory", 231.0, 400.0, 0.9, "Gb/s")
        for i in range(failing)
    ]
    return out


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "lab").mkdir()
    for name in ("report-summary.sh", "common.sh"):
        shutil.copy2(REPO / "lab" / name, tmp_path / "lab" / name)
    (tmp_path / ".lab").mkdir()
    return tmp_path


def run(checkout: Path, since: Path):
    done = subprocess.run(
        [str(checkout / "lab/report-summary.sh"), str(since)], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.splitlines()


def mark(checkout: Path) -> Path:
    since = checkout / "since"
    since.write_text("")
    old = time.time() - 60
    os.utime(since, (old, old))
    return since


def test_the_summary_and_the_paths_not_the_per_check_lines(checkout):
    since = mark(checkout)
    missing = [_verdict.entry("nccl", "cluster", "gpufabric_k8s_mode is render: the NCCL Jobs need the cluster")]
    text = _report.render_text(checks(2), META, missing)
    assert len(text.splitlines()) > 200
    (checkout / ".lab/validation.txt").write_text(text)
    (checkout / ".lab/validation.html").write_text("<html></html>")
    lines = run(checkout, since)
    assert lines[1] == "Validation report: lab"
    assert lines[3] == "FAILED: 2 of 202 checks failed, and 1 gate(s) did not run; the cluster is not proven ready."
    assert not any(line.strip().startswith("PASS ") for line in lines)
    assert sum(line.strip().startswith("FAIL rdma gpu-node-02") for line in lines) == 2
    assert f"  NOT RUN nccl cluster: NCCL all-reduce across nodes: {missing[0]['reason']}" in lines
    assert lines[-3:] == ["Reports:", f"  {checkout}/.lab/validation.html", f"  {checkout}/.lab/validation.txt"]
    assert len(lines) <= 40


def test_many_failures_are_cut_at_30_lines_and_an_old_report_is_not_this_runs(checkout):
    since = mark(checkout)
    (checkout / ".lab/validation.txt").write_text(_report.render_text(checks(60), META))
    lines = run(checkout, since)
    assert len(lines) == 1 + 30 + 1 + 2
    assert lines[31] == f"  ... (the rest in {checkout}/.lab/validation.txt)"
    later = checkout / "later"
    later.write_text("")
    assert run(checkout, later) == ["", "This run wrote no validation report.", "Reports:"]
