"""Cabling by LLDP (module_utils/switch/lldp.py): the lab's two nodes as lldpctl reports them, one in
each of lldpctl's JSON formats; gpu-node-02's rail-5 NIC is cabled to the wrong leaf port and its
rail-7 NIC hears no neighbour."""

from __future__ import annotations

import copy
import json

from support import FIXTURES, REPO, fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp, qos_plan

NODE1 = json.loads((FIXTURES / "lldpctl-gpu-node-01.json").read_text())
NODE2 = json.loads((FIXTURES / "lldpctl-gpu-node-02.json0.json").read_text())
TOPOLOGY = REPO / "tests" / "unit" / "cluster" / "fixtures" / "topology"


def rails(node: int):
    topology = json.loads((TOPOLOGY / f"dgx-h200-8x8.node{node}.json").read_text())
    return [{"rail": r["rail"], "nic": r["nic"], "netdev": r["netdev"]} for r in topology["rails"]]


def leaves():
    return qos_plan.plan(fabric(), switches())


def test_both_formats_are_read():
    one = lldp.neighbours(NODE1)
    assert one["enp159s0np0"] == {"switch": "leaf-b", "port": "Ethernet32", "descr": "Ethernet32"}
    assert one["eno1"]["switch"] == "oob-switch"
    two = lldp.neighbours(NODE2)
    assert two["enp24s0np0"] == {"switch": "leaf-a", "port": "swp2", "descr": "swp2"}
    assert "enp193s0np0" not in two


def test_a_well_cabled_node_passes():
    result = lldp.check(leaves(), {"gpu-node-01": {"rails": rails(1), "lldp": NODE1}})
    assert (result["ok"], result["findings"]) == (True, [])
    assert [(c["rail"], c["passed"]) for c in result["checked"]] == [(r, True) for r in range(8)]
    assert result["checked"][4]["expected"] == result["checked"][4]["found"] == "leaf-b Ethernet0"


def test_a_node_without_an_lldp_source_fails_every_rail_nic_with_the_reason():
    reason = "lldpctl not found: install and start lldpd on the GPU node"
    result = lldp.check(leaves(), {"gpu-node-01": {"rails": rails(1), "lldp": None, "reason": reason}})
    assert result["ok"] is False
    assert len(result["findings"]) == 8
    assert [c["passed"] for c in result["checked"]] == [False] * 8
    first = result["findings"][0]
    assert first["found"] == f"no LLDP source ({reason})"
    assert (
        first["message"] == f"gpu-node-01 mlx5_0 (enp24s0np0, rail 0): no LLDP source ({reason}), expected leaf-a swp1"
    )


def test_the_miscabled_nic_and_the_silent_one_are_named():
    result = lldp.check(
        leaves(), {"gpu-node-01": {"rails": rails(1), "lldp": NODE1}, "gpu-node-02": {"rails": rails(2), "lldp": NODE2}}
    )
    assert result["ok"] is False
    wrong, silent = result["findings"]
    assert (wrong["node"], wrong["nic"], wrong["netdev"], wrong["rail"]) == ("gpu-node-02", "mlx5_6", "enp159s0np0", 5)
    assert (wrong["expected"], wrong["found"]) == ("leaf-b Ethernet36", "leaf-b Ethernet64")
    assert (
        wrong["message"]
        == "gpu-node-02 mlx5_6 (enp159s0np0, rail 5): reaches leaf-b Ethernet64, expected leaf-b Ethernet36"
    )
    assert (silent["nic"], silent["expected"], silent["found"]) == ("mlx5_9", "leaf-b Ethernet100", "no LLDP neighbour")


def test_a_port_id_that_is_a_mac_is_matched_by_the_description():
    export = copy.deepcopy(NODE1)
    for item in export["lldp"]["interface"]:
        for entry in item.values():
            entry["port"]["id"] = {"type": "mac", "value": "aa:bb:cc:dd:ee:ff"}
    assert lldp.check(leaves(), {"gpu-node-01": {"rails": rails(1), "lldp": export}})["ok"]


def test_a_node_the_switch_intent_does_not_name():
    result = lldp.check(leaves(), {"gpu-node-03": {"rails": rails(1)[:1], "lldp": NODE1}})
    (finding,) = result["findings"]
    assert finding["found"] == "leaf-a swp1" and "none names this node" in finding["expected"]


def test_single_interface_json_and_unreadable_output():
    single = {
        "lldp": {
            "interface": {
                "enp24s0np0": {
                    "chassis": {"leaf-a": {"id": {"type": "mac", "value": "x"}}},
                    "port": {"id": {"type": "ifname", "value": "swp1"}},
                }
            }
        }
    }
    assert lldp.neighbours(single)["enp24s0np0"]["port"] == "swp1"
    (finding,) = lldp.check(leaves(), {"gpu-node-01": {"rails": rails(1), "lldp": {"neighbours": []}}})["findings"]
    assert finding["node"] == "gpu-node-01" and "unreadable" in finding["found"]
