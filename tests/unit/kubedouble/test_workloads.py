"""Status and scale subresources, the readiness switch for Deployments/DaemonSets/StatefulSets/
Jobs/Pods, and Pod eviction honouring PodDisruptionBudgets (drains)."""

from __future__ import annotations

import pytest
from kubedouble_support import wait_for
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException


def _template(name):
    return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def _deployment(name, replicas=2):
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": _template(name)},
    }


def _daemonset(name, node_selector=None):
    tpl = _template(name)
    if node_selector:
        tpl["spec"]["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": tpl},
    }


def _job(name):
    tpl = _template(name)
    tpl["spec"]["restartPolicy"] = "Never"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": {"template": tpl}}


@pytest.fixture
def readiness(double):
    yield double.set_ready
    double.set_ready(True)


def test_deployment_becomes_ready(apps, ns):
    apps.create_namespaced_deployment(ns, _deployment("web", 3))
    dep = wait_for(lambda: (d := apps.read_namespaced_deployment("web", ns)).status.ready_replicas == 3 and d)
    assert dep.status.observed_generation == 1 and dep.status.available_replicas == 3
    conds = {c.type: c.status for c in dep.status.conditions}
    assert conds["Available"] == "True"
    apps.patch_namespaced_deployment("web", ns, {"spec": {"replicas": 5}})
    dep = wait_for(lambda: (d := apps.read_namespaced_deployment("web", ns)).status.observed_generation == 2 and d)
    assert dep.status.ready_replicas == 5


def test_readiness_switch_off_keeps_workloads_unready(apps, ns, readiness):
    readiness(False)
    apps.create_namespaced_deployment(ns, _deployment("slow", 2))
    dep = wait_for(lambda: (d := apps.read_namespaced_deployment("slow", ns)).status.observed_generation == 1 and d)
    assert not dep.status.ready_replicas and dep.status.unavailable_replicas == 2
    assert {c.type: c.status for c in dep.status.conditions}["Available"] == "False"
    readiness(True)
    wait_for(lambda: apps.read_namespaced_deployment("slow", ns).status.ready_replicas == 2)


def test_daemonset_counts_matching_nodes(apps, ns):
    apps.create_namespaced_daemon_set(ns, _daemonset("gpu-agent", {"nvidia.com/gpu.present": "true"}))
    ds = wait_for(lambda: (d := apps.read_namespaced_daemon_set("gpu-agent", ns)).status.observed_generation and d)
    assert ds.status.desired_number_scheduled == 2 and ds.status.number_ready == 2
    apps.create_namespaced_daemon_set(ns, _daemonset("everywhere"))
    ds = wait_for(lambda: (d := apps.read_namespaced_daemon_set("everywhere", ns)).status.observed_generation and d)
    assert ds.status.desired_number_scheduled == 3


def test_statefulset_ready(apps, ns):
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": _template("db"),
        },
    }
    apps.create_namespaced_stateful_set(ns, body)
    wait_for(lambda: apps.read_namespaced_stateful_set("db", ns).status.ready_replicas == 2)


def test_job_completes_or_stays_active(api_client, ns, readiness):
    batch = k8s.BatchV1Api(api_client)
    batch.create_namespaced_job(ns, _job("done"))
    job = wait_for(lambda: (j := batch.read_namespaced_job("done", ns)).status.succeeded == 1 and j)
    assert {c.type: c.status for c in job.status.conditions}["Complete"] == "True"
    readiness(False)
    batch.create_namespaced_job(ns, _job("stuck"))
    job = wait_for(lambda: (j := batch.read_namespaced_job("stuck", ns)).status.active == 1 and j)
    assert not job.status.succeeded and not job.status.conditions


def test_status_written_by_a_test_sticks(apps, ns):
    apps.create_namespaced_deployment(ns, _deployment("pinned", 1))
    wait_for(lambda: apps.read_namespaced_deployment("pinned", ns).status.ready_replicas == 1)
    apps.patch_namespaced_deployment_status(
        "pinned", ns, {"status": {"readyReplicas": 0, "availableReplicas": 0, "conditions": None}}
    )
    dep = apps.read_namespaced_deployment("pinned", ns)
    assert not dep.status.ready_replicas and dep.status.conditions is None
    apps.patch_namespaced_deployment("pinned", ns, {"metadata": {"labels": {"touch": "1"}}})
    assert not apps.read_namespaced_deployment("pinned", ns).status.ready_replicas


def test_main_resource_write_ignores_status(double, ns):
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    body = _deployment("st", 1)
    body["status"] = {"readyReplicas": 99}
    _unused, created = double.http("POST", path, body)
    assert "status" not in created or created["status"].get("readyReplicas") != 99


def test_scale_subresource(apps, kubectl, ns):
    apps.create_namespaced_deployment(ns, _deployment("sc", 1))
    scale = apps.read_namespaced_deployment_scale("sc", ns)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=sc"
    apps.patch_namespaced_deployment_scale("sc", ns, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("sc", ns).spec.replicas == 4
    kubectl("-n", ns, "scale", "deployment", "sc", "--replicas=2")
    assert apps.read_namespaced_deployment("sc", ns).spec.replicas == 2


def _pod(name, node, labels, ready=True, owner=None):
    meta = k8s.V1ObjectMeta(name=name, labels=labels, owner_references=owner)
    return k8s.V1Pod(
        metadata=meta, spec=k8s.V1PodSpec(node_name=node, containers=[k8s.V1Container(name="c", image="busybox")])
    )


def test_pods_become_running_and_ready(core, ns):
    core.create_namespaced_pod(ns, _pod("p", "seed-gpu-a", {"app": "p"}))
    pod = wait_for(lambda: (p := core.read_namespaced_pod("p", ns)).status.phase == "Running" and p)
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"


def test_eviction_honours_pod_disruption_budget(core, api_client, ns):
    policy = k8s.PolicyV1Api(api_client)
    for i, node in enumerate(("seed-gpu-a", "seed-gpu-b")):
        core.create_namespaced_pod(ns, _pod(f"web-{i}", node, {"app": "web"}))
    wait_for(lambda: all(p.status.phase == "Running" for p in core.list_namespaced_pod(ns).items))
    policy.create_namespaced_pod_disruption_budget(
        ns,
        k8s.V1PodDisruptionBudget(
            metadata=k8s.V1ObjectMeta(name="web"),
            spec=k8s.V1PodDisruptionBudgetSpec(
                min_available=1, selector=k8s.V1LabelSelector(match_labels={"app": "web"})
            ),
        ),
    )
    pdb = wait_for(
        lambda: (b := policy.read_namespaced_pod_disruption_budget("web", ns)).status.observed_generation and b
    )
    assert pdb.status.disruptions_allowed == 1 and pdb.status.current_healthy == 2
    eviction = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="web-0", namespace=ns))
    core.create_namespaced_pod_eviction("web-0", ns, eviction)
    assert [p.metadata.name for p in core.list_namespaced_pod(ns).items] == ["web-1"]
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction(
            "web-1", ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="web-1", namespace=ns))
        )
    assert err.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget." in err.value.body
    assert "The disruption budget web needs 1 healthy pods and has 1 currently" in err.value.body
    assert core.read_namespaced_pod("web-1", ns).metadata.name == "web-1"
    wait_for(lambda: policy.read_namespaced_pod_disruption_budget("web", ns).status.disruptions_allowed == 0)


def test_eviction_of_missing_pod_is_404(core, ns):
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_eviction("nope", ns, k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="nope")))
    assert err.value.status == 404


def test_kubectl_drain_evicts_and_respects_budget(core, kubectl, ns):
    node = "seed-gpu-b"
    rs_owner = [
        k8s.V1OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid="rs-uid", controller=True)
    ]
    core.create_namespaced_pod(ns, _pod("drain-me", node, {"app": "drain"}, owner=rs_owner))
    wait_for(lambda: core.read_namespaced_pod("drain-me", ns).status.phase == "Running")
    try:
        out = kubectl("drain", node, "--ignore-daemonsets", "--timeout=20s", "--pod-selector=app=drain")
        assert "evicting pod" in out.stderr + out.stdout
        assert core.read_node(node).spec.unschedulable is True
        assert core.list_namespaced_pod(ns, label_selector="app=drain").items == []
    finally:
        kubectl("uncordon", node)
    assert not core.read_node(node).spec.unschedulable
