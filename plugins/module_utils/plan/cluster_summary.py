# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan says of itself: each node's summary line, the chart sources with whether they are
verified, the cluster plan's readable summary, and the plan files written on the controller
(plan.json, summary.txt)."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Dict, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import rails as _topology_rails
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dranet as _plan_dranet
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import cluster_report as _cluster_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import render as _switch_render


def node_summary(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> str:
    pre = node_plan.get("preflight") or {}
    gpus = topology.get("gpus") or []
    model = gpus[0].get("model") if gpus else "none"
    roce = node_plan.get("roce") or {}
    parts = [
        f"{pre.get('os')}, kernel {pre.get('kernel')}",
        f"{len(gpus)}x {model}",
        f"QoS on {len(roce.get('interfaces') or [])} NICs ({roce.get('backend')})",
    ]
    rail_nics = sorted({r.get("nic") for r in topology.get("rails") or []}, key=_topology_rails.name_key)
    rails = f"{len(rail_nics)} rails ({', '.join(rail_nics) or 'none'})"
    left_out = [
        f"{x['nic']} {x['state']} (needed by {', '.join(x['gpus']) or 'no GPU'})"
        for x in topology.get("rails_excluded") or []
    ]
    if left_out:
        rails += "; not a rail: " + "; ".join(left_out)
    parts.append(rails)
    for acs in roce.get("acs_redirect") or []:
        parts.append(
            "ACS redirect on {} ({}): {}".format(
                acs["bridge"], ", ".join(acs["paths"]) or "GPU-NIC path", acs["action"]
            )
        )
    doca = node_plan.get("doca_ofed")
    if doca:
        parts.append(
            "DOCA-OFED {} {}".format(doca["profile"]["profile"], doca.get("selected") or "(version from repository)")
        )
        if doca.get("unsigned"):
            parts.append("DOCA repository UNSIGNED (doca_ofed_gpg_check false, acknowledged)")
    rdma = node_plan.get("gpudirect_rdma") or {}
    parts.append(f"GPUDirect RDMA {rdma.get('method')}")
    gds = node_plan.get("gpudirect_storage")
    parts.append(f"GDS {gds['mode']}" if gds else "GDS off")
    return "; ".join(parts)


def _chart_source(var: str, name: str, version: Any, repo: str, path: str, keyring: str) -> Dict[str, Any]:
    if path:
        return {
            "chart": name or path,
            "source": path,
            "provenance": "local chart (verified by whoever placed it there)",
        }
    source = f"{repo} {name} {version}"
    if keyring:
        return {"chart": name, "source": source, "provenance": f"verified against its provenance ({keyring})"}
    return {"chart": name, "source": source, "provenance": f"NOT verified ({var} is empty)"}


def chart_sources(values: Mapping[str, Any], storage: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Where each chart the cluster roles install comes from, and whether its provenance is verified
    (helm pull --verify with the keyring given), for the summary."""
    out = []
    roles = values.get("plan_cluster_roles") or []
    for role in ("network_operator", "gpu_operator"):
        if role in roles and values.get(f"{role}_install_chart", True):
            out.append(
                _chart_source(
                    f"{role}_chart_keyring",
                    str(values.get(f"{role}_chart_name") or ""),
                    values.get(f"{role}_chart_version"),
                    str(values.get(f"{role}_chart_repo_url") or ""),
                    str(values.get(f"{role}_chart_path") or ""),
                    str(values.get(f"{role}_chart_keyring") or ""),
                )
            )
    for key, driver in sorted(((storage or {}).get("drivers") or {}).items()):
        if driver.get("kind") == "helm" and driver.get("install", True):
            out.append(
                _chart_source(
                    f"storage_csi_drivers.{key}.chart_keyring",
                    str(driver.get("chart_name") or ""),
                    driver.get("chart_version"),
                    str(driver.get("chart_repo_url") or ""),
                    str(driver.get("chart_path") or ""),
                    str(driver.get("chart_keyring") or ""),
                )
            )
    return out


def summary_text(result: Mapping[str, Any]) -> str:
    fab = result["fabric"]
    lines = [
        "gpufabric.rollout plan: {} GPU node(s), {} node group(s), mode {}".format(
            len(result["nodes"]), len(result["network"]["node_groups"]), result.get("k8s_mode")
        ),
        "fabric: {} lossless priority {}, data DSCP {} -> ToS {} (ECN {}), CNP DSCP {} on priority {}, "
        "MTU {}, PFC {}, RDMA netns {}".format(
            fab.get("transport"),
            fab.get("lossless_priority"),
            fab.get("data_dscp"),
            fab.get("roce_tos"),
            "on" if fab.get("ecn") else "off",
            fab.get("cnp_dscp"),
            fab.get("cnp_priority"),
            fab.get("mtu"),
            "on" if fab.get("pfc") else "off",
            fab.get("rdma_netns_mode"),
        ),
        "NCCL {}: NCCL_IB_TC {} on hosts and in Pods".format(result["nccl_version"], fab.get("roce_tos")),
        "nodes:",
    ]
    for host, node in result["nodes"].items():
        origin = "" if node.get("source") == "this run" else f" [stored {node.get('stored_at')}]"
        lines.append(f"  {host}: {node.get('summary')}{origin}")
    # with dra, the rail rows name the claim and the section ends with the GPU -> NIC pairs
    lines.append(_cluster_report.report_text(result["network"], result.get("dra")).rstrip("\n"))
    lines.extend(_plan_gpu_operator.summary_lines(result.get("gpu_operator")))
    counts = ", ".join(f"{part} {len(objs)}" for part, objs in result["network"]["objects"].items())
    lines.append(f"objects: {counts}")
    if result.get("dra"):  # with the device plugins the summary stays as it was; the pairs are in the report text
        lines.extend(_plan_dranet.summary_lines((result.get("network_operator") or {}).get("dranet")))
    lines.extend(_plan_storage_csi.summary_lines(result.get("storage")))
    lines.extend(f"chart {c['chart']}: {c['source']}, {c['provenance']}" for c in result.get("charts") or [])
    lines.extend(_switch_render.summary_lines(result.get("switches")))
    lines.extend(f"version skew: {note}" for note in result.get("skew_notes") or [])
    lines.extend(f"rails: {note}" for note in result.get("rail_notes") or [])
    return "\n".join(lines) + "\n"


def write_plan(plan_dir: str, result: Mapping[str, Any]) -> List[str]:
    """plan.json (the cluster plan and the plan of every node in this run) and summary.txt in
    plan_dir, rewritten only when their content changes."""
    os.makedirs(plan_dir, exist_ok=True)
    written = []
    for name, text in (
        ("plan.json", json.dumps(result, indent=1, sort_keys=True) + "\n"),
        ("summary.txt", result["summary"]),
    ):
        path = os.path.join(plan_dir, name)
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    written.append(path)
                    continue
        except OSError:
            pass
        fd, tmp = tempfile.mkstemp(dir=plan_dir, prefix=".plan-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written
