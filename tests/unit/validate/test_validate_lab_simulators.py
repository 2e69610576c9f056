"""Lab simulators of ib_write_bw, gdsio and all_reduce_perf, run as processes on two lab
snapshots, through the same plan, parsers, gates and report module the role uses: a healthy pair
passes; a NIC down-trained to x8 on node 2 fails, named with its figures."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from lab_runs import evaluate, gds_runs, run_ring, sim
from validate_support import degrade, facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest


@pytest.fixture
def cluster(lab_nodes, tmp_path):
    nodes = {}
    for name, root in lab_nodes.items():
        nodes[name] = tmp_path / name
        shutil.copytree(root, nodes[name], symlinks=True)
    return nodes


def test_healthy_lab_passes_every_gate(cluster, tmp_path):
    topologies = {n: facts(r) for n, r in cluster.items()}
    rdma = run_ring(cluster, topologies, memories=("host", "gpu"))
    assert len(rdma) == 2 * 8 * 2  # both directions, 8 rails, host and GPU memory
    first = _perftest.parse(rdma[0]["output"])
    assert first["device"] == rdma[0]["device"] and first["bw_avg_gbps"] == pytest.approx(
        400 * 0.97 * (1 << 20) / ((1 << 20) + 2048), rel=1e-3
    )
    assert _perftest.parse(next(r["output"] for r in rdma if r["memory"] == "gpu"))["cuda"]["name"] == "NVIDIA H200"
    checks = evaluate(cluster, rdma, gds_runs(cluster, tmp_path))[0]
    failed = [c for c in checks if not c["passed"]]
    assert not failed, failed
    assert {c["category"] for c in checks} == {"host", "rdma", "gds"}


def test_degraded_nic_fails_naming_node_nic_and_figure(cluster):
    bdf = degrade(cluster["gpu-node-02"], "mlx5_3")
    topologies = {n: facts(r) for n, r in cluster.items()}
    rdma = run_ring(cluster, topologies)
    checks = evaluate(cluster, rdma)[0]
    failed = [c for c in checks if not c["passed"]]
    rail = next(n["rail"] for n in topologies["gpu-node-02"]["nics"] if n["rdma_device"] == "mlx5_3")
    assert {(c["category"], c["node"], c["subject"]) for c in failed} == {
        ("host", "gpu-node-02", "mlx5_3"),  # the link itself
        ("rdma", "gpu-node-02", "mlx5_3"),  # node 2 sending on it
        (
            "rdma",
            "gpu-node-01",
            next(n["rdma_device"] for n in topologies["gpu-node-01"]["nics"] if n.get("rail") == rail),
        ),
    }
    rdma_fail = next(c for c in failed if c["category"] == "rdma" and c["node"] == "gpu-node-02")
    assert rdma_fail["measured"] == pytest.approx(
        32 * 8 * 128 / 130 * 0.92 * 0.97 * (1 << 20) / ((1 << 20) + 2048), rel=1e-3
    )
    assert rdma_fail["threshold"] == pytest.approx(360.0)
    assert "trained below its x16" in rdma_fail["detail"]
    host_fail = next(c for c in failed if c["category"] == "host")
    assert host_fail["detail"] == bdf and host_fail["measured"] == "x8 32.0 GT/s"


def test_all_reduce_simulator_across_nodes_and_the_degraded_rail(cluster):
    env = {"OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    degrade(cluster["gpu-node-02"], "mlx5_3")
    raw = {}
    for node, root in cluster.items():
        argv, full = sim("all_reduce_perf", root, "-b", "1M", "-e", "8G", "-f", "2", "-g", "8", env=env)
        raw[node] = subprocess.run(argv, env=full, capture_output=True, text=True, check=True).stdout
    healthy, degraded = (_nccltests.parse(raw[n]) for n in ("gpu-node-01", "gpu-node-02"))
    assert healthy["ranks"] == 16 and healthy["rows"][-1]["bytes"] == 8 << 30 and healthy["wrong_total"] == 0
    assert healthy["peak_busbw_gbps"] == pytest.approx(8 * 400 / 8 * 0.92, rel=0.01)
    assert degraded["peak_busbw_gbps"] < 0.75 * healthy["peak_busbw_gbps"]  # the slowest rail paces the rings
    runs = [{"name": node, "nodes": sorted(cluster), "output": raw[node]} for node in sorted(cluster)]
    checks, series = evaluate(cluster, [], nccl=runs)
    busbw = {c["subject"]: c for c in checks if c["category"] == "nccl" and c["unit"] == "GB/s"}
    assert busbw["gpu-node-01"]["passed"] and not busbw["gpu-node-02"]["passed"]
    assert busbw["gpu-node-02"]["expected"] == pytest.approx(8 * 400 / 8 * 0.8)
    assert busbw["gpu-node-02"]["threshold"] == pytest.approx(288.0)
    assert len(series["nccl"]) == 2 and series["nccl"][0]["bytes"][-1] == 8 << 30


def test_perftest_simulator_refuses_what_the_real_tool_refuses(cluster):
    root = cluster["gpu-node-01"]
    for args, message in (
        (["-d", "mlx5_99"], "mlx5_99 not found"),
        (["-d", "mlx5_0", "-x", "5"], "GID index 5"),
        (["-d", "mlx5_0", "--bogus"], "Invalid Command"),
    ):
        argv, env = sim("ib_write_bw", root, *args, "10.0.2.1")
        res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        assert res.returncode == 1 and message in res.stderr
    argv, env = sim("ib_write_bw", root, "-d", "mlx5_0", "-p", "1", "10.0.2.1")
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 1 and "Couldn't connect to 10.0.2.1:1" in res.stderr


def test_gdsio_simulator_needs_a_write_before_a_read(cluster, tmp_path):
    argv, env = sim("gdsio", cluster["gpu-node-01"], "-D", str(tmp_path), "-d", "0", "-w", "4", "-I", "0")
    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 1 and "run a write" in res.stderr
