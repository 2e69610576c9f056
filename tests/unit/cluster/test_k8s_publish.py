"""The cluster roles' publish path (plugins/module_utils/apply/k8s_publish.py): labels, what is stale,
what pruning lists and needs."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish

OURS = {"app.kubernetes.io/managed-by": "gpufabric.rollout", "gpufabric.io/instance": "pool-a"}


def obj(kind, name, namespace=None, api="nv-ipam.nvidia.com/v1alpha1", **meta):
    meta.setdefault("labels", dict(OURS))
    metadata = dict(name=name, **meta)
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": api, "kind": kind, "metadata": metadata}


def test_own_labels_copies_and_keeps_other_labels():
    planned = [obj("IPPool", "rail-0", "ns", labels={"gpufabric.io/rail": "0"})]
    owned = _k8s_publish.own(planned, "rdma_networks", "pool-a")
    assert owned[0]["metadata"]["labels"] == {
        "gpufabric.io/rail": "0",
        "app.kubernetes.io/managed-by": "gpufabric.rollout",
        "gpufabric.io/component": "rdma_networks",
        "gpufabric.io/instance": "pool-a",
    }
    assert "app.kubernetes.io/managed-by" not in planned[0]["metadata"]["labels"], "the plan's input is not changed"
    with pytest.raises(_k8s_publish.PublishError):
        _k8s_publish.own(planned, "", "pool-a")


def test_selector_names_the_collection_the_component_and_the_instance():
    assert _k8s_publish.selector("gpu_operator", "pool-a") == [
        "app.kubernetes.io/managed-by=gpufabric.rollout",
        "gpufabric.io/component=gpu_operator",
        "gpufabric.io/instance=pool-a",
    ]


@pytest.mark.parametrize("bad", ["", None, "-pool", "pool a", "x" * 64, "pool/a", 7])
def test_an_instance_that_is_no_label_value_is_refused_naming_the_variable(bad):
    for call in (
        lambda: _k8s_publish.own([obj("IPPool", "rail-0", "ns")], "rdma_networks", bad),
        lambda: _k8s_publish.selector("rdma_networks", bad),
        lambda: _k8s_publish.stale([], [], bad),
    ):
        with pytest.raises(_k8s_publish.PublishError, match=r"gpufabric_instance: .* is not a label value"):
            call()


def test_a_neighbour_inventorys_objects_are_never_stale():
    """Two inventories on one cluster: pool-a's prune must not delete pool-b's objects (same kinds,
    same component, even the same names in other namespaces), nor objects no one labelled."""
    planned = _k8s_publish.own([obj("IPPool", "rail-0", "ns-a")], "rdma_networks", "pool-a")
    theirs = _k8s_publish.own(
        [obj("IPPool", "rail-0", "ns-b"), obj("IPPool", "rail-9", "ns-a")], "rdma_networks", "pool-b"
    )
    unlabelled = [obj("IPPool", "hand-made", "ns-a", labels={})]
    mine_gone = _k8s_publish.own([obj("IPPool", "rail-1", "ns-a")], "rdma_networks", "pool-a")
    found = planned + theirs + unlabelled + mine_gone
    assert _k8s_publish.stale(found, planned, "pool-a") == [
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "namespace": "ns-a", "name": "rail-1"}
    ]
    assert [o["name"] for o in _k8s_publish.stale(found, theirs, "pool-b")] == []
    assert [o["name"] for o in _k8s_publish.stale(found, [], "pool-b")] == ["rail-9", "rail-0"]


def test_the_default_instance_is_the_inventorys_directory_name(tmp_path):
    inventory = tmp_path / "GPU Pool_A.prod"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text("all: {}\n")
    assert _k8s_publish.default_instance([str(inventory / "hosts.yml")]) == "gpu-pool_a.prod"
    assert _k8s_publish.default_instance([str(inventory)]) == "gpu-pool_a.prod"
    assert _k8s_publish.default_instance(str(inventory)) == "gpu-pool_a.prod"
    # AWX hands every job the same inventory path: its inventory id tells inventories apart.
    assert _k8s_publish.default_instance(["/runner/inventory/hosts"], 42) == "awx-inventory-42"
    assert _k8s_publish.default_instance([]) == ""
    long = tmp_path / ("-" + "p" * 70)
    long.mkdir()
    derived = _k8s_publish.default_instance([str(long)])
    assert derived == "p" * 63 and _k8s_publish.check_instance(derived) == derived


def test_stale_is_what_the_plan_no_longer_has():
    planned = [obj("IPPool", "rail-0", "ns"), obj("IPPool", "rail-1", "ns")]
    found = [
        obj("IPPool", "rail-1", "ns"),
        obj("IPPool", "rail-2", "ns"),  # a rail removed from the plan
        obj("IPPool", "rail-0", "other"),  # same name, another namespace
        obj("CIDRPool", "rail-0", "ns"),  # same name, another kind (IPAM switched)
        obj("IPPool", "rail-3", "ns", deletionTimestamp="2026-12-01T00:00:00Z"),  # already going
    ]
    assert _k8s_publish.stale(found, planned, "pool-a") == [
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "CIDRPool", "namespace": "ns", "name": "rail-0"},
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "namespace": "ns", "name": "rail-2"},
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "IPPool", "namespace": "other", "name": "rail-0"},
    ]
    assert _k8s_publish.stale(planned, planned, "pool-a") == []


def test_stale_tells_api_groups_apart_and_keeps_cluster_scoped_objects_unnamespaced():
    planned = [obj("NicClusterPolicy", "nic-cluster-policy", api="mellanox.com/v1alpha1")]
    found = [obj("NicClusterPolicy", "nic-cluster-policy", api="example.com/v1")]
    assert _k8s_publish.stale(found, planned, "pool-a") == [
        {"api_version": "example.com/v1", "kind": "NicClusterPolicy", "namespace": "", "name": "nic-cluster-policy"}
    ]


def test_prune_queries_and_rules_come_from_one_kind_list():
    kinds = [
        {"api_group": "nv-ipam.nvidia.com", "version": "v1alpha1", "resources": ["ippools", "cidrpools"]},
        {"api_group": "", "version": "v1", "resources": ["configmaps"]},
    ]
    assert _k8s_publish.prune_queries(kinds) == [
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "ippools"},
        {"api_version": "nv-ipam.nvidia.com/v1alpha1", "kind": "cidrpools"},
        {"api_version": "v1", "kind": "configmaps"},
    ]
    assert _k8s_publish.prune_rules(kinds) == [
        {"api_group": "nv-ipam.nvidia.com", "resources": ["ippools", "cidrpools"], "verbs": ["list", "delete"]},
        {"api_group": "", "resources": ["configmaps"], "verbs": ["list", "delete"]},
    ]


@pytest.mark.parametrize(
    "bad", [{"resources": ["x"]}, {"version": "v1"}, "ippools", {"version": "v1", "resources": []}]
)
def test_a_malformed_prune_kind_is_named(bad):
    with pytest.raises(_k8s_publish.PublishError, match=r"prune kinds\[0\]"):
        _k8s_publish.prune_queries([bad])
    with pytest.raises(_k8s_publish.PublishError, match=r"prune kinds\[0\]"):
        _k8s_publish.prune_rules([bad])


def test_a_namespaced_prune_kind_is_listed_and_granted_in_its_namespace_only():
    kinds = [{"api_group": "", "version": "v1", "resources": ["secrets"], "namespace": "csi-driver-nfs"}]
    query = {"api_version": "v1", "kind": "secrets", "namespace": "csi-driver-nfs"}
    assert _k8s_publish.prune_queries(kinds) == [query]
    assert _k8s_publish.prune_rules(kinds) == [
        {"api_group": "", "resources": ["secrets"], "verbs": ["list", "delete"], "namespace": "csi-driver-nfs"}
    ]


def _pod(namespace, name, claims, phase="Running"):
    volumes = [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)]
    volumes.append({"name": "scratch", "emptyDir": {}})
    return {
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"volumes": volumes},
        "status": {"phase": phase},
    }


def test_claims_in_use_names_each_claim_and_the_pods_that_still_mount_it():
    leaving = [
        {"api_version": "v1", "kind": "PersistentVolumeClaim", "namespace": "default", "name": "gpufabric-scratch"},
        {"api_version": "v1", "kind": "PersistentVolumeClaim", "namespace": "ml", "name": "gpufabric-blocks"},
        {"api_version": "v1", "kind": "PersistentVolumeClaim", "namespace": "default", "name": "idle"},
        {"api_version": "v1", "kind": "PersistentVolume", "namespace": "", "name": "gpufabric-scratch"},
    ]
    pods = [
        _pod("default", "train-1", ["gpufabric-scratch"]),
        _pod("default", "train-0", ["gpufabric-scratch", "other"], phase="Pending"),
        _pod("default", "done", ["idle"], phase="Succeeded"),
        _pod("default", "failed", ["idle"], phase="Failed"),
        # a claim of the same name in another namespace is another claim
        _pod("other", "x", ["gpufabric-blocks"]),
        _pod("ml", "infer", ["gpufabric-blocks"]),
    ]
    assert _k8s_publish.claims_in_use(pods, leaving) == [
        "default/gpufabric-scratch (Pod default/train-0, default/train-1)",
        "ml/gpufabric-blocks (Pod ml/infer)",
    ]
    assert _k8s_publish.claims_in_use([], leaving) == []
    assert _k8s_publish.claims_in_use(pods, []) == []
