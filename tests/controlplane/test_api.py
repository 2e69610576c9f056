"""The lab cluster's API server is the real one: security, CRDs with CEL and defaults, kubectl."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest
from controlplane_support import wait_until
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def _server(cluster) -> str:
    return json.loads(cluster.admin.read_text())["clusters"][0]["cluster"]["server"]


def test_anonymous_requests_are_refused(cluster):
    ctx = ssl.create_default_context(cafile=str(cluster.state / "pki" / "ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(_server(cluster) + "/api/v1/namespaces", context=ctx, timeout=5)
    assert err.value.code == 401


def test_serving_certificate_is_checked_against_the_lab_ca(cluster):
    # Without the lab CA the TLS handshake fails: the server's certificate is not self-made by it.
    with pytest.raises(urllib.error.URLError) as err:
        urllib.request.urlopen(_server(cluster) + "/version", context=ssl.create_default_context(), timeout=5)
    assert "CERTIFICATE_VERIFY_FAILED" in str(err.value)


def test_server_and_kubectl_are_the_same_release(cluster):
    out = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == out["clientVersion"]["gitVersion"]
    assert out["serverVersion"]["gitVersion"].startswith("v1.")
    assert out["serverVersion"]["gitVersion"] != "v0.0.0-master"


def test_built_in_kinds_are_validated(cluster):
    core = client.CoreV1Api(cluster.api())
    bad = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name"}, "data": {"k": "v"}}
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", bad)
    assert err.value.status == 422
    assert "a lowercase RFC 1123 subdomain" in err.value.body


def test_the_least_privilege_identity_is_who_the_server_says(cluster):
    out = json.loads(cluster.kubectl("auth", "whoami", "-o", "json", kubeconfig=cluster.kubeconfig).stdout)
    assert out["status"]["userInfo"]["username"] == "gpufabric-rollout"
    assert "system:masters" not in out["status"]["userInfo"].get("groups", [])


def test_auth_can_i_answers_from_rbac(cluster):
    lp = cluster.kubeconfig
    assert cluster.kubectl("auth", "can-i", "patch", "nodes", kubeconfig=lp, check=False).stdout.strip() == "yes"
    denied = cluster.kubectl("auth", "can-i", "list", "secrets", "--all-namespaces", kubeconfig=lp, check=False)
    assert (denied.returncode, denied.stdout.strip()) == (1, "no")
    assert cluster.kubectl("auth", "can-i", "*", "*").stdout.strip() == "yes"


def test_upstream_crds_are_established(cluster, crds):
    names = sorted(p.name[: -len(".yaml")] for p in crds.glob("*.yaml"))
    assert names, "no CRD files"
    out = json.loads(cluster.kubectl("get", "crd", "-o", "json").stdout)
    established = {
        i["metadata"]["name"]
        for i in out["items"]
        if any(c["type"] == "Established" and c["status"] == "True" for c in i["status"]["conditions"])
    }
    assert set(names) <= established
    # kubectl waits on the condition the apiextensions controller sets.
    cluster.kubectl("wait", "--for=condition=Established", "crd/ipoibnetworks.mellanox.com", "--timeout=30s")


def test_ippool_violating_a_cel_rule_is_refused_with_422(cluster, crds):
    custom = client.CustomObjectsApi(cluster.api())
    cluster.kubectl("create", "namespace", "cel-test")
    pool = {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": "rail0", "namespace": "cel-test"},
        "spec": {
            "subnet": "10.200.0.0/20",
            "perNodeBlockSize": 32,
            "gateway": "10.200.0.1",
            "perNodeExclusions": [{"startIndex": 5, "endIndex": 2}],
        },
    }
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("nv-ipam.nvidia.com", "v1alpha1", "cel-test", "ippools", pool)
    assert err.value.status == 422
    body = json.loads(err.value.body)
    assert body["reason"] == "Invalid"
    assert "endIndex must be greater than or equal to startIndex" in body["message"]
    assert "spec.perNodeExclusions[0]" in body["message"]
    # The same pool with the range the right way round is accepted.
    pool["spec"]["perNodeExclusions"] = [{"startIndex": 2, "endIndex": 5}]
    custom.create_namespaced_custom_object("nv-ipam.nvidia.com", "v1alpha1", "cel-test", "ippools", pool)


def test_crd_defaults_are_applied(cluster, crds):
    custom = client.CustomObjectsApi(cluster.api())
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicClusterPolicy",
        "metadata": {"name": "defaults-test"},
        "spec": {
            "ofedDriver": {
                "image": "doca-driver",
                "repository": "nvcr.io/nvidia/mellanox",
                "version": "25.10-0.7.0.0-0",
                "upgradePolicy": {"drain": {}},
            }
        },
    }
    created = custom.create_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies", policy)
    try:
        ofed = created["spec"]["ofedDriver"]
        # Not sent, filled in by the server from the CRD's `default:` values.
        assert ofed["terminationGracePeriodSeconds"] == 300
        assert ofed["upgradePolicy"]["maxParallelUpgrades"] == 1
        assert ofed["upgradePolicy"]["drain"] == {
            "deleteEmptyDir": False,
            "enable": True,
            "force": False,
            "timeoutSeconds": 300,
        }
    finally:
        custom.delete_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies", "defaults-test")


def test_kubectl_explain_reads_crd_and_built_in_schemas(cluster, crds):
    out = cluster.kubectl("explain", "nicclusterpolicies.spec.rdmaSharedDevicePlugin.config").stdout
    assert "FIELD: config <string>" in out
    out = cluster.kubectl("explain", "pods.spec.containers.resources.limits").stdout
    assert "FIELD: limits <map[string]Quantity>" in out


def test_kubectl_wait_rollout_status_and_undo(cluster):
    ns = "rollout-test"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=registry.lab.invalid/web:1", "--replicas=2")
    cluster.kubectl("-n", ns, "wait", "--for=condition=Available", "deployment/web", "--timeout=60s")
    cluster.kubectl("-n", ns, "set", "image", "deployment/web", "web=registry.lab.invalid/web:2")
    out = cluster.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    apps = client.AppsV1Api(cluster.api())
    assert len(apps.list_namespaced_replica_set(ns).items) == 2  # the old and the new ReplicaSet
    cluster.kubectl("-n", ns, "rollout", "undo", "deployment/web")
    cluster.kubectl("-n", ns, "rollout", "status", "deployment/web", "--timeout=60s")
    image = apps.read_namespaced_deployment("web", ns).spec.template.spec.containers[0].image
    assert image == "registry.lab.invalid/web:1"
    pods = cluster.kubectl(
        "-n", ns, "wait", "--for=jsonpath={.status.phase}=Running", "pod", "-l", "app=web", "--timeout=60s"
    ).stdout
    assert pods.count("condition met") == 2


def test_operator_standin_reports_policy_status(cluster, crds):
    # The stand-in writes /status only; the spec stays the applier's.
    custom = client.CustomObjectsApi(cluster.api())
    policy = {
        "apiVersion": "mellanox.com/v1alpha1",
        "kind": "NicNodePolicy",
        "metadata": {"name": "status-test"},
        "spec": {"nodeSelector": {"no-such-label": "x"}},
    }
    custom.create_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", policy)
    got = wait_until(
        lambda: (
            custom.get_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", "status-test").get("status")
            or {}
        ).get("state"),
        "the operator stand-in's status",
    )
    assert got == "ready"
    spec = custom.get_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", "status-test")["spec"]
    assert spec == {"nodeSelector": {"no-such-label": "x"}}
    custom.delete_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", "status-test")
