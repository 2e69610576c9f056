"""Helpers of the API fault cases: a bare private control plane (no Nodes, no CRDs: the cases
publish ConfigMaps), a publish through the role gpufabric.rollout.k8s_publish the way the cluster
roles do (as tests/controlplane/test_neighbours.py does), and what a namespace holds."""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional

import pytest
from controlplane_support import Cluster, controlplane_binaries, publish_run

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

COMPONENT = "nccl_config"
# A failed result: "fatal: [localhost]: FAILED! => {...}", or in a loop "failed: [localhost] (item=LABEL) => {...}".
_FAILED_RE = re.compile(r"^(?:fatal|failed): \[localhost\](?: \(item=([^\n]*?)\))?[^{\n]*=> (\{.*\})\s*$", re.M)


@contextlib.contextmanager
def bare_cluster(state: Path) -> Iterator[Cluster]:
    """A lab control plane of its own (lab/kube.sh in `state`); stopped and removed on exit."""
    c = Cluster(state, controlplane_binaries(), state.parent / "sysroots")
    started = c.kube_sh("start", check=False)
    if started.returncode != 0:
        c.kube_sh("stop", "--purge", check=False)
        pytest.fail("lab/kube.sh start failed:\n" + started.stderr[-3000:])
    try:
        yield c
    finally:
        c.kube_sh("stop", "--purge", check=False)


def configmaps(namespace: str, instance: str, data: Mapping[str, str]) -> List[Dict[str, Any]]:
    """The ConfigMaps {name: value of key x} of `instance`'s component, labelled as the plan labels them."""
    objects = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": namespace}, "data": {"x": v}}
        for n, v in data.items()
    ]
    return _k8s_publish.own(objects, COMPONENT, instance)


def publish(
    tmp: Path, kubeconfig: Path, namespace: str, instance: str, objects: List[Dict[str, Any]]
) -> Dict[str, Any]:
    """One ansible-playbook run of k8s_publish's apply (with pruning in `namespace`): rc, its
    output, the changed count, its wall time and its failed results as a user reads them: the
    loop item's label, then the message (not the item itself, which may hold every object)."""
    run = publish_run(
        tmp,
        {
            "gpufabric_kubeconfig": str(kubeconfig),
            "gpufabric_plan": {"instance": instance},
            "k8s_publish_component": COMPONENT,
            "k8s_publish_objects": objects,
            "k8s_publish_prune_kinds": [
                {"api_group": "", "version": "v1", "resources": ["configmaps"], "namespace": namespace}
            ],
        },
        # Each result on one line as JSON: the failed ones' messages are read back from it.
        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json", "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"},
    )
    done = run["done"]
    failures = []
    for found in _FAILED_RE.finditer(done.stdout):
        result = json.loads(found.group(2))
        failures.append(f"{found.group(1) or ''}: {result.get('msg', '')}")
    return {
        "rc": done.returncode,
        "out": done.stdout[-6000:] + done.stderr[-2000:],
        "changed": run["changed"],
        "elapsed": run["elapsed"],
        "failures": failures,
    }


def contents(cluster: Cluster, namespace: str) -> Dict[str, Dict[str, Any]]:
    """{ConfigMap name: its labels, data and resourceVersion} in `namespace`."""
    items = json.loads(cluster.kubectl("get", "configmaps", "-n", namespace, "-o", "json").stdout)["items"]
    return {
        i["metadata"]["name"]: {
            "labels": i["metadata"].get("labels") or {},
            "data": i.get("data") or {},
            "resourceVersion": i["metadata"]["resourceVersion"],
        }
        for i in items
        if i["metadata"]["name"] != "kube-root-ca.crt"
    }


def bystanders(cluster: Cluster, namespace: str) -> Dict[str, Dict[str, Any]]:
    """A neighbour inventory's objects (the same component, instance pool-b) and an object nobody
    labelled, written directly as the admin (not through any proxy); what the namespace then holds."""
    cluster.kubectl("create", "namespace", namespace)
    cluster.apply(configmaps(namespace, "pool-b", {"b-rail-0": "b0", "b-rail-1": "b1"}))
    cluster.kubectl("create", "configmap", "hand-made", "-n", namespace, "--from-literal=x=1")
    return contents(cluster, namespace)


def mismatches(
    found: Mapping[str, Mapping[str, Any]], planned: List[Dict[str, Any]], kept: Optional[Mapping[str, Any]] = None
) -> List[str]:
    """What differs from the plan (each planned object with its data and labels) and from `kept`
    (objects that must be exactly as they were, resourceVersion included)."""
    wrong = []
    for obj in planned:
        name = obj["metadata"]["name"]
        have = found.get(name)
        if have is None:
            wrong.append(f"{name}: missing")
            continue
        if have["data"] != obj["data"]:
            wrong.append(f"{name}: data {have['data']} != {obj['data']}")
        labels = obj["metadata"]["labels"]
        if {k: have["labels"].get(k) for k in labels} != labels:
            wrong.append(f"{name}: labels {have['labels']} lack {labels}")
    for name, was in (kept or {}).items():
        if found.get(name) != was:
            wrong.append(f"{name}: touched ({was} -> {found.get(name)})")
    return wrong


def lost(before: Mapping[str, Any], after: Mapping[str, Any], removed: Optional[List[str]] = None) -> List[str]:
    """Objects that were there before and are gone, apart from those the plan `removed`."""
    return sorted(set(before) - set(after) - set(removed or []))
