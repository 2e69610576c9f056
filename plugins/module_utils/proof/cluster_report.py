# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster section of the rollout report, from a cluster plan.

With ``gpufabric_k8s_device_allocation: dra`` (the plan's dra section given) the rail rows say that
a claim attaches the rail NIC, and name none of the shared-device resources, IP pools or NADs, which
dra mode does not plan (plan/dra.py ``without_rail_attachments``); the section ends with each node
group's claim templates and the GPU -> NIC pairs a claim gets (plan/dra.py ``summary_lines``).

Pure and typed, no AnsibleModule.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _plan_dra

# What attaches a rail NIC to a Pod in dra mode, in the rail rows.
DRA_ATTACHMENT = "claim (%s)" % _plan_dra.NIC_DRIVER
# Where a Pod's rail address comes from in dra mode.
DRA_ADDRESSES = "the NIC's own, from its node"


def report_text(plan: Dict[str, Any], dra: Optional[Mapping[str, Any]] = None) -> str:
    """Human-readable section for gpufabric_report_sections['cluster']; ``dra``: the plan's dra
    section (None with the device plugins)."""
    lines = ["node groups:"]
    for g in plan["node_groups"]:
        lines.append(
            "  %-32s %3d nodes  GPU %s x%s  NIC %s  rails %d"
            % (
                g["name"],
                len(g["nodes"]),
                g["gpu_model"],
                g["gpu_count"],
                "/".join(g["nic_models"]),
                len(g["rail_indexes"]),
            )
        )
    lines.append("rails:")
    if dra:
        lines.extend(_dra_rails(plan))
        lines.extend(_plan_dra.summary_lines(dra))
        return "\n".join(lines) + "\n"
    lines.append(
        "  %-8s %-18s %-15s %-24s %-10s %-34s %s"
        % ("rail", "subnet", "gateway", "resource", "pool", "NADs", "capacity")
    )
    for r in plan["rails"]:
        cap = r["capacity"]
        lines.append(
            "  %-8s %-18s %-15s %-24s %-10s %-34s %d/%d used by %d nodes, mtu %d%s"
            % (
                r["name"],
                r["subnet"],
                r["gateway"] or "-",
                r["resource"],
                r["pool"] or "(whereabouts)",
                ",".join(r["nads"]),
                cap["needed"],
                cap["usable"],
                r["nodes"],
                r["mtu"],
                "" if r["vlan"] is None else ", vlan %d" % r["vlan"],
            )
        )
    return "\n".join(lines) + "\n"


def _dra_rails(plan: Dict[str, Any]) -> list:
    """The rail rows of dra mode: the rail's subnet and gateway, the claim that attaches the NIC, and
    where a Pod's address comes from: the NIC's own on its node, which dranet moves with it (no pool
    is planned in dra mode; docs/dra.md, "Rail addresses")."""
    lines = ["  %-8s %-18s %-15s %-24s %s" % ("rail", "subnet", "gateway", "attached by", "Pod addresses")]
    for r in plan["rails"]:
        lines.append(
            "  %-8s %-18s %-15s %-24s %s, %d nodes, mtu %d"
            % (r["name"], r["subnet"], r["gateway"] or "-", DRA_ATTACHMENT, DRA_ADDRESSES, r["nodes"], r["mtu"])
        )
    return lines
