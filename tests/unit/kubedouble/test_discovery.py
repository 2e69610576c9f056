"""Discovery: /version, /api, /apis, group and group/version resource lists, seeds."""

from __future__ import annotations

import pytest

# The built-in kinds the collection touches (issue 3), with the group/version that serves them.
BUILTIN = [
    ("v1", "namespaces", "Namespace", False),
    ("v1", "configmaps", "ConfigMap", True),
    ("v1", "secrets", "Secret", True),
    ("v1", "services", "Service", True),
    ("v1", "serviceaccounts", "ServiceAccount", True),
    ("v1", "nodes", "Node", False),
    ("v1", "pods", "Pod", True),
    ("v1", "events", "Event", True),
    ("v1", "persistentvolumes", "PersistentVolume", False),
    ("v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ("apps/v1", "deployments", "Deployment", True),
    ("apps/v1", "daemonsets", "DaemonSet", True),
    ("apps/v1", "statefulsets", "StatefulSet", True),
    ("batch/v1", "jobs", "Job", True),
    ("storage.k8s.io/v1", "storageclasses", "StorageClass", False),
    ("rbac.authorization.k8s.io/v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True),
    ("rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    ("rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False),
    ("apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", False),
    ("coordination.k8s.io/v1", "leases", "Lease", True),
    ("events.k8s.io/v1", "events", "Event", True),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
]


def test_version(double):
    status, body = double.http("GET", "/version")
    assert status == 200
    assert body["major"] == "1" and body["gitVersion"].startswith("v1.")


def test_core_versions(double):
    status, body = double.http("GET", "/api")
    assert status == 200 and body["kind"] == "APIVersions" and body["versions"] == ["v1"]


@pytest.mark.parametrize(("group_version", "plural", "kind", "namespaced"), BUILTIN)
def test_builtin_kind_is_discoverable(double, group_version, plural, kind, namespaced):
    path = "/api/v1" if group_version == "v1" else "/apis/" + group_version
    status, body = double.http("GET", path)
    assert status == 200 and body["kind"] == "APIResourceList" and body["groupVersion"] == group_version
    entry = next(r for r in body["resources"] if r["name"] == plural)
    assert entry["kind"] == kind and entry["namespaced"] is namespaced
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(entry["verbs"])
    if group_version != "v1":
        group = group_version.split("/")[0]
        status, groups = double.http("GET", "/apis")
        assert any(
            g["name"] == group and g["preferredVersion"]["groupVersion"] == group_version for g in groups["groups"]
        )
        status, one = double.http("GET", "/apis/" + group)
        assert status == 200 and one["kind"] == "APIGroup" and one["name"] == group


def test_subresources_are_listed(double):
    _unused, core = double.http("GET", "/api/v1")
    names = {r["name"] for r in core["resources"]}
    assert {"pods/status", "pods/eviction", "nodes/status", "namespaces/status"} <= names
    _unused, apps = double.http("GET", "/apis/apps/v1")
    names = {r["name"]: r for r in apps["resources"]}
    assert names["deployments/scale"]["kind"] == "Scale"
    assert "daemonsets/status" in names


def test_unknown_group_version_is_404(double):
    status, body = double.http("GET", "/apis/nope.example.com/v1")
    assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"


def test_seeded_nodes_have_labels_and_capacity(core):
    nodes = {n.metadata.name: n for n in core.list_node().items}
    assert {"seed-gpu-a", "seed-gpu-b", "seed-cpu-c"} <= set(nodes)
    gpu = nodes["seed-gpu-a"]
    assert gpu.metadata.labels["nvidia.com/gpu.present"] == "true"
    assert gpu.status.capacity["nvidia.com/gpu"] == "8"
    assert gpu.status.allocatable["cpu"] == "63"
    assert nodes["seed-cpu-c"].spec.unschedulable is True


def test_kubectl_api_resources(kubectl):
    out = kubectl("api-resources", "--no-headers").stdout
    rows = {line.split()[0] for line in out.splitlines()}
    assert {"namespaces", "deployments", "customresourcedefinitions", "poddisruptionbudgets"} <= rows


def test_openapi_v2_answers_for_helm(double):
    status, body = double.http("GET", "/openapi/v2")
    assert status == 200 and body["swagger"] == "2.0"
