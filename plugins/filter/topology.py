# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the topology facts (plugins/module_utils/discover/topology.py and report.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def _check(facts):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology

    if not isinstance(facts, dict) or facts.get("schema_version") != _topology.SCHEMA_VERSION:
        raise AnsibleFilterError(
            f"expected gpufabric_topology facts (schema_version {_topology.SCHEMA_VERSION}) "
            "from gpufabric.rollout.topology_facts"
        )
    return facts


def topology_report(facts, hostname=""):
    """Human-readable report: GPUs, NICs, path-class matrix, rails, warnings."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import report as _topology_report

    return _topology_report.format_report(_check(facts), hostname)


def topology_warnings(facts, classes=None):
    """The facts' warnings, optionally only those of the given classes."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _topology

    warnings = _check(facts)["warnings"]
    if classes is None:
        return list(warnings)
    unknown = sorted(set(classes) - set(_topology.WARNING_CLASSES))
    if unknown:
        raise AnsibleFilterError(
            "unknown warning classes {}; allowed: {}".format(", ".join(unknown), ", ".join(_topology.WARNING_CLASSES))
        )
    return [w for w in warnings if w["class"] in classes]


class FilterModule:
    def filters(self):
        return {
            "topology_report": topology_report,
            "topology_warnings": topology_warnings,
        }
