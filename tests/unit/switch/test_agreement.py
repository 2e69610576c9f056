"""The agreement check (module_utils/switch/running.py and agreement.py): the fixtures' leaves agree
with the lab's fabric; a mismatch injected in PFC priority, the DSCP map, ECN or MTU is found and
named with the switch, the ports, the nodes, the setting and both values."""

from __future__ import annotations

import copy
import json

import pytest
from support import FIXTURES, fabric, switches

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import agreement, qos_plan, running

NVUE = json.loads((FIXTURES / "nvue-leaf-a.json").read_text())
SONIC = json.loads((FIXTURES / "sonic-leaf-b-config_db.json").read_text())


def leaves(**fab_change):
    return qos_plan.plan(dict(fabric(), **fab_change), switches())


def findings(nvue=None, sonic=None, **fab_change):
    exports = {"leaf-a": NVUE if nvue is None else nvue, "leaf-b": SONIC if sonic is None else sonic}
    return agreement.check(leaves(**fab_change), exports)


def nvue_qos(change):
    export = copy.deepcopy(NVUE)
    change(export[1]["set"])
    return export


def only(result, switch):
    assert result["ok"] is False
    assert {f["switch"] for f in result["findings"]} == {switch}, result["findings"]
    return result["findings"]


def test_the_documented_leaves_agree_with_the_lab_fabric():
    result = findings()
    assert result == {"ok": True, "findings": [], "checked": ["leaf-a", "leaf-b"], "missing": []}


def test_the_planned_nvue_patch_agrees_with_itself_once_applied():
    """Read back as a revision tree, the collection's own patch is what the hosts need."""
    plan = leaves()
    assert agreement.check(plan, {"leaf-a": {"set": plan["leaf-a"]["qos"]}, "leaf-b": SONIC})["ok"]


def test_nvue_pfc_on_another_priority():
    export = nvue_qos(lambda s: s["qos"].update(pfc={"default-global": {"switch-priority": {"4": {}}}}))
    (finding,) = only(findings(nvue=export), "leaf-a")
    assert finding["setting"] == "PFC priority"
    assert finding["expected"].startswith("3") and finding["found"] == "4"
    assert finding["port"] == "swp1-2,swp9-10,swp17-18,swp25-26"
    assert finding["nodes"][:2] == ["gpu-node-01", "gpu-node-02"]
    assert finding["message"].startswith("leaf-a swp1-2,swp9-10,swp17-18,swp25-26 (gpu-node-01, gpu-node-02,")
    assert finding["message"].endswith(": PFC priority is 4, the hosts need 3 (not the CNP priority 6)")


def test_nvue_dscp_map_sends_roce_elsewhere():
    export = nvue_qos(lambda s: s["qos"].update(mapping={"default-global": {"dscp": {"26": {"switch-priority": 2}}}}))
    (finding,) = only(findings(nvue=export), "leaf-a")
    assert (finding["setting"], finding["expected"], finding["found"]) == ("RoCE DSCP 26 to priority", "3", "2")


def test_nvue_cnp_dscp_and_trust():
    export = nvue_qos(lambda s: s["qos"].update(mapping={"default-global": {"dscp": {"48": {"switch-priority": 7}}}}))
    (finding,) = only(findings(nvue=export), "leaf-a")
    assert (finding["setting"], finding["found"]) == ("CNP DSCP 48 to priority", "7")
    export = nvue_qos(lambda s: s["qos"].update(mapping={"default-global": {"trust": "l2"}}))
    (finding,) = only(findings(nvue=export), "leaf-a")
    assert (finding["setting"], finding["found"]) == ("DSCP trust", "l2")


def test_nvue_ecn_threshold_and_ecn_off():
    tc3 = {"default-global": {"traffic-class": {"3": {"min-threshold": 40000}}}}
    (finding,) = only(findings(nvue=nvue_qos(lambda s: s["qos"].update({"congestion-control": tc3}))), "leaf-a")
    assert (finding["setting"], finding["expected"], finding["found"]) == (
        "ECN min threshold on traffic class 3",
        "150000",
        "40000",
    )
    tc3 = {"default-global": {"traffic-class": {"3": {"ecn": "disable"}}}}
    (finding,) = only(findings(nvue=nvue_qos(lambda s: s["qos"].update({"congestion-control": tc3}))), "leaf-a")
    assert (finding["setting"], finding["expected"], finding["found"]) == (
        "ECN on traffic class 3 (priority 3)",
        "on",
        "off",
    )


def test_nvue_port_mtu_below_the_hosts():
    export = nvue_qos(lambda s: s["interface"].update({"swp10": {"link": {"mtu": 1500}, "type": "swp"}}))
    (finding,) = only(findings(nvue=export), "leaf-a")
    assert (finding["port"], finding["nodes"], finding["setting"], finding["found"]) == (
        "swp10",
        ["gpu-node-02"],
        "MTU",
        "1500",
    )
    assert finding["expected"] == ">= 9000 (gpufabric_fabric.mtu)"


def test_nvue_without_roce_has_neither_pfc_nor_ecn():
    export = nvue_qos(lambda s: s.pop("qos"))
    settings = {f["setting"] for f in only(findings(nvue=export), "leaf-a")}
    assert settings == {"PFC priority", "DSCP trust", "ECN on traffic class 3 (priority 3)"}


def test_sonic_pfc_priority():
    db = copy.deepcopy(SONIC)
    db["PORT_QOS_MAP"]["Ethernet36"]["pfc_enable"] = "4"
    (finding,) = only(findings(sonic=db), "leaf-b")
    assert (finding["port"], finding["nodes"], finding["setting"], finding["found"]) == (
        "Ethernet36",
        ["gpu-node-02"],
        "PFC priority",
        "4",
    )


def test_sonic_dscp_map():
    db = copy.deepcopy(SONIC)
    db["DSCP_TO_TC_MAP"]["AZURE"]["26"] = "1"
    (finding,) = only(findings(sonic=db), "leaf-b")
    assert (finding["setting"], finding["expected"], finding["found"]) == ("RoCE DSCP 26 to priority", "3", "1")
    assert finding["port"] == "Ethernet0,Ethernet4,Ethernet32,Ethernet36,Ethernet64,Ethernet68,Ethernet96,Ethernet100"


def test_sonic_ecn_with_the_manuals_own_thresholds():
    db = copy.deepcopy(SONIC)
    db["WRED_PROFILE"]["AZURE_LOSSLESS"].update(
        green_min_threshold="1048576", green_max_threshold="2097152", green_drop_probability="5"
    )
    found = {(f["setting"], f["expected"], f["found"]) for f in only(findings(sonic=db), "leaf-b")}
    assert found == {
        ("ECN min threshold on traffic class 3", "150000", "1048576"),
        ("ECN max threshold on traffic class 3", "1500000", "2097152"),
        ("ECN probability on traffic class 3", "100", "5"),
    }


def test_sonic_mtu_and_a_queue_without_wred():
    db = copy.deepcopy(SONIC)
    db["PORT"]["Ethernet64"]["mtu"] = "1500"
    del db["QUEUE"]["Ethernet68|3"]
    result = {(f["port"], f["setting"], f["found"]) for f in only(findings(sonic=db), "leaf-b")}
    assert result == {("Ethernet64", "MTU", "1500"), ("Ethernet68", "ECN on traffic class 3 (priority 3)", "off")}


def test_sonic_older_table_references_and_port_lists_are_read():
    db = copy.deepcopy(SONIC)
    for entry in db["PORT_QOS_MAP"].values():
        entry["dscp_to_tc_map"] = "[DSCP_TO_TC_MAP|AZURE]"
    queues = db.pop("QUEUE")
    db["QUEUE"] = {"Ethernet0,Ethernet4|3-4": {"wred_profile": "[WRED_PROFILE|AZURE_LOSSLESS]"}}
    db["QUEUE"].update({k: v for k, v in queues.items() if not k.startswith(("Ethernet0|", "Ethernet4|"))})
    assert findings(sonic=db)["ok"]


def test_the_hosts_fabric_decides_what_is_expected():
    """The same leaves disagree with a fabric on another lossless priority, each setting named."""
    found = {f["setting"] for f in findings(lossless_priority=4, data_dscp=34, roce_tos=None)["findings"]}
    assert {"PFC priority", "RoCE DSCP 34 to priority"} <= found


def test_a_leaf_without_an_export_is_missing_and_a_bad_export_is_named():
    result = agreement.check(leaves(), {"leaf-a": NVUE})
    assert (result["ok"], result["missing"], result["checked"]) == (False, ["leaf-b"], ["leaf-a"])
    (finding,) = agreement.check(leaves(), {"leaf-a": [{"header": {}}], "leaf-b": SONIC})["findings"]
    assert finding["switch"] == "leaf-a" and "set" in finding["found"]


@pytest.mark.parametrize("key, ports", [("swp2,6", ["swp2", "swp6"]), ("swp1-3", ["swp1", "swp2"]), ("eth0", [])])
def test_nvue_interface_keys_in_nvue_shorthand(key, ports):
    tree = {"interface": {key: {"link": {"mtu": 1500}}}, "qos": {"roce": {}}}
    read = running.nvue({"set": tree}, ["swp1", "swp2", "swp6"])
    assert sorted(p for p, v in read.items() if v["mtu"] == 1500) == ports
