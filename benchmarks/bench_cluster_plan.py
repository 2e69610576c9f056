"""Benchmark: cluster networking plan for 4,096 nodes x 8 rails (issue 7: under 10 s and under 1 GB).

Input: the discovered facts of the 8 fixture nodes (tests/unit/cluster/fixtures/topology, discovery
output on the lab snapshots dgx-h200-8x8@1..8), reused round-robin as the facts of 4,096 nodes
(the planner only reads them). Prints wall time, the planner's own peak allocation (tracemalloc)
and the process peak RSS (getrusage). Never fails on timing; it exits 1 only if planning fails.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import check
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.networks import plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import fabric_of

FIXTURES = REPO / "tests" / "unit" / "cluster" / "fixtures" / "topology"
NODES = 4096
CIDRS = {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"}


def _intent():
    """gpufabric_rails and gpufabric_fabric as the plan hands them over (defaults from the specs)."""
    specs = load_specs(str(REPO))["plan"]
    spec = {"gpufabric_rails": specs["cluster_intent"]["gpufabric_rails"]}
    spec["gpufabric_fabric"] = specs["node_intent"]["gpufabric_fabric"]
    rails = {"supernet": "10.128.0.0/10", "rail_prefix": 16, "block_size": 8}
    values, problems = check(spec, {"gpufabric_rails": rails, "gpufabric_fabric": {}})
    assert not problems, problems
    return values["gpufabric_rails"], fabric_of(values)


INTENT, FABRIC = _intent()


def main() -> int:
    base = [json.loads((FIXTURES / f"dgx-h200-8x8.node{n}.json").read_text()) for n in range(1, 9)]
    nodes = {f"gpu-{i:05d}": base[i % len(base)] for i in range(NODES)}
    times = []
    for run in range(3):
        start = time.perf_counter()
        plan = plan_cluster(INTENT, nodes, CIDRS, FABRIC, "2.27.3")
        times.append(time.perf_counter() - start)
        print(f"run {run + 1}: {times[-1]:.3f} s")
    tracemalloc.start()
    plan_cluster(INTENT, nodes, CIDRS, FABRIC, "2.27.3")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    objects = sum(len(v) for v in plan["objects"].values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss is KiB on Linux
    print(
        f"cluster plan: {NODES} nodes x {len(plan['rails'])} rails -> {objects} objects, "
        f"{len(plan['node_labels'])} labelled nodes, {len(plan['node_groups'])} node group(s)"
    )
    print(f"best time {min(times):.3f} s (target < 10 s)")
    print(f"planner peak allocation {peak / 2**20:.1f} MiB (tracemalloc)")
    print(f"process peak RSS {rss:.0f} MiB (target < 1024 MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
