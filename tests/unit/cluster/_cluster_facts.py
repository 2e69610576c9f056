"""Topology facts for the planner tests (INTERIM: contract-shaped facts from the layout files).

To be replaced by discovery on materialised snapshots once plugins/module_utils/_topology.py lands.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

REPO = Path(__file__).resolve().parents[3]
LAYOUTS = REPO / "lab" / "snapshots" / "layouts"
MODELS = {"cx7": ("1021", "ConnectX-7"), "cx6dx": ("101d", "ConnectX-6 Dx")}


def _walk(node, numa, out):
    if isinstance(node, dict):
        if node.get("kind") in ("nic", "gpu"):
            out.append(dict(node, numa=numa))
        for value in node.values():
            _walk(value, numa, out)
    elif isinstance(node, list):
        for value in node:
            _walk(value, numa, out)


def _facts(layout: str) -> Dict[str, Any]:
    data = json.loads((LAYOUTS / (layout + ".json")).read_text())
    devs: List[Dict[str, Any]] = []
    for hb in data["host_bridges"]:
        _walk(hb, hb["numa"], devs)
    gpus = sorted([d for d in devs if d["kind"] == "gpu"], key=lambda d: d["bdf"])
    nics = sorted([d for d in devs if d["kind"] == "nic"], key=lambda d: d["bdf"])
    out_nics = []
    for i, nic in enumerate(nics):
        labels = (nic.get("port") or {}).get("ipv4") or []
        rail = next((int(x.split(":")[1]) for x in labels if x.startswith("rail:")), None)
        dev, model = MODELS[nic["model"]]
        out_nics.append(
            {
                "bdf": nic["bdf"],
                "vendor_id": "15b3",
                "device_id": dev,
                "model": model,
                "function": "pf",
                "driver": "mlx5_core",
                "numa_node": nic["numa"],
                "netdevs": [nic["netdev"]],
                "rdma_device": "mlx5_%d" % i,
                "sriov": {"total_vfs": 16, "num_vfs": 0},
                "ports": [
                    {"port": 1, "link_layer": "Ethernet", "state": "ACTIVE", "netdev": nic["netdev"], "mtu": 9000}
                ],
                "role": "compute" if rail is not None else "other",
                "rail": rail,
            }
        )
    rails = [
        {
            "rail": n["rail"],
            "gpu": "GPU%d" % n["rail"],
            "nic": n["rdma_device"],
            "netdev": n["netdevs"][0],
            "path": "PIX",
        }
        for n in out_nics
        if n["rail"] is not None
    ]
    return {
        "schema_version": 1,
        "numa_nodes": [{"id": n["id"], "cpulist": n["cpulist"]} for n in data["numa"]],
        "gpus": [
            {"index": i, "name": "GPU%d" % i, "bdf": g["bdf"], "model": g["model"].upper()} for i, g in enumerate(gpus)
        ],
        "nics": out_nics,
        "rails": sorted(rails, key=lambda r: r["rail"]),
        "nccl": {"net_gdr_level": "PXB"},
    }


def cluster_facts(spec: List[Tuple[str, int, str]]) -> Dict[str, Dict[str, Any]]:
    out = {}
    for layout, count, prefix in spec:
        for n in range(1, count + 1):
            out["%s-%d" % (prefix, n)] = _facts(layout)
    return out
