"""Real controllers and the real scheduler place workloads on the simulated GPU nodes."""

from __future__ import annotations

import json

import pytest
from controlplane_support import NODES, wait_until
from kubernetes import client
from kubernetes.client.exceptions import ApiException

NS = "gpu-workloads"


@pytest.fixture(scope="module")
def rdma_network(cluster, crds, plan):
    """The planned policies, pools, NADs and NCCL ConfigMaps applied; the RDMA resources advertised."""
    objects = plan["objects"]
    namespaces = sorted({o["metadata"]["namespace"] for o in objects["rdma_networks"]})
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces])
    cluster.apply(objects["network_operator"] + objects["rdma_networks"])
    core = client.CoreV1Api(cluster.api())
    wanted = {r["resource"] for r in plan["rails"]}
    wait_until(
        lambda: all(wanted <= set(core.read_node(n).status.allocatable) for n in NODES),
        "the RDMA resources advertised on both nodes",
    )
    return plan


def _pod(name, plan, limits, annotations=None):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "annotations": annotations or {}},
        "spec": {
            "containers": [
                {
                    "name": "worker",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "resources": {"limits": {k: str(v) for k, v in limits.items()}},
                }
            ],
        },
    }


def test_rdma_resources_follow_the_device_plugin_config(cluster, rdma_network):
    core = client.CoreV1Api(cluster.api())
    config = json.loads(rdma_network["objects"]["network_operator"][0]["spec"]["rdmaSharedDevicePlugin"]["config"])
    for name in NODES:
        node = core.read_node(name)
        for entry in config["configList"]:
            resource = f"{entry['resourcePrefix']}/{entry['resourceName']}"
            assert node.status.capacity[resource] == str(entry["rdmaHcaMax"])
            assert node.status.allocatable[resource] == str(entry["rdmaHcaMax"])
        # What the kubelet registered stays: the discovered GPUs and CPUs.
        assert node.status.capacity["nvidia.com/gpu"] == "8"
        assert node.status.capacity["cpu"] == "224"


def test_pod_with_rail_resources_and_multus_networks_is_scheduled(cluster, rdma_network):
    rails = rdma_network["rails"]
    networks = ",".join(nad for r in rails for nad in r["nads"])
    limits = {r["resource"]: 1 for r in rails}
    limits["nvidia.com/gpu"] = 8
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_pod(
        NS, _pod("nccl-worker-0", rdma_network, limits, {"k8s.v1.cni.cncf.io/networks": networks})
    )

    def running():
        pod = core.read_namespaced_pod("nccl-worker-0", NS)
        return pod if pod.status.phase == "Running" else None

    pod = wait_until(running, "nccl-worker-0 Running")
    assert pod.spec.node_name in NODES
    assert pod.metadata.annotations["k8s.v1.cni.cncf.io/networks"] == "rail0,rail1,rail2,rail3,rail4,rail5,rail6,rail7"
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert scheduled.status == "True"
    events = core.list_namespaced_event(NS, field_selector="involvedObject.name=nccl-worker-0").items
    assert any(e.reason == "Scheduled" and e.source.component == "default-scheduler" for e in events) or any(
        e.reason == "Scheduled" and (e.reporting_component or "") == "default-scheduler" for e in events
    )


def test_pod_asking_more_than_a_node_has_stays_pending_with_the_reason(cluster, rdma_network):
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_pod(NS, _pod("too-big", rdma_network, {"rdma/rail0": 64}))

    def unschedulable():
        pod = core.read_namespaced_pod("too-big", NS)
        cond = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
        return cond[0] if cond and cond[0].reason == "Unschedulable" else None

    cond = wait_until(unschedulable, "too-big marked Unschedulable by the scheduler")
    assert cond.status == "False"
    assert cond.message.startswith("0/2 nodes are available: 2 Insufficient rdma/rail0.")
    assert core.read_namespaced_pod("too-big", NS).spec.node_name is None


def _evict(core, name, ns):
    body = client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace=ns))
    return core.create_namespaced_pod_eviction(name, ns, body)


def test_eviction_waits_for_the_disruption_budget(cluster):
    ns = "pdb-test"
    core, apps = client.CoreV1Api(cluster.api()), client.AppsV1Api(cluster.api())
    policy = client.PolicyV1Api(cluster.api())
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl(
        "-n", ns, "create", "deployment", "trainer", "--image=registry.lab.invalid/trainer:1", "--replicas=2"
    )
    cluster.apply(
        [
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "trainer", "namespace": ns},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "trainer"}}},
            }
        ]
    )
    cluster.kubectl("-n", ns, "wait", "--for=condition=Available", "deployment/trainer", "--timeout=60s")

    def budget(allowed):
        pdb = policy.read_namespaced_pod_disruption_budget("trainer", ns)
        st = pdb.status
        ok = st and st.observed_generation == pdb.metadata.generation and st.current_healthy == 2
        return pdb if ok and st.disruptions_allowed == allowed else None

    wait_until(lambda: budget(0), "the disruption controller counting 2 healthy, 0 allowed")
    victim = core.list_namespaced_pod(ns, label_selector="app=trainer").items[0].metadata.name
    with pytest.raises(ApiException) as err:
        _evict(core, victim, ns)
    assert err.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget." in err.value.body

    cluster.kubectl("-n", ns, "patch", "pdb", "trainer", "--type=merge", "-p", '{"spec":{"minAvailable":1}}')
    wait_until(lambda: budget(1), "the disruption controller allowing one disruption")
    _evict(core, victim, ns)
    wait_until(
        lambda: victim not in {p.metadata.name for p in core.list_namespaced_pod(ns).items},
        "the evicted pod gone (kwok ends it as a kubelet would)",
    )
    # The Deployment's ReplicaSet replaces it, and the scheduler places the new one.
    cluster.kubectl("-n", ns, "wait", "--for=condition=Available", "deployment/trainer", "--timeout=60s")
    assert apps.read_namespaced_deployment("trainer", ns).status.ready_replicas == 2
