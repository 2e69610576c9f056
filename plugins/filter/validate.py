# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the validate role: thin wrappers over module_utils/_perftest and _gdsio."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.module_utils import _gates, _gdsio, _perftest


def validate_rdma_plan(
    nodes, topologies, memories=("host",), base_port=18515, tool="ib_write_bw", size=1 << 20, duration=5
):
    try:
        return _perftest.plan_ring(
            list(nodes),
            dict(topologies),
            memories=list(memories),
            base_port=int(base_port),
            tool=tool,
            size=int(size),
            duration=int(duration) if duration else None,
        )
    except _perftest.PerftestError as exc:
        raise AnsibleFilterError(f"validate_rdma_plan: {exc}") from exc


def validate_gdsio_command(directory, gpu, io_type, **kwargs):
    try:
        return _gdsio.command(directory, int(gpu), int(io_type), **kwargs)
    except _gdsio.GdsioError as exc:
        raise AnsibleFilterError(f"validate_gdsio_command: {exc}") from exc


def validate_runs(results, node, fields=("peer", "device", "memory")):
    """Loop results of a command task as report runs: the item's fields plus ``output``."""
    runs = []
    for res in results or []:
        item = res.get("item") or {}
        run = {"node": node}
        run.update({k: item[k] for k in fields if k in item})
        run["output"] = (res.get("stdout") or "") + ("\n" + res["stderr"] if res.get("stderr") else "")
        if res.get("skipped"):
            continue
        runs.append(run)
    return runs


def validate_gds_run(result, node):
    """One registered gdsio loop result (item = [filesystem, io]) as a report run."""
    fs = (result.get("item") or [{}])[0]
    run = {
        "node": node,
        "filesystem": fs.get("path"),
        "output": (result.get("stdout") or "") + (result.get("stderr") or ""),
    }
    if fs.get("expected_gbps"):
        run["expected_gbps"] = float(fs["expected_gbps"])
    return run


def validate_describe(check):
    return _gates.describe(check)


class FilterModule:
    def filters(self):
        return {
            "validate_rdma_plan": validate_rdma_plan,
            "validate_gdsio_command": validate_gdsio_command,
            "validate_runs": validate_runs,
            "validate_gds_run": validate_gds_run,
            "validate_describe": validate_describe,
        }
