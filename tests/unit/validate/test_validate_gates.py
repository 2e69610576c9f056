"""Gates: expected figures from topology facts and the checks' numbers and names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from validate_support import degrade, facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gate_figures as _gate_figures
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import hardware_checks as _hardware_checks

FIX = Path(__file__).parent / "fixtures"
G = _gates.gates()


def test_pcie_rates():
    assert _gate_figures.pcie_gbs(32.0, 16) == pytest.approx(63.015, abs=1e-3)
    assert _gate_figures.pcie_gbs(16.0, 16) == pytest.approx(31.508, abs=1e-3)
    assert _gate_figures.pcie_gbs(5.0, 8) == pytest.approx(4.0)
    assert _gate_figures.pcie_gbs(None, 16) is None and _gate_figures.pcie_gbs(32.0, 0) is None


def test_gates_validate_their_input():
    assert _gates.gates({"rdma_fraction": 0.8})["rdma_fraction"] == 0.8
    for bad, message in (
        ({"rdma_fracton": 1}, "unknown gate"),
        ({"hbm_fraction": 0}, "above 0"),
        ({"rdma_fraction": 1.2}, "at most 1$"),
        ({"pcie_fraction": True}, "number"),
        ({"nvlink_fraction": "x"}, "number"),
    ):
        with pytest.raises(_gates.GateError, match=message):
            _gates.gates(bad)
    assert _gates.gates({"rdma_fraction": 1})["rdma_fraction"] == 1.0


def test_hbm_and_nvlink_limits():
    assert _gate_figures.hbm_gbs({"device_id": "2335", "model": "H200"}) == 4800.0
    assert _gate_figures.hbm_gbs({"device_id": "ffff", "model": "H100"}) == 3350.0
    assert _gate_figures.hbm_gbs({"device_id": "ffff", "model": "T4"}) is None
    two = {
        "gpus": [{"name": "GPU0", "sm": 90}, {"name": "GPU1", "sm": 90}],
        "paths": {"nvlink": {"GPU0": {"GPU1": 18}, "GPU1": {"GPU0": 18}}},
    }
    assert _gate_figures.nvlink_gbs(two) == 450.0
    eight = {
        "gpus": [{"name": f"GPU{i}", "sm": 90} for i in range(8)],
        "paths": {"nvlink": {f"GPU{i}": {f"GPU{j}": 18 for j in range(8) if j != i} for i in range(8)}},
    }
    assert _gate_figures.nvlink_gbs(eight) == 450.0  # NVSwitch: NV18 to every peer is still 18 links per GPU
    pairs = {"gpus": [{"name": "GPU0", "sm": 80}], "paths": {"nvlink": {"GPU0": {"GPU1": 4, "GPU2": 4}}}}
    assert _gate_figures.nvlink_gbs(pairs) == 200.0
    assert _gate_figures.nvlink_gbs({"paths": {"nvlink": {}}}) is None


def test_healthy_node_links_pass_and_a_down_trained_nic_is_named(lab_nodes, tmp_path):
    healthy = facts(lab_nodes["gpu-node-01"])
    checks = _hardware_checks.link_checks("gpu-node-01", healthy)
    assert len(checks) == 18 + 8 and all(c["passed"] for c in checks)  # 8 GPUs + 10 NICs, 8 rail rates
    import shutil

    copy = tmp_path / "node"
    shutil.copytree(lab_nodes["gpu-node-02"], copy, symlinks=True)
    bdf = degrade(copy, "mlx5_3")
    failed = [c for c in _hardware_checks.link_checks("gpu-node-02", facts(copy)) if not c["passed"]]
    assert [(c["node"], c["subject"], c["measured"], c["expected"], c["detail"]) for c in failed] == [
        ("gpu-node-02", "mlx5_3", "x8 32.0 GT/s", "x16 32.0 GT/s", bdf)
    ]
    (copy / "sys/class/infiniband/mlx5_5/ports/1/rate").write_text("200 Gb/sec (4X HDR)\n")
    failed = [c for c in _hardware_checks.link_checks("gpu-node-02", facts(copy)) if not c["passed"]]
    assert [(c["subject"], c["name"], c["measured"], c["expected"]) for c in failed][1:] == [
        ("mlx5_5", "port rate equal to the fastest rail", 200.0, 400.0)
    ]


def test_rdma_check_against_the_port_rate(lab_nodes):
    topo = facts(lab_nodes["gpu-node-01"])
    result = _perftest.parse(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
        " 1048576    5000             231.60             231.10\t\t     0.027550\n"
    )
    result["device"] = "mlx5_0"
    check = _gates.rdma_check("gpu-node-01", "gpu-node-02", topo, result, "host", 0.9)
    assert not check["passed"] and check["subject"] == "mlx5_0" and check["name"] == "rail 0 host memory"
    assert (check["measured"], check["expected"], check["threshold"]) == (231.1, 400.0, pytest.approx(360.0))
    assert "PCIe 32.0 GT/s x16" in check["detail"] and "to gpu-node-02" in check["detail"]
    line = _gates.describe(check)
    assert line.startswith("FAIL rdma gpu-node-01 mlx5_0: rail 0 host memory = 231.1 Gb/s (threshold 360.0")


def test_nccl_expected_and_checks(lab_nodes):
    topos = [facts(lab_nodes[n]) for n in sorted(lab_nodes)]
    expected = _gate_figures.nccl_expected_gbs(topos, 0.8)
    assert expected == pytest.approx(8 * 400 / 8 * 0.8)
    good = _nccltests.parse((FIX / "nccltests/all_reduce_16x_h100_2nodes.txt").read_text())
    checks = _gates.nccl_checks("two nodes", good, expected, G)
    assert checks[0]["measured"] == 338.82 and checks[0]["passed"] and checks[1]["passed"]
    bad = _nccltests.parse((FIX / "nccltests/all_reduce_16x_gh200_wrong.txt").read_text())
    checks = _gates.nccl_checks("olivia", bad, expected, G)
    assert not checks[0]["passed"]  # 134 MiB is the largest size: 89.85 GB/s against 288
    assert not checks[1]["passed"] and checks[1]["measured"] == bad["wrong_total"]
    assert checks[1]["detail"] == "first wrong at 2097152 B"


def test_real_h200_probe_passes_the_default_gates_and_a_stricter_pcie_gate_fails():
    doc = _gpuprobe.load((FIX / "gpu_probe/h200x1-2026-12-01.json").read_text())
    topo = {
        "gpus": [
            {
                "name": "GPU0",
                "bdf": "0000:00:06.0",
                "device_id": "2335",
                "model": "H200",
                "sm": 90,
                "pcie": {"max_speed_gts": 32.0, "max_width": 16, "current_speed_gts": 32.0, "current_width": 16},
            }
        ]
    }
    checks = _hardware_checks.probe_checks("h200", doc, topo, G)
    assert [(c["name"], round(c["measured"], 1), round(c["expected"], 1)) for c in checks] == [
        ("host to device copy", 55.5, 63.0),
        ("device to host copy", 55.3, 63.0),
        ("device memory copy", 4273.1, 4800.0),
    ]
    assert all(c["passed"] for c in checks)
    strict = _hardware_checks.probe_checks("h200", doc, topo, _gates.gates({"pcie_fraction": 0.9}))
    assert [c["passed"] for c in strict] == [False, False, True]


def test_probe_without_topology_uses_its_own_sysfs_link_and_name():
    doc = _gpuprobe.load((FIX / "gpu_probe/h200x1-2026-12-01-repeat.json").read_text())
    checks = _hardware_checks.probe_checks("h200", doc, {}, G)
    assert [c["expected"] for c in checks] == [pytest.approx(63.015, abs=1e-3)] * 2 + [4800.0]


def test_probe_allreduce_gate_uses_nvlink_limit():
    doc = json.loads((FIX / "gpu_probe/h200x1-2026-12-01.json").read_text())
    doc["allreduce"] = {
        "world": 2,
        "correct": True,
        "rows": [{"bytes": 1 << 30, "busbw_gbps": 320.0}, {"bytes": 4 << 30, "busbw_gbps": 350.0}],
        "plain": [{"bytes": 4 << 30, "busbw_gbps": 345.0}],
    }
    topo = {
        "gpus": [{"name": "GPU0", "sm": 90, "bdf": "0000:00:06.0"}, {"name": "GPU1", "sm": 90}],
        "paths": {"nvlink": {"GPU0": {"GPU1": 18}, "GPU1": {"GPU0": 18}}},
    }
    checks = [c for c in _hardware_checks.probe_checks("x2", _gpuprobe.load(doc), topo, G) if c["subject"] == "NVLink"]
    assert (checks[0]["measured"], checks[0]["expected"], checks[0]["threshold"]) == (350.0, 450.0, 337.5)
    assert checks[0]["passed"] and "plain PyTorch loop 345.0 GB/s" in checks[0]["detail"]
    assert checks[1]["passed"]


def test_gds_expected_from_active_storage_nics(lab_nodes):
    topo = facts(lab_nodes["gpu-node-01"])
    assert _gate_figures.gds_expected_gbs(topo) == 50.0  # one ACTIVE 400 Gb/s storage NIC; the other is unplugged
