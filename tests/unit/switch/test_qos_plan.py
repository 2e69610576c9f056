"""The leaves' QoS planned from gpufabric_fabric (module_utils/switch/qos_plan.py and render.py).
SONiC arguments are validated against the dellemc.enterprise_sonic modules' own argument specs,
loaded from the installed collection."""

from __future__ import annotations

import importlib

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from support import fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import qos_plan, render

ARGSPEC = "ansible_collections.dellemc.enterprise_sonic.plugins.module_utils.network.sonic.argspec"
# module -> (argspec package, class), as the collection's modules load them
SONIC_SPECS = {
    "sonic_qos_maps": ("qos_maps.qos_maps", "Qos_mapsArgs"),
    "sonic_qos_wred": ("qos_wred.qos_wred", "Qos_wredArgs"),
    "sonic_qos_scheduler": ("qos_scheduler.qos_scheduler", "Qos_schedulerArgs"),
    "sonic_qos_pfc": ("qos_pfc.qos_pfc", "Qos_pfcArgs"),
    "sonic_qos_buffer": ("qos_buffer.qos_buffer", "Qos_bufferArgs"),
    "sonic_qos_interfaces": ("qos_interfaces.qos_interfaces", "Qos_interfacesArgs"),
    "sonic_interfaces": ("interfaces.interfaces", "InterfacesArgs"),
}


def spec_errors(module: str, arguments):
    path, cls = SONIC_SPECS[module]
    spec = getattr(importlib.import_module(f"{ARGSPEC}.{path}"), cls).argument_spec
    return ArgumentSpecValidator(spec).validate(arguments).error_messages


def leaves(fab=None, sw=None):
    return qos_plan.plan(fab or fabric(), sw or switches())


def test_every_leaf_gets_its_ports_with_rail_and_node():
    plan = leaves()
    assert plan["leaf-a"]["ports"]["swp9"] == {"rail": 1, "node": "gpu-node-01"}
    assert plan["leaf-a"]["ports"]["swp10"] == {"rail": 1, "node": "gpu-node-02"}
    assert plan["leaf-a"]["ports"]["swp11"] == {"rail": 1, "node": None}
    assert plan["leaf-b"]["ports"]["Ethernet36"] == {"rail": 5, "node": "gpu-node-02"}
    assert len(plan["leaf-a"]["ports"]) == 32 and len(plan["leaf-b"]["ports"]) == 32
    assert plan["leaf-b"]["address"] == "192.0.2.12"


def test_nvue_patch_carries_the_fabric():
    qos = leaves()["leaf-a"]["qos"]
    assert qos["qos"]["roce"] == {"enable": "on", "mode": "lossless"}
    mapping = qos["qos"]["mapping"]["default-global"]
    assert mapping == {"trust": "l3", "dscp": {"26": {"switch-priority": 3}, "48": {"switch-priority": 6}}}
    assert qos["qos"]["pfc"]["default-global"] == {"switch-priority": {"3": {}}, "tx": "enable", "rx": "enable"}
    assert qos["qos"]["egress-queue-mapping"]["default-global"]["switch-priority"] == {
        "3": {"traffic-class": 3},
        "6": {"traffic-class": 6},
    }
    assert qos["qos"]["congestion-control"]["default-global"]["traffic-class"] == {
        "3": {"ecn": "enable", "min-threshold": 150000, "max-threshold": 1500000, "probability": 100}
    }
    assert qos["interface"]["swp32"] == {"type": "swp", "link": {"mtu": 9216}}
    assert sorted(qos["interface"]) == sorted(f"swp{n}" for n in range(1, 33))


def test_nvue_follows_another_priority_and_no_pfc():
    fab = dict(fabric(), lossless_priority=4, data_dscp=24, roce_tos=None, pfc=False, ecn=False)
    qos = leaves(fab)["leaf-a"]["qos"]["qos"]
    assert qos["roce"]["mode"] == "lossy"
    assert "pfc" not in qos
    assert qos["mapping"]["default-global"]["dscp"]["24"] == {"switch-priority": 4}
    assert qos["congestion-control"]["default-global"]["traffic-class"]["4"]["ecn"] == "disable"


def test_sonic_arguments_carry_the_fabric():
    qos = leaves()["leaf-b"]["qos"]
    assert tuple(qos) == qos_plan.SONIC_MODULES
    maps = qos["sonic_qos_maps"]["config"]
    assert maps["dscp_maps"][0]["entries"] == [{"dscp": 26, "fwd_group": "3"}, {"dscp": 48, "fwd_group": "6"}]
    assert maps["pfc_priority_queue_maps"][0]["entries"] == [{"dot1p": 3, "queue_index": 3}]
    wred = qos["sonic_qos_wred"]["config"][0]
    assert (
        wred["ecn"] == "all" and wred["green"]["min_threshold"] == 150000 and wred["green"]["max_threshold"] == 1500000
    )
    port = {p["name"]: p for p in qos["sonic_qos_interfaces"]["config"]}["Ethernet4"]
    assert port["pfc"] == {"priorities": [{"dot1p": 3, "enable": True}]}
    assert port["queues"] == [{"id": 3, "wred_profile": qos_plan.SONIC_LOSSLESS}]
    assert {"name": "Ethernet124", "mtu": 9216} in qos["sonic_interfaces"]["config"]
    schedulers = qos["sonic_qos_scheduler"]["config"][0]["schedulers"]
    assert schedulers[0] == {"sequence": 6, "scheduler_type": "strict"}


@pytest.mark.parametrize("fab_change", [{}, {"pfc": False, "ecn": False}, {"lossless_priority": 5, "cnp_priority": 0}])
def test_sonic_arguments_pass_each_modules_own_argument_spec(fab_change):
    for module, arguments in leaves(dict(fabric(), **fab_change))["leaf-b"]["qos"].items():
        assert spec_errors(module, arguments) == [], module


def test_the_argument_spec_check_would_catch_a_wrong_key():
    """The validation above is real: a key the module does not have, or a wrong choice, is an error."""
    arguments = leaves()["leaf-b"]["qos"]["sonic_qos_wred"]
    bad = {"config": [dict(arguments["config"][0], ecn="ecn_all")], "state": "merged"}
    assert any("ecn" in e for e in spec_errors("sonic_qos_wred", bad))
    bad = {"config": [dict(arguments["config"][0], min_threshold=1)], "state": "merged"}
    assert any("min_threshold" in e for e in spec_errors("sonic_qos_wred", bad))


def test_render_files_one_per_leaf_and_the_ports():
    files = {f["file"]: f["object"] for f in render.files(leaves())}
    assert sorted(files) == ["leaf-a.nvue.yaml", "leaf-b.sonic.yaml", "ports.yaml"]
    assert files["leaf-a.nvue.yaml"] == [{"set": leaves()["leaf-a"]["qos"]}], (
        "nv config patch reads a list with a set tree"
    )
    play = files["leaf-b.sonic.yaml"][0]
    assert play["hosts"] == "leaf-b"
    modules = [next(k for k in task if k.startswith("dellemc.")) for task in play["tasks"]]
    assert modules == [f"dellemc.enterprise_sonic.{m}" for m in qos_plan.SONIC_MODULES]
    assert files["ports.yaml"]["leaf-b"]["Ethernet0"] == {"rail": 4, "node": "gpu-node-01"}
    # what render_files writes reads back the same
    assert yaml.safe_load(yaml.safe_dump(files["leaf-b.sonic.yaml"])) == files["leaf-b.sonic.yaml"]


def test_summary_names_each_leaf():
    lines = render.summary_lines({"leaves": leaves()})
    assert lines[0] == (
        "switch leaf-a (nvue): rails 0, 1, 2, 3, 8 of 32 ports face GPU nodes (swp1-32); "
        "QoS in switches/leaf-a.nvue.yaml"
    )
    assert "(Ethernet0-124:4)" in lines[1]
