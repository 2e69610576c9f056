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


def nccl_conf_error(
    topology, fabric, nccl_version, socket_ifname, topo_file=None, gid_index=None, gdr_level="auto", extra=None
):
    """'' when the plan can be made, else the refusal naming the variable (for role asserts)."""
    try:
        _nccl.plan(
            topology or {},
            fabric or {},
            nccl_version,
            socket_ifname,
            topo_file=topo_file or None,
            gid_index_override=gid_index,
            gdr_level=gdr_level,
            extra=extra,
        )
    except _nccl.NcclPlanError as exc:
        return str(exc)
    return ""


def nccl_conf_parse(text):
    return dict(_nccl.parse(text or ""))


def nccl_version_lt(left, right):
    try:
        return _nccl.version_lt(left, right)
    except _nccl.NcclPlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {
            "nccl_conf_entries": nccl_conf_entries,
            "nccl_conf_error": nccl_conf_error,
            "nccl_conf_parse": nccl_conf_parse,
            "nccl_version_lt": nccl_version_lt,
        }
