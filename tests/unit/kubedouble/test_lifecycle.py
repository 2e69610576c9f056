"""Deletion: finalizers, namespace cascade (with a finalizer holding it in Terminating), owner
reference garbage collection, orphaning."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException


def _cm(name, finalizers=None, owners=None):
    return k8s.V1ConfigMap(
        metadata=k8s.V1ObjectMeta(name=name, finalizers=finalizers, owner_references=owners), data={"k": "v"}
    )


def test_finalizer_holds_object_until_removed(core, ns):
    core.create_namespaced_config_map(ns, _cm("fin", ["example.com/hold"]))
    deleted = core.delete_namespaced_config_map("fin", ns)
    assert deleted["metadata"]["deletionTimestamp"]
    held = core.read_namespaced_config_map("fin", ns)
    assert held.metadata.deletion_timestamp is not None and held.metadata.finalizers == ["example.com/hold"]
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("fin", ns, {"metadata": {"finalizers": ["example.com/hold", "new/one"]}})
    assert err.value.status == 422 and "no new finalizers" in err.value.body
    core.patch_namespaced_config_map("fin", ns, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("fin", ns)
    assert err.value.status == 404


def test_namespace_cascade(core, apps):
    name = "cascade-ns"
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    core.create_namespaced_config_map(name, _cm("plain"))
    core.create_namespaced_config_map(name, _cm("held", ["example.com/hold"]))
    core.create_namespaced_secret(name, k8s.V1Secret(metadata=k8s.V1ObjectMeta(name="s")))
    core.delete_namespace(name)
    terminating = core.read_namespace(name)
    assert terminating.status.phase == "Terminating"
    assert [c.metadata.name for c in core.list_namespaced_config_map(name).items] == ["held"]
    assert core.list_namespaced_secret(name).items == []
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(name, _cm("late"))
    assert err.value.status == 403 and "being terminated" in err.value.body
    core.patch_namespaced_config_map("held", name, {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespace(name)
    assert err.value.status == 404


def test_owner_references_garbage_collection(core, ns):
    owner = core.create_namespaced_config_map(ns, _cm("owner"))
    ref = k8s.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    core.create_namespaced_config_map(ns, _cm("child", owners=[ref]))
    core.create_namespaced_config_map(ns, _cm("bystander"))
    core.delete_namespaced_config_map("owner", ns)
    names = [c.metadata.name for c in core.list_namespaced_config_map(ns).items]
    assert names == ["bystander"]


def test_orphan_propagation_keeps_dependents(core, ns):
    owner = core.create_namespaced_config_map(ns, _cm("owner"))
    ref = k8s.V1OwnerReference(api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid)
    core.create_namespaced_config_map(ns, _cm("child", owners=[ref]))
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    child = core.read_namespaced_config_map("child", ns)
    assert child.metadata.owner_references is None


def test_delete_collection_by_label(core, ns):
    for name, tier in (("a", "gpu"), ("b", "gpu"), ("c", "cpu")):
        core.create_namespaced_config_map(
            ns, k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name=name, labels={"tier": tier}))
        )
    core.delete_collection_namespaced_config_map(ns, label_selector="tier=gpu")
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns).items] == ["c"]


def test_kubectl_delete_namespace_waits_for_cascade(kubectl):
    kubectl("create", "namespace", "kdel")
    kubectl("-n", "kdel", "create", "configmap", "x", "--from-literal=a=b")
    kubectl("delete", "namespace", "kdel", "--timeout=20s")
    out = kubectl("get", "namespace", "kdel", check=False)
    assert out.returncode != 0 and "NotFound" in out.stderr
