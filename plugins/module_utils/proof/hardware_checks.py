# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate stage's checks of a node's own hardware (check records as proof/gates.py describes):
the GPU probe (host/device copies, device memory, NVLink all-reduce) against the expected figures,
and every GPU's and NIC's PCIe link and every rail port's rate against the node's fastest.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gate_figures import (
    gpu_facts,
    hbm_gbs,
    model_from_name,
    nic_rate_gbps,
    nvlink_gbs,
    pcie_gbs,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check, _ratio_check


def probe_checks(node: str, probe: Dict[str, Any], topology: Dict[str, Any], g: Dict[str, float]) -> List[Dict]:
    """Gate a GPU probe document (``_gpuprobe.load``) of ``node`` against its topology facts."""
    checks: List[Dict[str, Any]] = []
    for gpu in probe.get("gpus") or []:
        facts = gpu_facts(topology, gpu)
        subject = facts.get("name") or f"GPU{gpu.get('index')}"
        link = facts.get("pcie") or gpu.get("pcie_parsed") or {}
        raw = pcie_gbs(link.get("max_speed_gts"), link.get("max_width"))
        where = f"PCIe {link.get('max_speed_gts')} GT/s x{link.get('max_width')} raw {raw:.1f} GB/s" if raw else ""
        for key, label in (("h2d_gbps", "host to device"), ("d2h_gbps", "device to host")):
            checks.append(
                _ratio_check(
                    "gpu",
                    node,
                    subject,
                    f"{label} copy",
                    gpu.get(key),
                    raw,
                    g["pcie_fraction"],
                    "GB/s",
                    f"pinned memory, {where}",
                )
            )
        copy = (gpu.get("device_copy") or {}).get("copy_gbps")
        merged = dict(facts, model=facts.get("model") or model_from_name(gpu.get("name", "")))
        hbm = hbm_gbs(merged)
        checks.append(
            _ratio_check(
                "gpu",
                node,
                subject,
                "device memory copy",
                copy,
                hbm,
                g["hbm_fraction"],
                "GB/s",
                f"{gpu.get('name')}, read + write of a device-to-device copy",
            )
        )
    allreduce = probe.get("allreduce") or {}
    rows = allreduce.get("rows") or []
    if rows:
        best = max(rows, key=lambda r: r["busbw_gbps"])
        limit = nvlink_gbs(topology)
        plain = allreduce.get("plain") or []
        detail = f"{allreduce.get('world')} GPUs, best at {best['bytes']} B"
        if plain:
            detail += f"; plain PyTorch loop {plain[-1]['busbw_gbps']:.1f} GB/s at {plain[-1]['bytes']} B"
        checks.append(
            _ratio_check(
                "gpu",
                node,
                "NVLink",
                "all-reduce bus bandwidth",
                best["busbw_gbps"],
                limit,
                g["nvlink_fraction"],
                "GB/s",
                detail,
            )
        )
        checks.append(
            _check(
                "gpu",
                node,
                "NVLink",
                "all-reduce results correct",
                measured=allreduce.get("correct"),
                expected=True,
                threshold=True,
                unit="",
                passed=allreduce.get("correct") is True,
                detail="every rank saw n(n+1)/2",
            )
        )
    return checks


def link_checks(node: str, topology: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Every GPU's and RDMA NIC's PCIe link at its maximum width (and, for NICs, speed): a
    down-trained link is the commonest silent loss. GPUs lower their link speed when idle, so
    only their width is judged (as topology_facts' link_degraded warning does). And every rail
    NIC's port at the rate of the node's fastest rail: a port that came up at half rate passes its
    own RDMA gate (which is relative to its own rate) but not this one."""
    checks = []
    for kind, devices in (("gpu", topology.get("gpus") or []), ("nic", topology.get("nics") or [])):
        for dev in devices:
            if kind == "nic" and dev.get("function") == "vf":
                continue
            link = dev.get("pcie") or {}
            if not link.get("max_width"):
                continue
            subject = dev.get("name") if kind == "gpu" else dev.get("rdma_device") or dev.get("bdf")
            want = f"x{link['max_width']}" + ("" if kind == "gpu" else f" {link.get('max_speed_gts')} GT/s")
            have = f"x{link.get('current_width')}" + ("" if kind == "gpu" else f" {link.get('current_speed_gts')} GT/s")
            ok = (link.get("current_width") or 0) >= link["max_width"]
            if kind == "nic" and link.get("max_speed_gts"):
                ok = ok and (link.get("current_speed_gts") or 0) >= link["max_speed_gts"]
            checks.append(
                _check(
                    "host",
                    node,
                    subject,
                    "PCIe link at maximum",
                    measured=have,
                    expected=want,
                    threshold=want,
                    unit="",
                    passed=ok,
                    detail=dev.get("bdf") or "",
                )
            )
    # A NIC that discovery kept out of the rails for its health (a slower port) is judged as a rail:
    # the plan may have made it one before its port trained down, and it is missing from NCCL now.
    kept_out = {x.get("nic"): x for x in topology.get("rails_excluded") or []}
    rails = [
        n
        for n in topology.get("nics") or []
        if (n.get("role") == "compute" or n.get("rdma_device") in kept_out) and nic_rate_gbps(n)
    ]
    fastest = max((nic_rate_gbps(n) or 0.0 for n in rails), default=0.0)
    for nic in rails:
        rate = nic_rate_gbps(nic) or 0.0
        checks.append(
            _check(
                "host",
                node,
                nic.get("rdma_device") or nic.get("bdf"),
                "port rate equal to the fastest rail",
                measured=rate,
                expected=fastest,
                threshold=fastest,
                fraction=None,
                unit="Gb/s",
                passed=rate >= fastest,
                detail=(
                    f"kept out of the rails ({kept_out[nic.get('rdma_device')].get('state')})"
                    if nic.get("rdma_device") in kept_out
                    else f"rail {nic.get('rail')}"
                )
                + "; a port that negotiated a lower speed",
            )
        )
    return checks
