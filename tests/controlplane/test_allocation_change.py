"""The plan's cluster check refuses, before any change, a run that would move the cluster between the
device plugins and DRA (gpufabric_k8s_device_allocation) while a Pod holds GPU devices: on the
session's lab control plane, as the collection's least-privilege identity (docs/rbac/), with the
plan role's own check_cluster tasks.

- The cluster is in device_plugin mode (the GPU Operator's ClusterPolicy exists) and a Pod outside
  the operators' namespaces requests nvidia.com/gpu: a dra run is refused naming the Pod and both
  modes; a device_plugin run (no change) and a run with the guard off (hosts.yml) are not.
- Once the Pod is gone, the dra run is accepted (the maintenance window).

What the test creates (the ClusterPolicy when there was none, the namespace and its Pod) is removed
at its end.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from controlplane_support import REPO
from role_runner import ansible_playbook

pytestmark = pytest.mark.slow

NAMESPACE = "allocation-change-test"
POD = "gpu-user"
CHECK_PLAY = """
- name: The plan's cluster check, as plan.yml runs it
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  tasks:
    - name: Check the cluster variables
      ansible.builtin.include_role:
        name: gpufabric.rollout.plan
        tasks_from: check_cluster
"""
# Each key the ClusterPolicy CRD requires in spec, empty: enough for the API server to keep one.
CLUSTER_POLICY = {
    "apiVersion": "nvidia.com/v1",
    "kind": "ClusterPolicy",
    "metadata": {"name": "cluster-policy"},
    "spec": {
        key: {}
        for key in (
            "daemonsets",
            "dcgm",
            "dcgmExporter",
            "devicePlugin",
            "driver",
            "gfd",
            "nodeStatusExporter",
            "operator",
            "toolkit",
        )
    },
}


def _lab_intent() -> Dict[str, Any]:
    path = REPO / "tests" / "unit" / "plan" / "conftest.py"
    spec = importlib.util.spec_from_file_location("plan_conftest_for_allocation_change", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The lab inventory's connection settings are for its nodes; this play runs on localhost.
    return {k: v for k, v in module.lab_intent().items() if not k.startswith("ansible_")}


def check(cluster, tmp: Path, mode: str, **extra: Any):
    tmp.mkdir(parents=True, exist_ok=True)
    variables = dict(
        _lab_intent(),
        gpufabric_kubeconfig=str(cluster.kubeconfig),
        gpufabric_k8s_device_allocation=mode,
        ansible_python_interpreter=sys.executable,
        **extra,
    )
    if mode == "dra":
        variables.update(
            gpu_operator_components={"device_plugin": False},
            network_operator_dranet_chart_path=str(REPO / "lab" / "charts" / "dranet"),
        )
    (tmp / "vars.json").write_text(json.dumps(variables, default=str))
    (tmp / "play.yml").write_text(CHECK_PLAY)
    return ansible_playbook(
        tmp,
        "-i",
        "localhost,",
        str(tmp / "play.yml"),
        env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")},
        cwd=tmp,
    )


def status_of(out: str, task: str) -> str:
    """ok, skipping, fatal, ... of the task whose name ends with `task` (from its part of the output)."""
    start = re.search(r"TASK \[[^\]]*" + re.escape(task) + r"\]", out)
    if not start:
        return "absent"
    part = re.split(r"\n(?:TASK \[|PLAY RECAP)", out[start.end() :], maxsplit=1)[0]
    status = re.search(r"^(ok|skipping|fatal|changed):", part, re.MULTILINE)
    return status.group(1) if status else "unknown"


LIST = "List the Pods that may hold GPU or rail devices (the device allocation changes)"
REFUSE = "Refuse a device allocation change while Pods hold devices"


@pytest.fixture
def device_plugin_cluster(cluster):
    """The cluster in device_plugin mode (a ClusterPolicy, no GPUCluster) with a Pod holding a GPU."""
    found = cluster.kubectl("get", "gpuclusters.nvidia.com", "-o", "name", check=False)
    assert found.returncode == 0 and not found.stdout.strip(), "a GPUCluster is left in the session's cluster"
    made_policy = cluster.kubectl("get", "clusterpolicies.nvidia.com", "cluster-policy", check=False).returncode != 0
    if made_policy:
        cluster.apply([CLUSTER_POLICY])
    cluster.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": POD, "namespace": NAMESPACE},
                "spec": {
                    "containers": [
                        {"name": "main", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": 1}}}
                    ],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        ]
    )
    yield
    cluster.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)
    if made_policy:
        cluster.kubectl("delete", "clusterpolicies.nvidia.com", "cluster-policy", check=False)


def test_a_mode_change_is_refused_while_a_pod_holds_gpus(cluster, device_plugin_cluster, tmp_path):
    refused = check(cluster, tmp_path / "dra", "dra")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0, out[-3000:]
    assert status_of(out, REFUSE) == "fatal", out[-3000:]
    assert "would move the cluster from device_plugin to dra" in out, out[-3000:]
    assert f"{NAMESPACE}/{POD} (nvidia.com/gpu)" in out, out[-3000:]

    same = check(cluster, tmp_path / "same", "device_plugin")
    assert same.returncode == 0, (same.stdout + same.stderr)[-3000:]
    assert status_of(same.stdout, LIST) == "skipping", same.stdout[-3000:]  # no change: no Pod list
    guard_off = check(cluster, tmp_path / "off", "dra", plan_allocation_change_guard=False)
    assert guard_off.returncode == 0, (guard_off.stdout + guard_off.stderr)[-3000:]
    assert status_of(guard_off.stdout, LIST) == "skipping", guard_off.stdout[-3000:]

    cluster.kubectl("delete", "pod", POD, "-n", NAMESPACE, "--grace-period=0", "--force", "--wait=true")
    window = check(cluster, tmp_path / "window", "dra")
    assert window.returncode == 0, (window.stdout + window.stderr)[-3000:]
    assert status_of(window.stdout, LIST) == "ok", window.stdout[-3000:]
    assert status_of(window.stdout, REFUSE) == "skipping", window.stdout[-3000:]
