"""The device-allocation migration's pure core (plan/allocation_migration.py) and its place in the
upgrade plan (plan/upgrade.py): which nodes move, their labels, the batches node group by node
group, what a node must show before it is uncordoned."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_migration as _migration
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade

REPO = Path(__file__).resolve().parents[3]
RULES = _skew.load(yaml.safe_load((REPO / "roles" / "plan" / "files" / "version_skew.yml").read_text()))

MODE = _migration.OPERATOR_LABEL
OWN = "gpufabric.io/device-allocation"
PER_NODE = _upgrade.PER_NODE


def k8s_node(name, labels=None, gpus=None, annotations=None):
    node = {"metadata": {"name": name, "labels": dict(labels or {}), "annotations": dict(annotations or {})}}
    if gpus is not None:
        node["status"] = {"allocatable": {"nvidia.com/gpu": str(gpus)}}
    return node


# --------------------------------------------------------------------------------------------- labels
def test_the_labels_per_mode_are_the_operators_and_the_collections():
    assert _migration.node_labels("dra", "gpufabric.io") == {MODE: "dra", OWN: "dra"}
    assert _migration.node_labels("device_plugin", "example.com") == {
        MODE: "device-plugin",
        "example.com/device-allocation": "device_plugin",
    }
    with pytest.raises(ValueError, match="gpufabric_k8s_device_allocation: 'dranet' is not one of"):
        _migration.node_labels("dranet", "gpufabric.io")


@pytest.mark.parametrize(
    ("labels", "mode"),
    [
        ({}, "device_plugin"),  # neither label: the device plugins, the only mode before DRA
        ({MODE: "device-plugin"}, "device_plugin"),  # what the operator writes by default
        ({MODE: "dra"}, "dra"),
        ({OWN: "dra", MODE: "device-plugin"}, "dra"),  # the collection's record first
        ({OWN: "bogus", MODE: "dra"}, "dra"),
        ({MODE: "something-else"}, "device_plugin"),
    ],
)
def test_the_current_mode_is_read_from_the_labels(labels, mode):
    assert _migration.current_mode(labels, "gpufabric.io") == mode


# --------------------------------------------------------------------------------------------- plan
def test_only_the_nodes_of_the_run_not_at_the_target_move():
    nodes = [
        k8s_node("n1"),
        k8s_node("n2", {MODE: "dra", OWN: "dra"}),
        k8s_node("n3", {MODE: "device-plugin"}),
        k8s_node("n4"),
    ]
    groups = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}
    out = _migration.plan("dra", "gpufabric.io", ["n1", "n2", "n3"], {}, nodes, groups, rails={"n1": True})
    assert sorted(out) == ["n1", "n3"]  # n2 is there; n4 is outside the run
    assert out["n1"] == {
        "k8s_node_name": "n1",
        "node_group": "a",
        "from": "device_plugin",
        "to": "dra",
        "switch": True,
        "labels": {MODE: "dra", OWN: "dra"},
        "rails": True,
    }
    assert out["n3"]["rails"] is False
    # The default mode on a cluster that never moved: nothing to do, nothing drained.
    assert _migration.plan("device_plugin", "gpufabric.io", ["n1", "n3", "n4"], {}, nodes, groups) == {}
    # Back: only the node that is in dra moves.
    back = _migration.plan("device_plugin", "gpufabric.io", ["n1", "n2"], {}, nodes, groups)
    assert list(back) == ["n2"] and back["n2"]["labels"] == {MODE: "device-plugin", OWN: "device_plugin"}
    # Render mode: no cluster to read, nothing moves.
    assert _migration.plan("dra", "gpufabric.io", ["n1"], {}, None, groups) == {}


def test_a_node_a_failed_run_left_switched_is_confirmed_not_skipped():
    nodes = [k8s_node("n1", {MODE: "dra", OWN: "dra"}), k8s_node("n2", {MODE: "dra"})]
    out = _migration.plan("dra", "gpufabric.io", ["n1", "n2"], {}, nodes, {}, resuming=["n1", "n2"])
    # n1 carries the collection's label: its window waits for its devices again; n2 was moved by hand.
    assert list(out) == ["n1"] and out["n1"]["switch"] is False
    assert "confirm" in _migration.change_text(out["n1"])


def test_a_node_is_found_by_its_kubernetes_name():
    out = _migration.plan("dra", "gpufabric.io", ["host-1"], {"host-1": "node-a"}, [k8s_node("node-a")], {})
    assert out["host-1"]["k8s_node_name"] == "node-a"


# --------------------------------------------------------------------------------------------- batches
def test_batches_go_node_group_by_node_group_and_never_span_two():
    groups = {"a1": "h200", "a2": "h200", "a3": "h200", "b1": "b200", "b2": "b200", "c1": "h100"}
    hosts = sorted(groups)
    # groups in name order (b200, h100, h200), hosts in name order inside each
    assert _migration.group_batches(groups, hosts, 2) == [["b1", "b2"], ["c1"], ["a1", "a2"], ["a3"]]
    assert _migration.group_batches(groups, hosts, 1) == [["b1"], ["b2"], ["c1"], ["a1"], ["a2"], ["a3"]]
    assert _migration.group_batches(groups, hosts, 10) == [["b1", "b2"], ["c1"], ["a1", "a2", "a3"]]
    with pytest.raises(ValueError):
        _migration.group_batches(groups, hosts, 0)


# --------------------------------------------------------------------------------------------- the wait
def test_dra_needs_the_gpu_drivers_slice_and_dranets_where_there_are_rails():
    node = k8s_node("n1", gpus=8)
    gpu = {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1"}}
    nic = {"spec": {"driver": "dra.net", "nodeName": "n1"}}
    assert _migration.missing("dra", node, [], False) == ["no ResourceSlice of gpu.nvidia.com for Node n1"]
    assert _migration.missing("dra", node, [gpu], False) == []
    assert _migration.missing("dra", node, [gpu], True) == ["no ResourceSlice of dra.net for Node n1"]
    assert _migration.missing("dra", node, [gpu, nic], True) == []


def test_the_device_plugins_need_gpus_and_no_gpu_slice_left():
    gpu = {"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1"}}
    assert _migration.missing("device_plugin", k8s_node("n1", gpus=8), [], True) == []
    assert _migration.missing("device_plugin", k8s_node("n1", gpus=0), [], False) == [
        "Node n1 has no allocatable nvidia.com/gpu"
    ]
    assert _migration.missing("device_plugin", k8s_node("n1"), [gpu], False) == [
        "Node n1 has no allocatable nvidia.com/gpu",
        "Node n1 still has a ResourceSlice of gpu.nvidia.com",
    ]


# --------------------------------------------------------------------------------------------- in the upgrade plan
def _rails(*netdevs):
    return [
        {"rail": i, "gpu": f"GPU{i}", "nic": f"mlx5_{i}", "netdev": n, "roce_netdev": n} for i, n in enumerate(netdevs)
    ]


def record(host, gpu_model="H200", rails=2):
    topology = {
        "gpus": [{"model": gpu_model, "index": i, "name": f"GPU{i}"} for i in range(rails)],
        "nics": [
            {"rdma_device": f"mlx5_{i}", "model": "ConnectX-7", "rail": i, "netdevs": [f"ens{i}"], "ports": []}
            for i in range(rails)
        ],
        "rails": _rails(*[f"ens{i}" for i in range(rails)]),
    }
    return {"k8s_node_name": host, "upgrade": {"changes": []}, "topology": topology}


def test_the_upgrade_plan_moves_the_nodes_group_by_group_and_says_so():
    records = {h: record(h, "H200") for h in ("gpu-c1", "gpu-a2")}
    records.update({h: record(h, "B200") for h in ("gpu-a1", "gpu-b1")})
    cluster = [k8s_node(h) for h in records]
    cluster.append(k8s_node("gpu-b1-node-gone"))
    values = {"gpufabric_k8s_device_allocation": "dra", "gpufabric_upgrade_serial": "1", PER_NODE: True}
    result = _upgrade.plan(values, records, cluster, {}, RULES)
    groups = {h: result["migration"]["nodes"][h]["node_group"] for h in records}
    assert len(set(groups.values())) == 2
    b200 = sorted(h for h in records if records[h]["topology"]["gpus"][0]["model"] == "B200")
    h200 = sorted(set(records) - set(b200))
    first, second = sorted({groups[b200[0]]: b200, groups[h200[0]]: h200}.items())
    # Group by group (groups in name order), not name order across the groups.
    assert result["batches"] == [[h] for h in first[1] + second[1]]
    assert result["host_order"] == first[1] + second[1]
    assert result["migration"]["cluster"] is True
    summary = result["summary"]
    assert "device allocation: 4 node(s) move to dra, node group by node group" in summary
    assert f"gpu-a1 (Node gpu-a1): device allocation device_plugin -> dra (node group {groups['gpu-a1']})" in summary
    assert "then, once every node moved: the cluster-wide objects of dra" in summary
    # A second run after the move: nothing to change, nothing drained.
    moved = [k8s_node(h, {MODE: "dra", OWN: "dra"}) for h in records]
    again = _upgrade.plan(values, records, moved, {}, RULES)
    assert again["pending"] == [] and again["batches"] == [] and again["migration"]["cluster"] is False
    assert "every GPU node of this run is at dra" in again["summary"]


def test_a_percentage_cuts_batches_inside_each_group():
    records = {f"h{i}": record(f"h{i}", "H200") for i in range(4)}
    records.update({f"b{i}": record(f"b{i}", "B200") for i in range(2)})
    values = {"gpufabric_k8s_device_allocation": "dra", "gpufabric_upgrade_serial": "50%", PER_NODE: True}
    result = _upgrade.plan(values, records, [k8s_node(h) for h in records], {}, RULES)
    # 50% of 6 nodes is 3 per batch; the B200 group's two nodes make a batch of their own.
    assert sorted(result["batches"]) == [["b0", "b1"], ["h0", "h1", "h2"], ["h3"]]
    assert result["serial"] == [len(b) for b in result["batches"]]


def test_without_a_move_the_batches_stay_in_name_order():
    records = {h: record(h, "H200" if h < "gpu-b" else "B200") for h in ("gpu-a1", "gpu-b1", "gpu-a2")}
    records["gpu-a1"]["upgrade"]["changes"] = ["x"]
    records["gpu-b1"]["upgrade"]["changes"] = ["y"]
    values = {"gpufabric_upgrade_serial": "1"}
    result = _upgrade.plan(values, records, [k8s_node(h) for h in records], {}, RULES)
    assert result["batches"] == [["gpu-a1"], ["gpu-b1"]] and result["migration"]["nodes"] == {}


def test_a_rerun_after_a_failed_wait_confirms_the_node_and_then_applies_the_cluster_objects():
    records = {h: record(h, "H200") for h in ("n1", "n2")}
    failed = {"rollout.gpufabric.io/failed": "upgrade: no ResourceSlice of gpu.nvidia.com for Node n2"}
    cluster = [k8s_node("n1", {MODE: "dra", OWN: "dra"}), k8s_node("n2", {MODE: "dra", OWN: "dra"}, annotations=failed)]
    values = {"gpufabric_k8s_device_allocation": "dra", PER_NODE: True}
    result = _upgrade.plan(values, records, cluster, {}, RULES)
    assert result["pending"] == ["n2"] and list(result["migration"]["nodes"]) == ["n2"]
    assert result["migration"]["nodes"]["n2"]["switch"] is False and result["migration"]["cluster"] is True
    assert "n2 (Node n2): device allocation dra: confirm the node publishes its devices" in result["summary"]


def test_a_move_is_refused_without_an_operator_that_serves_both_modes_per_node():
    """The pinned GPU Operator serves the device plugins or the DRA driver per cluster: a move node group by
    node group is refused before any change unless the user says the operator serves both per node."""
    records = {h: record(h, "H200") for h in ("n1", "n2")}
    values = {"gpufabric_k8s_device_allocation": "dra"}
    with pytest.raises(_upgrade.UpgradeError) as refused:
        _upgrade.plan(values, records, [k8s_node(h) for h in records], {}, RULES)
    text = " ".join(refused.value.problems)
    assert "gpufabric_k8s_device_allocation: 2 node(s) would move to dra" in text
    assert f"Set {PER_NODE}: true only with such an operator" in text
    # Nothing to move (every node already at the target): no refusal, with or without the setting.
    moved = [k8s_node(h, {MODE: "dra", OWN: "dra"}) for h in records]
    assert _upgrade.plan(values, records, moved, {}, RULES)["migration"]["nodes"] == {}
