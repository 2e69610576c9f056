# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the drain and the rolling upgrade (plugins/module_utils/apply/drain.py, _upgrade.py)."""

from __future__ import annotations


def drain_blockers(pods, pdbs, node, force=False, delete_emptydir_data=False):
    """The Pods a drain of ``node`` still waits for, each with what holds it: {count, lines, text}."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import drain as _drain

    lines = _drain.blockers(pods or [], pdbs or [], str(node), bool(force), bool(delete_emptydir_data))
    return _drain.summary(lines)


def upgrade_stop(failed, total, max_fail_percentage):
    """True once more than ``max_fail_percentage`` percent of the ``total`` nodes to upgrade failed."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade

    return _upgrade.stop(int(failed), int(total), int(max_fail_percentage))


def drain_target(by_name, by_label, host, mode, required, names, kubelet, variable):
    """Which Node a reload of ``host`` drains, failing closed: {in_cluster, name, node, refuse} (_drain.target)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import drain as _drain

    return _drain.target(
        str(host),
        str(mode),
        bool(required),
        [str(n) for n in names or [] if n],
        by_name or {},
        by_label or {},
        bool(kubelet),
        str(variable),
    )


def allocation_missing(mode, node, slices, rails=False):
    """What a Node does not publish yet for the device allocation ``mode`` (allocation_migration.missing)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_migration as _migration

    return _migration.missing(str(mode), node or {}, list(slices or []), bool(rails))


class FilterModule:
    def filters(self):
        return {
            "allocation_missing": allocation_missing,
            "drain_blockers": drain_blockers,
            "drain_target": drain_target,
            "upgrade_stop": upgrade_stop,
        }
