"""The DRA drivers of gpufabric_k8s_device_allocation: dra, deployed by the cluster roles on the session's
lab control plane, as the collection's least-privilege identity (docs/rbac/gpufabric-rollout.yaml):

- network_operator installs dranet (the rail NICs' DRA driver) from the lab's stand-in chart
  (lab/charts/dranet, the air-gapped chart path) with the planned values: the image pinned by digest,
  the DaemonSet kept on the nodes with the plan's node-group label; kwok runs its Pods and the role
  waits until they are ready;
- gpu_operator installs the GPU Operator stand-in chart with the GPUCluster (the GPU DRA driver at the
  pinned tag) instead of the ClusterPolicy: the API server validates it against the upstream CRD, the
  operator stand-in (lab/cluster/play_operator.py) writes its status as the GPU Operator does, and the
  role's read-back and wait find every planned field and the ready state;
- (that a second run changes nothing and --check reports nothing is proven for the whole site.yml in
  dra mode by the lab's main test, lab/check.sh step 3b, as the same identity);
- the API server's discovery, read as the plan's check reads it, is accepted for dra (Kubernetes 1.36,
  resource.k8s.io/v1 served).

Everything the test installs is removed at its end (the releases, the policies, the node labels), so the
session's other tests find the cluster as before.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
from controlplane_support import REPO, crds_dir
from role_runner import run_role_playbook

HELM = REPO / ".tools" / "bin" / "helm"
DRANET_CHART = REPO / "lab" / "charts" / "dranet"
IMAGE_DIGEST = "sha256:8d452a75f32465ca69aa5a7877f476add8641fe7c91a30ace3343174c1ef695f"
pytestmark = pytest.mark.slow


def _plan_conftest():
    """tests/unit/plan/conftest.py (the lab intent, the node facts and the checker), loaded by path."""
    path = REPO / "tests" / "unit" / "plan" / "conftest.py"
    spec = importlib.util.spec_from_file_location("plan_conftest_for_dra_drivers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLAN = _plan_conftest()


@pytest.fixture(scope="module")
def dra_plan(crds) -> Dict[str, Any]:
    """The cluster plan of the two lab nodes (the cluster fixture's Node names) in dra mode, checked as the
    plan play checks it; dranet from the lab's stand-in chart."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

    specs = PLAN.load_specs(str(REPO))
    records = {}
    for index in (1, 2):
        host = f"gpu-node-0{index}"
        variables = dict(PLAN.lab_intent(), gpufabric_k8s_node_name=host)
        values, problems = PLAN.check(specs, "node", variables)
        assert problems == []
        facts = PLAN.node_facts(index)
        records[host] = _node_records.node_record(_plan_node.plan_node(values, facts), facts["topology"])
    variables = dict(
        PLAN.lab_intent(),
        gpufabric_k8s_device_allocation="dra",
        gpu_operator_components={"device_plugin": False},
        network_operator_dranet_chart_path=str(DRANET_CHART),
    )
    values, problems = PLAN.check(specs, "cluster", variables)
    assert problems == []
    return _plan_cluster.plan(values, records)


def role_variables(plan: Dict[str, Any], role: str) -> Dict[str, Any]:
    common = {
        "gpufabric_plan": plan,
        "gpufabric_kubeconfig": None,  # set per run
    }
    if role == "network_operator":
        return dict(
            common,
            network_operator_chart_path=str(REPO / "lab" / "charts" / "network-operator"),
            network_operator_helm_binary=str(HELM),
            network_operator_crds_dir=str(crds_dir()),
            network_operator_wait_timeout=60,
            network_operator_wait_delay=1,
            network_operator_dranet_wait_timeout=120,
        )
    return dict(
        common,
        gpu_operator_chart_path=str(REPO / "lab" / "charts" / "gpu-operator"),
        gpu_operator_helm_binary=str(HELM),
        gpu_operator_crds_dir=str(crds_dir()),
        gpu_operator_wait_timeout=60,
        gpu_operator_wait_delay=1,
    )


def run(cluster, tmp: Path, plan: Dict[str, Any], role: str, *extra: str) -> Dict[str, Any]:
    variables = dict(role_variables(plan, role), gpufabric_kubeconfig=str(cluster.kubeconfig))
    return run_role_playbook(tmp, f"gpufabric.rollout.{role}", variables, *extra)


def admin_json(cluster, *args: str) -> Dict[str, Any]:
    return json.loads(cluster.kubectl(*args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def cleanup(cluster, dra_plan):
    """Nothing of this test is left behind: releases, the policies and the node labels it made."""
    yield
    helm = [str(HELM), "--kubeconfig", str(cluster.admin)]
    for name, namespace in (
        ("dranet", "dranet"),
        ("gpu-operator", "gpu-operator"),
        ("network-operator", "nvidia-network-operator"),
    ):
        subprocess.run(
            [*helm, "uninstall", name, "-n", namespace, "--wait"], capture_output=True, check=False, timeout=120
        )
    cluster.kubectl("delete", "gpuclusters.nvidia.com", "--all", check=False)
    cluster.kubectl("delete", "nicclusterpolicies.mellanox.com,nicnodepolicies.mellanox.com", "--all", check=False)
    for node, labels in dra_plan["network"]["node_labels"].items():
        cluster.kubectl("label", "node", node, *(f"{key}-" for key in labels), check=False)


def test_the_roles_deploy_the_dra_drivers(cluster, dra_plan, cleanup, tmp_path):
    dranet = dra_plan["network_operator"]["dranet"]
    gpu_cluster = dra_plan["gpu_operator"]["gpu_cluster"]

    # First runs: everything is created.
    for role in ("network_operator", "gpu_operator"):
        first = run(cluster, tmp_path / f"{role}-first", dra_plan, role)
        assert first["rc"] == 0 and first["changed"] > 0, first["out"]

    # dranet: the planned image (by digest) and node affinity, one ready Pod per GPU node.
    daemonset = admin_json(cluster, "get", "daemonset", "dranet", "-n", "dranet")
    pod = daemonset["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == f"registry.k8s.io/networking/dranet:v1.4.0@{IMAGE_DIGEST}"
    assert pod["affinity"] == dranet["chart_values"]["affinity"]
    status = daemonset["status"]
    assert (status["desiredNumberScheduled"], status.get("numberReady")) == (2, 2), status
    pods = admin_json(cluster, "get", "pods", "-n", "dranet", "-l", "app=dranet")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-node-01", "gpu-node-02"]

    # GPU Operator: the GPUCluster, accepted by the API server with the upstream CRD, ready; no ClusterPolicy.
    live = admin_json(cluster, "get", "gpuclusters.nvidia.com", gpu_cluster["name"])
    assert live["spec"]["draDriver"]["version"] == gpu_cluster["expect"]["draDriver.version"] == "v0.5.0"
    assert live["spec"]["draDriver"]["repository"] == "nvcr.io/nvidia"
    assert live["status"]["state"] == "ready"
    assert admin_json(cluster, "get", "clusterpolicies.nvidia.com")["items"] == []
    # That second runs change nothing and check runs report nothing is proven for the whole site.yml
    # in dra mode by the lab's main test (lab/check.sh, step 3b), as the same identity.


CLUSTER_INFO_PLAY = """
- name: Read the API server as the plan's check does for dra
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Read the version and served APIs
      kubernetes.core.k8s_cluster_info:
        kubeconfig: "{{ kubeconfig }}"
      register: info
      no_log: true
    - name: Show the refusal, if any
      ansible.builtin.debug:
        msg: >-
          REFUSAL=[{{ info | gpufabric.rollout.dra_api_refusal }}]
          VERSION={{ info.version.server.kubernetes.gitVersion }}
"""


def test_the_lab_api_server_serves_the_dra_api(cluster, tmp_path):
    from role_runner import ansible_playbook

    (tmp_path / "play.yml").write_text(CLUSTER_INFO_PLAY)
    done = ansible_playbook(
        tmp_path,
        "-i",
        "localhost,",
        "-e",
        f"kubeconfig={cluster.kubeconfig}",
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        str(tmp_path / "play.yml"),
        env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "REFUSAL=[]" in done.stdout, done.stdout[-3000:]
    minor = re.search(r"VERSION=v1\.(\d+)\.", done.stdout)
    assert minor and int(minor.group(1)) >= 34, done.stdout[-3000:]
