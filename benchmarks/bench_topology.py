#!/usr/bin/env python
"""Benchmark: topology discovery on the 8-GPU/10-NIC snapshot (dgx-h200-8x8@1).

Times what gpufabric.rollout.topology_facts does inside the module (read the nvidia-smi matrix
file, walk sysfs, compute classes and rails, format the report, render the NCCL XML), in-process
on an unpacked snapshot, and the whole module run as Ansible runs it (a fresh Python process
with the module's arguments on stdin). Prints figures; never fails on timing (target < 0.5 s
inside the module).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import report as _topology_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import ncclxml as _ncclxml

SNAPSHOT = "dgx-h200-8x8@1"
ROUNDS = 20


def load_snapshots():
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inside_module(root: str) -> float:
    t = time.perf_counter()
    with open(os.path.join(root, "nvidia-smi-topo-m.txt"), encoding="utf-8") as fh:
        text = fh.read()
    facts = _topology.discover(root, text)
    _topology_report.format_report(facts)
    _ncclxml.render_nccl_topo_xml(facts)
    return time.perf_counter() - t


def whole_module(root: str) -> float:
    args = json.dumps({"ANSIBLE_MODULE_ARGS": {"sysroot": root}})
    env = dict(os.environ, PYTHONPATH=str(REPO / ".collections"))
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "ansible_collections.gpufabric.rollout.plugins.modules.topology_facts"],
        input=args.encode(),
        capture_output=True,
        env=env,
        check=False,
    )
    dt = time.perf_counter() - t
    out = json.loads(res.stdout)
    assert len(out["ansible_facts"]["gpufabric_topology"]["rails"]) == 8, out.get("msg")
    return dt


def main() -> int:
    snapshots = load_snapshots()
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        snapshots.materialize(SNAPSHOT, tmp)
        build_s = time.perf_counter() - t
        files = sum(len(names) for _dirpath, _dirs, names in os.walk(tmp))
        inside_module(tmp)  # warm the page cache
        inside = [inside_module(tmp) for _round in range(ROUNDS)]
        whole = [whole_module(tmp) for _round in range(3)]
    print(f"snapshot {SNAPSHOT}: {files} files, materialized in {build_s:.3f} s")
    print(
        f"discovery inside the module ({ROUNDS} rounds): median {statistics.median(inside) * 1000:.1f} ms, "
        f"max {max(inside) * 1000:.1f} ms (target < 500 ms: {'met' if max(inside) < 0.5 else 'NOT met'})"
    )
    print(f"whole module process (python start + imports + discovery): median {statistics.median(whole) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
