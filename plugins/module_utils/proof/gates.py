# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pass/fail gates of the validate stage: expected figures from discovered hardware, thresholds,
and one check record per measured thing.

Every check is a dict ``{id, category, node, subject, name, measured, expected, threshold,
fraction, unit, passed, detail}``; ``threshold = expected x fraction`` and ``passed`` is
``measured >= threshold`` (or an exact condition for the link and correctness checks, where
``expected``/``threshold`` carry the wanted value). Expected figures:

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
from typing import Any, Dict, Iterable, List, Optional

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


def nic_by_device(topology: Dict[str, Any], rdma_device: str) -> Optional[Dict[str, Any]]:
    for nic in topology.get("nics") or []:
        if nic.get("rdma_device") == rdma_device:
            return nic
    return None


def nic_rate_gbps(nic: Dict[str, Any]) -> Optional[float]:
    ports = nic.get("ports") or []
    rates = [p.get("rate_gbps") for p in ports if p.get("rate_gbps")]
    return float(rates[0]) if rates else None


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


def gds_expected_gbs(topology: Dict[str, Any]) -> Optional[float]:
    """ACTIVE storage NICs' link rates / 8 in GB/s (None without any)."""
    rates = [
        nic_rate_gbps(n) or 0
        for n in topology.get("nics") or []
        if n.get("role") == "storage" and any("ACTIVE" in str(p.get("state")) for p in n.get("ports") or [])
    ]
    return sum(rates) / 8 if sum(rates) else None


def _gpu_facts(topology: Dict[str, Any], probe_gpu: Dict[str, Any]) -> Dict[str, Any]:
    for gpu in topology.get("gpus") or []:
        if probe_gpu.get("pci_bus_id") and gpu.get("bdf") == probe_gpu["pci_bus_id"]:
            return gpu
    gpus = topology.get("gpus") or []
    index = probe_gpu.get("index")
    return gpus[index] if isinstance(index, int) and index < len(gpus) else {}


def _model_from_name(name: str) -> Optional[str]:
    for needle, model in GPU_NAME_TO_MODEL:
        if needle in (name or ""):
            return model
    return None


def probe_checks(node: str, probe: Dict[str, Any], topology: Dict[str, Any], g: Dict[str, float]) -> List[Dict]:
    """Gate a GPU probe document (``_gpuprobe.load``) of ``node`` against its topology facts."""
    checks: List[Dict[str, Any]] = []
    for gpu in probe.get("gpus") or []:
        facts = _gpu_facts(topology, gpu)
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
        merged = dict(facts, model=facts.get("model") or _model_from_name(gpu.get("name", "")))
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
