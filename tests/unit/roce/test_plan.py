"""Planning (intent + topology -> per-NIC plan) and the cross-node rail consistency check."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from intent_support import roce_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import roce as _qos_plan

CASES = Path(__file__).parent / "cases"
TOPOLOGY = yaml.safe_load((CASES / "topology_dgx_subset.yml").read_text())
CONSISTENCY = yaml.safe_load((CASES / "rail_consistency.yml").read_text())


def netdevs(plan):
    return [i["netdev"] for i in plan["interfaces"]]


def test_plan_takes_rail_pfs_only_by_default():
    plan = roce_plan(TOPOLOGY, sysroot="/sr")
    assert netdevs(plan) == ["enp24s0np0", "enp42s0np0"]
    first = plan["interfaces"][0]
    assert first["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert first["dscp2prio"] == {"26": 3, "48": 6}
    assert first["ecn"] == {"enabled": True, "priorities": [3]}
    assert (first["roce_tos"], first["traffic_class"], first["mtu"]) == (106, 106, 9000)
    assert first["rail"] == 0 and first["rdma_device"] == "mlx5_0"
    assert first["global_pause_off"] is True
    assert plan["sysroot"] == "/sr" and plan["netns_mode"] == "shared"
    assert plan["acs"]["endpoints"] == []


def test_plan_adds_storage_when_asked():
    plan = roce_plan(TOPOLOGY, include_storage=True)
    assert netdevs(plan) == ["enp24s0np0", "enp42s0np0", "enp170s0np0"]


def test_plan_explicit_interfaces_by_netdev_or_rdma_name():
    plan = roce_plan(TOPOLOGY, interfaces=["mlx5_2", "enp170s0np0"])
    assert netdevs(plan) == ["enp42s0np0", "enp170s0np0"]


def test_plan_without_pfc_has_empty_vector_and_keeps_pause():
    plan = roce_plan(TOPOLOGY, {"pfc": False})
    assert plan["interfaces"][0]["pfc"] == [0] * 8
    assert plan["interfaces"][0]["global_pause_off"] is False


def test_plan_optional_settings_flow_through():
    ets = {
        "prio_tc": [0, 0, 0, 1, 0, 0, 2, 0],
        "tsa": ["ets", "ets", "strict"] + ["strict"] * 5,
        "tc_bw": [50, 50, 0, 0, 0, 0, 0, 0],
    }
    opts = {
        "ets": ets,
        "buffer_size": [130944, 130944, 0, 0, 0, 0, 0, 0],
        "prio2buffer": [0, 0, 0, 1, 0, 0, 0, 0],
        "cable_len": 30,
        "default_priority": 0,
        "ecn_priorities": [3, 4],
        "set_traffic_class": False,
    }
    iface = roce_plan(TOPOLOGY, **opts)["interfaces"][0]
    assert iface["ets"] == ets and iface["cable_len"] == 30 and iface["default_prio"] == 0
    assert iface["prio2buffer"][3] == 1 and iface["ecn"]["priorities"] == [3, 4]
    assert iface["traffic_class"] is None


def test_plan_acs_endpoints_are_rail_gpus_and_nics():
    plan = roce_plan(TOPOLOGY, disable_acs_redirect=True)
    assert plan["acs"] == {
        "endpoints": ["0000:18:00.0", "0000:19:00.0", "0000:2a:00.0", "0000:2b:00.0"],
        "clear_mask": 0x0C,
    }


def test_rail_summary_carries_what_must_match():
    summary = _qos_plan.rail_summary(roce_plan(TOPOLOGY))
    assert summary == {
        "0": {"priority": 3, "dscp": 26, "cnp_dscp": 48, "mtu": 9000},
        "1": {"priority": 3, "dscp": 26, "cnp_dscp": 48, "mtu": 9000},
    }


@pytest.mark.parametrize("name", sorted(CONSISTENCY))
def test_rail_consistency(name):
    case = CONSISTENCY[name]
    errors = _qos_plan.rail_consistency_errors(case["per_node"])
    assert len(errors) == len(case["errors"]), errors
    for got, fragment in zip(errors, case["errors"]):
        assert fragment in got


def test_rail_consistency_from_two_plans():
    node_a = _qos_plan.rail_summary(roce_plan(TOPOLOGY))
    node_b = _qos_plan.rail_summary(roce_plan(TOPOLOGY, {"mtu": 4200}))
    node_c = _qos_plan.rail_summary(roce_plan(TOPOLOGY))
    errors = _qos_plan.rail_consistency_errors({"a": node_a, "b": node_b, "c": node_c})
    assert [e.split(":")[0] for e in errors] == ["rail 0", "rail 1"]
    assert all("node b has mtu=4200 (expected 9000)" in e for e in errors)
