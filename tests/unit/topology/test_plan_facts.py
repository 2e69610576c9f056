"""The plan_facts module (the plan's one read of a node): on a lab snapshot it returns exactly the facts
that topology_facts, gpudirect_facts, installed_packages and doca_ofed_facts return, each given what the
plan gave it (the GPUs discovered, the stack packages' installed versions); a failed read fails with
that read's message and reads nothing after it.

The commands answer as a Debian 12 node with DOCA-OFED 2.9.1 installed and the open driver 580.95.05
(dpkg-query lines in the installed_packages format; ofed_info and dkms status from tests/unit/doca)."""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

import pytest
from module_support import fake_runner, run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_read as _node_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages
from ansible_collections.gpufabric.rollout.plugins.modules import (
    doca_ofed_facts,
    gpudirect_facts,
    installed_packages,
    plan_facts,
    topology_facts,
)

DOCA = Path(__file__).resolve().parents[1] / "doca" / "fixtures"
DPKG = """\
dkms 3.0.10-8+deb12u1 all ii
mlnx-ofed-kernel-dkms 24.10.OFED.24.10.1.1.4.1-1 all ii
ofed-scripts 24.10.OFED.24.10.1.1.4-1 amd64 ii
doca-ofed 2.9.1-0.1.4 amd64 hi
rdma-core 2410mlnx54-1.2410068 amd64 ii
nvidia-kernel-open-dkms 580.95.05-1 amd64 ii
"""
QUERY = ("dpkg-query", "-W", "-f=" + _packages.DPKG_QUERY_FORMAT)
DRIVER_LINE = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (lab@lab)\n"


def node_table():
    return {
        QUERY: DPKG,
        ("ofed_info", "-s"): (DOCA / "ofed_info" / "doca-2.9.1.txt").read_text(),
        ("dkms", "status"): (DOCA / "dkms" / "dkms3.txt").read_text(),
        ("modinfo", "-n", "nvidia"): "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko\n",
        ("modinfo", "-n", "nvidia-peermem"): "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia-peermem.ko\n",
    }


@pytest.fixture()
def node(sysroot, tmp_path):
    """dgx-h200-8x8@2 with the open driver loaded (as the lab's modprobe shim writes it)."""
    root = tmp_path / "root"
    shutil.copytree(sysroot("dgx-h200-8x8@2"), root, symlinks=True)
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(DRIVER_LINE)
    (root / "sys/module/nvidia").mkdir(parents=True, exist_ok=True)
    (root / "sys/module/nvidia/version").write_text("580.95.05\n")
    return str(root)


def facts_of(module, args, monkeypatch, capsys):
    code, out = run_module(module, args, monkeypatch, capsys, runner=fake_runner(node_table()))
    assert code == 0, out
    return out


def test_one_call_returns_what_the_four_modules_return(node, monkeypatch, capsys):
    args = {"sysroot": node, "storage_nics": ["mlx5_0"], "method": "auto", "cuda_version": ""}
    out = facts_of(plan_facts, args, monkeypatch, capsys)
    topology = facts_of(topology_facts, {"sysroot": node, "storage_nics": ["mlx5_0"]}, monkeypatch, capsys)
    gpus = topology["ansible_facts"]["gpufabric_topology"]["gpus"]
    gpudirect = facts_of(gpudirect_facts, {"sysroot": node, "gpus": gpus}, monkeypatch, capsys)
    packages = facts_of(installed_packages, {}, monkeypatch, capsys)
    installed = _packages.first_versions(packages["ansible_facts"]["packages"], _doca.stack_package_names())
    doca = facts_of(doca_ofed_facts, {"sysroot": node, "installed": installed}, monkeypatch, capsys)
    expected = {}
    for result in (topology, gpudirect, packages, doca):
        expected.update(result["ansible_facts"])
    assert out["ansible_facts"] == expected
    assert (out["nvidia_smi_source"], out["manager"], out["changed"]) == ("file", "dpkg", False)
    # what the plan reads of them, so that a facts mismatch above cannot pass unnoticed
    facts = out["ansible_facts"]
    assert len(facts["gpufabric_topology"]["gpus"]) == 8 and len(facts["gpufabric_gpudirect"]["gpus"]) == 8
    assert facts["gpufabric_gpudirect"]["driver_version"] == "580.95.05"
    assert facts["gpufabric_doca"]["kind"] == "doca_ofed" and facts["gpufabric_doca"]["installed_release"]
    # storage_nics reached the topology read: the first rail's NIC is out of the rails
    assert "mlx5_0" not in [r["nic"] for r in facts["gpufabric_topology"]["rails"]]


def test_a_bad_sysroot_fails_as_topology_facts_does_and_reads_nothing_else(tmp_path, monkeypatch, capsys):
    calls = []
    args = {"sysroot": str(tmp_path / "missing")}
    code, out = run_module(plan_facts, args, monkeypatch, capsys, runner=fake_runner(node_table(), calls))
    code_topology, out_topology = run_module(topology_facts, args, monkeypatch, capsys)
    assert code == code_topology == 1
    assert out["msg"] == out_topology["msg"] and "does not exist" in out["msg"]
    assert calls == []  # no dpkg-query, ofed_info, dkms or modinfo


def test_an_unreadable_package_database_fails_naming_the_query(node, monkeypatch, capsys):
    table = dict(node_table())
    table[QUERY] = (2, "", "dpkg-query: error: cannot open status\n")
    calls = []
    code, out = run_module(plan_facts, {"sysroot": node}, monkeypatch, capsys, runner=fake_runner(table, calls))
    assert code == 1 and out["rc"] == 2
    assert out["msg"] == "dpkg-query -W failed (exit 2): dpkg-query: error: cannot open status"
    assert ("dkms", "status") not in calls  # the RDMA stack read comes after the package read


def test_with_gather_subset_setup_facts_come_first_filtered_as_setup_filters_them(node, monkeypatch, capsys):
    """The node check's one call: setup's collectors (platform here) with setup's filter, then the reads."""
    args = {
        "sysroot": node,
        "gather_subset": ["!all", "!min", "platform"],
        "filter": ["ansible_kernel", "ansible_architecture"],
    }
    out = facts_of(plan_facts, args, monkeypatch, capsys)
    facts = out["ansible_facts"]
    assert set(facts) == {"ansible_kernel", "ansible_architecture", *_node_read.READ_FACTS}
    assert facts["ansible_kernel"] == platform.release() and facts["ansible_architecture"] == platform.machine()
    without = facts_of(plan_facts, {"sysroot": node}, monkeypatch, capsys)
    assert set(without["ansible_facts"]) == set(_node_read.READ_FACTS), "no gather_subset: no setup facts"
    assert {k: facts[k] for k in _node_read.READ_FACTS} == without["ansible_facts"]


def test_a_failed_read_after_gathering_returns_the_setup_facts(tmp_path, monkeypatch, capsys):
    args = {
        "sysroot": str(tmp_path / "missing"),
        "gather_subset": ["!all", "!min", "platform"],
        "filter": ["ansible_kernel"],
    }
    code, out = run_module(plan_facts, args, monkeypatch, capsys, runner=fake_runner(node_table()))
    assert code == 1 and "does not exist" in out["msg"]
    assert out["setup_facts"] == {"ansible_kernel": platform.release()}
    assert "ansible_facts" not in out


def test_a_bad_subset_fails_naming_the_option(node, monkeypatch, capsys):
    code, out = run_module(plan_facts, {"sysroot": node, "gather_subset": ["platfrom"]}, monkeypatch, capsys)
    assert code == 1 and out["msg"].startswith("gather_subset: ") and "platfrom" in out["msg"]
