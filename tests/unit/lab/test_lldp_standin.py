"""The lab's cabling (lab/cabling.py) and its lldpctl stand-in (lab/simulators/lldpctl), run as the
lab runs them on a materialised snapshot: the lab's switch intent cables every rail NIC to its
rail's leaf, so the collection's module and check pass on it; a miscabling file on the node makes
the check name that NIC; without a cabling map the stand-in answers as lldpctl does when lldpd is
not running, and the module reports no LLDP source."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp, qos_plan
from ansible_collections.gpufabric.rollout.plugins.modules import lldp_neighbours

REPO = Path(__file__).resolve().parents[3]
LAB = REPO / "inventory" / "lab"
NODES = {"gpu-node-01": "dgx-h200-8x8@1", "gpu-node-02": "dgx-h200-8x8@2"}
TOPOLOGY = REPO / "tests" / "unit" / "cluster" / "fixtures" / "topology"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lab_switches():
    """The lab's gpufabric_switches with "{{ groups['gpu_nodes'] }}" as Ansible renders it for inventory/lab."""
    intent = yaml.safe_load((LAB / "group_vars" / "all" / "switches.yml").read_text())["gpufabric_switches"]
    nodes = list(yaml.safe_load((LAB / "hosts.yml").read_text())["all"]["children"]["gpu_nodes"]["hosts"])
    for leaf in intent["leaves"]:
        for rail in leaf["rails"]:
            assert rail["nodes"] == "{{ groups['gpu_nodes'] }}"
            rail["nodes"] = nodes
    return dict(intent, mtu=9216, ecn={"min_threshold": 150000, "max_threshold": 1500000, "probability": 100})


def rails(node: int):
    topology = json.loads((TOPOLOGY / f"dgx-h200-8x8.node{node}.json").read_text())
    return [{"rail": r["rail"], "nic": r["nic"], "netdev": r["netdev"]} for r in topology["rails"]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Per node: its sysroot and the cabling map lab/cabling.py prints for it, as prepare.yml runs it."""
    base = tmp_path_factory.mktemp("lldp-lab")
    snapshots = _load("snapshots_build", REPO / "lab" / "snapshots" / "build.py")
    out = {}
    for node, snapshot in NODES.items():
        root = snapshots.materialize(snapshot, str(base / node / "sysroot"))
        done = subprocess.run(
            [sys.executable, str(REPO / "lab" / "cabling.py"), node, snapshot],
            input=json.dumps(lab_switches()),
            capture_output=True,
            text=True,
            check=True,
        )
        (base / node / "lldp-cabling.json").write_text(done.stdout)
        out[node] = {"sysroot": root, "dir": base / node, "map": json.loads(done.stdout)}
    return out


def standin_env(node, miscabled=None, cabling=True):
    env = dict(
        os.environ,
        GPUFABRIC_LAB_SYSROOT=str(node["sysroot"]),
        GPUFABRIC_LAB_LLDP_CABLING=str(node["dir"] / ("lldp-cabling.json" if cabling else "absent.json")),
        GPUFABRIC_LAB_LLDP_MISCABLED=str(node["dir"] / "lldp-miscabled.json"),
        PATH=f"{REPO / 'lab' / 'simulators'}:{os.environ['PATH']}",
    )
    fault = node["dir"] / "lldp-miscabled.json"
    fault.unlink(missing_ok=True)
    if miscabled is not None:
        fault.write_text(json.dumps(miscabled))
    return env


def test_the_rails_are_discoverys_and_the_ports_the_intents(lab):
    one = lab["gpu-node-01"]["map"]
    assert {v["rail"]: k for k, v in one.items()} == {r["rail"]: r["netdev"] for r in rails(1)}
    assert one["enp24s0np0"] == {"switch": "leaf-a", "port": "swp1", "address": "192.0.2.11", "rail": 0}
    two = lab["gpu-node-02"]["map"]
    assert two["enp159s0np0"] == {"switch": "leaf-b", "port": "Ethernet68", "address": "192.0.2.12", "rail": 5}


@pytest.mark.parametrize("fmt", ["json", "json0"])
def test_the_default_lab_is_cabled_as_its_intent_says(lab, fmt):
    nodes = {}
    for index, (name, node) in enumerate(lab.items(), start=1):
        env = standin_env(node)
        text = subprocess.run(["lldpctl", "-f", fmt], env=env, capture_output=True, text=True, check=True).stdout
        nodes[name] = {"rails": rails(index), "lldp": json.loads(text)}
    result = lldp.check(qos_plan.plan(_fabric(), lab_switches()), nodes)
    assert result["ok"], result["findings"]
    assert len(result["checked"]) == 16


def test_a_miscabled_nic_is_named(lab):
    node = lab["gpu-node-02"]
    env = standin_env(node, miscabled={"enp159s0np0": {"switch": "leaf-b", "port": "Ethernet64"}, "enp193s0np0": None})
    result = lldp_neighbours.read([r["netdev"] for r in rails(2)], Runner.local(path=env["PATH"], env=env))
    assert result["source"] == "lldpd" and "enp193s0np0" not in result["neighbours"]
    checked = lldp.check(
        qos_plan.plan(_fabric(), lab_switches()), {"gpu-node-02": {"rails": rails(2), "lldp": result["lldp"]}}
    )
    assert [f["message"] for f in checked["findings"]] == [
        "gpu-node-02 mlx5_6 (enp159s0np0, rail 5): reaches leaf-b Ethernet64, expected leaf-b Ethernet68",
        "gpu-node-02 mlx5_9 (enp193s0np0, rail 7): no LLDP neighbour, expected leaf-b Ethernet196",
    ]


def test_without_a_cabling_map_there_is_no_lldp_source(lab):
    env = standin_env(lab["gpu-node-01"], cabling=False)
    done = subprocess.run(["lldpctl", "-f", "json"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "lldpd is not running" in done.stderr
    result = lldp_neighbours.read([], Runner.local(path=env["PATH"], env=env))
    assert result["source"] == "none" and "lldpd is not running" in result["reason"]


def _fabric():
    return yaml.safe_load((LAB / "group_vars" / "all" / "fabric.yml").read_text())["gpufabric_fabric"]
