# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pass/fail gates of the validate stage: expected figures from discovered hardware, thresholds,
and one check record per measured thing.

Every check is a dict ``{id, category, node, subject, name, measured, expected, threshold,
fraction, unit, passed, detail}``; ``threshold = expected x fraction`` and ``passed`` is
``measured >= threshold`` (or an exact condition for the link and correctness checks, where
``expected``/``threshold`` carry the wanted value). Expected figures (computed in
``proof.gate_figures``; the checks of a node's own GPUs and links are ``proof.hardware_checks``):

* RDMA (perftest): the port's link rate from ``gpufabric_topology`` (``ports[].rate_gbps``), Gb/s.
* NCCL across nodes: ring bound of nccl-tests doc/PERFORMANCE.md, the sum over rails of the
  slowest node's rail rate / 8, in GB/s, times ``efficiency`` (NCCL's protocol overhead is about
  20 %: NVIDIA/nccl-tests issue #212, maintainer's answer; default 0.8).
* PCIe host<->device: raw per-direction rate of the link, GT/s x lanes x encoding / 8
  (8b/10b up to 5 GT/s, 128b/130b from 8 GT/s): 63.0 GB/s for 32 GT/s x16.
* Device memory: the GPU model's HBM bandwidth (vendor datasheets), against a device-to-device
  copy counted as read + write.
* NVLink all-reduce: links x per-link rate per direction (NVLink 3/4: 25 GB/s, NVLink 5: 50 GB/s),
  e.g. NV18 on H100/H200: 450 GB/s, against the probe's all-reduce bus bandwidth.
* GDS: an explicit per-filesystem figure, else the storage NICs' link rates / 8.

Pure Python (>= 3.8), no Ansible imports; ``GateError`` is the only exception for bad input.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gate_figures import (
    nic_by_device,
    nic_rate_gbps,
    pcie_gbs,
)

DEFAULT_GATES: Dict[str, float] = {
    "rdma_fraction": 0.9,
    "nccl_efficiency": 0.8,
    "nccl_fraction": 0.9,
    "nccl_min_bytes": 1 << 30,
    "gds_fraction": 0.8,
    "pcie_fraction": 0.8,
    "hbm_fraction": 0.8,
    "nvlink_fraction": 0.75,
}


class GateError(ValueError):
    """Gate settings or inputs that cannot be evaluated."""


def gates(overrides: Optional[Dict[str, Any]] = None) -> Dict[str, float]:
    """The default gates with ``overrides`` applied; fractions must be in (0, 1]."""
    out = dict(DEFAULT_GATES)
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_GATES:
            raise GateError(f"unknown gate '{key}'; known: {', '.join(sorted(DEFAULT_GATES))}")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise GateError(f"gate '{key}' is {value!r}; it must be a number")
        if key.endswith(("_fraction", "_efficiency")) and not 0 < value <= 1:
            raise GateError(f"gate '{key}' is {value}; a fraction must be above 0 and at most 1")
        out[key] = float(value)
    return out


def _check(category: str, node: str, subject: str, name: str, **kw: Any) -> Dict[str, Any]:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{category}.{node}.{subject}.{name}").strip("-")
    out = {"id": slug, "category": category, "node": node, "subject": subject, "name": name}
    out.update({"measured": None, "expected": None, "threshold": None, "fraction": None, "unit": None})
    out.update({"passed": False, "detail": ""})
    out.update(kw)
    return out


def _ratio_check(category, node, subject, name, measured, expected, fraction, unit, detail="") -> Dict[str, Any]:
    what = (category, node, subject, name)
    if expected is None:
        detail = (detail + "; " if detail else "") + "no expected figure could be derived"
        return _check(*what, measured=measured, unit=unit, passed=False, detail=detail)
    threshold = expected * fraction
    passed = measured is not None and measured >= threshold
    figures = {"measured": measured, "expected": expected, "threshold": threshold, "fraction": fraction}
    return _check(*what, unit=unit, passed=passed, detail=detail, **figures)


def _pcie_note(what: str, link: Dict[str, Any], needed_gbps: Optional[float]) -> str:
    cur = pcie_gbs(link.get("current_speed_gts"), link.get("current_width"))
    if cur is None:
        return ""
    note = f"{what} PCIe {link.get('current_speed_gts')} GT/s x{link.get('current_width')} ({cur * 8:.0f} Gb/s raw)"
    if link.get("max_width") and link.get("current_width") and link["current_width"] < link["max_width"]:
        note += f", trained below its x{link['max_width']}"
    if needed_gbps and cur * 8 < needed_gbps:
        note += f", below the {needed_gbps:.0f} Gb/s link rate"
    return note


def rdma_check(
    node: str, peer: str, topology: Dict[str, Any], result: Dict[str, Any], memory: str, fraction: float
) -> Dict[str, Any]:
    """One perftest result (``_perftest.parse``) of ``node``'s NIC toward ``peer``: average Gb/s
    against ``fraction`` x the NIC's port rate. ``memory`` is ``host`` or ``gpu``."""
    device = result.get("device") or "?"
    nic = nic_by_device(topology, device) or {}
    rate = nic_rate_gbps(nic)
    peak = max(result["rows"], key=lambda r: r["bw_avg_gbps"])
    detail = f"{peak['bytes']} B messages, {memory} memory, to {peer}"
    note = _pcie_note("NIC", nic.get("pcie") or {}, rate)
    if note:
        detail += "; " + note
    name = f"rail {nic.get('rail')}" if nic.get("rail") is not None else "link"
    return _ratio_check(
        "rdma", node, device, f"{name} {memory} memory", result["bw_avg_gbps"], rate, fraction, "Gb/s", detail
    )


def nccl_checks(
    name: str,
    result: Dict[str, Any],
    expected: Optional[float],
    g: Dict[str, float],
    source: str = "",
    nodes: Optional[List[str]] = None,
) -> List[Dict]:
    """Gate one nccl-tests run: bus bandwidth (best out-of-place figure at sizes >= nccl_min_bytes,
    else the largest size) and correctness (#wrong, out-of-bounds). ``source`` says where the
    figures come from (a Job's launcher Pod, the lab's simulator on a node); it ends each detail."""
    rows = [r for r in result["rows"] if r["bytes"] >= g["nccl_min_bytes"]] or [result["rows"][-1]]
    best = max(rows, key=lambda r: r["out_of_place"]["busbw_gbps"])
    hosts = ",".join(result.get("hosts") or []) or "cluster"
    tail = f"; source: {source}" if source else ""
    detail = f"{result.get('ranks') or '?'} ranks on {hosts}, best at {best['bytes']} B{tail}"
    node = ",".join(nodes) if nodes else hosts  # the inventory's names when the caller knows them
    checks = [
        _ratio_check(
            "nccl",
            node,
            name,
            "all-reduce bus bandwidth",
            best["out_of_place"]["busbw_gbps"],
            expected,
            g["nccl_fraction"],
            "GB/s",
            detail,
        )
    ]
    oob = result.get("out_of_bounds") or {}
    wrong = result.get("wrong_total") or 0
    bad = wrong > 0 or oob.get("ok") is False
    first = next((r["bytes"] for r in result["rows"] if (r["out_of_place"].get("wrong") or 0) > 0), None)
    checks.append(
        _check(
            "nccl",
            node,
            name,
            "all-reduce results correct",
            measured=wrong,
            expected=0,
            threshold=0,
            unit="wrong elements",
            passed=not bad,
            detail=(f"first wrong at {first} B" if first else "no wrong elements") + tail,
        )
    )
    return checks


def gds_check(node: str, filesystem: str, result: Dict[str, Any], expected: Optional[float], fraction: float):
    detail = f"{result['xfer_type']}, {result['threads']} threads, {result['io_size_kib'][0]} KiB IOs"
    return _ratio_check(
        "gds",
        node,
        filesystem,
        f"gdsio {result['io_type'].lower()}",
        result["throughput_gbps"],
        expected,
        fraction,
        "GB/s",
        detail,
    )


def summary(checks: List[Dict[str, Any]]) -> Dict[str, Any]:
    failed = [c for c in checks if not c["passed"]]
    return {"total": len(checks), "passed": len(checks) - len(failed), "failed": len(failed), "ok": not failed}


def describe(check: Dict[str, Any]) -> str:
    """One line naming node, subject, what and the numbers: for failure lists and the text report."""
    state = "FAIL" if not check["passed"] else "WARN" if check.get("status") == "warn" else "PASS"
    head = f"{state} {check['category']} {check['node']} {check['subject']}: {check['name']}"
    if isinstance(check.get("measured"), (int, float)) and not isinstance(check["measured"], bool):
        nums = f"{check['measured']:.1f} {check['unit']}"
        if check.get("threshold") is not None and check.get("expected") is not None:
            nums += (
                f" (threshold {check['threshold']:.1f} = {check['fraction']:.2f} x expected "
                f"{check['expected']:.1f} {check['unit']})"
                if check.get("fraction")
                else f" (expected {check['expected']})"
            )
    else:
        nums = f"{check.get('measured')} (expected {check.get('expected')})"
    tail = f" [{check['detail']}]" if check.get("detail") else ""
    return f"{head} = {nums}{tail}"
