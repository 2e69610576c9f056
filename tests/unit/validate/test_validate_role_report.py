"""The validate role's report tasks (roles/validate/tasks/report.yml) run by ansible-playbook on
localhost against a lab hardware tree: what the console shows, which files a run and a check-mode
run write, and that a gate that did not run is listed with its reason everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from validate_support import REPO

PLAY = """
- name: The validate role's report on a lab node's hardware tree
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  tasks:
    - name: Read the hardware
      gpufabric.rollout.topology_facts:
        sysroot: "{{ sysroot }}"
    - name: What the earlier tasks of the role leave for the report, as host variables
      ansible.builtin.set_fact:
        __validate_readback_checks: "{{ readback_checks }}"
        __validate_probe_skipped: "{{ probe_skipped }}"
    - name: Write the report
      ansible.builtin.include_role:
        name: gpufabric.rollout.validate
        tasks_from: report.yml
"""
CHECK = {
    "id": "host.localhost.nccl.conf.NCCL_IB_HCA",
    "category": "host",
    "node": "localhost",
    "subject": "/etc/nccl.conf",
    "name": "NCCL_IB_HCA",
    "measured": "=mlx5_0:1,mlx5_3:1",
    "expected": "=mlx5_0:1,mlx5_1:1",
    "threshold": "=mlx5_0:1,mlx5_1:1",
    "passed": False,
    "detail": "drifted",
}


def play(tmp: Path, sysroot: Path, *extra: str, probe_ran: bool = True, **variables):
    out = tmp / "reports"
    values = {
        "sysroot": str(sysroot),
        "validate_report_dir": str(out),
        "validate_gds_filesystems": [],
        "__validate_reuse": {
            "reuse": False,
            "measured": None,
            "reason": "no earlier measurement on record",
            "fingerprints": {"nodes": {"localhost": "f"}, "options": "o"},
        },
        "readback_checks": [CHECK],
        "__validate_nccl_notes": ["gpufabric_k8s_mode is render: the NCCL Jobs need the cluster"],
        "probe_skipped": "PyTorch is not importable: No module named 'torch'",
    }
    values.update(variables)
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "vars.json").write_text(json.dumps(values))
    # Without the probe (validate_probe false) probe.yml never set its fact.
    text = PLAY if probe_ran else PLAY.replace('        __validate_probe_skipped: "{{ probe_skipped }}"\n', "")
    (tmp / "play.yml").write_text(text)
    (tmp / "ansible-tmp").mkdir(exist_ok=True)
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_CALLBACK_RESULT_FORMAT="json",
    )
    ansible = str(Path(sys.executable).parent / "ansible-playbook")
    argv = [ansible, "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", "play.yml", *extra]
    done = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout, out


@pytest.fixture(scope="module")
def sysroot(lab_nodes):
    return lab_nodes["gpu-node-01"]


def summary_lines(stdout: str):
    """The lines the 'Print the validation summary' task printed (its msg)."""
    block = stdout.split("TASK [gpufabric.rollout.validate : Print the validation summary]")[1]
    block = block.split("TASK [")[0]
    return json.loads(block[block.index("{") :])["msg"]


def test_the_console_shows_counts_failures_and_gates_not_run_and_the_files_hold_every_check(tmp_path, sysroot):
    stdout, out = play(tmp_path, sysroot)
    lines = summary_lines(stdout)
    assert lines[0].startswith("FAILED: 1 of "), lines
    assert next(line for line in lines if line.startswith("  host localhost: ")).endswith(" passed, 1 failed")
    assert any(line.startswith("FAIL host localhost /etc/nccl.conf: NCCL_IB_HCA") for line in lines)
    render = "gpufabric_k8s_mode is render: the NCCL Jobs need the cluster"
    assert f"NOT RUN nccl cluster: NCCL all-reduce across nodes: {render}" in lines
    no_leaves = "no leaves in gpufabric_switches: nothing to check against (not needed for readiness)"
    assert f"NOT RUN cabling all nodes: Cabling by LLDP: {no_leaves}" in (out / "validation.txt").read_text()
    assert any(line.startswith("NOT RUN gpu localhost: GPU probe: the probe could not run: PyTorch") for line in lines)
    assert not any(line.startswith("PASS ") for line in lines), "passing checks go to the files only"
    assert f"Report: {out}/validation.html" in lines
    text = (out / "validation.txt").read_text()
    passing = [line for line in text.splitlines() if line.strip().startswith("PASS ")]
    assert passing, "the text report holds every passing check (the PCIe links)"
    assert len(lines) < 12 + len(passing) // 4
    assert "gpufabric_k8s_mode is render" in (out / "validation.html").read_text()
    assert (out / "validation-record.json").is_file()

    verbose, _out = play(tmp_path / "verbose", sysroot, "-e", "validate_verbose=true")
    assert len([line for line in summary_lines(verbose) if line.startswith("PASS ")]) == len(passing)


def test_a_check_mode_run_writes_a_marked_prediction_and_leaves_the_report_alone(tmp_path, sysroot):
    _stdout, out = play(tmp_path, sysroot)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "validation-record.json").unlink()
    stdout, _out = play(tmp_path, sysroot, "--check")
    lines = summary_lines(stdout)
    assert lines[0].startswith("FAILED: 1 of ")
    assert f"Report: {out}/validation-check-mode.html" in lines
    for name in ("validation.html", "validation.txt", "validation-junit.xml"):
        assert (out / name).read_bytes() == before[name], f"{name} was rewritten by a check-mode run"
    assert not (out / "validation-record.json").exists(), "a check-mode run keeps no measurement record"
    prediction = (out / "validation-check-mode.txt").read_text()
    assert prediction.splitlines()[1].startswith("CHECK-MODE PREDICTION (ansible-playbook --check)")
    assert "CHECK-MODE PREDICTION" in (out / "validation-check-mode.html").read_text()
    assert (out / "validation-check-mode-junit.xml").is_file()


def test_a_probe_switched_off_is_listed_as_not_run_for_all_nodes(tmp_path, sysroot):
    stdout, _out = play(tmp_path, sysroot, "-e", "validate_probe=false", probe_ran=False)
    lines = summary_lines(stdout)
    assert "NOT RUN gpu all nodes: GPU probe: switched off (validate_probe: false)" in lines
    assert not any(line.startswith("NOT RUN gpu localhost") for line in lines)
