"""Three realistic validate runs of the two-node lab, for the report tests and the docs' screenshots:

* ``healthy``: every gate ran and passed: the host read-back (the real plan of each node against
  what the host roles leave), the PCIe links, RDMA per rail, GDS and NCCL across the nodes (the lab's
  simulators as processes on the lab hardware trees) and the GPU probe (a capture on an H200).
* ``degraded``: the same, with rail NIC mlx5_3 of gpu-node-02 trained down to x8 lanes.
* ``render``: gpufabric_k8s_mode render (no NCCL Job ran) on nodes without PyTorch (no GPU probe).

Each is ``{checks, series, not_run}``, as the role hands them to the report.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from lab_runs import evaluate, gds_runs, nccl_runs, run_ring
from validate_support import REPO, degrade, facts, load_file

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
from ansible_collections.gpufabric.rollout.plugins.filter.validate import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import pcie_acs as _pcie_acs
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import host as _host

PLAN_FIXTURES = load_file("report_plan_fixtures", REPO / "tests/unit/plan/conftest.py")
CUFILE = REPO / "tests/unit/gds/fixtures/cufile/h200-gds-1.15.1.6-cuda13.0.json"
PROBE = Path(__file__).parent / "fixtures/gpu_probe/h200x1-2026-12-01.json"
NO_TORCH = "PyTorch is not importable: No module named 'torch'"
# The GPU driver as the host roles leave it on a lab node (gpudirect_facts).
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
SCENARIOS = ("healthy", "degraded", "render")


def node_plan(name: str, index: int, topology):
    values, problems = PLAN_FIXTURES.check(
        load_specs(str(REPO)), "node", dict(PLAN_FIXTURES.lab_intent(), gpufabric_k8s_node_name=name)
    )
    assert problems == []
    node = PLAN_FIXTURES.node_facts(index)
    node["topology"] = topology
    return _plan_node.plan_node(values, node)


def clear_acs(sysroot: Path, plan, bindir: Path):
    """ACS redirect cleared above the rail GPUs and NICs as the roce role does (the lab's setpci
    simulator on the tree), then read back as validate reads it (check mode)."""
    runner = _host.Runner.local(
        path=f"{bindir}:{os.path.dirname(sys.executable)}", env={"GPUFABRIC_LAB_SYSROOT": str(sysroot)}
    )
    acs = plan["roce"]["acs"]
    bridges = _pcie_acs.upstream_bridges(_host.Sysroot(str(sysroot)), acs["endpoints"])
    _pcie_acs.run_acs(bridges, acs["clear_mask"], runner, check_mode=False)
    return _pcie_acs.run_acs(bridges, acs["clear_mask"], runner, check_mode=True)


def readback(name: str, index: int, sysroot: Path, bindir: Path):
    """The host read-back of a node as the host roles leave it: ACS redirect cleared, nccl.conf as
    rendered, cufile.json as edited, the modules loaded, IOMMU in passthrough."""
    plan = node_plan(name, index, facts(sysroot))
    acs = clear_acs(sysroot, plan, bindir)
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
    live = {
        "qos": None,
        "netns": {"runtime_before": plan["validate"]["netns_mode"]},
        "acs": acs,
        "topology": facts(sysroot),
        "gpudirect": GPUDIRECT,
        "nccl_conf": _nccl.render(plan["nccl"]["entries"], "# Managed by Ansible"),
        "cufile_json": _cufile.apply_settings(original, desired)[0],
        "cmdline": "BOOT_IMAGE=/vmlinuz ro quiet intel_iommu=on iommu=pt",
    }
    return FilterModule().filters()["validate_readback"](plan, name, live)


def build(name: str, lab_nodes, tmp_path: Path):
    """One scenario's ``{checks, series, not_run}``; ``tmp_path`` takes copies of the lab trees."""
    assert name in SCENARIOS, name
    nodes = {}
    for node, root in lab_nodes.items():
        nodes[node] = tmp_path / name / node
        shutil.copytree(root, nodes[node], symlinks=True)
    if name == "degraded":
        degrade(nodes["gpu-node-02"], "mlx5_3")
    bindir = tmp_path / name / "bin"
    bindir.mkdir()
    os.symlink(REPO / "lab/simulators/setpci", bindir / "setpci")
    host = []
    for index, node in enumerate(sorted(nodes), start=1):
        host += readback(node, index, nodes[node], bindir)
    topologies = {n: facts(r) for n, r in nodes.items()}
    rdma = run_ring(nodes, topologies)
    gds = gds_runs(nodes, tmp_path / name)
    probe_ran = name != "render"
    nccl = nccl_runs(nodes) if name != "render" else []
    probe = [{"node": n, "output": PROBE.read_text()} for n in sorted(nodes)] if probe_ran else []
    checks, series = evaluate(nodes, rdma, gds, nccl, probe, host)
    state = {
        "hosts": sorted(nodes),
        "gds_filesystems": 1,
        "probe_skipped": {} if probe_ran else {n: NO_TORCH for n in nodes},
        "nccl_notes": [] if name != "render" else ["gpufabric_k8s_mode is render: the NCCL Jobs need the cluster"],
    }
    return {"checks": checks, "series": series, "not_run": _verdict.not_run(state)}
