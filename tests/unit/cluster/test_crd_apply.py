"""The CRDs network_operator and gpu_operator ship are applied through gpufabric.rollout.k8s_apply, in one
call per role: it retries transient answers and sends no PATCH for a CRD already as applied
(plugins/module_utils/apply/k8s_applied.py). kubernetes.core.k8s with ``apply: true`` ran one module per CRD
and sent a server-side apply of every CRD on every run, a no-op rerun's only writes
(benchmarks/bench_cluster_layer.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]


def tasks(path):
    def walk(items):
        for task in items or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))

    return list(walk(yaml.safe_load((REPO / path).read_text())))


@pytest.mark.parametrize(
    "path, name",
    [
        ("roles/network_operator/tasks/apply.yml", "Apply the CRDs the chart does not install"),
        ("roles/gpu_operator/tasks/apply.yml", "Apply the GPU Operator CRDs the chart needs before its ClusterPolicy"),
    ],
)
def test_the_crds_are_applied_in_one_k8s_apply_call(path, name):
    found = [t for t in tasks(path) if t.get("name") == name]
    assert len(found) == 1, path
    task = found[0]
    assert "gpufabric.rollout.k8s_apply" in task and "loop" not in task, task
    args = task["gpufabric.rollout.k8s_apply"]
    assert args["conflicts"] == "take"  # the role keeps its CRDs as shipped, as force_conflicts did
    ssa = [t for t in tasks(path) if (t.get("kubernetes.core.k8s") or {}).get("apply")]
    assert ssa == [], f"{path}: server-side applies through kubernetes.core.k8s"
