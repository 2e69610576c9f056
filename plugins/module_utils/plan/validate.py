# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate section of a node's plan: what the read-back reads and what it expects that the
other sections do not say directly.

The QoS, NCCL and GDS expectations are those sections themselves (``roce.interfaces``,
``nccl.entries``, ``gpudirect_storage``); this section adds the files other roles write (their
paths are those roles' variables), the kernel modules that must be loaded given the GPUDirect
RDMA method and the GDS mode (and who loads them), the IOMMU mode GDS needs, and the RDMA
netns mode when the roce role manages it. Pure; called from ``_plan_node.plan_node``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

# GDS peer-to-peer DMA needs the IOMMU off or in passthrough (NVIDIA GDS installation guide, "IOMMU").
IOMMU_FOR_GDS = ("off", "passthrough")


def _loader(who: Optional[str]) -> str:
    return "the GPU Operator's driver container" if who == "operator" else "the host roles"


def expected_modules(plan: Mapping[str, Any]) -> List[Dict[str, str]]:
    """Kernel modules the plan has loaded, each with why and by whom."""
    driver = plan.get("gpu_driver") or {}
    rdma = plan.get("gpudirect_rdma") or {}
    gds = plan.get("gpudirect_storage") or {}
    out = [
        {
            "name": "nvidia",
            "why": "the NVIDIA driver",
            "loaded_by": "the GPU Operator's driver container"
            if driver.get("managed_by") == "operator"
            else "the host",
        }
    ]
    if rdma.get("method") == "peermem":
        out.append(
            {
                "name": "nvidia_peermem",
                "why": "GPUDirect RDMA method peermem",
                "loaded_by": _loader(rdma.get("peermem_loaded_by")),
            }
        )
    if gds.get("mode") == "nvidia_fs":
        out.append(
            {"name": "nvidia_fs", "why": "GDS mode nvidia_fs", "loaded_by": _loader(gds.get("nvidia_fs_loaded_by"))}
        )
    return out


def validate_section(values: Mapping[str, Any], plan: Mapping[str, Any]) -> Dict[str, Any]:
    gds = plan.get("gpudirect_storage")
    rdma = plan.get("gpudirect_rdma") or {}
    fabric = plan.get("fabric") or {}
    return {
        "files": {
            "nccl_conf": values.get("nccl_config_path") if plan.get("nccl") else None,
            "cufile_json": values.get("gpudirect_storage_cufile_path") if gds else None,
        },
        "cufile_settings": dict(values.get("gpudirect_storage_cufile_settings") or {}) if gds else {},
        "modules": expected_modules(plan),
        "rdma_method": rdma.get("method"),
        # GDS in nvidia_fs or p2pdma mode moves data peer to peer; compat mode goes through the page cache.
        "iommu": list(IOMMU_FOR_GDS) if gds and gds.get("mode") != "compat" else None,
        "netns_mode": fabric.get("rdma_netns_mode") if values.get("roce_manage_netns", True) else None,
        "acs_clear": bool(((plan.get("roce") or {}).get("acs") or {}).get("endpoints")),
    }
