"""CRUD semantics: 404/409, missing namespace, optimistic concurrency, no-op writes, generation,
selectors, list shape, pagination, delete."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException


def _cm(name, data=None, labels=None):
    return k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name, labels=labels), data=data or {"k": "v"})


def _deploy(name, replicas=1, image="nginx:1.27"):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def test_create_sets_server_fields(core, ns):
    created = core.create_namespaced_config_map(ns, _cm("a"))
    meta = created.metadata
    assert meta.uid and meta.resource_version.isdigit() and meta.creation_timestamp is not None
    assert meta.namespace == ns
    assert meta.managed_fields and meta.managed_fields[0].operation == "Update"


def test_get_missing_is_404_status(double, ns):
    status, body = double.http("GET", f"/api/v1/namespaces/{ns}/configmaps/nope")
    assert status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "configmaps"},
        "code": 404,
    }


def test_get_missing_grouped_resource_names_group(double, ns):
    status, body = double.http("GET", f"/apis/apps/v1/namespaces/{ns}/deployments/nope")
    assert status == 404 and body["message"] == 'deployments.apps "nope" not found'
    assert body["details"]["group"] == "apps"


def test_create_duplicate_is_409_already_exists(core, ns):
    core.create_namespaced_config_map(ns, _cm("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(ns, _cm("dup"))
    assert err.value.status == 409
    assert '"reason":"AlreadyExists"' in err.value.body.replace(" ", "")
    assert 'configmaps \\"dup\\" already exists' in err.value.body


def test_create_in_missing_namespace_is_404(core):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("no-such-ns", _cm("x"))
    assert err.value.status == 404
    assert 'namespaces \\"no-such-ns\\" not found' in err.value.body


def test_create_without_name_is_422(double, ns):
    status, body = double.http("POST", f"/api/v1/namespaces/{ns}/configmaps", {"data": {}})
    assert status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "metadata.name"


def test_generate_name(core, ns):
    obj = core.create_namespaced_config_map(ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(generate_name="gen-")))
    assert obj.metadata.name.startswith("gen-") and len(obj.metadata.name) == len("gen-") + 5


def test_put_with_stale_resource_version_is_409(core, ns):
    first = core.create_namespaced_config_map(ns, _cm("occ"))
    first.data = {"k": "v2"}
    core.replace_namespaced_config_map("occ", ns, first)
    first.data = {"k": "v3"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("occ", ns, first)
    assert err.value.status == 409
    assert "the object has been modified" in err.value.body
    assert core.read_namespaced_config_map("occ", ns).data == {"k": "v2"}


def test_put_missing_is_404(core, ns):
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("ghost", ns, _cm("ghost"))
    assert err.value.status == 404


def test_noop_write_keeps_resource_version(core, ns):
    created = core.create_namespaced_config_map(ns, _cm("same", {"a": "1"}))
    again = core.replace_namespaced_config_map("same", ns, _cm("same", {"a": "1"}))
    assert again.metadata.resource_version == created.metadata.resource_version
    patched = core.patch_namespaced_config_map("same", ns, {"data": {"a": "1"}})
    assert patched.metadata.resource_version == created.metadata.resource_version
    changed = core.patch_namespaced_config_map("same", ns, {"data": {"a": "2"}})
    assert int(changed.metadata.resource_version) > int(created.metadata.resource_version)


def test_generation_moves_with_spec_only(apps, ns):
    dep = apps.create_namespaced_deployment(ns, _deploy("gen"))
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("gen", ns, {"metadata": {"labels": {"extra": "x"}}})
    assert dep.metadata.generation == 1
    dep = apps.patch_namespaced_deployment("gen", ns, {"spec": {"replicas": 3}})
    assert dep.metadata.generation == 2


def test_list_has_kind_api_version_and_resource_version(double, core, ns):
    core.create_namespaced_config_map(ns, _cm("l1"))
    status, body = double.http("GET", f"/api/v1/namespaces/{ns}/configmaps")
    assert status == 200
    assert body["kind"] == "ConfigMapList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"].isdigit()
    assert [i["metadata"]["name"] for i in body["items"]] == ["l1"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("tier=gpu", ["a", "b"]),
        ("tier=gpu,zone=1", ["a"]),
        ("tier!=gpu", ["c"]),
        ("zone in (1,2)", ["a", "b"]),
        ("zone notin (1)", ["b", "c"]),
        ("zone", ["a", "b"]),
        ("!zone", ["c"]),
    ],
)
def test_label_selectors(core, ns, selector, expected):
    core.create_namespaced_config_map(ns, _cm("a", labels={"tier": "gpu", "zone": "1"}))
    core.create_namespaced_config_map(ns, _cm("b", labels={"tier": "gpu", "zone": "2"}))
    core.create_namespaced_config_map(ns, _cm("c", labels={"tier": "cpu"}))
    names = [c.metadata.name for c in core.list_namespaced_config_map(ns, label_selector=selector).items]
    assert names == expected


def test_field_selectors(core, ns):
    core.create_namespaced_config_map(ns, _cm("f1"))
    core.create_namespaced_config_map(ns, _cm("f2"))
    got = core.list_config_map_for_all_namespaces(field_selector=f"metadata.namespace={ns},metadata.name=f2")
    assert [c.metadata.name for c in got.items] == ["f2"]
    got = core.list_namespaced_config_map(ns, field_selector="metadata.name!=f2")
    assert [c.metadata.name for c in got.items] == ["f1"]


def test_pagination(core, ns):
    for i in range(5):
        core.create_namespaced_config_map(ns, _cm(f"p{i}"))
    page = core.list_namespaced_config_map(ns, limit=2)
    names = [c.metadata.name for c in page.items]
    while page.metadata._continue:
        page = core.list_namespaced_config_map(ns, limit=2, _continue=page.metadata._continue)
        names += [c.metadata.name for c in page.items]
    assert names == [f"p{i}" for i in range(5)]


def test_delete_returns_status_and_removes(core, ns):
    core.create_namespaced_config_map(ns, _cm("gone"))
    status = core.delete_namespaced_config_map("gone", ns)  # the client hands the Status back as a dict
    assert status["status"] == "Success" and status["details"]["name"] == "gone"
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("gone", ns)
    assert err.value.status == 404


def test_delete_precondition_uid_mismatch_is_409(core, ns):
    core.create_namespaced_config_map(ns, _cm("pre"))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map(
            "pre",
            ns,
            body=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")),
        )
    assert err.value.status == 409 and "Precondition failed" in err.value.body


def test_secret_string_data_is_folded_into_data(core, ns):
    core.create_namespaced_secret(ns, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="s"), string_data={"pw": "hunter2"}))
    got = core.read_namespaced_secret("s", ns)
    assert got.data == {"pw": "aHVudGVyMg=="} and got.string_data is None


def test_dry_run_persists_nothing(core, ns):
    out = core.create_namespaced_config_map(ns, _cm("dry"), dry_run="All")
    assert out.metadata.name == "dry"
    assert core.list_namespaced_config_map(ns).items == []


def test_cluster_scoped_ignores_namespace_path(double):
    status, _unused = double.http("GET", "/api/v1/namespaces/default/nodes/seed-gpu-a")
    assert status == 404
    status, body = double.http("GET", "/api/v1/nodes/seed-gpu-a")
    assert status == 200 and body["kind"] == "Node"
