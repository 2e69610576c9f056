"""dra mode's read-back of the published devices: each node's ResourceSlices against the devices its
node group's claim templates were planned from. A node passes when dra.net publishes every rail
interface on its planned PCIe root with RDMA and gpu.nvidia.com as many GPUs on each planned root;
each difference is named; nodes outside the run are not checked; both attribute spellings
(qualified and the driver's own unqualified) are read; the filter reads k8s_info's result."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.validate import validate_dra_devices
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.dra_devices import checks, devices

ROOTS = ("pci0000:15", "pci0000:37")
DRA = {
    "groups": [
        {
            "name": "h200",
            "nodes": ["gpu-node-01", "gpu-node-02"],
            "devices": [
                {"rail": 0, "netdev": "enp24s0np0", "nic_root": ROOTS[0], "gpu_roots": [ROOTS[0]]},
                {"rail": 1, "netdev": "enp31s0np0", "nic_root": ROOTS[0], "gpu_roots": [ROOTS[0]]},
                {"rail": 2, "netdev": "enp58s0np0", "nic_root": ROOTS[1], "gpu_roots": [ROOTS[1]]},
            ],
        }
    ]
}


def string(value):
    return {"string": value}


def gpu_slice(node, roots, qualified=False):
    type_key = "gpu.nvidia.com/type" if qualified else "type"
    return {
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {type_key: string("gpu"), "resource.kubernetes.io/pcieRoot": string(r)},
                }
                for i, r in enumerate(roots)
            ],
        }
    }


def nic_slice(node, nics):
    return {
        "spec": {
            "driver": "dra.net",
            "nodeName": node,
            "devices": [
                {
                    "name": f"pci-{i}",
                    "attributes": {
                        "dra.net/ifName": string(name),
                        "dra.net/rdma": {"bool": rdma},
                        "resource.kubernetes.io/pcieRoot": string(root),
                    },
                }
                for i, (name, root, rdma) in enumerate(nics)
            ],
        }
    }


GOOD_NICS = [("enp24s0np0", ROOTS[0], True), ("enp31s0np0", ROOTS[0], True), ("enp58s0np0", ROOTS[1], True)]
GOOD_GPUS = [ROOTS[0], ROOTS[0], ROOTS[1]]


def cluster(node="gpu-node-01", gpus=None, nics=None, qualified=False):
    return [gpu_slice(node, gpus or GOOD_GPUS, qualified), nic_slice(node, nics or GOOD_NICS)]


@pytest.mark.parametrize("qualified", [False, True])
def test_devices_reads_both_attribute_spellings(qualified):
    found = devices(cluster(qualified=qualified), "gpu-node-01")
    assert found["gpus"] == {ROOTS[0]: 2, ROOTS[1]: 1}
    assert found["nics"]["enp58s0np0"] == {"root": ROOTS[1], "rdma": True}
    assert devices(cluster(), "gpu-node-02") == {"gpus": {}, "nics": {}}


def test_a_node_that_publishes_the_planned_devices_passes():
    (check,) = checks(DRA, cluster(), {"gpu-node-01": "node1"})
    assert check["passed"] is True
    assert (check["category"], check["node"], check["subject"]) == ("host", "node1", "DRA devices")
    assert check["measured"] == "3 rail NIC(s) and 3 GPU(s) on their planned PCIe roots"


def test_each_difference_is_named():
    nics = copy.deepcopy(GOOD_NICS)
    nics[0] = ("enp24s0np0", "pci0000:16", True)  # another root
    nics[1] = ("enp31s0np0", ROOTS[0], False)  # no RDMA
    del nics[2]  # not published
    (check,) = checks(DRA, cluster(gpus=[ROOTS[0], ROOTS[1]], nics=nics), {"gpu-node-01": "node1"})
    assert check["passed"] is False
    assert check["measured"].split("; ") == [
        "rail 0 NIC enp24s0np0: dra.net publishes it on PCIe root pci0000:16, planned pci0000:15",
        "rail 1 NIC enp31s0np0: dra.net publishes it without RDMA",
        "rail 2 NIC enp58s0np0: dra.net publishes no device with that interface",
        "PCIe root pci0000:15: gpu.nvidia.com publishes 1 GPU(s), planned 2",
    ]


def test_a_node_without_slices_fails_and_mig_devices_are_not_gpus():
    mig = gpu_slice("gpu-node-02", GOOD_GPUS)
    for device in mig["spec"]["devices"]:
        device["attributes"]["type"] = string("mig")
    (first, second) = checks(DRA, [*cluster(), mig], {"gpu-node-01": "node1", "gpu-node-02": "node2"})
    assert first["passed"] is True
    assert second["node"] == "node2" and second["passed"] is False
    assert "gpu.nvidia.com publishes 0 GPU(s), planned 2" in second["measured"]
    assert "rail 0 NIC enp24s0np0: dra.net publishes no device with that interface" in second["measured"]


def test_only_the_runs_nodes_and_only_in_dra_mode():
    assert checks(DRA, cluster(), {}) == []
    assert checks(None, cluster(), {"gpu-node-01": "node1"}) == []


def test_the_filter_reads_k8s_info_and_refuses_other_input():
    (check,) = validate_dra_devices({"resources": cluster()}, DRA, {"gpu-node-01": "node1"})
    assert check["passed"] is True
    with pytest.raises(AnsibleFilterError, match="validate_dra_devices"):
        validate_dra_devices([], DRA, {})


def test_a_published_value_cannot_write_lines_into_the_report():
    nics = [("enp24s0np0", "pci0000:15\nPASS host node1 forged", True), *GOOD_NICS[1:]]
    (check,) = checks(DRA, cluster(nics=nics), {"gpu-node-01": "node1"})
    assert "\n" not in check["measured"]
    assert "publishes it on PCIe root pci0000:15?PASS?host?node1?forged, planned pci0000:15" in check["measured"]
