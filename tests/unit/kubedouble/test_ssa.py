"""Server-side apply: create when missing, fieldManager ownership, conflicts, force, removal of
fields an applier stops setting, no-op applies, managedFields."""

from __future__ import annotations

import json

import yaml

APPLY = "application/apply-patch+yaml"


def _apply(double, path, obj, manager, force=False):
    query = f"?fieldManager={manager}" + ("&force=true" if force else "")
    return double.http("PATCH", path + query, yaml.safe_dump(obj).encode(), APPLY)


def _cm(name, data, labels=None):
    meta = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_apply_creates_when_missing(double, ns):
    status, body = _apply(double, f"/api/v1/namespaces/{ns}/configmaps/new", _cm("new", {"a": "1"}), "alice")
    assert status == 201, body
    assert body["data"] == {"a": "1"}
    [entry] = body["metadata"]["managedFields"]
    assert entry["manager"] == "alice" and entry["operation"] == "Apply"
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_apply_requires_field_manager(double, ns):
    status, body = double.http(
        "PATCH", f"/api/v1/namespaces/{ns}/configmaps/x", yaml.safe_dump(_cm("x", {})).encode(), APPLY
    )
    assert status == 400 and "fieldManager" in body["message"]


def test_two_appliers_conflict_then_force(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps/shared"
    _apply(double, path, _cm("shared", {"a": "1", "b": "1"}), "alice")
    status, body = _apply(double, path, _cm("shared", {"a": "2"}), "bob")
    assert status == 409 and body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]
    status, body = _apply(double, path, _cm("shared", {"a": "2"}), "bob", force=True)
    assert status == 200 and body["data"] == {"a": "2", "b": "1"}
    owners = {e["manager"]: e["fieldsV1"] for e in body["metadata"]["managedFields"]}
    assert owners == {"alice": {"f:data": {"f:b": {}}}, "bob": {"f:data": {"f:a": {}}}}


def test_same_value_is_shared_not_conflict(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps/same"
    _apply(double, path, _cm("same", {"a": "1"}), "alice")
    status, body = _apply(double, path, _cm("same", {"a": "1"}), "bob")
    assert status == 200
    assert {e["manager"] for e in body["metadata"]["managedFields"]} == {"alice", "bob"}


def test_conflict_with_update_manager(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps"
    double.http("POST", path + "?fieldManager=kubectl-edit", _cm("upd", {"a": "1"}))
    status, body = _apply(double, path + "/upd", _cm("upd", {"a": "2"}), "applier")
    assert status == 409
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.a'


def test_applier_dropping_a_field_removes_it(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps/drop"
    _apply(double, path, _cm("drop", {"a": "1", "b": "2"}, {"keep": "me", "old": "x"}), "alice")
    status, body = _apply(double, path, _cm("drop", {"a": "1"}, {"keep": "me"}), "alice")
    assert status == 200
    assert body["data"] == {"a": "1"}
    assert body["metadata"]["labels"] == {"keep": "me"}


def test_field_owned_by_another_manager_survives_removal(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps/co"
    _apply(double, path, _cm("co", {"a": "1", "b": "2"}), "alice")
    _apply(double, path, _cm("co", {"b": "2"}), "bob")
    status, body = _apply(double, path, _cm("co", {"a": "1"}), "alice")
    assert status == 200 and body["data"] == {"a": "1", "b": "2"}


def test_noop_apply_keeps_resource_version(double, ns):
    path = f"/api/v1/namespaces/{ns}/configmaps/noop"
    _unused, first = _apply(double, path, _cm("noop", {"a": "1"}), "alice")
    _unused, second = _apply(double, path, _cm("noop", {"a": "1"}), "alice")
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["metadata"]["managedFields"] == first["metadata"]["managedFields"]


def test_apply_merges_containers_by_name(double, ns):
    path = f"/apis/apps/v1/namespaces/{ns}/deployments/web"

    def dep(containers):
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}},
            },
        }

    _apply(double, path, dep([{"name": "app", "image": "app:1"}]), "alice")
    status, body = _apply(
        double,
        path,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "side:1"}]}}},
        },
        "bob",
    )
    assert status == 200, body
    names = [c["name"] for c in body["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "sidecar"]
    bob = next(e for e in body["metadata"]["managedFields"] if e["manager"] == "bob")
    key = 'k:{"name":"sidecar"}'
    assert key in json.dumps(bob["fieldsV1"]).replace('\\"', '"')
    status, body = _apply(double, path, dep([{"name": "app", "image": "app:2"}]), "alice")
    images = {c["name"]: c["image"] for c in body["spec"]["template"]["spec"]["containers"]}
    assert images == {"app": "app:2", "sidecar": "side:1"}


def test_kubectl_server_side_apply(kubectl, ns):
    manifest = yaml.safe_dump(_cm("kssa", {"a": "1"}))
    out = kubectl("-n", ns, "apply", "--server-side", "--field-manager=gpufabric", "-f", "-", stdin=manifest)
    assert "serverside-applied" in out.stdout
    manifest = yaml.safe_dump(_cm("kssa", {"a": "2"}))
    clash = kubectl("-n", ns, "apply", "--server-side", "--field-manager=other", "-f", "-", stdin=manifest, check=False)
    assert clash.returncode != 0 and "conflict" in clash.stderr.lower()
    kubectl("-n", ns, "apply", "--server-side", "--force-conflicts", "--field-manager=other", "-f", "-", stdin=manifest)
    assert kubectl("-n", ns, "get", "cm", "kssa", "-o", "jsonpath={.data.a}").stdout == "2"


def test_kubectl_client_side_apply_is_idempotent(kubectl, ns):
    manifest = yaml.safe_dump(_cm("kcsa", {"a": "1"}))
    assert "created" in kubectl("-n", ns, "apply", "-f", "-", stdin=manifest).stdout
    assert "unchanged" in kubectl("-n", ns, "apply", "-f", "-", stdin=manifest).stdout
    manifest = yaml.safe_dump(_cm("kcsa", {"b": "2"}))
    assert "configured" in kubectl("-n", ns, "apply", "-f", "-", stdin=manifest).stdout
    assert kubectl("-n", ns, "get", "cm", "kcsa", "-o", "jsonpath={.data}").stdout == '{"b":"2"}'
