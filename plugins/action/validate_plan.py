# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action for gpufabric.rollout.validate_plan: what the validate role measures in this run, planned on
the controller (the perftest ring over the run's nodes, the NCCL Jobs of the run's node groups) and
the run's SSH key pair for the NCCL Pods. Nothing is sent to a node."""

from __future__ import annotations

import json
from typing import Any, Dict

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _jobs

PARTS = ("rdma_ring", "nccl_jobs", "ssh_keypair")


def plain(value: Any) -> Any:
    """Plain dicts and lists (Ansible's lazy containers and tagged strings dropped)."""
    return json.loads(json.dumps(value, default=to_native))


def rdma_ring(args: Dict[str, Any], host: str) -> Dict[str, Any]:
    """This node's perftest servers and clients in the ring over ``nodes``."""
    nodes = [str(n) for n in args.get("nodes") or []]
    if host not in nodes:
        raise AnsibleActionFail(f"validate_plan: node {host} is not one of nodes {nodes}")
    duration = args.get("duration", 5)
    ring = _perftest.plan_ring(
        nodes,
        plain(args.get("topologies") or {}),
        memories=list(args.get("memories") or ["host"]),
        base_port=int(args.get("base_port", 18515)),
        tool=str(args.get("tool", "ib_write_bw")),
        size=int(args.get("size", 1 << 20)),
        duration=int(duration) if duration else None,
    )[host]
    # "skipped" would read as the task's own skipped flag in a registered result.
    return {"servers": ring["servers"], "clients": ring["clients"], "rails_not_run": ring["skipped"]}


def nccl_jobs(args: Dict[str, Any]) -> Dict[str, Any]:
    """The NCCL Jobs of this run: one per node group with two or more of the run's nodes."""
    planned = _jobs.job_set(
        plain(args.get("network") or {}),
        plain(args.get("hosts") or {}),
        plain(args.get("options") or {}),
        plain(args.get("dra")) or None,
    )
    return {"jobs": planned["jobs"], "not_run": planned["skipped"]}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _VALID_ARGS = frozenset(
        (
            "part",
            "nodes",
            "topologies",
            "memories",
            "base_port",
            "tool",
            "size",
            "duration",
            "network",
            "dra",
            "hosts",
            "options",
        )
    )

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        part = args.get("part")
        result["changed"] = False
        try:
            if part == "rdma_ring":
                result.update(rdma_ring(args, str(task_vars.get("inventory_hostname"))))
            elif part == "nccl_jobs":
                result.update(nccl_jobs(args))
            elif part == "ssh_keypair":
                private, public = _jobs.ssh_keypair()
                result["private_key"] = private
                result["public_key"] = public
            else:
                raise AnsibleActionFail(f"validate_plan: part is {part!r}; allowed: {', '.join(PARTS)}")
        except (_perftest.PerftestError, _jobs.JobPlanError) as exc:
            raise AnsibleActionFail(f"validate_plan: {exc}") from exc
        return result
