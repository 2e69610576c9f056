"""PATCH: strategic merge (merge keys, directives), JSON merge patch, JSON patch (test failure),
and the content types the server refuses."""

from __future__ import annotations

import copy

import pytest
from kubedouble_support import load_yaml
from kubernetes.client.rest import ApiException

CASES = load_yaml("strategic_merge.yml")


def _deployment(name, pod_spec):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": copy.deepcopy(pod_spec)},
        },
    }


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_strategic_merge(double, ns, case):
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    status, _unused = double.http("POST", path, _deployment("smp", case["live"]))
    assert status == 201
    status, body = double.http(
        "PATCH",
        path + "/smp",
        {"spec": {"template": {"spec": case["patch"]}}},
        "application/strategic-merge-patch+json",
    )
    assert status == 200, body
    assert body["spec"]["template"]["spec"] == case["expect"]


def test_merge_patch_replaces_lists(double, ns):
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    live = {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}
    double.http("POST", path, _deployment("mp", live))
    status, body = double.http(
        "PATCH",
        path + "/mp",
        {
            "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}},
            "metadata": {"labels": {"x": "1"}},
        },
        "application/merge-patch+json",
    )
    assert status == 200
    assert body["spec"]["template"]["spec"]["containers"] == [{"name": "b", "image": "b:2"}]
    assert body["metadata"]["labels"] == {"x": "1"}
    status, body = double.http(
        "PATCH", path + "/mp", {"metadata": {"labels": {"x": None}}}, "application/merge-patch+json"
    )
    assert "labels" not in body["metadata"] or body["metadata"]["labels"] == {}


def test_json_patch_ops(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    double.http("POST", path, {"metadata": {"name": "jp"}, "data": {"a": "1", "b": "2"}})
    ops = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"},
        {"op": "add", "path": "/data/c", "value": "3"},
        {"op": "copy", "from": "/data/c", "path": "/data/d"},
        {"op": "move", "from": "/data/d", "path": "/data/e"},
    ]
    status, body = double.http("PATCH", path + "/jp", ops, "application/json-patch+json")
    assert status == 200
    assert body["data"] == {"a": "10", "c": "3", "e": "3"}


def test_json_patch_failed_test_is_422_and_changes_nothing(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    _unused, created = double.http("POST", path, {"metadata": {"name": "jt"}, "data": {"a": "1"}})
    ops = [{"op": "replace", "path": "/data/a", "value": "2"}, {"op": "test", "path": "/data/a", "value": "1"}]
    status, body = double.http("PATCH", path + "/jt", ops, "application/json-patch+json")
    assert status == 422 and body["kind"] == "Status" and body["reason"] == "Invalid"
    assert "test failed" in body["message"]
    _unused, now = double.http("GET", path + "/jt")
    assert now["data"] == {"a": "1"}
    assert now["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_json_patch_missing_path_is_422(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    double.http("POST", path, {"metadata": {"name": "jm"}, "data": {"a": "1"}})
    status, body = double.http(
        "PATCH", path + "/jm", [{"op": "remove", "path": "/data/zzz"}], "application/json-patch+json"
    )
    assert status == 422 and "missing" in body["message"]


def test_patch_missing_object_is_404(core, ns):
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("absent", ns, {"data": {"a": "1"}})
    assert err.value.status == 404


def test_patch_with_stale_resource_version_is_409(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    _unused, created = double.http("POST", path, {"metadata": {"name": "prv"}, "data": {"a": "1"}})
    double.http("PATCH", path + "/prv", {"data": {"a": "2"}}, "application/merge-patch+json")
    status, body = double.http(
        "PATCH",
        path + "/prv",
        {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"a": "3"}},
        "application/merge-patch+json",
    )
    assert status == 409 and body["reason"] == "Conflict"


def test_unknown_patch_type_is_415(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    double.http("POST", path, {"metadata": {"name": "ct"}})
    status, body = double.http("PATCH", path + "/ct", {"data": {}}, "text/plain")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_kubectl_patch_and_label(kubectl, ns):
    kubectl("-n", ns, "create", "configmap", "kc", "--from-literal=a=1")
    kubectl("-n", ns, "patch", "configmap", "kc", "--type=merge", "-p", '{"data":{"b":"2"}}')
    kubectl("-n", ns, "label", "configmap", "kc", "tier=gpu")
    out = kubectl("-n", ns, "get", "configmap", "kc", "-o", "jsonpath={.data.b}/{.metadata.labels.tier}").stdout
    assert out == "2/gpu"
