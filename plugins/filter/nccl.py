# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/plan/nccl.py: reading back a written nccl.conf (the nccl_config role).

The entries themselves are planned by the plan play (gpufabric_node_plan.nccl).
"""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors
from ansible_collections.gpufabric.rollout.plugins.plugin_utils._lazy import module_utils

_nccl = module_utils("plan.nccl")


@filter_errors("shared.parse.ParseError")
def nccl_conf_parse(text):
    return dict(_nccl.parse(text or ""))


class FilterModule:
    def filters(self):
        return {"nccl_conf_parse": nccl_conf_parse}
