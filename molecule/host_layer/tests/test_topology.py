"""topology: the facts and report files each node's topology role wrote, against the lab snapshots'
layouts (lab/snapshots/layouts/dgx-h200-8x8.json, pcie-l40s-4x2.json): 8 H200 GPUs, 8 rail NICs behind
the same PCIe switches (PIX), two storage NICs, one storage port down, ACS redirect on two switch
ports; a PCIe server with 4 L40S on root ports and 2 NICs on socket 0 (GPU2 and GPU3 cross the
sockets: SYS, NUMA mismatch; GPU3 trained at x8). On the DOCA-OFED node the converge cleared ACS
redirect, and the roce role rewrote the report files from the facts as they stood after that (the
idempotence run, which discovers the cleared bridges, changed nothing)."""

from __future__ import annotations

import pytest
from conftest import read_text

DIR = "/var/lib/gpufabric/topology"
DGX_RAILS = ["mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_8", "mlx5_9"]
WARNINGS = {
    "mofed": ["port_down", "roce_v2_gid_missing"],
    "inbox": ["acs_redirect", "acs_redirect", "port_down", "roce_v2_gid_missing"],
}


@pytest.mark.parametrize("name", ["mofed", "inbox"])
def test_the_dgx_facts_describe_the_snapshot(name, request, topology):
    topo = topology(request.getfixturevalue(name))
    assert len(topo["gpus"]) == 8
    assert {g["model"] for g in topo["gpus"]} == {"H200"}
    assert len(topo["nics"]) == 10
    assert [r["nic"] for r in topo["rails"]] == DGX_RAILS
    assert {r["path"] for r in topo["rails"]} == {"PIX"}
    assert [n["rdma_device"] for n in topo["nics"] if n["role"] == "storage"] == ["mlx5_2", "mlx5_7"]
    assert "nccl" not in topo  # hardware only; nccl.conf (test_nccl_config) has the planned NCCL_IB_HCA
    assert topo["paths"]["nvlink"]["GPU0"]["GPU7"] == 18
    assert sorted(w["class"] for w in topo["warnings"]) == WARNINGS[name]


def test_the_pcie_facts_describe_the_snapshot(pcie, topology):
    topo = topology(pcie)
    assert [g["model"] for g in topo["gpus"]] == ["L40S"] * 4
    assert [n["rdma_device"] for n in topo["nics"]] == ["mlx5_0", "mlx5_1"]
    assert [(r["gpu"], r["nic"], r["path"]) for r in topo["rails"]] == [
        ("GPU0", "mlx5_0", "NODE"),
        ("GPU1", "mlx5_0", "NODE"),
        ("GPU2", "mlx5_1", "SYS"),
        ("GPU3", "mlx5_1", "SYS"),
    ]
    assert "nccl" not in topo
    assert sorted(w["class"] for w in topo["warnings"]) == ["link_degraded", "numa_mismatch", "numa_mismatch"]
    assert topo["virtualized"] is False


def test_the_report_names_the_rails_and_the_warnings(node, topology):
    name, host = node
    report = read_text(host, f"{DIR}/report.txt")
    assert f"Topology of {host.backend.get_hostname()}" in report
    if name in WARNINGS:
        assert "rail 0: GPU0 (0000:19:00.0) -> mlx5_0 enp24s0np0 [PIX]" in report, report
    has_acs = "[acs_redirect] 0000:17:00.0" in report
    assert has_acs is (name == "inbox"), report
    for warning in topology(host)["warnings"]:
        assert f"[{warning['class']}] {warning['device']}" in report, report


def test_the_nccl_topology_file_describes_the_rails(node, topology):
    _name, host = node
    xml = read_text(host, f"{DIR}/nccl-topo.xml")
    assert '<system version="1">' in xml
    for rail in topology(host)["rails"]:
        assert f'<net name="{rail["nic"]}"' in xml, rail["nic"]
    gpus = len(topology(host)["gpus"])
    assert f'<gpu dev="{gpus - 1}"' in xml
    # nccl_config renders the same discovery for NCCL_TOPO_FILE, without the "Ansible managed"
    # comment that the topology role's copy starts with (its template; nccl_config writes the XML alone)
    assert xml.startswith("<!--"), xml[:200]
    assert read_text(host, "/etc/nccl/topo.xml") == xml[xml.index("-->") + 3 :].lstrip("\n")
