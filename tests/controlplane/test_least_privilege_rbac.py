"""Issue 37, point 2: the shipped identity (docs/rbac/gpufabric-rollout.yaml) could become an
administrator or root on a node: ConfigMaps written in every namespace, a hostPath
PersistentVolume created and mounted by a Job, any CRD's conversion webhook or any namespace's Pod
Security labels patched. On a private lab control plane (a real kube-apiserver with the shipped RBAC
and admission policies applied), each of those requests, made as the identity, is refused now; the
planned NCCL Job is still admitted."""

from __future__ import annotations

import json
from typing import Any, Dict

import pytest
from controlplane_support import NODES, private_cluster

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _jobs

IMAGE = "ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957"  # validate_nccl_image
WRITES = {"create", "update", "patch", "delete", "deletecollection", "*"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with private_cluster(
        tmp_path_factory.mktemp("kube"), tmp_path_factory.mktemp("sysroots"), dict(list(NODES.items())[:1])
    ) as c:
        yield c


def _as_identity(cluster, obj: Dict[str, Any], *verb: str):
    """kubectl `verb` (create by default) of `obj` as the shipped identity; the finished process."""
    path = cluster.state / f"obj-{obj['kind']}-{obj['metadata']['name']}.json"
    path.write_text(json.dumps(obj))
    args = (*(verb or ("create",)), "--validate=false", "-f", str(path))
    return cluster.kubectl(*args, kubeconfig=cluster.kubeconfig, check=False)


def _refused(done) -> str:
    assert done.returncode != 0, f"admitted: {done.stdout}"
    assert "forbidden" in done.stderr.lower() or "denied request" in done.stderr, done.stderr
    return done.stderr


def _nccl_job() -> Dict[str, Any]:
    """The Job validate applies for a node group of two nodes (proof/jobs.py), with the role's image."""
    network = {
        "config": {"nad_namespace": "default"},
        "node_groups": [{"name": "g", "nodes": ["n1", "n2"], "gpu_count": 8, "nccl_configmap": "nccl-env-g"}],
        "rails": [{"name": "rail-0", "resource": "nvidia.com/rdma_rail0", "node_groups": ["g"]}],
        "nccl": {"g": {"NCCL_IB_HCA": "mlx5_0"}},
    }
    options = {"image": IMAGE, "binary": "/b", "min_bytes": "1M", "max_bytes": "8G", "iters": 20, "timeout": 900}
    options.update(ssh_port=2222, keep_jobs=False, namespace="gpufabric-validation")
    job = next(o for o in _jobs.job_for_group(network, "g", ["n1", "n2"], options)["objects"] if o["kind"] == "Job")
    return json.loads(json.dumps(job))


def test_no_configmap_in_kube_system(cluster):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kube-system"}}
    assert 'cannot create resource "configmaps"' in _refused(_as_identity(cluster, cm))


def test_no_host_path_persistent_volume(cluster):
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "root", "labels": {"app.kubernetes.io/managed-by": "gpufabric.rollout"}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/"}},
    }
    assert "CSI volumes of the collection's drivers only" in _refused(_as_identity(cluster, pv))


def test_no_patch_of_an_unrelated_crd(cluster):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }
    cluster.apply([crd])
    patch = json.dumps({"spec": {"conversion": {"strategy": "None"}}})
    done = cluster.kubectl(
        "patch", "crd", "widgets.example.com", "--type=merge", "-p", patch, kubeconfig=cluster.kubeconfig, check=False
    )
    _refused(done)
    # Nor created under another name (RBAC cannot narrow create by name; the admission policy does).
    other = json.loads(json.dumps(crd).replace("widgets", "gadgets").replace("Widget", "Gadget"))
    assert "collection's CRDs only" in _refused(_as_identity(cluster, other))


def test_no_pod_security_relabel_of_a_namespace(cluster):
    patch = json.dumps({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged"}}})
    for namespace in ("kube-system", "default"):
        done = cluster.kubectl(
            "patch", "namespace", namespace, "--type=merge", "-p", patch, kubeconfig=cluster.kubeconfig, check=False
        )
        _refused(done)
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "privileged-one", "labels": {"pod-security.kubernetes.io/enforce": "privileged"}},
    }
    assert "no Pod Security label" in _refused(_as_identity(cluster, ns))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda pod: pod["volumes"].append({"name": "root", "hostPath": {"path": "/"}}),
            "Secret, ConfigMap and emptyDir",
        ),
        (lambda pod: pod["containers"][0].update(image="docker.io/library/busybox:1.37"), "the planned image"),
        (lambda pod: pod["containers"][0]["securityContext"].update(privileged=True), "IPC_LOCK only"),
        (
            lambda pod: pod["containers"][0]["securityContext"]["capabilities"]["add"].append("SYS_ADMIN"),
            "IPC_LOCK only",
        ),
        (lambda pod: pod.update(hostPID=True), "PID or IPC"),
        (lambda pod: pod.update(serviceAccountName="admin"), "default ServiceAccount"),
    ],
)
def test_the_validation_namespace_admits_only_the_planned_job(cluster, change, message):
    job = _nccl_job()
    change(job["spec"]["template"]["spec"])
    assert message in _refused(_as_identity(cluster, job, "create", "--dry-run=server"))


def test_the_planned_nccl_job_is_admitted(cluster):
    done = _as_identity(cluster, _nccl_job(), "create", "--dry-run=server")
    assert done.returncode == 0, done.stderr


def test_the_nccl_job_is_refused_outside_the_validation_namespace(cluster):
    """In the NADs' namespace (default) RBAC refuses it; where an administrator granted Jobs by
    mistake, the admission policy still does (validate_namespace only)."""
    job = _nccl_job()
    job["metadata"]["namespace"] = "default"
    stderr = _refused(_as_identity(cluster, job, "create", "--dry-run=server"))
    assert 'cannot create resource "jobs" in API group "batch" in the namespace "default"' in stderr
    granted = "jobs-granted-by-mistake"
    role = {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}
    meta = {"name": "too-much", "namespace": granted}
    cluster.apply(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": granted}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": [role]},
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "too-much"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "gpufabric-rollout"}],
            },
        ]
    )
    job["metadata"]["namespace"] = granted
    assert "validate_namespace only" in _refused(_as_identity(cluster, job, "create", "--dry-run=server"))


def test_no_change_to_an_object_the_collection_did_not_make(cluster):
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "someone-elses"},
        "provisioner": "nfs.csi.k8s.io",
    }
    cluster.apply([sc])
    done = cluster.kubectl("delete", "storageclass", "someone-elses", kubeconfig=cluster.kubeconfig, check=False)
    assert "carry the collection's labels" in _refused(done)
    token = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": "steal",
            "namespace": "gpufabric-validation",
            "labels": {"app.kubernetes.io/part-of": "gpufabric-rollout"},
            "annotations": {"kubernetes.io/service-account.name": "default"},
        },
    }
    assert "no ServiceAccount token" in _refused(_as_identity(cluster, token))


def test_nothing_cluster_wide_writes_configmaps_claims_namespaces_crds_or_pods(cluster):
    """What `kubectl auth can-i --list` shows in a namespace the collection never writes: the
    identity's cluster-wide power (docs/rbac/README.md lists it)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "kube-system"},
    }
    path = cluster.state / "rules-review.json"
    path.write_text(json.dumps(review))
    done = cluster.kubectl("create", "--validate=false", "-o", "json", "-f", str(path), kubeconfig=cluster.kubeconfig)
    rules = json.loads(done.stdout)["status"]["resourceRules"]
    broad = []
    for rule in rules:
        writes = WRITES & set(rule["verbs"])
        for resource in rule.get("resources") or []:
            if not writes or resource.split("/")[0] not in {
                "configmaps",
                "persistentvolumeclaims",
                "namespaces",
                "customresourcedefinitions",
                "pods",
                "*",
            }:
                continue
            if resource == "pods/eviction" and writes == {"create"}:
                continue  # the drain: evictions honour PodDisruptionBudgets
            if resource in ("namespaces", "customresourcedefinitions") and writes == {"create"}:
                continue  # create cannot be narrowed by name (the admission policy narrows it)
            if resource == "customresourcedefinitions" and rule.get("resourceNames"):
                continue  # the collection's own CRDs, by name
            broad.append(f"{','.join(sorted(writes))} {resource} {rule.get('resourceNames') or ''}")
    assert broad == []
