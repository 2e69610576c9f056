"""Pruning inside the apply call (plugins/module_utils/apply/k8s_prune.py, k8s_apply's prune_kinds): each prune
kind listed once by the owner labels, only this instance's objects that left the plan deleted, a kind not served
skipped, a failed listing deleting nothing, a failed delete named, check mode deleting nothing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_prune, k8s_publish, k8s_retry


class ApiError(Exception):
    def __init__(self, status, body=""):
        super().__init__(f"({status})\nReason: {body}")
        self.status = status
        self.body = body
        self.headers = {}


class ResourceNotFoundError(Exception):
    """kubernetes.dynamic's answer for a kind its discovery does not know."""


RESOURCES = {
    ("nv-ipam.nvidia.com/v1alpha1", "ippools"): SimpleNamespace(kind="IPPool", namespaced=True),
    ("v1", "configmaps"): SimpleNamespace(kind="ConfigMap", namespaced=True),
    ("storage.k8s.io/v1", "storageclasses"): SimpleNamespace(kind="StorageClass", namespaced=False),
}
KINDS = [
    {"api_group": "nv-ipam.nvidia.com", "version": "v1alpha1", "resources": ["ippools"]},
    {"version": "v1", "resources": ["configmaps"], "namespace": "nccl"},
    {"api_group": "storage.k8s.io", "version": "v1", "resources": ["storageclasses"]},
    {"api_group": "k8s.cni.cncf.io", "version": "v1", "resources": ["network-attachment-definitions"]},
]


def obj(kind, name, namespace="", instance="lab", component="rdma_networks", api_version=None):
    labels = {
        k8s_publish.MANAGED_BY_KEY: k8s_publish.MANAGED_BY,
        k8s_publish.COMPONENT_KEY: component,
        k8s_publish.INSTANCE_KEY: instance,
    }
    meta = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    versions = {"IPPool": "nv-ipam.nvidia.com/v1alpha1", "ConfigMap": "v1", "StorageClass": "storage.k8s.io/v1"}
    return {"apiVersion": api_version or versions[kind], "kind": kind, "metadata": meta}


class FakeCluster:
    """A DynamicClient stand-in: `objects` in the cluster; a list answers like the API server (label selector,
    namespace), its items without apiVersion and kind; `faults` maps a request to the errors it raises in turn."""

    def __init__(self, objects):
        self.objects = list(objects)
        self.faults = {}
        self.requests = []
        self.resources = SimpleNamespace(get=self._resource)

    def _fault(self, key):
        if self.faults.get(key):
            raise self.faults[key].pop(0)

    def _resource(self, api_version, name):
        self.requests.append(("DISCOVER", api_version, name))
        if (api_version, name) not in RESOURCES:
            raise ResourceNotFoundError(f"No matches found for {{'api_version': '{api_version}', 'name': '{name}'}}")
        return RESOURCES[(api_version, name)]

    def get(self, resource, name=None, namespace=None, label_selector=""):
        if name is not None:  # the apply's read of one object: every object is new here
            raise ApiError(404, "not found")
        self.requests.append(("LIST", resource.kind, namespace, label_selector))
        self._fault(("LIST", resource.kind))
        wanted = dict(part.split("=", 1) for part in label_selector.split(","))
        items = []
        for o in self.objects:
            labels = o["metadata"].get("labels") or {}
            if o["kind"] != resource.kind or any(labels.get(k) != v for k, v in wanted.items()):
                continue
            if namespace and o["metadata"].get("namespace") != namespace:
                continue
            items.append({"metadata": dict(o["metadata"])})
        return {"kind": f"{resource.kind}List", "items": items}

    def delete(self, resource, name, namespace):
        self.requests.append(("DELETE", resource.kind, namespace, name))
        self._fault(("DELETE", name))
        before = len(self.objects)
        self.objects = [
            o
            for o in self.objects
            if not (
                o["kind"] == resource.kind
                and o["metadata"]["name"] == name
                and o["metadata"].get("namespace") == namespace
            )
        ]
        if len(self.objects) == before:
            raise ApiError(404, "not found")


def no_sleep_call(func, what, max_total=60.0, **_kw):
    clock = {"now": 0.0}
    return k8s_retry.call(
        func, what, max_total, sleep=lambda s: clock.update(now=clock["now"] + s), clock=lambda: clock["now"]
    )


def prune(cluster, planned, dry_run=False, instance="lab"):
    return k8s_prune.prune(cluster, KINDS, planned, "rdma_networks", instance, dry_run, 30, call=no_sleep_call)


def cluster_with_leftovers():
    return FakeCluster(
        [
            obj("IPPool", "rail0", "nv-ipam"),
            obj("IPPool", "rail9", "nv-ipam"),  # left the plan
            obj("ConfigMap", "nccl-env", "nccl"),
            obj("ConfigMap", "old-env", "nccl"),  # left the plan
            obj("ConfigMap", "elsewhere", "other"),  # outside the one namespace the kind is listed in
            obj("StorageClass", "old-class"),  # left the plan, cluster-scoped
            obj("IPPool", "rail9", "neighbour-ns", instance="neighbour"),  # another inventory's
            obj("IPPool", "rail8", "nv-ipam", component="sriov_networks"),  # another component's
        ]
    )


PLANNED = [obj("IPPool", "rail0", "nv-ipam"), obj("ConfigMap", "nccl-env", "nccl")]


def test_only_this_instances_objects_of_the_component_that_left_the_plan_are_deleted():
    cluster = cluster_with_leftovers()

    done = prune(cluster, PLANNED)

    assert done["pruned"] == ["ConfigMap/nccl/old-env", "IPPool/nv-ipam/rail9", "StorageClass//old-class"]
    assert done["errors"] == []
    left = sorted((o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in cluster.objects)
    assert left == [
        ("ConfigMap", "nccl", "nccl-env"),
        ("ConfigMap", "other", "elsewhere"),
        ("IPPool", "neighbour-ns", "rail9"),
        ("IPPool", "nv-ipam", "rail0"),
        ("IPPool", "nv-ipam", "rail8"),
    ]
    selector = ",".join(k8s_publish.selector("rdma_networks", "lab"))
    lists = [r for r in cluster.requests if r[0] == "LIST"]
    assert lists == [
        ("LIST", "IPPool", None, selector),
        ("LIST", "ConfigMap", "nccl", selector),
        ("LIST", "StorageClass", None, selector),
    ], "each served kind listed once by the owner labels; the NAD kind is not served here and is skipped"
    assert ("DELETE", "StorageClass", None, "old-class") in cluster.requests, "a cluster-scoped object has no namespace"


def test_a_rerun_lists_and_deletes_nothing():
    cluster = cluster_with_leftovers()
    prune(cluster, PLANNED)
    cluster.requests.clear()

    again = prune(cluster, PLANNED)

    assert again == {"pruned": [], "found": [], "errors": []}
    assert [r for r in cluster.requests if r[0] == "DELETE"] == []


def test_check_mode_names_what_a_real_run_deletes_and_deletes_nothing():
    cluster = cluster_with_leftovers()
    before = list(cluster.objects)

    done = prune(cluster, PLANNED, dry_run=True)

    assert done["pruned"] == ["ConfigMap/nccl/old-env", "IPPool/nv-ipam/rail9", "StorageClass//old-class"]
    assert [o["metadata"]["name"] for o in done["found"]] == ["old-env", "rail9", "old-class"]
    assert cluster.objects == before and not [r for r in cluster.requests if r[0] == "DELETE"]


def test_transient_answers_are_retried_and_an_object_already_gone_is_not_counted():
    cluster = cluster_with_leftovers()
    cluster.faults[("LIST", "IPPool")] = [ApiError(429), ApiError(503)]
    cluster.faults[("DELETE", "old-env")] = [ApiError(500)]
    cluster.faults[("DELETE", "old-class")] = [ApiError(404, "gone")]

    done = prune(cluster, PLANNED)

    assert done["pruned"] == ["ConfigMap/nccl/old-env", "IPPool/nv-ipam/rail9"]
    assert done["errors"] == []


def test_a_refused_listing_deletes_nothing_and_a_refused_delete_is_named():
    cluster = cluster_with_leftovers()
    cluster.faults[("LIST", "StorageClass")] = [ApiError(403, "forbidden")]
    with pytest.raises(ApiError):
        prune(cluster, PLANNED)
    assert not [r for r in cluster.requests if r[0] == "DELETE"], "nothing deleted on a partial view"

    cluster = cluster_with_leftovers()
    cluster.faults[("DELETE", "rail9")] = [ApiError(403, "forbidden: cannot delete ippools")]
    done = prune(cluster, PLANNED)
    assert done["pruned"] == ["ConfigMap/nccl/old-env", "StorageClass//old-class"]
    assert done["errors"] == ["IPPool/nv-ipam/rail9: forbidden: cannot delete ippools"]
    message = k8s_prune.failure_message(done["errors"], "rdma_networks")
    assert message.startswith("Could not delete 1 object(s) of rdma_networks that left the plan: IPPool/nv-ipam/rail9")


def test_a_bad_instance_or_prune_kind_is_refused_naming_it():
    with pytest.raises(k8s_publish.PublishError, match="gpufabric_instance"):
        prune(FakeCluster([]), PLANNED, instance="Not a label!")
    with pytest.raises(k8s_publish.PublishError, match=r"prune kinds\[0\] needs version and resources"):
        k8s_prune.prune(FakeCluster([]), [{"api_group": "x"}], PLANNED, "c", "lab", False, 30, call=no_sleep_call)


class ApplyingCluster(FakeCluster):
    """FakeCluster that also takes server-side applies (every object new), as k8s_apply's apply reads and patches."""

    def __init__(self, objects):
        super().__init__(objects)
        self.resources = SimpleNamespace(get=self._any_resource)

    def _any_resource(self, api_version, kind=None, name=None):
        if kind is not None:
            return SimpleNamespace(kind=kind, namespaced=True)
        return self._resource(api_version, name)

    def server_side_apply(self, resource, body, force_conflicts, field_manager, namespace, name, dry_run=None):
        self.requests.append(("PATCH", resource.kind, namespace, name))
        return dict(body, metadata=dict(body["metadata"], resourceVersion="1"))


def run_module(monkeypatch, capsys, cluster, args):
    import json

    from ansible.module_utils.testing import patch_module_args

    from ansible_collections.gpufabric.rollout.plugins.modules import k8s_apply
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_client

    monkeypatch.setattr(k8s_client, "get_api_client", lambda module: SimpleNamespace(client=cluster))
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        k8s_apply.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_the_module_applies_then_prunes_and_a_refused_listing_still_reports_what_was_applied(monkeypatch, capsys):
    args = {
        "objects": PLANNED,
        "field_manager": "gpufabric-rollout",
        "component": "rdma_networks",
        "prune_kinds": KINDS,
        "instance": "lab",
        "retry_timeout": 0,
    }
    cluster = ApplyingCluster(cluster_with_leftovers().objects)
    code, result = run_module(monkeypatch, capsys, cluster, args)
    assert code == 0 and result["changed"] is True, result
    assert result["applied"] == ["IPPool/nv-ipam/rail0", "ConfigMap/nccl/nccl-env"]
    assert result["pruned"] == ["ConfigMap/nccl/old-env", "IPPool/nv-ipam/rail9", "StorageClass//old-class"]

    cluster = ApplyingCluster(cluster_with_leftovers().objects)
    cluster.faults[("LIST", "ConfigMap")] = [ApiError(403, "configmaps is forbidden")]
    code, result = run_module(monkeypatch, capsys, cluster, args)
    assert code == 1
    assert result["msg"] == (
        "could not list what an earlier run made for rdma_networks (nothing was deleted): configmaps is forbidden"
    )
    assert result["applied"] == ["IPPool/nv-ipam/rail0", "ConfigMap/nccl/nccl-env"], "what was applied is reported"
    assert result["pruned"] == [] and not [r for r in cluster.requests if r[0] == "DELETE"]

    code, result = run_module(monkeypatch, capsys, ApplyingCluster([]), dict(args, instance=None))
    assert code == 1 and result["msg"] == "instance is required with prune_kinds (gpufabric_instance)"
