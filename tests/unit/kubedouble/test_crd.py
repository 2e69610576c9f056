"""CustomResourceDefinitions: registration in discovery, custom resources validated against the
openAPIV3Schema, the upstream operator CRDs, unregistration on delete."""

from __future__ import annotations

import copy
import uuid

import pytest
from kubedouble_support import SHARED_CRDS, load_all, load_yaml, wait_for

WIDGET_CRD = load_yaml("widgets.crd.yml")
CASES = load_yaml("schema_cases.yml")
UPSTREAM = sorted(SHARED_CRDS.glob("*.yaml"))
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _resource_names(double, group_version):
    status, body = double.http("GET", "/apis/" + group_version)
    return {r["name"]: r for r in body["resources"]} if status == 200 else {}


@pytest.fixture(scope="module")
def widgets(double):
    status, body = double.http("POST", CRDS, WIDGET_CRD)
    assert status in (201, 409), body
    return "/apis/lab.gpufabric.io/v1"


def test_upstream_crds_are_present():
    assert len(UPSTREAM) >= 10, f"expected the upstream CRDs in {SHARED_CRDS}"


@pytest.mark.parametrize("path", UPSTREAM, ids=[p.name for p in UPSTREAM])
def test_upstream_crd_registers_and_unregisters(double, path):
    [crd] = load_all(path)
    spec = crd["spec"]
    status, body = double.http("POST", CRDS, crd)
    assert status == 201, body
    conditions = {c["type"]: c["status"] for c in body["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert body["status"]["acceptedNames"]["kind"] == spec["names"]["kind"]
    for version in (v["name"] for v in spec["versions"] if v.get("served")):
        gv = f"{spec['group']}/{version}"
        entry = _resource_names(double, gv)[spec["names"]["plural"]]
        assert entry["kind"] == spec["names"]["kind"]
        assert entry["namespaced"] is (spec["scope"] == "Namespaced")
        status, groups = double.http("GET", "/apis")
        assert any(g["name"] == spec["group"] for g in groups["groups"])
    status, _unused = double.http("DELETE", f"{CRDS}/{crd['metadata']['name']}")
    assert status == 200
    gv = f"{spec['group']}/{spec['versions'][0]['name']}"
    wait_for(lambda: spec["names"]["plural"] not in _resource_names(double, gv))
    status, _unused = double.http("GET", f"{CRDS}/{crd['metadata']['name']}")
    assert status == 404


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_custom_resource_schema(double, widgets, ns, case):
    obj = {
        "apiVersion": "lab.gpufabric.io/v1",
        "kind": "Widget",
        "metadata": {"name": "case"},
        "spec": copy.deepcopy(case["spec"]),
    }
    status, body = double.http("POST", f"{widgets}/namespaces/{ns}/widgets", obj)
    assert status == case["code"], body
    if status == 422:
        assert body["kind"] == "Status" and body["reason"] == "Invalid" and body["code"] == 422
        assert body["details"]["kind"] == "Widget" and body["details"]["group"] == "lab.gpufabric.io"
        for fragment in case["messages"]:
            assert fragment in body["message"]
        if "fields" in case:
            assert sorted(c["field"] for c in body["details"]["causes"]) == sorted(case["fields"])
        status, _unused = double.http("GET", f"{widgets}/namespaces/{ns}/widgets/case")
        assert status == 404
    elif "stored" in case:
        _unused, got = double.http("GET", f"{widgets}/namespaces/{ns}/widgets/case")
        assert got["spec"] == case["stored"]


def test_strict_field_validation_rejects_unknown_fields(double, widgets, ns):
    obj = {
        "apiVersion": "lab.gpufabric.io/v1",
        "kind": "Widget",
        "metadata": {"name": "strict"},
        "spec": {"mode": "rail", "size": 1, "bogus": True},
    }
    status, body = double.http("POST", f"{widgets}/namespaces/{ns}/widgets?fieldValidation=Strict", obj)
    assert status == 400 and 'unknown field "spec.bogus"' in body["message"]


def test_update_is_validated_too(double, widgets, ns):
    path = f"{widgets}/namespaces/{ns}/widgets"
    double.http(
        "POST",
        path,
        {
            "apiVersion": "lab.gpufabric.io/v1",
            "kind": "Widget",
            "metadata": {"name": "u"},
            "spec": {"mode": "rail", "size": 1},
        },
    )
    status, body = double.http("PATCH", path + "/u", {"spec": {"size": 1000}}, "application/merge-patch+json")
    assert status == 422 and "spec.size" in body["message"]
    status, body = double.http("PATCH", path + "/u", {"spec": {"size": 2}}, "application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_status_and_scale_subresources_of_a_custom_resource(double, widgets, ns):
    path = f"{widgets}/namespaces/{ns}/widgets"
    obj = {
        "apiVersion": "lab.gpufabric.io/v1",
        "kind": "Widget",
        "metadata": {"name": "s"},
        "spec": {"mode": "rail", "size": 1, "replicas": 1},
        "status": {"state": "ignored"},
    }
    _unused, created = double.http("POST", path, obj)
    assert "status" not in created  # status is reset on create when the subresource is on
    status, body = double.http(
        "PATCH", path + "/s/status", {"status": {"state": "Ready", "replicas": 1}}, "application/merge-patch+json"
    )
    assert status == 200 and body["status"] == {"state": "Ready", "replicas": 1}
    assert body["metadata"]["generation"] == 1
    _unused, body = double.http(
        "PATCH", path + "/s", {"spec": {"size": 3}, "status": {"state": "x"}}, "application/merge-patch+json"
    )
    assert body["status"]["state"] == "Ready" and body["metadata"]["generation"] == 2
    status, scale = double.http("GET", path + "/s/scale")
    assert status == 200 and scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    status, scale = double.http("PATCH", path + "/s/scale", {"spec": {"replicas": 4}}, "application/merge-patch+json")
    assert scale["spec"]["replicas"] == 4
    _unused, got = double.http("GET", path + "/s")
    assert got["spec"]["replicas"] == 4


def test_nicclusterpolicy_invalid_is_422_and_valid_is_stored_and_listed(double, custom, kubectl):
    [crd] = load_all(SHARED_CRDS / "nicclusterpolicies.mellanox.com.yaml")
    status, body = double.http("POST", CRDS, crd)
    assert status in (201, 409), body
    base = "/apis/mellanox.com/v1alpha1/nicclusterpolicies"
    status, body = double.http("POST", base, load_yaml("nicclusterpolicy_invalid.yml"))
    assert status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith('NicClusterPolicy.mellanox.com "nic-cluster-policy-bad" is invalid: [')
    fields = {c["field"] for c in body["details"]["causes"]}
    assert fields == {
        "spec.ofedDriver.image",
        "spec.ofedDriver.version",
        "spec.ofedDriver.terminationGracePeriodSeconds",
        "spec.nicConfigurationOperator.logLevel",
    }
    assert 'spec.nicConfigurationOperator.logLevel: Unsupported value: "trace"' in body["message"]
    valid = load_yaml("nicclusterpolicy_valid.yml")
    status, body = double.http("POST", base, valid)
    assert status == 201, body
    listed = custom.list_cluster_custom_object("mellanox.com", "v1alpha1", "nicclusterpolicies")
    assert listed["kind"] == "NicClusterPolicyList"
    [item] = [i for i in listed["items"] if i["metadata"]["name"] == "nic-cluster-policy"]
    assert item["spec"]["ofedDriver"] == valid["spec"]["ofedDriver"]
    out = kubectl("get", "nicclusterpolicies", "-o", "name").stdout.split()
    assert out == ["nicclusterpolicy.mellanox.com/nic-cluster-policy"]


def test_crd_delete_removes_its_custom_resources(double, core):
    crd = copy.deepcopy(WIDGET_CRD)
    group = "tmp-" + uuid.uuid4().hex[:6] + ".gpufabric.io"
    crd["metadata"]["name"] = "widgets." + group
    crd["spec"]["group"] = group
    assert double.http("POST", CRDS, crd)[0] == 201
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    assert (
        double.http(
            "POST",
            path,
            {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": "w"},
                "spec": {"mode": "rail", "size": 1},
            },
        )[0]
        == 201
    )
    assert double.http("DELETE", f"{CRDS}/widgets.{group}")[0] == 200
    assert double.http("GET", f"/apis/{group}/v1")[0] == 404
    assert double.http("POST", CRDS, crd)[0] == 201
    status, listed = double.http("GET", path)
    assert status == 200 and listed["items"] == []


def test_invalid_crd_is_422(double):
    crd = copy.deepcopy(WIDGET_CRD)
    crd["metadata"]["name"] = "wrong.name.io"
    status, body = double.http("POST", CRDS, crd)
    assert status == 422 and body["details"]["causes"][0]["field"] == "metadata.name"


def test_dynamic_client_sees_new_kind(dyn, widgets, ns):
    res = dyn.resources.get(api_version="lab.gpufabric.io/v1", kind="Widget")
    res.create(
        body={
            "apiVersion": "lab.gpufabric.io/v1",
            "kind": "Widget",
            "metadata": {"name": "dy"},
            "spec": {"mode": "exclusive", "size": 4},
        },
        namespace=ns,
    )
    got = res.get(name="dy", namespace=ns)
    assert got.spec.mode == "exclusive" and got.kind == "Widget"
