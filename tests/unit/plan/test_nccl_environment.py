"""One NCCL environment: /etc/nccl.conf (node plan) and the Pods' NCCL ConfigMap (cluster plan) are
both made by plan.nccl.environment, on every hardware layout of the lab snapshots, and no other
product module writes an NCCL variable or the NCCL version cutoff."""

from __future__ import annotations

import ast
import copy
import importlib.util
from pathlib import Path

import pytest
from conftest import REPO, check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as _discover
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

PLUGINS = REPO / "plugins"
NCCL_MODULE = PLUGINS / "module_utils" / "plan" / "nccl.py"
# (snapshot, node intent changes): a VM's NIC is a VF, named for roce since it is no compute PF.
LAYOUTS = [
    ("dgx-h200-8x8@1", {}),
    ("dgx-h200-8x8@2", {}),
    ("pcie-l40s-4x2@1", {}),
    ("roce-vlan-gid@1", {}),
    ("vm-2gpu@1", {"roce_disable_acs_redirect": False, "roce_interfaces": ["mlx5_0"]}),
]
VERSIONS = ["2.27.3", "2.21.0", "2.20.5", "2.18.1"]


@pytest.fixture(scope="module")
def topology_of(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    snapshots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(snapshots)
    cache = {}

    def get(name):
        if name not in cache:
            root = str(snapshots.materialize(name, str(tmp_path_factory.mktemp(name.replace("@", "_")))))
            matrix = Path(root, "nvidia-smi-topo-m.txt")
            cache[name] = _discover.discover(root, matrix.read_text() if matrix.exists() else None)
        return cache[name]

    return get


@pytest.fixture()
def recorded(monkeypatch):
    """Every call of plan.nccl.environment with what it returned."""
    calls = []
    real = _nccl.environment

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(dict(out))
        return out

    monkeypatch.setattr(_nccl, "environment", spy)
    return calls


def plans(specs, topology, nccl_version, changes):
    intent = dict(copy.deepcopy(lab_intent()), gpufabric_nccl_version=nccl_version, **changes)
    values, problems = check(specs, "node", dict(intent, gpufabric_k8s_node_name="gpu-node-01"))
    assert problems == []
    node = _plan_node.plan_node(values, node_facts(1, topology=topology))
    cluster_values, problems = check(specs, "cluster", intent)
    assert problems == []
    cluster_values["gpufabric_rails"] = dict(cluster_values["gpufabric_rails"], min_rails=1)
    cluster = _plan_cluster.plan(cluster_values, {"gpu-node-01": _node_records.node_record(node, topology)})
    return node, cluster


@pytest.mark.parametrize("nccl_version", VERSIONS)
@pytest.mark.parametrize(("snapshot", "changes"), LAYOUTS)
def test_nccl_conf_and_the_pods_configmap_come_from_one_function(
    specs, topology_of, recorded, snapshot, changes, nccl_version
):
    topology = topology_of(snapshot)
    node, cluster = plans(specs, topology, nccl_version, changes)
    conf = node["nccl"]["entries"]
    groups = list(cluster["network"]["nccl"])
    assert len(groups) == 1, groups
    pods = cluster["network"]["nccl"][groups[0]]
    maps = [o["data"] for o in cluster["network"]["objects"]["rdma_networks"] if o["kind"] == "ConfigMap"]
    assert pods in maps
    # environment() ran once for the node, then once for the node group; each output is what it
    # returned (nccl.conf adds only NCCL_TOPO_FILE and nccl_config_extra after it)
    assert len(recorded) == 2
    for_conf, for_pods = recorded
    assert pods == for_pods
    assert list(conf)[: len(for_conf)] == list(for_conf)
    assert {k: conf[k] for k in for_conf} == for_conf
    assert set(conf) - set(for_conf) <= {"NCCL_TOPO_FILE"}
    # and on one node with every rail in the Pods' networks, the two agree on every shared variable
    for key in ("NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_TC", "NCCL_NET_GDR_LEVEL"):
        assert conf[key] == pods[key], key
    assert conf["NCCL_IB_HCA"] == _nccl.ib_hca(topology)
    assert conf["NCCL_NET_GDR_LEVEL"] == _nccl.net_gdr_level(topology)
    # NCCL < 2.21: the host gets the discovered index, a Pod the script that finds its own
    old = _nccl.needs_gid_index(nccl_version)
    assert ("NCCL_IB_GID_INDEX" in conf, "GPUFABRIC_NCCL_GID_SCRIPT" in pods) == (old, old)
    assert "NCCL_IB_GID_INDEX" not in pods and "GPUFABRIC_NCCL_GID_SCRIPT" not in conf
    gid_maps = [o for o in cluster["network"]["objects"]["rdma_networks"] if o["metadata"]["name"] == "nccl-gid-index"]
    assert len(gid_maps) == (1 if old else 0)


def test_environment_orders_and_names_every_variable_once():
    fabric = {"roce_tos": 106}
    ports = [("mlx5_0", 1), ("mlx5_3", 2)]
    new = _nccl.environment(ports, "=eth0", fabric, "2.27.3", "PIX")
    assert list(new.items()) == [
        ("NCCL_IB_HCA", "=mlx5_0:1,mlx5_3:2"),
        ("NCCL_SOCKET_IFNAME", "=eth0"),
        ("NCCL_IB_TC", "106"),
        ("NCCL_NET_GDR_LEVEL", "PIX"),
    ]
    host = _nccl.environment(ports, "=eth0", fabric, "2.20.5", None, gid_index=3)
    assert host["NCCL_IB_GID_INDEX"] == "3" and "NCCL_NET_GDR_LEVEL" not in host
    pod = _nccl.environment(ports, "=eth0", fabric, "2.20.5", "PHB", gid_script=_nccl.POD_GID_SCRIPT)
    assert pod["GPUFABRIC_NCCL_GID_SCRIPT"] == _nccl.POD_GID_SCRIPT and "NCCL_IB_GID_INDEX" not in pod
    assert "GPUFABRIC_NCCL_GID_SCRIPT" not in _nccl.environment(ports, "=eth0", fabric, "2.21.0", None, gid_script="x")
    with pytest.raises(_nccl.NcclPlanError, match=r"NCCL 2\.20\.5 \(older than 2\.21\) needs a GID index"):
        _nccl.environment(ports, "=eth0", fabric, "2.20.5", None)


WRITTEN = {
    "NCCL_IB_HCA",
    "NCCL_IB_TC",
    "NCCL_IB_GID_INDEX",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_SOCKET_IFNAME",
    "GPUFABRIC_NCCL_GID_SCRIPT",
}


def nccl_writes(source: str):
    """(line, what) for each NCCL variable used as a value's name (a dict key, an assigned item) and
    each (2, 21, ...) tuple; messages and docstrings that name them are not counted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        keys = []
        if isinstance(node, ast.Dict):
            keys = [k for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            keys = [node.slice] if isinstance(node.slice, ast.Constant) else []
        found += [(k.lineno, k.value) for k in keys if k.value in WRITTEN]
        if isinstance(node, ast.Tuple) and [getattr(e, "value", None) for e in node.elts[:2]] == [2, 21]:
            found.append((node.lineno, "(2, 21)"))
    return found


def test_no_other_module_writes_an_nccl_variable_or_the_version_cutoff():
    found = {}
    for path in sorted(PLUGINS.rglob("*.py")):
        if path != NCCL_MODULE and nccl_writes(path.read_text(encoding="utf-8")):
            found[str(path.relative_to(REPO))] = nccl_writes(path.read_text(encoding="utf-8"))
    assert found == {}
    assert len(nccl_writes(NCCL_MODULE.read_text(encoding="utf-8"))) >= len(WRITTEN)


def test_the_check_sees_a_second_implementation():
    """The shapes the cluster plan and discovery had before: a dict literal, an item, the cutoff."""
    source = (
        'env = {"NCCL_IB_HCA": "=" + ",".join(hcas)}\n'
        'env["NCCL_IB_TC"] = tc\n'
        "if version_tuple(v) < (2, 21):\n"
        '    raise ValueError("NCCL_IB_HCA needs 2.21")\n'
    )
    assert nccl_writes(source) == [(1, "NCCL_IB_HCA"), (2, "NCCL_IB_TC"), (3, "(2, 21)")]
