"""The DRA planner (plugins/module_utils/plan/dra.py): DeviceClasses, and per node group the claim
templates that pair each GPU with a rail NIC on its PCIe root, from the discovered topology."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
from kubernetes_support import NEWEST

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import group_nodes
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra

PREFIX = "gpufabric.io"
LABEL = PREFIX + "/node-group"
DGX_RAILS = [
    "enp24s0np0",
    "enp31s0np0",
    "enp58s0np0",
    "enp65s0np0",
    "enp152s0np0",
    "enp159s0np0",
    "enp186s0np0",
    "enp193s0np0",
]


def planned(nodes):
    groups, _rails = group_nodes(nodes, PREFIX)
    return dra.plan(groups, nodes, "gpu-workloads", LABEL)


def templates_of(section):
    return {o["metadata"]["name"]: o for o in section["objects"] if o["kind"] == "ResourceClaimTemplate"}


def test_device_classes_select_each_drivers_devices():
    classes = {o["metadata"]["name"]: o for o in dra.device_classes()}
    assert sorted(classes) == ["gpufabric-gpu", "gpufabric-rail-nic"]
    gpu = classes["gpufabric-gpu"]["spec"]["selectors"][0]["cel"]["expression"]
    nic = classes["gpufabric-rail-nic"]["spec"]["selectors"][0]["cel"]["expression"]
    assert gpu == 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"'
    assert nic == 'device.driver == "dra.net" && device.attributes["dra.net"].rdma == true'
    assert all(o["apiVersion"] == "resource.k8s.io/v1" for o in classes.values())


def test_dgx_group_gets_full_node_and_1_2_4_set_templates(dgx):
    section = planned(dgx)
    (group,) = section["groups"]
    name = group["name"]
    assert [(t["name"], t["sets"]) for t in group["templates"]] == [
        (f"{name}-full", 8),
        (f"{name}-1x", 1),
        (f"{name}-2x", 2),
        (f"{name}-4x", 4),
    ]
    assert group["nodes"] == sorted(dgx)
    templates = templates_of(section)
    assert sorted(templates) == sorted(t["name"] for t in group["templates"])
    for template in templates.values():
        assert template["metadata"]["namespace"] == "gpu-workloads"
        assert template["metadata"]["labels"] == {LABEL: name}


@pytest.mark.parametrize("suffix,count", [("full", 8), ("1x", 1), ("2x", 2), ("4x", 4)])
def test_each_set_is_one_gpu_and_one_rail_nic_on_one_pcie_root(dgx, suffix, count):
    section = planned(dgx)
    name = section["groups"][0]["name"]
    devices = templates_of(section)[f"{name}-{suffix}"]["spec"]["spec"]["devices"]
    requests = {r["name"]: r["exactly"] for r in devices["requests"]}
    assert sorted(requests) == sorted([f"gpu-{k}" for k in range(count)] + [f"nic-{k}" for k in range(count)])
    wanted_nics = 'device.attributes["dra.net"].ifName in [{}]'.format(", ".join(f'"{n}"' for n in sorted(DGX_RAILS)))
    for k in range(count):
        assert requests[f"gpu-{k}"] == {"deviceClassName": "gpufabric-gpu", "allocationMode": "ExactCount", "count": 1}
        nic = requests[f"nic-{k}"]
        assert (nic["deviceClassName"], nic["count"]) == ("gpufabric-rail-nic", 1)
        # The rail NICs only: the storage NICs (enp42s0np0, enp170s0np0) are never taken.
        assert nic["selectors"] == [{"cel": {"expression": wanted_nics}}]
    roots = [c for c in devices["constraints"] if c["matchAttribute"] == "resource.kubernetes.io/pcieRoot"]
    assert roots == [
        {"requests": [f"gpu-{k}", f"nic-{k}"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}
        for k in range(count)
    ]
    numa = [c for c in devices["constraints"] if c["matchAttribute"] == "dra.net/numaNode"]
    # Two NUMA nodes of four sets each: a 2- or 4-set claim stays on one socket; one set or the
    # whole node need no NUMA constraint (8 sets cannot fit one socket).
    if count in (2, 4):
        assert numa == [{"requests": [f"nic-{k}" for k in range(count)], "matchAttribute": "dra.net/numaNode"}]
    else:
        assert numa == []


def test_pairs_name_the_shared_roots(dgx):
    pairs = planned(dgx)["groups"][0]["pairs"]
    assert len(pairs) == 8
    assert pairs[0] == (
        "GPU0 -> mlx5_0 or mlx5_1 (PCIe root pci0000:15, NUMA 0); "
        "root shared by 2 rails: aligned to the root, not to mlx5_0's switch"
    )
    assert pairs[7].startswith("GPU7 -> mlx5_8 or mlx5_9 (PCIe root pci0000:b7, NUMA 1)")


def test_a_root_of_its_own_per_set_pairs_exactly(dgx):
    """Each GPU and its NIC on a root of their own: the root names exactly one NIC."""
    for facts in dgx.values():
        by_gpu = {r["gpu"]: r["nic"] for r in facts["rails"]}
        for gpu in facts["gpus"]:
            gpu["host_bridge"] = f"pci0000:{0x10 + gpu['index']:02x}"
            nic = next(n for n in facts["nics"] if n["rdma_device"] == by_gpu[gpu["name"]])
            nic["host_bridge"] = gpu["host_bridge"]
    pairs = planned(dgx)["groups"][0]["pairs"]
    assert pairs[0] == "GPU0 -> mlx5_0 (PCIe root pci0000:10, NUMA 0)"
    assert not any("shared" in p for p in pairs)


def test_gpus_whose_rail_nic_is_on_another_root_are_refused(mixed):
    with pytest.raises(dra.DraPlanError) as refused:
        planned(mixed)
    lines = str(refused.value).splitlines()
    # The L40S nodes: every GPU is on a root of its own, the NICs on two others.
    assert len(lines) == 4
    assert lines[0] == (
        "gpufabric_k8s_device_allocation: dra, but node group l40s-connectx-6-dx-2r (l40s-node-1): GPU0 "
        "(0000:01:00.0, PCIe root pci0000:00) and its rail NIC mlx5_0 (0000:21:00.0, PCIe root pci0000:20) share "
        "no PCIe root, so resource.kubernetes.io/pcieRoot cannot align them (and the GPU driver publishes no NUMA "
        "attribute for a full GPU); keep device_plugin for this hardware"
    )
    assert not any("h200" in line for line in lines)


def test_nodes_of_a_group_with_different_roots_are_refused(dgx):
    facts = dgx["gpu-node-3"]
    gpu = next(g for g in facts["gpus"] if g["index"] == 1)
    nic = next(n for n in facts["nics"] if n["rdma_device"] == "mlx5_1")
    gpu["host_bridge"] = nic["host_bridge"] = "pci0000:16"
    with pytest.raises(dra.DraPlanError, match="PCIe roots on gpu-node-3 differ from gpu-node-1"):
        planned(dgx)


def test_two_gpus_per_rail_nic_make_a_two_gpu_request(dgx):
    """A rail serving two GPUs (fewer rail NICs than GPUs): one set is both GPUs and the NIC."""
    nodes = {}
    for name in ("gpu-node-1", "gpu-node-2"):
        facts = copy.deepcopy(dgx[name])
        first = {}
        for entry in facts["rails"]:  # GPU 2k and 2k+1 (one root) share the NIC of GPU 2k
            partner = first.setdefault(int(entry["gpu"][3:]) // 2, entry)
            for key in ("nic", "nic_bdf", "netdev", "roce_netdev", "rail"):
                entry[key] = partner[key]
        kept = {e["nic"] for e in facts["rails"]}
        for nic in facts["nics"]:
            if nic["rail"] is not None and nic["rdma_device"] not in kept:
                nic["rail"], nic["role"] = None, "storage"
        nodes[name] = facts
    section = planned(nodes)
    group = section["groups"][0]
    assert [(t["name"].rsplit("-", 1)[1], t["sets"]) for t in group["templates"]] == [
        ("full", 4),
        ("1x", 1),
        ("2x", 2),
    ]
    one = templates_of(section)[group["templates"][1]["name"]]["spec"]["spec"]["devices"]
    assert one["requests"][0]["exactly"]["count"] == 2
    assert one["constraints"] == [{"requests": ["gpu-0", "nic-0"], "matchAttribute": "resource.kubernetes.io/pcieRoot"}]
    assert group["pairs"][1] == "GPU1 -> mlx5_0 (PCIe root pci0000:15, NUMA 0)"


def test_summary_lines():
    assert dra.summary_lines(None) == [
        "device allocation: device plugins (gpufabric_k8s_device_allocation: device_plugin)"
    ]


def test_a_record_without_pcie_roots_asks_for_a_new_one(dgx):
    """A node record stored before the records carried the PCIe roots."""
    for facts in dgx.values():
        for device in facts["gpus"] + facts["nics"]:
            device.pop("host_bridge")
    with pytest.raises(dra.DraPlanError) as refused:
        planned(dgx)
    assert str(refused.value) == (
        "gpufabric_k8s_device_allocation: dra, but node group h200-connectx-7-8r: the record of gpu-node-1 has no "
        "PCIe roots (stored by an older release of the collection); run the plan with that node once"
    )


@pytest.mark.parametrize("release", ["1.34", NEWEST])
def test_every_object_is_valid_from_the_first_release_with_resource_v1(dgx, release):
    """resource.k8s.io/v1 is served from Kubernetes 1.34 (DRA GA); the lab's API server (1.36)
    accepts them too (tests/controlplane/test_dra_scheduling.py)."""
    objects = planned(dgx)["objects"]
    assert len(objects) == 6
    for obj in objects:
        kubernetes_validate.validate(obj, release, strict=True)


def test_dra_mode_drops_every_rail_attachment_on_mixed_hardware(mixed_cluster):
    """Two node groups: the shared device plugin is in a NicNodePolicy per group; dra mode drops them,
    the rails' NADs and pools, and the CRDs only they needed, and leaves the NCCL ConfigMaps."""
    from intent_support import cluster_plan

    rails = [{"rail": 0}, {"rail": 1}] + [{"rail": r, "node_groups": ["h200-connectx-7-8r"]} for r in range(2, 8)]
    intent = {"supernet": "10.200.0.0/16", "rails": rails}
    network = cluster_plan(intent, mixed_cluster, {"pod": "10.244.0.0/16"}, {"mtu": 9000})
    before = copy.deepcopy(network)
    assert [o["kind"] for o in network["objects"]["network_operator"]].count("NicNodePolicy") == 2
    after = dra.without_rail_attachments(network)
    assert network == before  # the device_plugin plan is not changed in place
    (policy,) = after["objects"]["network_operator"]
    assert policy["kind"] == "NicClusterPolicy" and "rdmaSharedDevicePlugin" not in policy["spec"]
    assert policy["spec"]["secondaryNetwork"] == before["objects"]["network_operator"][0]["spec"]["secondaryNetwork"]
    configmaps = [o for o in before["objects"]["rdma_networks"] if o["kind"] == "ConfigMap"]
    assert len(configmaps) == 2 and after["objects"]["rdma_networks"] == configmaps
    assert after["crds"] == {
        "network_operator": ["nicclusterpolicies.mellanox.com"],
        "rdma_networks": [],
        "sriov_networks": [],
    }
    assert after["namespaces"] == sorted({o["metadata"]["namespace"] for o in configmaps})
