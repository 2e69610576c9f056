"""The operator stand-in's DRA part (lab/cluster/play_operator.py): which drivers it plays, and the
ResourceSlices it publishes from a node's hardware annotation (lab/cluster/nodes.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURE = REPO / "tests" / "unit" / "cluster" / "fixtures" / "topology" / "dgx-h200-8x8.node1.json"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def play():
    return _load("play_operator", REPO / "lab" / "cluster" / "play_operator.py")


@pytest.fixture(scope="module")
def node():
    sys.path.insert(0, str(REPO / ".collections"))
    nodes = _load("lab_nodes", REPO / "lab" / "cluster" / "nodes.py")
    return nodes.node_object("gpu-node-01", json.loads(FIXTURE.read_text()), "2Ti")


def _class(expression):
    return {"spec": {"selectors": [{"cel": {"expression": expression}}]}}


def test_only_the_drivers_a_device_class_selects_are_played(play):
    assert play.played_drivers([]) == []
    assert play.played_drivers([_class('device.driver == "gpu.example.com"')]) == []
    assert play.played_drivers([_class('device.driver=="dra.net" && device.attributes["dra.net"].rdma')]) == ["dra.net"]
    both = [_class('device.driver == "gpu.nvidia.com"'), _class('device.driver == "dra.net"')]
    assert play.played_drivers(both) == ["dra.net", "gpu.nvidia.com"]


def test_one_slice_per_driver_with_the_drivers_device_names_and_attributes(play, node):
    slices = {s["spec"]["driver"]: s for s in play.resource_slices(node, ["dra.net", "gpu.nvidia.com"])}
    assert sorted(slices) == ["dra.net", "gpu.nvidia.com"]
    gpu = slices["gpu.nvidia.com"]
    assert gpu["metadata"]["name"] == "gpu-node-01-gpu-nvidia-com"
    assert gpu["spec"]["nodeName"] == "gpu-node-01"
    assert gpu["spec"]["pool"] == {"name": "gpu-node-01", "generation": 1, "resourceSliceCount": 1}
    first = gpu["spec"]["devices"][0]
    assert first["name"] == "gpu-0"
    assert first["attributes"]["type"] == {"string": "gpu"}
    assert first["attributes"]["productName"] == {"string": "NVIDIA H200"}
    assert first["attributes"]["resource.kubernetes.io/pciBusID"] == {"string": "0000:19:00.0"}
    assert first["attributes"]["resource.kubernetes.io/pcieRoot"] == {"string": "pci0000:15"}
    nics = {d["name"]: d["attributes"] for d in slices["dra.net"]["spec"]["devices"]}
    assert len(nics) == 10
    assert nics["pci-0000-c1-00-0"] == {
        "dra.net/pciAddress": {"string": "0000:c1:00.0"},
        "dra.net/ifName": {"string": "enp193s0np0"},
        "dra.net/numaNode": {"int": 1},
        "dra.net/rdma": {"bool": True},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:b7"},
    }


def test_no_slice_without_the_hardware_annotation(play, node):
    bare = {"metadata": {"name": "other", "annotations": {}}}
    assert play.resource_slices(bare, ["gpu.nvidia.com", "dra.net"]) == []
    assert play.resource_slices(node, []) == []


def test_each_driver_follows_the_label_that_places_it_on_the_node(play, node):
    """The device-allocation migration switches a node's labels; the played kubelet plugins follow them."""
    import copy

    both = ["dra.net", "gpu.nvidia.com"]
    labelled = copy.deepcopy(node)
    labels = labelled["metadata"].setdefault("labels", {})
    labels["nvidia.com/gpu-operator.resource-allocation.mode"] = "device-plugin"
    assert [s["spec"]["driver"] for s in play.resource_slices(labelled, both)] == ["dra.net"]
    labels["gpufabric.io/device-allocation"] = "device_plugin"
    assert play.resource_slices(labelled, both) == []
    labels["nvidia.com/gpu-operator.resource-allocation.mode"] = "dra"
    labels["gpufabric.io/device-allocation"] = "dra"
    assert sorted(s["spec"]["driver"] for s in play.resource_slices(labelled, both)) == both
