# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/_nccl.py (the nccl.conf planner)."""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.module_utils import _nccl
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def _plan(topology, fabric, nccl_version, socket_ifname, topo_file, gid_index, gdr_level, extra):
    return _nccl.plan(
        topology or {},
        fabric or {},
        nccl_version,
        socket_ifname,
        topo_file=topo_file or None,
        gid_index_override=gid_index,
        gdr_level=gdr_level,
        extra=extra,
    )


@filter_errors(_nccl.NcclPlanError)
def nccl_conf_entries(
    topology, fabric, nccl_version, socket_ifname, topo_file=None, gid_index=None, gdr_level="auto", extra=None
):
    """The ordered NCCL_* entries of /etc/nccl.conf; the refusal naming the variable as a filter error."""
    return dict(_plan(topology, fabric, nccl_version, socket_ifname, topo_file, gid_index, gdr_level, extra))


def nccl_conf_error(
    topology, fabric, nccl_version, socket_ifname, topo_file=None, gid_index=None, gdr_level="auto", extra=None
):
    """'' when the plan can be made, else the refusal naming the variable (for role asserts)."""
    try:
        _plan(topology, fabric, nccl_version, socket_ifname, topo_file, gid_index, gdr_level, extra)
    except _nccl.NcclPlanError as exc:
        return str(exc)
    return ""


def nccl_conf_parse(text):
    return dict(_nccl.parse(text or ""))


@filter_errors(_nccl.NcclPlanError)
def nccl_version_lt(left, right):
    return _nccl.version_lt(left, right)


class FilterModule:
    def filters(self):
        return {f.__name__: f for f in (nccl_conf_entries, nccl_conf_error, nccl_conf_parse, nccl_version_lt)}
