# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster section of the rollout report, from a cluster plan.

Pure and typed, no AnsibleModule.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

from typing import Any, Dict


def report_text(plan: Dict[str, Any]) -> str:
    """Human-readable section for gpufabric_report_sections['cluster']."""
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
