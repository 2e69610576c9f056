# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU node's record: the part of its plan and discovery the cluster side needs (Kubernetes node
name, fabric, NCCL version, rail QoS summary, a compact topology), and the store of records on the
controller, from which nodes outside ``--limit`` (or outside a job slice) are planned, so that a
sliced run and an unsliced run plan the same objects (plan/cluster.py)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Dict, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage as _plan_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.cluster_summary import node_summary

# 2: gpu.driver carries managed_by and precompiled; 3: storage (the node's filesystems);
# 4: upgrade (what an upgrade changes)
RECORD_VERSION = 4
_NIC_KEYS = (
    "bdf",
    "vendor_id",
    "device_id",
    "model",
    "driver",
    "function",
    "numa_node",
    "host_bridge",
    "rail",
    "role",
    "rdma_device",
    "netdevs",
    "sriov",
)
_PORT_KEYS = ("port", "netdev", "mtu")


def compact_topology(topology: Mapping[str, Any]) -> Dict[str, Any]:
    """The discovery subset the cluster planner reads (a few KiB instead of the full facts)."""
    nics = []
    for nic in topology.get("nics") or []:
        item = {key: nic.get(key) for key in _NIC_KEYS}
        item["ports"] = [{key: port.get(key) for key in _PORT_KEYS} for port in nic.get("ports") or []]
        nics.append(item)
    return {
        # index, name, NUMA node and PCIe root: the DRA planner pairs GPUs and rail NICs by them (plan/dra.py)
        "gpus": [
            {k: g.get(k) for k in ("model", "bdf", "index", "name", "numa_node", "host_bridge")}
            for g in topology.get("gpus") or []
        ],
        "nics": nics,
        "rails": [
            {k: r.get(k) for k in ("rail", "gpu", "gpu_bdf", "nic", "nic_bdf", "netdev", "roce_netdev", "roce_vlan")}
            for r in topology.get("rails") or []
        ],
        "rails_excluded": [dict(x) for x in topology.get("rails_excluded") or []],
        "numa_nodes": list(topology.get("numa_nodes") or []),
        "nccl": {"net_gdr_level": _nccl.net_gdr_level(topology)},
    }


def node_record(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "record_version": RECORD_VERSION,
        "k8s_node_name": node_plan.get("k8s_node_name"),
        "fabric": node_plan.get("fabric"),
        "nccl_version": node_plan.get("nccl_version"),
        # What must match across the nodes of a rail; {} when the node opts out (roce_check_rail_consistency).
        "roce_rails": ((node_plan.get("roce") or {}).get("rails") or {})
        if (node_plan.get("roce") or {}).get("check_rail_consistency", True)
        else {},
        "summary": node_summary(node_plan, topology),
        "gpu": gpu_record(node_plan, topology),
        "topology": compact_topology(topology),
        "storage": _plan_storage.record(node_plan.get("storage_client")),
        # What the upgrade would change on the node (playbooks/upgrade.yml plans its batches from it).
        "upgrade": {
            "changes": list(((node_plan.get("upgrade") or {}).get("changes")) or []),
            "window": bool((node_plan.get("upgrade") or {}).get("window")),
        },
    }


def gpu_record(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> Dict[str, Any]:
    """What the cluster side needs to know of a node's GPU stack (the GPU Operator's driver mode, GDS)."""
    rdma = node_plan.get("gpudirect_rdma") or {}
    gds = node_plan.get("gpudirect_storage")
    driver = rdma.get("driver") or {}
    planned = node_plan.get("gpu_driver") or {}
    return {
        "models": sorted({str(g.get("model")) for g in topology.get("gpus") or []}),
        "count": len(topology.get("gpus") or []),
        # The driver the node runs (managed_by host) or the one the GPU Operator will install (operator).
        "driver": {
            "flavour": driver.get("flavour"),
            "version": driver.get("version"),
            "managed_by": planned.get("managed_by", "host"),
            "precompiled": bool(planned.get("precompiled")),
        },
        "cuda_version": rdma.get("cuda_version"),
        "rdma_method": rdma.get("method"),
        "mofed": bool(rdma.get("mofed")),
        "doca_ofed": node_plan.get("doca_ofed") is not None,
        "gds": None if not gds else {"mode": gds.get("mode")},
    }


class DiscoveryStore:
    """<dir>/<inventory host>.json: the last record of each node, written atomically."""

    def __init__(self, path: str):
        self.path = path

    def _file(self, host: str) -> str:
        return os.path.join(self.path, os.path.basename(str(host)) + ".json")

    def load(self, host: str) -> Optional[Dict[str, Any]]:
        try:
            with open(self._file(host), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("record_version") != RECORD_VERSION:
            return None
        return data

    def save(self, host: str, record: Mapping[str, Any]) -> bool:
        """Write the record when it changed; True when the file was written."""
        old = self.load(host)
        body = dict(record)
        if old is not None and {k: v for k, v in old.items() if k != "stored_at"} == body:
            return False
        body["stored_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.makedirs(self.path, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".record-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=1, sort_keys=True)
        os.replace(tmp, self._file(host))
        return True
