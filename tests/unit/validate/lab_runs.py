"""Lab runs of the validate tests: the lab's ib_write_bw, gdsio and all_reduce_perf simulators run
as processes on lab hardware trees, giving the raw runs the report module takes, and that module
itself (plugins/modules/validate_report.py) to evaluate them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

from validate_support import REPO, facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest

SIM = REPO / "lab/simulators"


def load_module():
    spec = importlib.util.spec_from_file_location("validate_report_module", REPO / "plugins/modules/validate_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sim(tool, sysroot, *args, env=None, **kw):
    full = dict(os.environ, GPUFABRIC_LAB_SYSROOT=str(sysroot), GPUFABRIC_LAB_PERFTEST_TIMEOUT="20", **(env or {}))
    return [sys.executable, str(SIM / tool), *args], full


def run_ring(nodes, topologies, memories=("host",), port=None):
    """Run the planned perftest ring with the simulators; returns the report's rdma runs."""
    port = port or 20000 + os.getpid() % 20000
    plan = _perftest.plan_ring(sorted(nodes), topologies, memories=memories, base_port=port, duration=2)
    servers = []
    for node, runs in plan.items():
        for run in runs["servers"]:
            argv, env = sim("ib_write_bw", nodes[node], *run["argv"][1:])
            servers.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    time.sleep(0.5)
    out = []
    try:
        for node, runs in plan.items():
            for run in runs["clients"]:
                argv, env = sim("ib_write_bw", nodes[node], *run["argv"][1:])
                # As the role does (until rc == 0): a server may not listen yet on a busy machine.
                for _attempt in range(10):
                    res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=30)
                    if res.returncode == 0 or "Couldn't connect" not in res.stderr:
                        break
                    time.sleep(0.5)
                assert res.returncode == 0, res.stderr
                out.append(
                    {
                        "node": node,
                        "peer": run["peer"],
                        "device": run["device"],
                        "memory": run["memory"],
                        "output": res.stdout,
                    }
                )
        for proc in servers:
            stdout, stderr = proc.communicate(timeout=30)
            assert proc.returncode == 0, stderr
            assert _perftest.parse(stdout)["role"] == "server"
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.kill()
    return out


def gds_runs(nodes, tmp_path):
    runs = []
    for node, root in nodes.items():
        directory = tmp_path / f"gds-{node}"
        directory.mkdir()
        for io in (1, 0):
            argv, env = sim("gdsio", root, *_gdsio.command(str(directory), 0, io, duration=2)[1:])
            res = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            assert res.returncode == 0, res.stderr
            runs.append({"node": node, "filesystem": "/lab/gds", "output": res.stdout})
    return runs


def nccl_runs(nodes, name_prefix=""):
    """all_reduce_perf (1 MiB to 8 GiB) on each node as one of a two-node run, as the lab's NCCL Jobs."""
    env = {"OMPI_COMM_WORLD_SIZE": str(len(nodes)), "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}
    runs = []
    for node in sorted(nodes):
        argv, full = sim("all_reduce_perf", nodes[node], "-b", "1M", "-e", "8G", "-f", "2", "-g", "8", env=env)
        out = subprocess.run(argv, env=full, capture_output=True, text=True, check=True).stdout
        runs.append({"name": f"{name_prefix}{node}", "nodes": sorted(nodes), "output": out, "source": "lab simulator"})
    return runs


def evaluate(nodes, rdma, gds=(), nccl=(), probe=(), checks=()):
    """The report module's checks and series of these runs on these nodes."""
    params = {
        "topology": {n: facts(r) for n, r in nodes.items()},
        "rdma": list(rdma),
        "gds": list(gds),
        "nccl": list(nccl),
        "probe": list(probe),
        "checks": list(checks),
        "host_links": True,
        "gates": {},
    }
    checks, series, _gates_used = load_module().evaluate(params)
    return checks, series
