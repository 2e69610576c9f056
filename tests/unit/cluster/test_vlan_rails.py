"""A rail whose RoCE address and GID sit on a VLAN netdev (lab/snapshots/layouts/roce-vlan-gid.json:
mlx5_0's RoCE v2 IPv4 GID is on enp68s0np0.100): its macvlan/ipvlan NAD hangs off that VLAN
netdev, not the untagged PF, and the plan says which netdev and why. An SR-IOV rail tags its VFs
with that netdev's VLAN id (discovery's roce_vlan) and refuses when node groups differ or the id is
unknown; a host-device rail is refused."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from intent_support import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError, group_nodes

REPO = Path(__file__).resolve().parents[3]


def discovered(tmp_path_factory, layout: str, prefix: str):
    """Discovery of nodes 1 and 2 of a lab snapshot layout (lab/snapshots/build.py), as gpu-node-01/02."""
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    nodes = {}
    for n in (1, 2):
        dest = tmp_path_factory.mktemp(f"{prefix}{n}")
        build.materialize(f"{layout}@{n}", str(dest))
        nodes[f"gpu-node-0{n}"] = json.loads(json.dumps(T.discover(str(dest))))
    return nodes


@pytest.fixture(scope="module")
def vlan_nodes(tmp_path_factory):
    return discovered(tmp_path_factory, "roce-vlan-gid", "vlan")


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


# ------------------------------------------------------------------------------------ SR-IOV rails
EXCLUSIVE = {"rdma_netns_mode": "exclusive"}


def sriov_plan(nodes, owner="sriovnetwork", **rail):
    intent = {"supernet": "10.200.0.0/16", "nad_type": "sriov", "sriov_nad_owner": owner}
    if rail:
        intent["rails"] = [dict(rail, rail=0)]
    return cluster_plan(intent, nodes, None, EXCLUSIVE)


def sriov_network(plan):
    (net,) = [o for o in plan["objects"]["sriov_networks"] if o["kind"] == "SriovNetwork"]
    return net


def with_rail0(nodes, node, **changes):
    """The nodes with rail 0 of `node` changed (discovery's rails[] entries)."""
    out = copy.deepcopy(nodes)
    for r in out[node]["rails"]:
        if r["rail"] == 0:
            r.update(changes)
    return out


@pytest.fixture(scope="module")
def untagged_nodes(tmp_path_factory):
    return discovered(tmp_path_factory, "pcie-l40s-4x2", "flat")


def test_sriov_vfs_are_tagged_with_the_vlan_of_the_roce_netdev(vlan_nodes):
    assert {r["roce_vlan"] for n in vlan_nodes.values() for r in n["rails"]} == {100}
    plan = sriov_plan(vlan_nodes)
    assert sriov_network(plan)["spec"]["vlan"] == 100
    (rail,) = plan["rails"]
    assert (rail["vlan"], rail["vlan_source"]) == (100, "roce_netdev")
    (parent,) = rail["parent_by_group"].values()
    assert parent["netdev"] == "enp68s0np0"  # the VFs' PF
    assert "VLAN 100" in parent["why"] and "enp68s0np0.100" in parent["why"]


def test_sriov_nad_written_directly_carries_the_vlan_too(vlan_nodes):
    (nad,) = nads_of(sriov_plan(vlan_nodes, owner="direct"))
    plugins = json.loads(nad["spec"]["config"])["plugins"]
    assert plugins[0]["type"] == "sriov" and plugins[0]["vlan"] == 100


def test_an_explicit_sriov_vlan_wins(vlan_nodes):
    plan = sriov_plan(vlan_nodes, vlan=300)
    assert sriov_network(plan)["spec"]["vlan"] == 300
    assert plan["rails"][0]["vlan_source"] == "gpufabric_rails"
    # and no NIC is asked: an unknown VLAN id does not matter then
    assert (
        sriov_network(sriov_plan(with_rail0(vlan_nodes, "gpu-node-02", roce_vlan=None), vlan=300))["spec"]["vlan"]
        == 300
    )


@pytest.mark.parametrize(
    "changes, seen",
    [
        ({"roce_vlan": 200}, "VLAN 200 on enp68s0np0.100"),
        ({"roce_netdev": "enp68s0np0", "roce_vlan": None}, "untagged on enp68s0np0"),
    ],
)
def test_node_groups_on_different_vlans_are_refused(vlan_nodes, changes, seen):
    nodes = with_rail0(vlan_nodes, "gpu-node-02", **changes)
    with pytest.raises(ClusterPlanError) as err:
        sriov_plan(nodes)
    msg = str(err.value)
    assert msg.startswith("rail {} (sriov)".format(sriov_plan(vlan_nodes)["rails"][0]["name"]))
    assert "VLAN 100 on enp68s0np0.100" in msg and seen in msg
    assert "gpufabric_rails.rails entry {rail: 0, vlan: <VLAN id>}" in msg


def test_an_unknown_vlan_id_is_refused(vlan_nodes):
    nodes = with_rail0(vlan_nodes, "gpu-node-01", roce_vlan=None)
    with pytest.raises(ClusterPlanError) as err:
        sriov_plan(nodes)
    msg = str(err.value)
    group = next(g for g, ns in ((g["name"], g["nodes"]) for g in _groups(nodes)) if "gpu-node-01" in ns)
    assert f"node group {group}" in msg
    assert "enp68s0np0.100" in msg and "could not read" in msg
    assert "gpufabric_rails.rails entry {rail: 0, vlan: <VLAN id>}" in msg


def _groups(nodes):
    return group_nodes(nodes, "gpufabric.io")[0]


def test_an_untagged_sriov_rail_has_no_vlan(untagged_nodes):
    assert all(r["roce_vlan"] is None for n in untagged_nodes.values() for r in n["rails"])
    plan = sriov_plan(untagged_nodes)
    nets = [o for o in plan["objects"]["sriov_networks"] if o["kind"] == "SriovNetwork"]
    assert nets and all("vlan" not in o["spec"] for o in nets)
    assert all(r["vlan"] is None and r["vlan_source"] is None for r in plan["rails"])
    for nad in nads_of(sriov_plan(untagged_nodes, owner="direct")):
        assert "vlan" not in json.loads(nad["spec"]["config"])["plugins"][0]


def test_a_host_device_rail_whose_roce_address_is_on_a_vlan_is_refused(vlan_nodes):
    with pytest.raises(ClusterPlanError) as err:
        cluster_plan({"supernet": "10.200.0.0/16", "nad_type": "host-device"}, vlan_nodes)
    msg = str(err.value)
    assert "host-device" in msg and "enp68s0np0.100" in msg and "macvlan" in msg and "sriov" in msg


# ------------------------------------------------------------------------------------------ DRA
def test_dra_refuses_a_rail_whose_roce_address_is_on_a_vlan_netdev(vlan_nodes):
    """dra.net moves the port's netdev (enp68s0np0) with its own addresses; the RoCE address is on
    enp68s0np0.100, which stays behind and has no PCIe root to align: refused, naming both netdevs."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _dra

    groups = [{"name": "vlan-group", "nodes": ["gpu-node-01", "gpu-node-02"]}]
    with pytest.raises(_dra.DraPlanError) as refused:
        _dra.plan(groups, vlan_nodes, "gpu-workloads", "gpufabric.io/node-group")
    problems = str(refused.value).splitlines()
    tagged = [p for p in problems if "RoCE v2 address" in p]
    assert tagged == [
        "gpufabric_k8s_device_allocation: dra, but node group vlan-group (gpu-node-01): rail 0 (mlx5_0) carries its "
        "RoCE v2 address and GID on enp68s0np0.100 (VLAN 100), not on the port's netdev enp68s0np0; dra.net moves "
        "enp68s0np0 into the Pod with its own addresses only and publishes enp68s0np0.100 as a separate device "
        "without a PCIe root, so a claim cannot give a Pod the rail's address next to its GPU; keep device_plugin "
        "for this fabric, or put the RoCE address on the port's netdev (untagged, with the lossless class chosen "
        "by DSCP)"
    ]
    # The same hardware with the address on the port: that refusal goes, the layout's others stay
    # (its one NIC serves GPUs on other PCIe roots too).
    untagged = copy.deepcopy(vlan_nodes)
    for topology in untagged.values():
        for rail in topology["rails"]:
            rail["roce_netdev"], rail["roce_vlan"] = rail["netdev"], None
    with pytest.raises(_dra.DraPlanError) as still:
        _dra.plan(groups, untagged, "gpu-workloads", "gpufabric.io/node-group")
    assert str(still.value).splitlines() == [p for p in problems if p not in tagged]
