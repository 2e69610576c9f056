#!/usr/bin/env python
"""Compare gpufabric.rollout topology discovery with nvidia-smi and NCCL on a real GPU server.

    python3 tests/hardware/compare_topology.py --facts DIR/topology.json --xml DIR/nccl-topo.xml \\
        --nccl-dump nccl-topo-dump.xml --out compare.json

Inputs: the facts and NCCL XML written by the topology role on this machine, and NCCL's own
topology dump (NCCL_TOPO_DUMP_FILE, from tests/hardware/nccl_dump.py). It runs nvidia-smi itself.
Compared:
  * GPUs: count, order and PCI bus ids (nvidia-smi --query-gpu), PCIe generation -> GT/s and
    link width, current and max; CPU affinity and NUMA affinity (nvidia-smi topo -m);
    GPU x GPU NVLink counts (topo -m NV# cells); GPU x NIC classes when NICs exist.
  * NCCL XML: for every GPU and RDMA NIC, the same bus id, class, vendor/device/subsystem ids,
    link_speed, link_width, parent PCI chain, CPU numaid, gpu dev/sm and NVLink list.
Writes a JSON result and prints a summary; exit 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def collection_path() -> None:
    base = Path(os.environ.get("GPUFABRIC_COLLECTIONS", REPO / ".collections"))
    sys.path.insert(0, str(base))


def smi(*args: str) -> str:
    return subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, check=True).stdout


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", required=True)
    ap.add_argument("--xml", required=True)
    ap.add_argument("--nccl-dump", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    collection_path()
    from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import ncclxml as _ncclxml

    facts = json.loads(Path(args.facts).read_text())
    checks: list = []

    def check(what: str, ours, theirs) -> None:
        checks.append({"what": what, "ours": ours, "nvidia": theirs, "match": ours == theirs})

    rows = [
        [c.strip() for c in line.split(",")]
        for line in smi(
            "--query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,"
            "pcie.link.width.current,pcie.link.width.max",
            "--format=csv,noheader",
        ).splitlines()
        if line.strip()
    ]
    gpus = facts["gpus"]
    check("GPU count", len(gpus), len(rows))
    for g, r in zip(gpus, rows):
        bus = r[1].lower()[-12:]
        check(f"{g['name']} index", g["index"], int(r[0]))
        check(f"{g['name']} bus id", g["bdf"], bus)
        lk = g["pcie"]
        check(f"{g['name']} current speed GT/s", lk["current_speed_gts"], GEN_GTS.get(int(r[2])))
        check(f"{g['name']} max speed GT/s", lk["max_speed_gts"], GEN_GTS.get(int(r[3])))
        check(f"{g['name']} current width", lk["current_width"], int(r[4]))
        check(f"{g['name']} max width", lk["max_width"], int(r[5]))
    topo = _topology.parse_topo_matrix(smi("topo", "-m"))
    single_node = len(facts["numa_nodes"]) <= 1
    for g in gpus:
        name = g["name"]
        check(f"{name} CPU affinity", g["local_cpulist"], topo["cpu_affinity"].get(name))
        numa = g["numa_node"]
        if numa is None and single_node:
            numa = facts["numa_nodes"][0]["id"] if facts["numa_nodes"] else 0  # sysfs -1, one node
        check(f"{name} NUMA", str(numa), topo["numa_affinity"].get(name))
        for h in gpus:
            if h is g:
                continue
            cell = topo["matrix"][name][h["name"]]
            want = int(cell[2:]) if cell.startswith("NV") else None
            check(f"{name}-{h['name']} NVLinks", facts["paths"]["nvlink"].get(name, {}).get(h["name"]), want)
        for n in facts["nics"]:
            check(f"{name}-{n['rdma_device']} class", facts["paths"]["gpu_nic"][name][n["rdma_device"]],
                  topo["matrix"][name].get(n["rdma_device"]))  # fmt: skip
    ours_xml = Path(args.xml).read_text()  # the leading ansible_managed comment is ignored by the parser
    nccl = _ncclxml.compare_topo_xml(
        ours_xml, Path(args.nccl_dump).read_text(), [n["rdma_device"] for n in facts["nics"]]
    )
    # discovery time on this machine, in-process, as the module runs it
    times = []
    for _round in range(10):
        t = time.perf_counter()
        _topology.discover("/", smi("topo", "-m"))
        times.append(time.perf_counter() - t)
    result = {
        "nvidia_smi": checks,
        "nvidia_smi_equal": all(c["match"] for c in checks),
        "nccl_xml": nccl,
        "discovery_seconds": {"min": min(times), "max": max(times)},
        "driver": smi("--query-gpu=driver_version,name", "--format=csv,noheader").strip(),
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    for c in checks:
        print(f"{'ok  ' if c['match'] else 'DIFF'} {c['what']}: ours {c['ours']!r}, nvidia-smi {c['nvidia']!r}")
    print(f"NCCL XML: {'equal' if nccl['equal'] else 'DIFFERENT'}; compared {nccl['compared']}; "
          f"ignored non-RDMA nets {nccl['ignored']}")  # fmt: skip
    for d in nccl["differences"]:
        print(f"DIFF {d}")
    print(f"discovery (incl. nvidia-smi topo -m): {min(times) * 1000:.1f}-{max(times) * 1000:.1f} ms")
    return 0 if result["nvidia_smi_equal"] and nccl["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
