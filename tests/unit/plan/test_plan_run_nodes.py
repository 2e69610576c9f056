"""The cluster plan reads the variables of the nodes this run can have read (run_nodes: what --limit
selects, roles/plan/tasks/summary.yml) and plans the others from their stored records without reading
theirs; without run_nodes every node's variables are read, as before."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from hostvars_support import CountingHostvars

from ansible_collections.gpufabric.rollout.plugins.action import plan as plan_action
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node_records import RECORD_VERSION, DiscoveryStore

NODES = ["gpu-node-1", "gpu-node-2", "gpu-node-3"]


def action():
    module = object.__new__(plan_action.ActionModule)
    module._templar = Templar(loader=DataLoader(), variables={})
    return module


def records(tmp_path, run_nodes=None):
    store = DiscoveryStore(str(tmp_path / "discovery"))
    for host in NODES:
        store.save(host, {"record_version": RECORD_VERSION, "k8s_node_name": host, "summary": f"{host} stored"})
    hostvars = CountingHostvars({host: {} for host in NODES})
    args = {"nodes": NODES, "plan_dir": str(tmp_path), "stored_discovery": True}
    if run_nodes is not None:
        args["run_nodes"] = run_nodes
    nodes, node_plans, _plan_dir = action()._records({"hostvars": hostvars}, args, save=False)
    return nodes, node_plans, hostvars.reads


def test_only_the_nodes_of_the_run_are_read(tmp_path):
    nodes, node_plans, reads = records(tmp_path, run_nodes=["gpu-node-2", "localhost"])
    assert set(reads) == {"gpu-node-2"}
    assert node_plans == {}
    assert {host: n["source"] for host, n in nodes.items()} == dict.fromkeys(NODES, "stored")


def test_a_limit_of_the_controller_alone_reads_no_node(tmp_path):
    nodes, _plans, reads = records(tmp_path, run_nodes=[])
    assert not reads and all(n["source"] == "stored" for n in nodes.values())


def test_without_run_nodes_every_node_is_read(tmp_path):
    _nodes, _plans, reads = records(tmp_path)
    assert set(reads) == set(NODES)


def test_run_nodes_is_an_argument_of_the_action():
    assert "run_nodes" in plan_action.ActionModule._VALID_ARGS
