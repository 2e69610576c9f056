"""Two inventories publishing to one cluster (two GPU pools, two teams) never prune each other's
objects: the k8s_publish apply path against the lab's control plane, the objects of each labelled
by the plan with its gpufabric.io/instance (gpufabric_instance) and pruning selecting on it.

Both publish the same component's ConfigMaps into one namespace (the riskiest case: same kind, same
component, same namespace); one inventory then drops an object from its plan. Only that object is
deleted; the other inventory's objects, and an object nobody labelled, stay; a rerun changes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from controlplane_support import publish_run, wait_until

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

NAMESPACE = "gpufabric-shared"
KINDS = [{"api_group": "", "version": "v1", "resources": ["configmaps"], "namespace": NAMESPACE}]


def configmaps(instance: str, names: List[str]) -> List[Dict[str, Any]]:
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": NAMESPACE}, "data": {"x": n}}
        for n in names
    ]
    return _k8s_publish.own(objects, "nccl_config", instance)


def publish(tmp: Path, kubeconfig: Path, instance: str, names: List[str]) -> Dict[str, Any]:
    run = publish_run(
        tmp,
        {
            "gpufabric_kubeconfig": str(kubeconfig),
            "gpufabric_plan": {"instance": instance},
            "k8s_publish_component": "nccl_config",
            "k8s_publish_objects": configmaps(instance, names),
            "k8s_publish_prune_kinds": KINDS,
        },
    )
    done = run["done"]
    return {"rc": done.returncode, "out": done.stdout[-6000:] + done.stderr[-2000:], "changed": run["changed"]}


def names(cluster) -> Dict[str, str]:
    """{ConfigMap name: its instance label} in the shared namespace."""
    items = json.loads(cluster.kubectl("get", "configmaps", "-n", NAMESPACE, "-o", "json").stdout)["items"]
    return {
        i["metadata"]["name"]: (i["metadata"].get("labels") or {}).get(_k8s_publish.INSTANCE_KEY, "")
        for i in items
        if i["metadata"]["name"] != "kube-root-ca.crt"
    }


@pytest.mark.slow
def test_two_inventories_on_one_cluster_never_prune_each_others_objects(cluster, tmp_path):
    cluster.kubectl("create", "namespace", NAMESPACE)
    cluster.kubectl("create", "configmap", "hand-made", "-n", NAMESPACE, "--from-literal=x=1")
    a = publish(tmp_path / "a1", cluster.admin, "pool-a", ["a-rail-0", "a-rail-1"])
    assert a["rc"] == 0, a["out"]
    b = publish(tmp_path / "b1", cluster.admin, "pool-b", ["b-rail-0", "b-rail-1"])
    assert b["rc"] == 0, b["out"]
    both = {"a-rail-0": "pool-a", "a-rail-1": "pool-a", "b-rail-0": "pool-b", "b-rail-1": "pool-b", "hand-made": ""}
    assert names(cluster) == both, "pool-b's publish pruned pool-a's objects"

    # pool-a drops a rail: exactly its object goes; pool-b's and the hand-made one stay.
    smaller = publish(tmp_path / "a2", cluster.admin, "pool-a", ["a-rail-0"])
    assert smaller["rc"] == 0 and smaller["changed"] > 0, smaller["out"]
    want = {k: v for k, v in both.items() if k != "a-rail-1"}
    wait_until(lambda: names(cluster) == want, "only pool-a's dropped object gone", timeout=60)
    again = publish(tmp_path / "b2", cluster.admin, "pool-b", ["b-rail-0", "b-rail-1"])
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]
    assert names(cluster) == want
