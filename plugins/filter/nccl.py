# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/_nccl.py (the nccl.conf planner)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _nccl


def nccl_conf_entries(
    topology, fabric, nccl_version, socket_ifname, topo_file=None, gid_index=None, gdr_level="auto", extra=None
):
    try:
        return dict(
            _nccl.plan(
                topology,
                fabric,
                nccl_version,
                socket_ifname,
                topo_file=topo_file or None,
                gid_index_override=gid_index,
                gdr_level=gdr_level,
                extra=extra,
            )
        )
    except _nccl.NcclPlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def nccl_version_lt(left, right):
    try:
        return _nccl.version_lt(left, right)
    except _nccl.NcclPlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"nccl_conf_entries": nccl_conf_entries, "nccl_version_lt": nccl_version_lt}
