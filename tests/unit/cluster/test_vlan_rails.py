"""A rail whose RoCE address and GID sit on a VLAN netdev (lab/snapshots/layouts/roce-vlan-gid.json:
mlx5_0's RoCE v2 IPv4 GID is on enp68s0np0.100): its macvlan/ipvlan NAD hangs off that VLAN
netdev, not the untagged PF, and the plan says which netdev and why."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from intent_support import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def vlan_nodes(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    nodes = {}
    for n in (1, 2):
        dest = tmp_path_factory.mktemp(f"vlan{n}")
        build.materialize(f"roce-vlan-gid@{n}", str(dest))
        nodes[f"gpu-node-0{n}"] = json.loads(json.dumps(T.discover(str(dest))))
    return nodes


def nads_of(plan):
    return [o for o in plan["objects"]["rdma_networks"] if o["kind"] == "NetworkAttachmentDefinition"]


@pytest.mark.parametrize("kind", ["macvlan", "ipvlan"])
def test_nad_master_is_the_vlan_netdev_with_the_roce_address(vlan_nodes, kind):
    rail = vlan_nodes["gpu-node-01"]["rails"][0]
    assert (rail["netdev"], rail["roce_netdev"]) == ("enp68s0np0", "enp68s0np0.100")
    plan = cluster_plan({"supernet": "10.200.0.0/16", "nad_type": kind}, vlan_nodes)
    (nad,) = nads_of(plan)
    assert json.loads(nad["spec"]["config"])["master"] == "enp68s0np0.100"
    (parents,) = [r["parent_by_group"] for r in plan["rails"]]
    assert {p["netdev"] for p in parents.values()} == {"enp68s0np0.100"}
    assert all("VLAN" in p["why"] for p in parents.values())


def test_a_rail_vlan_of_the_intent_still_tags_the_pf(vlan_nodes):
    plan = cluster_plan({"supernet": "10.200.0.0/16", "rails": [{"rail": 0, "vlan": 300}]}, vlan_nodes)
    (nad,) = nads_of(plan)
    assert json.loads(nad["spec"]["config"])["master"] == "enp68s0np0.300"
