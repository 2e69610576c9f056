"""IP arithmetic of the rail plan (cases/ipplan.yml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from netaddr import IPAddress, IPNetwork

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import ipplan as _ipplan

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "ipplan.yml").read_text())


@pytest.mark.parametrize("case", CASES["carve"])
def test_carve(case):
    got = _ipplan.carve(
        IPNetwork(case["supernet"]), case["prefix"], case["count"], [IPNetwork(a) for a in case["avoid"]]
    )
    assert [str(n) for n in got] == case["expect"]


@pytest.mark.parametrize("case", CASES["overlaps"])
def test_find_overlaps(case):
    nets = [(str(i), IPNetwork(n)) for i, n in enumerate(case["nets"])]
    got = [[int(a), int(b)] for a, _net_a, b, _net_b in _ipplan.find_overlaps(nets)]
    assert got == case["expect"]


@pytest.mark.parametrize("case", CASES["capacity"])
def test_ip_capacity(case):
    gw = IPAddress(case["gateway"]) if case["gateway"] else None
    if "error" in case:
        with pytest.raises(_ipplan.IPPlanError) as err:
            _ipplan.check_ip_capacity("r", IPNetwork(case["subnet"]), gw, case["nodes"], case["block"])
        assert str(err.value) == case["error"]
    else:
        assert (
            _ipplan.check_ip_capacity("r", IPNetwork(case["subnet"]), gw, case["nodes"], case["block"])["usable"]
            == case["usable"]
        )


@pytest.mark.parametrize("case", CASES["prefix_for_block"])
def test_prefix_for_block(case):
    assert _ipplan.prefix_for_block(IPNetwork(case["subnet"]), case["block"]) == case["expect"]
