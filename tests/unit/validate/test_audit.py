"""The audit's core (plugins/module_utils/proof/audit.py): findings on a lab-like node, the real
H200's shape, a PCIe link below its maximum and ACS redirect on a GPU-NIC path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from validate_support import REPO, degrade, facts, load_file

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import audit as _audit
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import audit_report as _audit_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

FIXTURES = Path(__file__).parent / "fixtures"


def gpudirect(flavour="open"):
    gd = json.loads((FIXTURES / "audit/h200_gpudirect.json").read_text())
    gd.pop("_source")
    gd["driver_flavour"] = flavour
    gd["decision"] = _gpudirect.decide(gd)
    return gd


@pytest.fixture(scope="module")
def h200_topology(tmp_path_factory):
    build = load_file("audit_snapshots_build", REPO / "lab/snapshots/build.py")
    return facts(Path(build.materialize("h200-real", str(tmp_path_factory.mktemp("h200")))))


def state(topology, gd, **more):
    out = {
        "topology": topology,
        "gpudirect": gd,
        "service_mgr": "systemd",
        "files": {"nccl_conf": "/etc/nccl.conf", "cufile_json": "/etc/cufile.json"},
        "cmdline": "BOOT_IMAGE=/vmlinuz iommu=pt",
        "probe": {"ran": True},
        "plan": {"intent": False},
    }
    out.update(more)
    return out


def by(found, area, name_part=""):
    return [f for f in found if f["area"] == area and name_part in f["name"]]


def test_lab_node_findings(lab_nodes):
    found = _audit.findings("gpu-node-01", state(facts(lab_nodes["gpu-node-01"]), gpudirect()))
    assert {f["status"] for f in found} <= set(_audit.STATUSES)
    assert by(found, "discovery", "rail")[0]["status"] == "ok"
    links = by(found, "pcie", "PCIe link")
    assert len(links) >= 16 and {f["status"] for f in links} == {"ok"}
    assert by(found, "iommu")[0]["status"] == "ok"
    assert by(found, "gpudirect", "DMA-BUF")[0]["status"] == "ok"
    assert by(found, "plan")[0]["status"] == "n/a"  # no intent given: said so, not computed


def test_h200_shape_gives_findings_not_refusals(h200_topology):
    """One H200, no RDMA NIC, no systemd, a virtual machine: every refusal of the plan is a finding."""
    found = _audit.findings("h200", state(h200_topology, gpudirect(), service_mgr="process_api"))
    assert by(found, "discovery", "rail")[0]["status"] == "warn"
    assert "the plan refuses" in by(found, "discovery", "rail")[0]["action"]
    assert by(found, "discovery", "systemd")[0]["status"] == "warn"
    (link,) = by(found, "pcie", "PCIe link")
    assert (link["subject"], link["status"], link["seen"]) == ("GPU0", "ok", "x16")
    assert by(found, "driver", "GPU driver")[0]["status"] == "ok"
    assert "580.159.04" in by(found, "driver", "GPU driver")[0]["seen"]
    assert by(found, "gpudirect", "DMA-BUF")[0]["status"] == "ok"
    assert by(found, "acs")[0]["status"] == "n/a"
    assert by(found, "gpudirect", "peermem")[0]["status"] == "n/a"
    assert not [f for f in found if f["status"] == "fail"]


def test_h200_proprietary_driver_is_not_dmabuf_capable(h200_topology):
    found = _audit.findings("h200", state(h200_topology, gpudirect("proprietary"), service_mgr="process_api"))
    (dmabuf,) = by(found, "gpudirect", "DMA-BUF")
    assert dmabuf["status"] == "warn"  # no RDMA NIC: nothing needs it yet
    assert "not the open kernel module" in dmabuf["seen"]


def test_link_below_maximum_fails(lab_nodes, tmp_path):
    import shutil

    root = tmp_path / "node"
    shutil.copytree(lab_nodes["gpu-node-01"], root, symlinks=True)
    bdf = degrade(root, "mlx5_0", width=8)
    found = _audit.findings("n1", state(facts(root), gpudirect()))
    bad = [f for f in by(found, "pcie", "PCIe link") if f["status"] == "fail"]
    assert [f["subject"] for f in bad] == ["mlx5_0"]
    assert bad[0]["seen"].startswith("x8") and bdf in bad[0]["action"]


def test_acs_redirect_on_a_gpu_nic_path_fails(lab_nodes):
    """The dgx-h200-8x8 layout leaves ACS redirect on at the top switch ports of its first complex."""
    found = _audit.findings("n1", state(facts(lab_nodes["gpu-node-01"]), gpudirect()))
    (acs,) = by(found, "acs")
    assert acs["status"] == "fail" and acs["seen"].startswith("on at ")
    assert "roce_disable_acs_redirect" in acs["action"]


def test_plan_refusals_and_readback_are_findings(h200_topology):
    plan = {
        "intent": True,
        "problems": ["plan_require_systemd: the service manager is process_api; persistence needs systemd"],
        "index_errors": ["cannot read the repository index under https://example.invalid/doca/"],
        "readback": None,
    }
    found = _audit.findings("h200", state(h200_topology, gpudirect(), plan=plan))
    plans = by(found, "plan")
    assert [(f["status"], f["subject"]) for f in plans] == [
        ("warn", "package index"),
        ("fail", "plan_require_systemd"),
    ]


def test_report_keeps_every_finding_and_the_verdict_is_not_ready(h200_topology):
    found = _audit.findings("h200", state(h200_topology, gpudirect(), service_mgr="process_api"))
    checks, missing = _audit_report.report(found)
    assert len(checks) + len(missing) == len(found) + len(_audit_report.ACROSS_NODES)
    assert _verdict.verdict(checks, missing)["state"] == "unproven"
    junit = _report.render_junit(checks, {"title": "audit"}, missing)
    assert junit.count("<testcase ") == len(checks) + len(missing)
    text = _report.render_text(checks, {"title": "audit"}, missing)
    assert "WARN host h200 RDMA NICs" in text
    assert _audit_report.summary(found)[0].startswith("Audit: ")


def test_html_escapes_node_text(h200_topology):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _html

    found = _audit.findings("h200", state(h200_topology, gpudirect(), nccl_conf="NCCL_SOCKET_IFNAME=<b>eth0</b>\n"))
    checks, missing = _audit_report.report(found)
    page = _html.render_html(checks, [], {"title": "audit"}, missing)
    assert "<b>eth0" not in page and "&lt;b&gt;eth0" in page


def test_unknown_status_is_refused():
    with pytest.raises(ValueError):
        _audit.finding("pcie", "n", "s", "maybe", "x", "y")
