# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The switch section of the cluster plan: what the intent check alone cannot know (which GPU nodes
exist, which rails discovery found, the fabric's MTU from the nodes' plans) is checked here, then
the leaves' QoS is planned (switch.qos_plan); the plan action names their review files (switch.render)."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan as _qos_plan


def problems_of(
    switches: Mapping[str, Any], fabric: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], rails_listed: bool
) -> List[str]:
    problems: List[str] = []
    if int(switches["mtu"]) < int(fabric["mtu"]):
        problems.append(
            f"gpufabric_switches.mtu: {switches.get('mtu')} is below gpufabric_fabric.mtu {fabric['mtu']}; "
            "a leaf port must carry the hosts' largest frame"
        )
    known = sorted(nodes)
    discovered = sorted(
        {int(r["rail"]) for rec in nodes.values() for r in (rec.get("topology") or {}).get("rails") or []}
    )
    carried = set()
    for i, leaf in enumerate(switches.get("leaves") or []):
        for j, item in enumerate(leaf.get("rails") or []):
            carried.add(int(item["rail"]))
            for node in item.get("nodes") or []:
                if node not in nodes:
                    problems.append(
                        f"gpufabric_switches.leaves[{i}].rails[{j}].nodes: {node!r} is not a GPU node of this "
                        f"inventory; GPU nodes: {', '.join(known) or 'none'}"
                    )
            if not rails_listed and discovered and int(item["rail"]) not in discovered:
                problems.append(
                    f"gpufabric_switches.leaves[{i}].rails[{j}].rail: {item['rail']} is not a rail the GPU nodes have; "
                    f"discovered rails: {', '.join(map(str, discovered))}"
                )
    if not rails_listed:
        for rail in sorted(set(discovered) - carried):
            problems.append(
                f"gpufabric_switches.leaves: no leaf carries rail {rail}, which the GPU nodes have; name its leaf "
                "(a rail without one would pass the switch checks unseen)"
            )
    return problems


def section(
    values: Mapping[str, Any], fabric: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]
) -> Tuple[Optional[Dict[str, Any]], List[str]]:
    """(the plan's ``switches``: {mode, leaves}, or None without leaves; problems)."""
    switches = values.get("gpufabric_switches") or {}
    if not switches.get("leaves"):
        return None, []
    rails_listed = bool((values.get("gpufabric_rails") or {}).get("rails"))
    problems = problems_of(switches, fabric, nodes, rails_listed)
    if problems:
        return None, problems
    # mode: render (review files only) or apply (playbooks/switches.yml sends the NVUE leaves' QoS).
    return {"mode": switches.get("mode") or "render", "leaves": _qos_plan.plan(fabric, switches)}, []
