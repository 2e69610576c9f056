# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/plan/nccl.py: reading back a written nccl.conf (the nccl_config role).

The entries themselves are planned by the plan play (gpufabric_node_plan.nccl).
"""

from __future__ import annotations

from ansible_collections.gpufabric.rollout.plugins.plugin_utils._filter_errors import filter_errors


def _errors():
    from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

    return (ParseError,)


@filter_errors(_errors)
def nccl_conf_parse(text):
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl

    return dict(_nccl.parse(text or ""))


class FilterModule:
    def filters(self):
        return {"nccl_conf_parse": nccl_conf_parse}
