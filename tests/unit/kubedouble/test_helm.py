"""Helm 3.17 against the double: install (with --wait both ways), upgrade, rollback, list,
uninstall, a chart with CRDs, a schema-violating custom resource; releases live in Secrets."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess

import pytest
from kubedouble_support import REPO_ROOT

HELM = REPO_ROOT / ".tools" / "bin" / "helm"
CHARTS = REPO_ROOT / "lab" / "charts"


@pytest.fixture(scope="module")
def helm(double, tmp_path_factory):
    assert HELM.exists(), "Helm is installed by `make tools` (mk/kube.mk): .tools/bin/helm is missing"
    home = tmp_path_factory.mktemp("helm-home")
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }

    def run(*args, check=True):
        proc = subprocess.run(
            [str(HELM), "--kubeconfig", str(double.kubeconfig), *args],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)}: {proc.stderr}")
        return proc

    return run


def _release(core, ns, name, revision):
    secret = core.read_namespaced_secret(f"sh.helm.release.v1.{name}.v{revision}", ns)
    raw = base64.b64decode(base64.b64decode(secret.data["release"]))
    return secret, json.loads(gzip.decompress(raw))


def test_helm_version_is_pinned(helm):
    assert helm("version", "--short").stdout.startswith("v3.17.")


def test_install_upgrade_rollback_uninstall(helm, core, apps, ns):
    chart = str(CHARTS / "gpufabric-demo")
    helm("install", "demo", chart, "-n", ns, "--wait", "--timeout", "30s")
    secret, release = _release(core, ns, "demo", 1)
    assert secret.type == "helm.sh/release.v1"
    labels = secret.metadata.labels
    assert {k: labels[k] for k in ("name", "owner", "status", "version")} == {
        "name": "demo",
        "owner": "helm",
        "status": "deployed",
        "version": "1",
    }
    assert release["info"]["status"] == "deployed"
    assert core.read_namespaced_config_map("demo-config", ns).data == {"greeting": "hello"}
    assert core.read_namespaced_service("demo", ns).spec.cluster_ip
    helm(
        "upgrade",
        "demo",
        chart,
        "-n",
        ns,
        "--set",
        "replicas=3",
        "--set",
        "data.greeting=hi",
        "--wait",
        "--timeout",
        "30s",
    )
    assert apps.read_namespaced_deployment("demo", ns).spec.replicas == 3
    assert core.read_namespaced_config_map("demo-config", ns).data == {"greeting": "hi"}
    assert _release(core, ns, "demo", 1)[0].metadata.labels["status"] == "superseded"
    listed = json.loads(helm("list", "-n", ns, "-o", "json").stdout)
    assert [(r["name"], r["revision"], r["status"]) for r in listed] == [("demo", "2", "deployed")]
    helm("rollback", "demo", "1", "-n", ns, "--wait", "--timeout", "30s")
    assert apps.read_namespaced_deployment("demo", ns).spec.replicas == 1
    history = json.loads(helm("history", "demo", "-n", ns, "-o", "json").stdout)
    assert [h["status"] for h in history] == ["superseded", "superseded", "deployed"]
    helm("uninstall", "demo", "-n", ns)
    assert core.list_namespaced_secret(ns, label_selector="owner=helm").items == []
    assert core.list_namespaced_config_map(ns).items == []


def test_wait_times_out_when_readiness_is_off(helm, double, ns):
    double.set_ready(False)
    try:
        out = helm(
            "install", "slow", str(CHARTS / "gpufabric-demo"), "-n", ns, "--wait", "--timeout", "3s", check=False
        )
    finally:
        double.set_ready(True)
    assert out.returncode != 0 and "context deadline exceeded" in out.stderr


def test_chart_with_crd_and_invalid_custom_resource(helm, custom, ns):
    chart = str(CHARTS / "gpufabric-crd-demo")
    helm("install", "rails", chart, "-n", ns)
    obj = custom.get_namespaced_custom_object("lab.gpufabric.io", "v1alpha1", ns, "railprofiles", "rails")
    assert obj["spec"] == {"mode": "rail", "size": 8}
    bad = helm("install", "bad", chart, "-n", ns, "--set", "size=100", check=False)
    assert bad.returncode != 0
    assert 'RailProfile.lab.gpufabric.io "bad" is invalid: spec.size' in bad.stderr
