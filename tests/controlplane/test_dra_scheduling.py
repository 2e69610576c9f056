"""DRA on the lab cluster: the real API server accepts the DeviceClasses and claim templates the plan
makes in `dra` mode, the operator stand-in publishes the drivers' ResourceSlices from each node's
snapshot, and the real kube-scheduler allocates aligned GPU and rail NIC sets (read back from each
claim's status.allocation)."""

from __future__ import annotations

import pytest
from controlplane_support import NODES, wait_until
from kubernetes import client

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra

NS = "gpu-workloads"
FIRST, SECOND = sorted(NODES)
LABEL = "gpufabric.io/node-group"


@pytest.fixture(scope="module")
def dra_plan(cluster, plan, topology):
    """The DRA section for the two nodes, applied; both drivers' slices published on both nodes."""
    section = dra.plan(plan["node_groups"], topology, NS, LABEL)
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}])
    cluster.apply(section["objects"])
    resource = client.ResourceV1Api(cluster.api())

    def published():
        slices = resource.list_resource_slice().items
        have = {(s.spec.node_name, s.spec.driver) for s in slices}
        return have >= {(n, d) for n in NODES for d in (dra.GPU_DRIVER, dra.NIC_DRIVER)}

    wait_until(published, "the GPU and NIC drivers' ResourceSlices on both nodes")
    yield section
    # The objects were applied as the administrator, without the collection's labels: other tests on
    # the session's cluster apply the same DeviceClasses as the collection's identity, which the
    # admission policy would refuse to take over.
    for obj in section["objects"]:
        kind = obj["kind"].lower() + ".resource.k8s.io"
        where = ["-n", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace") else []
        cluster.kubectl("delete", kind, obj["metadata"]["name"], "--ignore-not-found", "--wait=false", *where)


def _roots(topology, node):
    """device name -> (PCIe root, NUMA node, what it is) on `node`, as the drivers name devices."""
    facts = topology[node]
    out = {f"gpu-{g['index']}": (g["host_bridge"], g["numa_node"], g["name"]) for g in facts["gpus"]}
    for nic in facts["nics"]:
        out["pci-" + nic["bdf"].replace(":", "-").replace(".", "-")] = (
            nic["host_bridge"],
            nic["numa_node"],
            nic["netdevs"][0],
        )
    return out


def _pod(name, node, claims):
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "resourceClaims": claims,
            "containers": [
                {
                    "name": "worker",
                    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
                    "resources": {"claims": [{"name": c["name"]} for c in claims]},
                }
            ],
        },
    }


def _template_claim(template):
    return [{"name": "sets", "resourceClaimTemplateName": template}]


def _allocation(cluster, pod_name):
    """{request: (driver, device)} of the Pod's one claim, once the scheduler allocated it and bound the Pod."""
    core, resource = client.CoreV1Api(cluster.api()), client.ResourceV1Api(cluster.api())

    def allocated():
        pod = core.read_namespaced_pod(pod_name, NS)
        if not pod.spec.node_name:
            return None
        statuses = pod.status.resource_claim_statuses or []
        name = statuses[0].resource_claim_name if statuses else None
        for claim in pod.spec.resource_claims or []:
            if claim.resource_claim_name:
                name = claim.resource_claim_name
        if not name:
            return None
        claim = resource.read_namespaced_resource_claim(name, NS)
        return (pod, claim) if claim.status and claim.status.allocation else None

    pod, claim = wait_until(allocated, f"{pod_name} bound to a node with its claim allocated")
    results = claim.status.allocation.devices.results
    assert {r.pool for r in results} == {pod.spec.node_name}
    return pod.spec.node_name, {r.request: (r.driver, r.device) for r in results}


def _sets(devices, count):
    return [(devices[f"gpu-{k}"], devices[f"nic-{k}"]) for k in range(count)]


def _rail_netdevs(topology, node):
    return {r["netdev"] for r in topology[node]["rails"]}


def _delete(cluster, *pods):
    core = client.CoreV1Api(cluster.api())
    for name in pods:
        core.delete_namespaced_pod(name, NS, grace_period_seconds=0)
    wait_until(lambda: not ({p.metadata.name for p in core.list_namespaced_pod(NS).items} & set(pods)), "the pods gone")
    resource = client.ResourceV1Api(cluster.api())
    wait_until(
        lambda: not [c for c in resource.list_namespaced_resource_claim(NS).items if c.status and c.status.allocation],
        "their claims released",
    )


def test_the_api_server_accepts_every_object(cluster, dra_plan):
    resource = client.ResourceV1Api(cluster.api())
    classes = {c.metadata.name for c in resource.list_device_class().items}
    assert {"gpufabric-gpu", "gpufabric-rail-nic"} <= classes
    templates = {t.metadata.name for t in resource.list_namespaced_resource_claim_template(NS).items}
    wanted = {o["metadata"]["name"] for o in dra_plan["objects"] if o["kind"] == "ResourceClaimTemplate"}
    assert len(wanted) == 4 and templates == wanted


def test_slices_carry_the_drivers_attributes(cluster, dra_plan, topology):
    resource = client.ResourceV1Api(cluster.api())
    slices = {(s.spec.node_name, s.spec.driver): s for s in resource.list_resource_slice().items}
    roots = _roots(topology, FIRST)
    gpus = slices[(FIRST, dra.GPU_DRIVER)].spec.devices
    assert [d.name for d in gpus] == [f"gpu-{i}" for i in range(8)]
    assert gpus[0].attributes["type"].string == "gpu"
    assert gpus[0].attributes[dra.PCIE_ROOT].string == roots["gpu-0"][0] == "pci0000:15"
    nics = {d.name: d for d in slices[(FIRST, dra.NIC_DRIVER)].spec.devices}
    assert len(nics) == 10  # 8 rail NICs and 2 storage NICs: dranet publishes every RDMA NIC
    nic = nics["pci-0000-18-00-0"]
    assert nic.attributes["dra.net/ifName"].string == "enp24s0np0"
    assert nic.attributes["dra.net/numaNode"].int == 0
    assert nic.attributes["dra.net/rdma"].bool is True
    assert nic.attributes[dra.PCIE_ROOT].string == "pci0000:15"


def test_one_set_gives_a_gpu_and_a_rail_nic_on_its_pcie_root(cluster, dra_plan, topology):
    group = dra_plan["groups"][0]["name"]
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_pod(NS, _pod("one-set", FIRST, _template_claim(f"{group}-1x")))
    node, devices = _allocation(cluster, "one-set")
    assert node == FIRST
    roots = _roots(topology, node)
    ((gpu, nic),) = _sets(devices, 1)
    assert gpu[0] == dra.GPU_DRIVER and nic[0] == dra.NIC_DRIVER
    assert roots[gpu[1]][0] == roots[nic[1]][0], f"{gpu[1]} and {nic[1]} on different PCIe roots"
    assert roots[nic[1]][2] in _rail_netdevs(topology, node), "a rail NIC, never a storage NIC"
    _delete(cluster, "one-set")


def test_two_half_node_claims_get_disjoint_aligned_halves(cluster, dra_plan, topology):
    group = dra_plan["groups"][0]["name"]
    core = client.CoreV1Api(cluster.api())
    for name in ("half-a", "half-b"):
        core.create_namespaced_pod(NS, _pod(name, SECOND, _template_claim(f"{group}-4x")))
    roots = _roots(topology, SECOND)
    taken = []
    numa_of = {}
    for name in ("half-a", "half-b"):
        node, devices = _allocation(cluster, name)
        assert node == SECOND
        sets = _sets(devices, 4)
        for gpu, nic in sets:
            assert roots[gpu[1]][0] == roots[nic[1]][0], f"{name}: {gpu[1]} and {nic[1]} on different roots"
            assert roots[nic[1]][2] in _rail_netdevs(topology, SECOND)
        numa_of[name] = {roots[d[1]][1] for pair in sets for d in pair}
        taken.extend(d[1] for pair in sets for d in pair)
    assert len(taken) == len(set(taken)) == 16, "the halves share no device"
    # Each half on one socket (the NIC NUMA constraint), the two halves on the two sockets.
    assert sorted(len(v) for v in numa_of.values()) == [1, 1]
    assert numa_of["half-a"] != numa_of["half-b"]
    _delete(cluster, "half-a", "half-b")


def test_a_claim_that_cannot_be_aligned_stays_pending_with_the_reason(cluster, dra_plan, topology):
    """Take the GPUs of two roots and the rail NICs of the two others: GPUs and NICs are left, but
    on different roots. The aligned claim stays Pending; the same claim without the constraint
    fits, so the constraint is what the scheduler refuses."""
    group = dra_plan["groups"][0]["name"]
    rails = sorted(_rail_netdevs(topology, FIRST))
    nic_names = ", ".join(f'"{n}"' for n in rails)
    gpu_roots, nic_roots = '"pci0000:15", "pci0000:37"', '"pci0000:95", "pci0000:b7"'

    def claim(name, requests):
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": requests}},
        }

    def request(name, cls, count, expression):
        exactly = {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count}
        if expression:
            exactly["selectors"] = [{"cel": {"expression": expression}}]
        return {"name": name, "exactly": exactly}

    root = 'device.attributes["resource.kubernetes.io"].pcieRoot'  # dra.PCIE_ROOT in CEL
    blocker = claim(
        "blocker",
        [
            request("gpus", "gpufabric-gpu", 4, f"{root} in [{gpu_roots}]"),
            request(
                "nics",
                "gpufabric-rail-nic",
                4,
                f'device.attributes["dra.net"].ifName in [{nic_names}] && {root} in [{nic_roots}]',
            ),
        ],
    )
    cluster.apply([blocker])
    core = client.CoreV1Api(cluster.api())
    core.create_namespaced_pod(NS, _pod("blocker", FIRST, [{"name": "b", "resourceClaimName": "blocker"}]))
    _allocation(cluster, "blocker")

    core.create_namespaced_pod(NS, _pod("unaligned", FIRST, _template_claim(f"{group}-1x")))

    def unschedulable():
        pod = core.read_namespaced_pod("unaligned", NS)
        cond = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
        return cond[0] if cond and cond[0].reason == "Unschedulable" else None

    cond = wait_until(unschedulable, "unaligned marked Unschedulable by the scheduler")
    assert "1 cannot allocate all claims" in cond.message, cond.message
    assert core.read_namespaced_pod("unaligned", NS).spec.node_name is None

    free = claim(
        "unconstrained",
        [
            request("gpu-0", "gpufabric-gpu", 1, None),
            request("nic-0", "gpufabric-rail-nic", 1, f'device.attributes["dra.net"].ifName in [{nic_names}]'),
        ],
    )
    cluster.apply([free])
    core.create_namespaced_pod(NS, _pod("unconstrained", FIRST, [{"name": "u", "resourceClaimName": "unconstrained"}]))
    _node, devices = _allocation(cluster, "unconstrained")
    roots = _roots(topology, FIRST)
    ((gpu, nic),) = _sets(devices, 1)
    assert roots[gpu[1]][0] != roots[nic[1]][0], "only misaligned pairs were left"
    assert core.read_namespaced_pod("unaligned", NS).spec.node_name is None
