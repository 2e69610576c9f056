"""A field that another field manager holds is reported with that manager, never silently taken:
the k8s_publish apply path against the lab's control plane (kube-apiserver's own conflict answer).

The collection publishes two ConfigMaps; someone then changes one field of one of them with
`kubectl patch` (field manager "kubectl-patch"). With gpufabric_field_conflicts at its default
(fail) the next run stops naming the object, the field and the manager, and leaves the change in
place; the other object is still applied. With `take` the run applies the planned value over it,
naming whose field it took, and a rerun changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from controlplane_support import publish_run

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

NAMESPACE = "gpufabric-conflicts"


def publish(tmp: Path, kubeconfig: Path, mode: str, data: Dict[str, str]) -> Dict[str, Any]:
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": NAMESPACE}, "data": {"x": v}}
        for n, v in data.items()
    ]
    run = publish_run(
        tmp,
        {
            "gpufabric_kubeconfig": str(kubeconfig),
            "gpufabric_plan": {"instance": "pool-a", "field_conflicts": mode},
            "k8s_publish_component": "nccl_config",
            "k8s_publish_objects": _k8s_publish.own(objects, "nccl_config", "pool-a"),
            "k8s_publish_prune": False,
        },
    )
    done = run["done"]
    return {"rc": done.returncode, "out": done.stdout + done.stderr, "changed": run["changed"]}


def value(cluster, name: str) -> str:
    got = cluster.kubectl("get", "configmap", name, "-n", NAMESPACE, "-o", "json").stdout
    return json.loads(got)["data"]["x"]


@pytest.mark.slow
def test_a_field_another_manager_holds_is_named_with_its_manager_then_taken_only_when_asked(cluster, tmp_path):
    cluster.kubectl("create", "namespace", NAMESPACE)
    first = publish(tmp_path / "1", cluster.admin, "fail", {"rail-0": "planned", "rail-1": "planned"})
    assert first["rc"] == 0 and first["changed"] > 0, first["out"][-4000:]

    cluster.kubectl("patch", "configmap", "rail-0", "-n", NAMESPACE, "--type=merge", "-p", '{"data":{"x":"edited"}}')
    # The plan changes rail-1 as well: an object without a conflict is still applied.
    refused = publish(tmp_path / "2", cluster.admin, "fail", {"rail-0": "planned", "rail-1": "planned-2"})
    assert refused["rc"] != 0, refused["out"][-4000:]
    out = " ".join(refused["out"].split())
    assert 'ConfigMap/gpufabric-conflicts/rail-0: .data.x is held by field manager "kubectl-patch"' in out, out[-4000:]
    assert "gpufabric_field_conflicts: take" in out
    assert "rail-1:" not in out.split("did not take", 1)[-1]
    assert value(cluster, "rail-0") == "edited", "a conflict in fail mode must leave the other manager's value"
    assert value(cluster, "rail-1") == "planned-2", "the object without a conflict must still be applied"

    taken = publish(tmp_path / "3", cluster.admin, "take", {"rail-0": "planned", "rail-1": "planned-2"})
    assert taken["rc"] == 0 and taken["changed"] > 0, taken["out"][-4000:]
    assert 'ConfigMap/gpufabric-conflicts/rail-0: took .data.x from field manager "kubectl-patch"' in " ".join(
        taken["out"].split()
    )
    assert value(cluster, "rail-0") == "planned"
    again = publish(tmp_path / "4", cluster.admin, "fail", {"rail-0": "planned", "rail-1": "planned-2"})
    assert again["rc"] == 0 and again["changed"] == 0, again["out"][-4000:]
