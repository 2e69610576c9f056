# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the lossless RoCE intent and planner (plugins/module_utils/_qos_intent.py, _qos_plan.py)."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils._qos_intent import validate_intent
from ansible_collections.gpufabric.rollout.plugins.module_utils._qos_plan import (
    build_plan,
    rail_consistency_errors,
    rail_summary,
)


def roce_plan(fabric, options, topology, sysroot="/"):
    """gpufabric_fabric + roce_* options + gpufabric_topology -> the per-NIC plan."""
    return build_plan(fabric or {}, options or {}, topology or {}, sysroot=sysroot or "/")


def roce_intent_errors(fabric, options, topology=None):
    """Problems with the intent, each naming the variable ([] when good)."""
    return validate_intent(fabric or {}, options or {}, topology)


def roce_rail_summary(plan):
    """{rail: {priority, dscp, cnp_dscp, mtu}} of a node's plan."""
    return rail_summary(plan or {})


def roce_rail_consistency(per_node):
    """{node: rail_summary} -> errors naming each node whose rail settings differ."""
    return rail_consistency_errors(per_node or {})


class FilterModule:
    def filters(self):
        return {
            "roce_plan": roce_plan,
            "roce_intent_errors": roce_intent_errors,
            "roce_rail_summary": roce_rail_summary,
            "roce_rail_consistency": roce_rail_consistency,
        }
