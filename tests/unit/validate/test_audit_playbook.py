"""playbooks/audit.yml run as a user runs it on one machine (-i 'localhost,' -c local) against a
node's hardware tree: it reports findings, never fails on them, and changes nothing under the
sysroot (read-only proven by a digest of every file, link and mode before and after)."""

from __future__ import annotations

import hashlib
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from role_runner import REPO, ansible_playbook
from validate_support import load_file


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            st = p.lstat()
            h.update(f"{p.relative_to(root)}\0{st.st_mode}\0{st.st_mtime_ns}\0".encode())
            if p.is_symlink():
                h.update(os.readlink(p).encode())
            elif p.is_file():
                h.update(p.read_bytes())
    return h.hexdigest()


def audit(tmp: Path, sysroot: Path, *extra: str):
    out = tmp / "report"
    run = ansible_playbook(
        tmp,
        "-i",
        "localhost,",
        "-c",
        "local",
        str(REPO / "playbooks/audit.yml"),
        "-e",
        f"gpufabric_sysroot={sysroot}",
        "-e",
        f"audit_report_dir={out}",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        f"validate_probe_python={sys.executable}",
        *extra,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    return run, out


def materialize(name: str, dest: Path) -> Path:
    build = load_file("audit_pb_snapshots_build", REPO / "lab/snapshots/build.py")
    return Path(build.materialize(name, str(dest)))


@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_h200_shape_reports_findings_and_changes_nothing(tmp_path, check):
    """The real H200's hardware (one GPU, no RDMA NIC, a VM): findings, not a failure."""
    sysroot = materialize("h200-real", tmp_path / "h200")
    before = digest(sysroot)
    run, out = audit(tmp_path, sysroot, *(["--check"] if check else []))
    assert digest(sysroot) == before
    text = (out / "audit.txt").read_text()
    assert text.startswith("Audit report: gpufabric.rollout (read-only; findings, not refusals)")
    assert "WARN host localhost RDMA NICs: discovery: rail (compute) NICs found" in text
    assert "GPU0: pcie: PCIe link at maximum = x16" in text
    assert "DMA-BUF" in text and "NOT RUN gpu localhost: probe: GPU probe" in text
    assert "no intent in the inventory" in text
    suites = ET.parse(out / "audit-junit.xml").getroot()
    assert int(suites.get("tests")) == len(suites.findall(".//testcase")) >= 15
    assert "Audit: " in run.stdout and " n/a" in run.stdout


def test_lab_node_reports_acs_and_changes_nothing(tmp_path):
    sysroot = materialize("dgx-h200-8x8@1", tmp_path / "dgx")
    before = digest(sysroot)
    run, out = audit(tmp_path, sysroot)
    assert digest(sysroot) == before
    text = (out / "audit.txt").read_text()
    assert "FAIL host localhost PCIe: acs: ACS redirect off on the GPU-NIC peer-to-peer paths = on at" in text
    assert text.count("pcie: PCIe link at maximum") >= 16
    assert "FAIL acs localhost PCIe" in run.stdout


def test_h200_shape_with_intent_reports_the_plans_refusals(tmp_path):
    """With the example intent: the DOCA index cannot be read (no network there) and the plan
    refuses a node without a rail NIC; both are findings and the run still exits 0."""
    sysroot = materialize("h200-real", tmp_path / "h200")
    before = digest(sysroot)
    run, out = audit(
        tmp_path,
        sysroot,
        "-e",
        f"@{REPO / 'inventory/example/group_vars/all/fabric.yml'}",
        "-e",
        "doca_ofed_repo_base_url=http://127.0.0.1:9/doca",
        # the example leaves the DOCA key's pin to the user (inventory/example/.../repositories.yml);
        # unpinned, the plan refuses before it reads the index
        "-e",
        '{"doca_ofed_gpg_key_fingerprints": ["0123456789ABCDEF0123456789ABCDEF01234567"]}',
    )
    assert digest(sysroot) == before
    text = (out / "audit.txt").read_text()
    assert "WARN plan localhost package index: package index readable = cannot read the repository index" in text
    assert "FAIL plan localhost roce_interfaces: the plan refuses = empty" in text
    assert "FAIL plan localhost roce_interfaces" in run.stdout
