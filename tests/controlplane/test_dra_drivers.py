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
import os
import re
import socket
import subprocess
import sys
import time
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
    return make_plan(network_operator_dranet_chart_path=str(DRANET_CHART))


def make_plan(**dranet: Any) -> Dict[str, Any]:
    """The dra cluster plan with these dranet variables."""
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
        **dranet,
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


@pytest.fixture
def oci_mirror(cluster, tmp_path):
    """A plain-HTTP OCI registry on this machine (go-containerregistry's, lab/controlplane/registry)
    holding the stand-in dranet chart, as a site's mirror holds the real one: (its chart reference,
    the manifest digest Helm reported when the chart was pushed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    registry = subprocess.Popen(
        [str(cluster.bin / "crane"), "registry", "serve", "--address", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        env = dict(
            os.environ, HELM_CONFIG_HOME=str(tmp_path / "helm-config"), HELM_CACHE_HOME=str(tmp_path / "helm-cache")
        )
        packaged = subprocess.run(
            [str(HELM), "package", str(DRANET_CHART), "-d", str(tmp_path)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert packaged.returncode == 0, packaged.stderr
        (archive,) = tmp_path.glob("dranet-*.tgz")
        ref = f"oci://127.0.0.1:{port}/networking/charts"
        for _attempt in range(50):  # until the registry listens
            pushed = subprocess.run(
                [str(HELM), "push", str(archive), ref, "--plain-http"],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if pushed.returncode == 0:
                break
            time.sleep(0.2)
        assert pushed.returncode == 0, pushed.stderr
        digest = re.search(r"Digest: (sha256:[0-9a-f]{64})", pushed.stdout + pushed.stderr)
        assert digest, pushed.stdout + pushed.stderr
        yield f"{ref}/dranet", digest.group(1)
    finally:
        registry.terminate()
        registry.wait(timeout=30)


def dranet_releases(cluster) -> list:
    """The Helm releases of the dranet namespace, as the administrator lists them."""
    listed = subprocess.run(
        [str(HELM), "--kubeconfig", str(cluster.admin), "list", "-n", "dranet", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(listed.stdout)


def test_dranet_is_pulled_from_an_oci_mirror_and_refused_unless_the_digest_is_pinned(
    cluster, oci_mirror, cleanup, tmp_path
):
    """The chart's pull path as a site with a mirror runs it: helm pull from the OCI repository
    (plain HTTP here), Helm's reported manifest digest checked against
    network_operator_dranet_chart_digest, the release installed from the pulled archive; a digest
    that is not the pinned one is refused naming the variable, and the release stays as it was."""
    ref, digest = oci_mirror
    mirror = dict(
        network_operator_dranet_chart_ref=ref,
        network_operator_dranet_chart_plain_http=True,
        network_operator_dranet_chart_path="",  # the lab's intent installs the stand-in from its directory
    )
    pinned = run(
        cluster,
        tmp_path / "pinned",
        make_plan(network_operator_dranet_chart_digest=digest, **mirror),
        "network_operator",
    )
    assert pinned["rc"] == 0, pinned["out"]
    # (the same plan with another digest is refused below: this run pulled from the mirror and checked)
    releases = dranet_releases(cluster)
    (release,) = [r for r in releases if r["name"] == "dranet"]
    assert release["status"] == "deployed" and release["chart"] == "dranet-v1.4.0", release

    other = "sha256:" + "0" * 64
    refused = run(
        cluster,
        tmp_path / "refused",
        make_plan(network_operator_dranet_chart_digest=other, **mirror),
        "network_operator",
    )
    assert refused["rc"] != 0, refused["out"]
    assert "network_operator_dranet_chart_digest" in refused["out"] and digest in refused["out"], refused["out"]
    after = dranet_releases(cluster)
    assert [r["revision"] for r in after if r["name"] == "dranet"] == [release["revision"]]
