"""Host read-back (plugins/module_utils/proof/readback.py): what a node holds against what its plan told
the host roles to make. The plan is the real one (the lab intent over a lab node's discovery, as
the plan play computes it); the QoS is applied and read back through the lab's mlnx_qos, rdma and
ethtool simulators on a materialised lab hardware tree, as on a lab node; files are the real
cufile.json capture and nccl.conf as nccl_config renders it. Each drift (a wrong PFC priority, a
wrong ToS, an MTU, a missing module, a drifted nccl.conf or cufile.json, ACS redirect left on,
a translated IOMMU) must fail naming the node, the NIC or file, the setting and both values."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from validate_support import REPO, load_file

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
from ansible_collections.gpufabric.rollout.plugins.filter.validate import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import readback as _readback
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import host as _host

NODE = "gpu-node-01"
SIMS = REPO / "lab" / "simulators"
CUFILE = REPO / "tests/unit/gds/fixtures/cufile/h200-gds-1.15.1.6-cuda13.0.json"


# The plan tests' intent and node facts (tests/unit/plan/conftest.py), under a name of their own.
PLAN_FIXTURES = load_file("validate_plan_fixtures", REPO / "tests/unit/plan/conftest.py")
SNAPSHOTS = load_file("validate_snapshots", REPO / "lab/snapshots/build.py")


def node_plan(topology=None, **variables):
    values, problems = PLAN_FIXTURES.check(
        load_specs(str(REPO)), "node", dict(PLAN_FIXTURES.lab_intent(), gpufabric_k8s_node_name=NODE, **variables)
    )
    assert problems == []
    facts = PLAN_FIXTURES.node_facts(1)
    if topology is not None:
        facts["topology"] = topology
    return _plan_node.plan_node(values, facts)


@pytest.fixture(scope="module")
def plan():
    return node_plan()


def failed(checks):
    return [c for c in checks if not c["passed"]]


# ------------------------------------------------------------------------------------ QoS via simulators
@pytest.fixture(scope="module")
def mofed_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("readback-pristine")
    tree = str(root / "mofed")
    SNAPSHOTS.materialize("dgx-h200-8x8@1", tree)
    subprocess.run([sys.executable, str(REPO / "lab/hardware/nic_driver_sysfs.py"), "mofed", tree], check=True)
    return tree


@pytest.fixture
def lab_node(mofed_tree, tmp_path):
    """A copy of the tree, the simulators on a private PATH, and the plan computed from its discovery."""
    sysroot = str(tmp_path / "sysroot")
    shutil.copytree(mofed_tree, sysroot, symlinks=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("mlnx_qos", "dcb", "rdma", "ethtool", "setpci"):
        os.symlink(SIMS / tool, bindir / tool)
    runner = _host.Runner.local(
        path=f"{bindir}:{os.path.dirname(sys.executable)}", env={"GPUFABRIC_LAB_SYSROOT": sysroot}
    )
    io = _host.Host(_host.Sysroot(sysroot), runner)
    topology = _topology.discover(sysroot)
    return io, node_plan(topology)


def read_qos(interfaces, io):
    """roce_qos in check mode, in the shape the module returns."""
    out = _qos_engine.run_plan_interfaces(interfaces, "auto", io, check_mode=True)
    return {"changed": out["changed"], "interfaces": out["interfaces"], "warnings_list": out["warnings"]}


def test_qos_read_back_passes_once_applied_and_names_each_drift(lab_node):
    io, plan = lab_node
    interfaces = plan["roce"]["interfaces"][:2]  # two rails keep the simulator runs short
    section = {"roce": {"interfaces": interfaces}}
    before = failed(_readback.qos_checks(NODE, section, read_qos(interfaces, io)))
    assert {c["name"] for c in before} >= {"PFC priorities", "RDMA-CM default ToS", "QoS trust mode"}
    _qos_engine.run_plan_interfaces(interfaces, "auto", io, check_mode=False)

    applied = _readback.qos_checks(NODE, section, read_qos(interfaces, io))
    assert failed(applied) == []
    names = {c["name"] for c in applied}
    assert {"PFC priorities", "DSCP to priority map", "ECN (DCQCN) per priority", "CNP DSCP", "MTU"} <= names
    assert {"RDMA-CM default ToS", "verbs traffic class (ToS)", "global pause"} <= names
    pfc = next(c for c in applied if c["name"] == "PFC priorities" and c["subject"] == "mlx5_0")
    assert pfc["measured"] == pfc["expected"] == "on for priority 3"

    first, second = interfaces
    io.runner.check(["mlnx_qos", "-i", first["netdev"], "--pfc", "0,0,0,0,1,0,0,0", "--cable_len", "0"])
    Path(io.sysroot.path(f"sys/kernel/config/rdma_cm/{first['rdma_device']}/ports/1/default_roce_tos")).write_text(
        "104\n"
    )
    Path(io.sysroot.path(f"sys/class/net/{second['netdev']}/mtu")).write_text("1500\n")
    drift = failed(_readback.qos_checks(NODE, section, read_qos(interfaces, io)))
    assert {(c["subject"], c["name"], c["measured"], c["expected"]) for c in drift} == {
        (first["rdma_device"], "PFC priorities", "on for priority 4", "on for priority 3"),
        (first["rdma_device"], "RDMA-CM default ToS", "104", "106"),
        (second["rdma_device"], "MTU", "1500", "9000"),
    }
    line = _gates.describe(next(c for c in drift if c["name"] == "PFC priorities"))
    assert line == (
        f"FAIL host {NODE} {first['rdma_device']}: PFC priorities = on for priority 4 "
        f"(expected on for priority 3) [{first['netdev']}, rail 0]"
    )


def test_qos_that_cannot_be_read_is_a_failing_check(plan):
    # As registered with failed_when: false (which clears "failed"): the module's msg tells.
    result = {"failed": False, "failed_when_result": False, "msg": "neither mlnx_qos nor dcb is installed"}
    checks = _readback.qos_checks(NODE, plan, dict(result, interfaces=[]))
    assert [(c["subject"], c["passed"]) for c in checks] == [("QoS", False)]
    assert "neither mlnx_qos nor dcb" in checks[0]["detail"]
    netns = _readback.netns_check(NODE, plan, dict(result, msg="rdma: command not found", runtime_before=None))
    assert [(c["measured"], c["passed"], c["detail"]) for c in netns] == [
        ("not read", False, "rdma: command not found")
    ]


def test_netns_mode(plan):
    assert failed(_readback.netns_check(NODE, plan, {"runtime_before": "shared"})) == []
    wrong = failed(_readback.netns_check(NODE, plan, {"runtime_before": "exclusive"}))
    assert [(c["name"], c["measured"], c["expected"]) for c in wrong] == [("RDMA netns mode", "exclusive", "shared")]


# ------------------------------------------------------------------------------------ modules, DMA-BUF
GPUDIRECT = {
    "driver_loaded": True,
    "driver_flavour": "open",
    "driver_version": "580.95.05",
    "kernel_release": "6.1.0-28-amd64",
    "modules": ["nvidia", "nvidia_fs"],
    "peermem_loaded": False,
    "nvidia_fs_loaded": True,
    "decision": {"method": "dmabuf", "dmabuf": {"ok": True, "blockers": []}},
}


def test_modules_and_dmabuf_as_planned(plan):
    checks = _readback.module_checks(NODE, plan, GPUDIRECT)
    assert failed(checks) == []
    assert {(c["subject"], c["name"]) for c in checks} == {
        ("nvidia", "kernel module loaded"),
        ("nvidia_fs", "kernel module loaded"),
        ("GPUDirect RDMA", "DMA-BUF in effect"),
    }


def test_a_missing_module_and_a_blocked_dmabuf_fail(plan):
    live = copy.deepcopy(GPUDIRECT)
    live.update(modules=["nvidia"], nvidia_fs_loaded=False)
    live["decision"]["dmabuf"] = {"ok": False, "blockers": ["kernel 5.10 < 5.12"]}
    bad = failed(_readback.module_checks(NODE, plan, live))
    assert {(c["subject"], c["measured"]) for c in bad} == {
        ("nvidia_fs", "not loaded"),
        ("GPUDirect RDMA", "blocked: kernel 5.10 < 5.12"),
    }
    assert (
        next(c for c in bad if c["subject"] == "nvidia_fs")["detail"] == "GDS mode nvidia_fs, loaded by the host roles"
    )


def test_peermem_is_expected_loaded_when_it_is_the_method():
    plan = node_plan(gpudirect_rdma_method="peermem", doca_ofed_profile="doca-ofed")
    assert plan["gpudirect_rdma"]["method"] == "peermem"
    names = [m["name"] for m in plan["validate"]["modules"]]
    assert names == ["nvidia", "nvidia_peermem", "nvidia_fs"]
    bad = failed(_readback.module_checks(NODE, plan, GPUDIRECT))
    assert [(c["subject"], c["measured"]) for c in bad] == [("nvidia_peermem", "not loaded")]
    loaded = dict(GPUDIRECT, peermem_loaded=True)
    assert failed(_readback.module_checks(NODE, plan, loaded)) == []


# ------------------------------------------------------------------------------------ files
def test_nccl_conf_as_rendered_passes_and_drift_is_named(plan):
    path = plan["validate"]["files"]["nccl_conf"]
    text = _nccl.render(plan["nccl"]["entries"], "# Managed by Ansible")
    checks = _readback.nccl_conf_checks(NODE, plan, text)
    assert failed(checks) == []
    assert {c["name"] for c in checks} == set(plan["nccl"]["entries"]) | {"no entries beyond the plan"}
    drifted = text.replace("NCCL_IB_TC=106", "NCCL_IB_TC=104") + "NCCL_IB_GID_INDEX=3\n"
    drifted = drifted.replace("NCCL_NET_GDR_LEVEL=PIX\n", "")
    bad = failed(_readback.nccl_conf_checks(NODE, plan, drifted))
    assert {(c["subject"], c["name"], c["measured"], c["expected"]) for c in bad} == {
        (path, "NCCL_IB_TC", "104", "106"),
        (path, "NCCL_NET_GDR_LEVEL", "absent", "PIX"),
        (path, "no entries beyond the plan", "NCCL_IB_GID_INDEX=3", "none"),
    }
    missing = _readback.nccl_conf_checks(NODE, plan, None)
    assert [(c["name"], c["measured"], c["passed"]) for c in missing] == [("present", "missing", False)]


def test_cufile_json_as_the_role_edits_it_passes_and_drift_is_named(plan):
    gds = plan["gpudirect_storage"]
    original = CUFILE.read_text()
    desired = _cufile.build_desired(
        _cufile.parse(original),
        compat_mode=gds["compat_mode"],
        force_compat_mode=gds["force_compat_mode"],
        rdma_dev_addr_list=gds["rdma_dev_addr_list"],
        use_pci_p2pdma=gds["use_pci_p2pdma"],
        filesystems=gds["filesystems"],
    )
    edited, changed = _cufile.apply_settings(original, desired)
    assert "properties.rdma_dev_addr_list" in changed
    checks = _readback.cufile_checks(NODE, plan, edited)
    assert failed(checks) == []
    assert {c["name"] for c in checks} == {
        "properties.allow_compat_mode",
        "properties.force_compat_mode",
        "properties.rdma_dev_addr_list",
        "properties.use_pci_p2pdma",
    }
    # The file as shipped (no addresses, no force_compat_mode key) and a file with another address fail.
    shipped = failed(_readback.cufile_checks(NODE, plan, original))
    assert [(c["name"], c["measured"]) for c in shipped] == [
        ("properties.force_compat_mode", "absent"),
        ("properties.rdma_dev_addr_list", "[]"),
    ]
    other = _cufile.apply_settings(edited, {"properties": {"rdma_dev_addr_list": ["10.9.9.9"]}})[0]
    bad = failed(_readback.cufile_checks(NODE, plan, other))
    assert [(c["name"], c["measured"]) for c in bad] == [("properties.rdma_dev_addr_list", '["10.9.9.9"]')]
    assert "10.0.1.1" in bad[0]["expected"]
    broken = _readback.cufile_checks(NODE, plan, "{ not json")
    assert [(c["name"], c["passed"]) for c in broken] == [("readable", False)]


# ------------------------------------------------------------------------------------ PCIe, IOMMU
def test_acs_redirect_on_a_gpu_nic_path_fails_naming_the_bridges(lab_nodes, plan):
    topology = _topology.discover(str(lab_nodes[NODE]))
    bad = failed(_readback.acs_checks(NODE, plan, None, topology))
    assert [(c["name"], c["measured"]) for c in bad] == [
        ("ACS redirect off on the GPU-NIC peer-to-peer paths", "on at 0000:17:00.0, 0000:17:01.0")
    ]
    assert "roce_disable_acs_redirect: true" in bad[0]["detail"]
    clean = dict(topology, warnings=[w for w in topology["warnings"] if w["class"] != "acs_redirect"])
    assert failed(_readback.acs_checks(NODE, plan, None, clean)) == []
    assert _readback.acs_checks(NODE, plan, None, dict(topology, virtualized=True)) == []


def test_planned_acs_clear_reads_the_registers(plan):
    cleared = dict(plan, validate=dict(plan["validate"], acs_clear=True))
    acs = {"bridges": [{"bdf": "0000:17:00.0", "before": "0011"}, {"bdf": "0000:16:00.0", "before": "001d"}]}
    bad = failed(_readback.acs_checks(NODE, cleared, acs, {}))
    assert [(c["measured"], c["expected"]) for c in bad] == [("on at 0000:16:00.0 (001d)", "off on 2 bridges")]
    acs["bridges"][1]["before"] = "0011"
    assert failed(_readback.acs_checks(NODE, cleared, acs, {})) == []


@pytest.mark.parametrize(
    ("iommu", "cmdline", "mode", "passed"),
    [
        ({"enabled": False, "groups": 0}, "ro quiet", "off", True),
        ({"enabled": True, "groups": 180}, "ro intel_iommu=on iommu=pt", "passthrough", True),
        ({"enabled": True, "groups": 180}, "ro intel_iommu=on", "translated", False),
        ({"enabled": True, "groups": 180}, None, "translated", False),
    ],
)
def test_iommu_mode_for_gds(plan, iommu, cmdline, mode, passed):
    checks = _readback.iommu_check(NODE, plan, {"iommu": iommu}, cmdline)
    assert [(c["measured"], c["expected"], c["passed"]) for c in checks] == [(mode, "off or passthrough", passed)]


def test_no_iommu_check_in_gds_compat_mode():
    plan = node_plan(gpudirect_storage_mode="compat")
    assert plan["validate"]["iommu"] is None
    assert _readback.iommu_check(NODE, plan, {"iommu": {"enabled": True, "groups": 3}}, "ro") == []


def test_the_plan_names_what_to_read_back(plan):
    assert plan["validate"]["files"] == {"nccl_conf": "/etc/nccl.conf", "cufile_json": "/etc/cufile.json"}
    assert plan["validate"]["acs_clear"] is True  # the lab clears ACS redirect (inventory/lab)
    assert plan["validate"]["netns_mode"] == "shared"
    without_gds = node_plan(gpufabric_gds_enabled=False, nccl_config_path="/opt/nccl/nccl.conf")
    assert without_gds["validate"]["files"] == {"nccl_conf": "/opt/nccl/nccl.conf", "cufile_json": None}
    assert [m["name"] for m in without_gds["validate"]["modules"]] == ["nvidia"]
    assert without_gds["validate"]["iommu"] is None
    assert _readback.cufile_checks(NODE, without_gds, None) == []
    no_netns = node_plan(roce_manage_netns=False)
    assert no_netns["validate"]["netns_mode"] is None
    assert _readback.netns_check(NODE, no_netns, {"runtime_before": "exclusive"}) == []


# ------------------------------------------------------------------------------------ together
def test_the_filter_joins_every_part_and_the_report_takes_the_checks(plan):
    live = {
        "qos": None,
        "netns": {"runtime_before": "shared"},
        "acs": None,
        "topology": {"virtualized": False, "warnings": [], "iommu": {"enabled": False, "groups": 0}},
        "gpudirect": GPUDIRECT,
        "nccl_conf": _nccl.render(plan["nccl"]["entries"]),
        "cufile_json": None,
        "cmdline": "ro",
    }
    checks = FilterModule().filters()["validate_readback"](plan, NODE, live)
    assert {c["category"] for c in checks} == {"host"}
    assert [c["name"] for c in failed(checks)] == ["present"]  # cufile.json missing
    assert all(c["node"] == NODE for c in checks)
    spec = load_file("validate_report_module_rb", REPO / "plugins/modules/validate_report.py")
    params = {"topology": {}, "rdma": [], "gds": [], "nccl": [], "probe": [], "host_links": True, "gates": {}}
    params["checks"] = checks
    found, _series, _g = spec.evaluate(params)
    assert [c["id"] for c in found] == [c["id"] for c in checks]
    assert len({c["id"] for c in checks}) == len(checks), "check ids must be unique"


# ------------------------------------------------------------------------------------ locked memory
def runtime(unit, soft, active=True):
    memlock = None if soft is None else {"soft": soft, "hard": soft}
    return {"unit": unit, "installed": True, "active": active, "main_pid": 7 if active else 0, "memlock": memlock}


def test_the_plan_names_the_container_runtimes_and_only_those_get_the_limit():
    plan = node_plan(gpudirect_rdma_memlock="unlimited")
    assert plan["gpudirect_rdma"]["memlock"] == "unlimited"
    assert plan["gpudirect_rdma"]["memlock_units"] == ["containerd.service", "crio.service"]
    assert node_plan(gpudirect_rdma_memlock="")["gpudirect_rdma"]["memlock_units"] == []
    assert node_plan(gpudirect_rdma_memlock_systemd=False)["gpudirect_rdma"]["memlock_units"] == []


def test_a_runtime_still_running_with_its_old_limit_fails_naming_it_and_what_to_do():
    plan = node_plan(gpudirect_rdma_memlock="unlimited")
    old = _readback.memlock_checks(NODE, plan, [runtime("containerd.service", 8388608)])
    assert [(c["subject"], c["measured"], c["expected"]) for c in failed(old)] == [
        ("containerd.service", "8192 KiB", "unlimited")
    ]
    assert "restart containerd.service" in failed(old)[0]["detail"]
    ok = _readback.memlock_checks(
        NODE, plan, [runtime("containerd.service", "unlimited"), runtime("crio.service", None, False)]
    )
    assert [(c["subject"], c["passed"]) for c in ok] == [("containerd.service", True)]
    sized = node_plan(gpudirect_rdma_memlock="8192")
    assert not failed(_readback.memlock_checks(NODE, sized, [runtime("containerd.service", 8388608)]))
    unread = _readback.memlock_checks(NODE, plan, None)
    assert len(failed(unread)) == 1 and unread[0]["measured"] == "not read"
