# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The expected figures of the validate gates, from discovered hardware (proof/gates.py says where each
comes from): the raw PCIe rate of a link, the GPU model's HBM bandwidth, NVLink bandwidth by links
and generation, a NIC's port rate, the NCCL ring bound over the rails and the GDS figure from the
storage NICs.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional

# HBM bandwidth in GB/s by PCI device id (vendor datasheets), with a fallback by model name.
HBM_GBS_BY_DEVICE = {
    "20b0": 1555.0,  # A100 SXM4 40GB
    "20b2": 2039.0,  # A100 SXM4 80GB
    "20b5": 1935.0,  # A100 PCIe 80GB
    "20f1": 1555.0,  # A100 PCIe 40GB
    "2330": 3350.0,  # H100 SXM5 80GB
    "2331": 2000.0,  # H100 PCIe
    "2321": 3900.0,  # H100 NVL
    "2335": 4800.0,  # H200 SXM 141GB
    "233b": 4800.0,  # H200 NVL
    "2342": 4000.0,  # GH200 (96 GB HBM3)
    "2348": 4900.0,  # GH200 (144 GB HBM3e)
    "26b9": 864.0,  # L40S (GDDR6)
    "26b5": 864.0,  # L40
    "27b8": 300.0,  # L4
    "2901": 8000.0,  # B200
}
HBM_GBS_BY_MODEL = {"A100": 2039.0, "H100": 3350.0, "H200": 4800.0, "GH200": 4000.0, "B200": 8000.0, "L40S": 864.0}
# NVLink per GPU by compute capability: (links, GB/s per link per direction).
NVLINK_BY_SM = {80: (12, 25.0), 90: (18, 25.0), 100: (18, 50.0)}
GPU_NAME_TO_MODEL = (("GH200", "GH200"), ("H200", "H200"), ("H100", "H100"), ("A100", "A100"), ("B200", "B200"))


def pcie_gbs(speed_gts: Optional[float], width: Optional[int]) -> Optional[float]:
    """Raw per-direction PCIe bandwidth in GB/s of a link (None when either value is unknown)."""
    if not speed_gts or not width:
        return None
    encoding = 8 / 10 if speed_gts < 8 else 128 / 130
    return speed_gts * width * encoding / 8


def hbm_gbs(gpu: Dict[str, Any]) -> Optional[float]:
    """Datasheet memory bandwidth of a GPU from its topology facts (device id, then model)."""
    return HBM_GBS_BY_DEVICE.get(str(gpu.get("device_id") or "")) or HBM_GBS_BY_MODEL.get(str(gpu.get("model") or ""))


def nvlink_gbs(topology: Dict[str, Any]) -> Optional[float]:
    """Per-GPU NVLink bandwidth per direction of a node, from the NVLink counts in its facts: the
    lowest over its GPUs of min(sum over peers, the GPU's link count) x per-link rate. With
    NVSwitches every pair shows the GPU's full count (NV18), so the cap keeps it per GPU."""
    counts = (topology.get("paths") or {}).get("nvlink") or {}
    sm_by_name = {g.get("name"): g.get("sm") for g in topology.get("gpus") or []}
    per_gpu = []
    for name, peers in counts.items():
        links, rate = NVLINK_BY_SM.get(sm_by_name.get(name) or 0, (None, None))
        if not links or not peers:
            continue
        per_gpu.append(min(sum(int(v) for v in peers.values()), links) * rate)
    return min(per_gpu) if per_gpu else None


def nic_by_device(topology: Dict[str, Any], rdma_device: str) -> Optional[Dict[str, Any]]:
    for nic in topology.get("nics") or []:
        if nic.get("rdma_device") == rdma_device:
            return nic
    return None


def nic_rate_gbps(nic: Dict[str, Any]) -> Optional[float]:
    ports = nic.get("ports") or []
    rates = [p.get("rate_gbps") for p in ports if p.get("rate_gbps")]
    return float(rates[0]) if rates else None


def nccl_expected_gbs(topologies: Iterable[Dict[str, Any]], efficiency: float) -> Optional[float]:
    """Expected all-reduce bus bandwidth across nodes in GB/s: per rail the slowest node's rate."""
    per_rail: Dict[int, float] = {}
    seen = False
    for topo in topologies:
        seen = True
        rates: Dict[int, float] = {}
        for nic in topo.get("nics") or []:
            if nic.get("role") == "compute" and nic.get("rail") is not None and nic_rate_gbps(nic):
                rates[nic["rail"]] = nic_rate_gbps(nic) or 0.0
        for rail in set(per_rail) | set(rates):
            per_rail[rail] = min(per_rail.get(rail, rates.get(rail, 0.0)), rates.get(rail, 0.0))
    if not seen or not per_rail or not sum(per_rail.values()):
        return None
    return sum(per_rail.values()) / 8 * efficiency


def gds_expected_gbs(topology: Dict[str, Any]) -> Optional[float]:
    """ACTIVE storage NICs' link rates / 8 in GB/s (None without any)."""
    rates = [
        nic_rate_gbps(n) or 0
        for n in topology.get("nics") or []
        if n.get("role") == "storage" and any("ACTIVE" in str(p.get("state")) for p in n.get("ports") or [])
    ]
    return sum(rates) / 8 if sum(rates) else None


def gpu_facts(topology: Dict[str, Any], probe_gpu: Dict[str, Any]) -> Dict[str, Any]:
    for gpu in topology.get("gpus") or []:
        if probe_gpu.get("pci_bus_id") and gpu.get("bdf") == probe_gpu["pci_bus_id"]:
            return gpu
    gpus = topology.get("gpus") or []
    index = probe_gpu.get("index")
    return gpus[index] if isinstance(index, int) and index < len(gpus) else {}


def model_from_name(name: str) -> Optional[str]:
    for needle, model in GPU_NAME_TO_MODEL:
        if needle in (name or ""):
            return model
    return None
