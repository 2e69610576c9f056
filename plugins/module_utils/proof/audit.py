# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit: what a GPU node holds, judged without refusing, on any node (one the collection
never configured, one without RDMA NICs, without systemd, without a cluster).

``findings(node, state)`` turns what playbooks/audit.yml read into findings. A finding is
``{area, node, subject, status, name, seen, expected, action}``; ``status`` is ``ok``, ``warn``,
``fail`` or ``n/a`` (does not apply here, with the reason in ``seen``) and ``action`` says what
the collection would do about it. ``state`` holds:

* ``topology``: ``gpufabric_topology`` (topology_facts); ``gpudirect``: ``gpufabric_gpudirect``;
* ``service_mgr``: the setup fact; ``cmdline``, ``nccl_conf``, ``cufile_json``: file texts or
  None (not there), with ``files`` naming their paths; ``nccl_env``: the NCCL_* variables of the
  node's environment;
* ``probe``: ``{ran, enabled, reason}`` (the probe's own checks come from the report module);
* ``plan``: ``{intent}`` (False: no intent given), ``problems`` (the plan's refusals),
  ``index_errors`` (package indexes it could not read), ``readback`` (the read-back checks
  against the plan, or None when no plan was computed).

The checks already made for validate are reused: the link checks of ``hardware_checks``, the ACS
and IOMMU reading of ``readback``. ``audit_report.py`` turns the findings into the validate
report's check records and not-run entries. Pure; no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import cufile as _cufile
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import hardware_checks as _hardware_checks
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import readback as _readback

STATUSES = ("ok", "warn", "fail", "n/a")

Finding = Dict[str, Any]


# The expected value of a finding that records what is there without judging it.
NOTED = "any (recorded, not judged)"


def finding(area: str, node: str, subject: str, status: str, name: str, seen: Any, expected: Any = "", action=""):
    if status not in STATUSES:
        raise ValueError(f"finding status {status!r}; allowed: {', '.join(STATUSES)}")
    return {
        "area": area,
        "node": node,
        "subject": str(subject),
        "status": status,
        "name": name,
        "seen": seen,
        "expected": expected,
        "action": action,
    }


def _from_check(area: str, check: Mapping[str, Any], bad: str, action: str) -> Finding:
    """A validate check record as a finding: passed is ok, failed is ``bad``."""
    status = "ok" if check["passed"] else bad
    detail = check.get("detail") or ""
    why = action if not check["passed"] else ""
    return finding(
        area,
        check["node"],
        check["subject"],
        status,
        check["name"],
        check.get("measured"),
        check.get("expected"),
        "; ".join(x for x in (detail, why) if x),
    )


# --------------------------------------------------------------------------------------------- discovery
def discovery(node: str, topo: Mapping[str, Any], service_mgr: Optional[str]) -> List[Finding]:
    gpus = topo.get("gpus") or []
    rdma = [n for n in topo.get("nics") or [] if n.get("rdma_device")]
    rails = topo.get("rails") or []
    out = [
        finding(
            "discovery",
            node,
            "GPUs",
            "ok" if gpus else "fail",
            "NVIDIA GPUs found",
            ", ".join(f"{g.get('name')} {g.get('model') or ''} at {g.get('bdf')}".strip() for g in gpus) or "none",
            "at least one",
            "" if gpus else "nothing to roll out: the collection configures GPU nodes",
        ),
        finding(
            "discovery",
            node,
            "RDMA NICs",
            "ok" if rails else "warn",
            "rail (compute) NICs found",
            f"{len(rails)} rails; RDMA devices: " + (", ".join(str(n["rdma_device"]) for n in rdma) or "none"),
            "one rail NIC per GPU for GPUDirect RDMA",
            "" if rails else "GPUDirect RDMA and RoCE QoS do not apply; the plan refuses a node without a rail NIC",
        ),
        finding(
            "discovery",
            node,
            "service manager",
            "ok" if service_mgr == "systemd" else "warn",
            "systemd as PID 1",
            service_mgr or "unknown",
            "systemd",
            "" if service_mgr == "systemd" else "settings would not persist; the plan refuses (plan_require_systemd)",
        ),
    ]
    if topo.get("virtualized"):
        out.append(
            finding(
                "discovery",
                node,
                "platform",
                "warn",
                "bare metal",
                "virtual machine",
                "bare metal",
                "the PCIe tree is the hypervisor's: ACS and peer-to-peer paths are not judged",
            )
        )
    for w in topo.get("warnings") or []:
        if w.get("class") == "acs_redirect":
            continue  # judged below, with the GPU-NIC paths
        out.append(
            finding(
                "discovery",
                node,
                w.get("device") or w.get("nic") or "node",
                "warn",
                f"discovery warning {w.get('class')}",
                w.get("message") or w.get("class"),
                "none",
                "",
            )
        )
    return out


# --------------------------------------------------------------------------------------------- PCIe
def pcie(node: str, topo: Mapping[str, Any], cmdline: Optional[str]) -> List[Finding]:
    out = [
        _from_check("pcie", c, "fail", "reseat or check the slot and BIOS")
        for c in _hardware_checks.link_checks(node, topo)
    ]
    if not out:
        out.append(finding("pcie", node, "links", "n/a", "PCIe link at maximum", "no link figures were read"))
    mode = _readback.iommu_mode(topo.get("iommu") or {}, cmdline)
    args = [a for a in (cmdline or "").split() if "iommu" in a]
    out.append(
        finding(
            "iommu",
            node,
            "kernel",
            "warn" if mode == "translated" else "ok",
            "IOMMU off or passthrough",
            mode,
            "off or passthrough",
            ("GPUDirect peer-to-peer traffic is remapped: set iommu=pt; " if mode == "translated" else "")
            + f"kernel command line: {' '.join(args) or 'no iommu option'}",
        )
    )
    has_nic = any(n.get("rdma_device") for n in topo.get("nics") or [])
    if topo.get("virtualized") or not has_nic:
        why = "a virtual machine: the hypervisor owns ACS" if topo.get("virtualized") else "no GPU-NIC path"
        out.append(finding("acs", node, "PCIe", "n/a", "ACS redirect off on the GPU-NIC paths", why))
    else:
        for c in _readback.acs_checks(node, {}, None, topo):
            out.append(_from_check("acs", c, "fail", ""))  # its detail says how to clear it
    return out


# --------------------------------------------------------------------------------------------- driver
def driver(node: str, gd: Mapping[str, Any], has_nic: bool) -> List[Finding]:
    state = _gpudirect.driver_state(gd)
    loaded = bool(state["loaded"] and state["version"])
    out = [
        finding(
            "driver",
            node,
            "nvidia",
            "ok" if loaded else "fail",
            "GPU driver loaded",
            state["text"],
            "loaded, version known",
            "" if loaded else "the gpu_driver role installs it (or the GPU Operator, per gpufabric_gpu_driver)",
        ),
        finding(
            "driver",
            node,
            "kernel",
            "ok",
            "kernel and CUDA",
            f"kernel {gd.get('kernel_release')}, CUDA {gd.get('cuda_version') or 'unknown'}",
            NOTED,
            f"CUDA from {gd.get('cuda_version_source') or 'nowhere'}",
        ),
    ]
    decision = gd.get("decision") or {}
    dmabuf = decision.get("dmabuf") or {}
    blockers = "; ".join(dmabuf.get("blockers") or [])
    out.append(
        finding(
            "gpudirect",
            node,
            "DMA-BUF",
            "ok" if dmabuf.get("ok") else ("fail" if has_nic else "warn"),
            "DMA-BUF capable (open module, kernel >= 5.12, CUDA >= 11.7)",
            "capable" if dmabuf.get("ok") else f"not capable: {blockers or 'unknown'}",
            "capable",
            f"GPUDirect RDMA method the plan would use: {decision.get('method') or 'none'}",
        )
    )
    if has_nic:
        peer = bool(gd.get("peermem_loaded"))
        out.append(
            finding(
                "gpudirect",
                node,
                "nvidia_peermem",
                "ok" if peer or dmabuf.get("ok") else "warn",
                "nvidia-peermem loaded where DMA-BUF is not usable",
                "loaded" if peer else "not loaded",
                "not needed" if dmabuf.get("ok") else "loaded",
                "" if peer or dmabuf.get("ok") else "the gpudirect_rdma role loads it (needs MOFED/DOCA-OFED)",
            )
        )
    else:
        out.append(finding("gpudirect", node, "nvidia_peermem", "n/a", "nvidia-peermem", "no RDMA NIC"))
    return out


# --------------------------------------------------------------------------------------------- files
def storage(node: str, gd: Mapping[str, Any], text: Optional[str], path: str) -> List[Finding]:
    out = []
    if gd.get("nvidia_fs_loaded"):
        seen = f"loaded {gd.get('nvidia_fs_version') or ''}".strip()
        out.append(finding("gds", node, "nvidia_fs", "ok", "nvidia-fs loaded", seen, "loaded"))
    else:
        out.append(finding("gds", node, "nvidia_fs", "n/a", "nvidia-fs", "not loaded: GPUDirect Storage is not in use"))
    if text is None:
        out.append(finding("gds", node, path or "cufile.json", "n/a", "cufile.json", "not present"))
        return out
    try:
        data = _cufile.parse(text)
    except ValueError as exc:
        return [*out, finding("gds", node, path, "fail", "cufile.json readable", f"not readable: {exc}", "valid JSON")]
    compat = _cufile.get_path(data, "properties.allow_compat_mode", None)
    out.append(
        finding("gds", node, path, "ok", "cufile.json readable", f"valid; allow_compat_mode {compat}", "valid JSON")
    )
    return out


def nccl(node: str, text: Optional[str], path: str, env: Mapping[str, Any], topo: Mapping[str, Any]):
    entries: Dict[str, str] = {}
    out = []
    if text is None:
        out.append(finding("nccl", node, path or "nccl.conf", "n/a", "nccl.conf", "not present: NCCL's defaults"))
    else:
        entries = dict(_nccl.parse(text))
        shown = ", ".join(f"{k}={v}" for k, v in entries.items()) or "no entries"
        out.append(finding("nccl", node, path, "ok", "nccl.conf entries", shown, "", "the nccl_config role writes it"))
    merged = dict(entries, **{str(k): str(v) for k, v in (env or {}).items()})
    if env:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(env.items()))
        out.append(finding("nccl", node, "environment", "ok", "NCCL_* in the environment", shown, NOTED))
    hca = merged.get("NCCL_IB_HCA")
    if hca:
        have = {str(n.get("rdma_device")) for n in topo.get("nics") or [] if n.get("rdma_device")}
        named = [h.split(":")[0].lstrip("=^") for h in hca.split(",") if h.strip()]
        gone = [h for h in named if not any(d.startswith(h) for d in have)]
        out.append(
            finding(
                "nccl",
                node,
                "NCCL_IB_HCA",
                "fail" if gone else "ok",
                "NCCL_IB_HCA names RDMA devices of this node",
                hca,
                ", ".join(sorted(have)) or "no RDMA device",
                f"absent: {', '.join(gone)}; the nccl_config role derives it from the rails" if gone else "",
            )
        )
    return out


# --------------------------------------------------------------------------------------------- plan
def plan(node: str, state: Mapping[str, Any], has_nic: bool) -> List[Finding]:
    if not state.get("intent"):
        return [
            finding(
                "plan",
                node,
                "intent",
                "n/a",
                "what the plan would change",
                "no intent in the inventory (gpufabric_fabric): the plan was not computed; QoS is read against it",
            )
        ]
    out = [
        finding(
            "plan",
            node,
            "package index",
            "warn",
            "package index readable",
            str(err),
            "readable",
            "the plan went on without choosing package versions; a rollout would stop here",
        )
        for err in state.get("index_errors") or []
    ]
    for problem in state.get("problems") or []:
        name, _sep, why = str(problem).partition(": ")
        subject = name if why else "plan"
        out.append(
            finding("plan", node, subject, "fail", "the plan refuses", why or name, "accepted", "nothing rolls out")
        )
    readback = state.get("readback")
    if readback is None:
        if not out:
            out.append(finding("plan", node, "plan", "fail", "the plan computed", "not computed", "computed"))
        return out
    for c in readback:
        action = f"the roles would make it {c.get('expected')}"
        out.append(_from_check("plan", c, "warn", action))
    if not readback:
        out.append(finding("plan", node, "plan", "ok", "read-back against the plan", "nothing to compare", ""))
    if not has_nic:
        out.append(finding("qos", node, "RoCE QoS", "n/a", "QoS of the rail NICs", "no RDMA NIC"))
    return out


def findings(node: str, state: Mapping[str, Any]) -> List[Finding]:
    """Every finding of one node (see the module docstring for ``state``)."""
    topo = state.get("topology") or {}
    gd = state.get("gpudirect") or {}
    files = state.get("files") or {}
    has_nic = any(n.get("rdma_device") for n in topo.get("nics") or [])
    out = discovery(node, topo, state.get("service_mgr"))
    out += pcie(node, topo, state.get("cmdline"))
    out += driver(node, gd, has_nic)
    out += storage(node, gd, state.get("cufile_json"), files.get("cufile_json") or "")
    out += nccl(node, state.get("nccl_conf"), files.get("nccl_conf") or "", state.get("nccl_env") or {}, topo)
    probe = state.get("probe") or {}
    if not probe.get("ran"):
        why = probe.get("reason") or (
            "switched off (validate_probe: false)" if probe.get("enabled") is False else "no GPU was discovered"
        )
        out.append(finding("probe", node, "probe", "n/a", "GPU probe", why))
    out += plan(node, state.get("plan") or {}, has_nic)
    return out
