"""Helm 3 (the version kubernetes.core's helm module supports) against the lab cluster, with --wait."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from controlplane_support import REPO, wait_until
from kubernetes import client

CHART = REPO / "lab" / "charts" / "gpufabric-demo"
HELM = REPO / ".tools" / "bin" / "helm"


@pytest.fixture(scope="module")
def helm(cluster, tmp_path_factory):
    if not HELM.exists():
        pytest.fail(f"no {HELM}: run 'make tools' (or 'make controlplane-test', which does)")
    home = tmp_path_factory.mktemp("helm")
    env = dict(
        os.environ,
        KUBECONFIG=str(cluster.admin),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
    )

    def run(*args, check=True):
        res = subprocess.run([str(HELM), *args], env=env, capture_output=True, text=True, check=False, timeout=180)
        if not check:
            return res
        if res.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed: {res.stderr.strip()}")
        return res.stdout

    return run


def test_install_upgrade_rollback_with_wait(cluster, helm):
    ns = "helm-test"
    apps = client.AppsV1Api(cluster.api())
    helm("install", "demo", str(CHART), "-n", ns, "--create-namespace", "--wait", "--timeout", "90s")
    dep = apps.read_namespaced_deployment("demo", ns)
    assert (dep.spec.replicas, dep.status.ready_replicas) == (1, 1)

    helm(
        "upgrade",
        "demo",
        str(CHART),
        "-n",
        ns,
        "--set",
        "replicas=3",
        "--set",
        "data.greeting=hi",
        "--wait",
        "--timeout",
        "90s",
    )

    # helm's --wait returns once the wanted replicas are ready; under load the rollout's surge Pod, or
    # the Pods a scale-down still removes, may be counted for a moment (ready 4 of 3 after the
    # upgrade, 2 of 1 after the rollback), so the settled state is awaited, bounded.
    def settled(replicas):
        dep = apps.read_namespaced_deployment("demo", ns)
        return (dep.spec.replicas, dep.status.ready_replicas, dep.status.replicas) == (replicas,) * 3

    wait_until(lambda: settled(3), "the upgraded Deployment settled at 3 ready replicas", timeout=60)
    assert client.CoreV1Api(cluster.api()).read_namespaced_config_map("demo-config", ns).data == {"greeting": "hi"}

    helm("rollback", "demo", "1", "-n", ns, "--wait", "--timeout", "90s")
    assert apps.read_namespaced_deployment("demo", ns).spec.replicas == 1
    wait_until(lambda: settled(1), "the rolled-back Deployment settled at 1 ready replica", timeout=60)
    history = json.loads(helm("history", "demo", "-n", ns, "-o", "json"))
    assert [(h["revision"], h["status"]) for h in history] == [(1, "superseded"), (2, "superseded"), (3, "deployed")]
    assert history[-1]["description"] == "Rollback to 1"


def test_chart_crds_are_installed_before_its_custom_resources(cluster, helm):
    # Helm applies crds/ first and waits until the CRD is served; then the API server validates
    # the chart's custom resource against the CRD's schema.
    chart = str(REPO / "lab" / "charts" / "gpufabric-crd-demo")
    helm("install", "profile", chart, "-n", "helm-crd", "--create-namespace", "--wait", "--timeout", "60s")
    custom = client.CustomObjectsApi(cluster.api())
    profile = custom.get_namespaced_custom_object("lab.gpufabric.io", "v1alpha1", "helm-crd", "railprofiles", "profile")
    assert profile["spec"] == {"mode": "rail", "size": 8}
    refused = helm("install", "too-big", chart, "-n", "helm-crd", "--set", "size=100", "--wait", check=False)
    assert refused.returncode != 0
    assert "spec.size: Invalid value: 100: spec.size in body should be less than or equal to 64" in refused.stderr
