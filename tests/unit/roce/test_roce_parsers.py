"""Replay real-format tool outputs (fixtures/, sources in fixtures/README.md) through the parsers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import pcie_acs as _pcie_acs
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import qos as _qos_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "expected.yml").read_text())
PARSERS = {n: getattr(mod, n) for mod in (_qos_parsers, _pcie_acs) for n in dir(mod) if n.startswith("parse_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_parser_replays_fixture(name):
    case = CASES[name]
    parsed = PARSERS[case["parser"]]((FIXTURES / name).read_text())
    if "value" in case:
        assert parsed == case["value"]
        return
    for key, want in case["expect"].items():
        assert parsed[key] == want, key
    for dscp, prios in (case.get("dscp2prio") or {}).items():
        assert parsed["dscp2prio"][dscp] == prios, dscp


def test_every_fixture_has_an_expectation():
    files = {str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.txt")}
    assert files == set(CASES)


@pytest.mark.parametrize(
    "text",
    [
        "DCBX mode: OS controlled\nPriority trust state: dscp\n",  # no PFC row
        "PFC configuration:\n\tenabled 0 0 0 1 0 0 0 0\n",  # no TC lines
        "PFC configuration:\n\tenabled 0 0 0 1 0 0 0 0\ntc: x garbage\n",
    ],
)
def test_mlnx_qos_rejects_truncated_output(text):
    with pytest.raises(ParseError):
        _qos_parsers.parse_mlnx_qos(text)


@pytest.mark.parametrize(
    ("parser", "text"),
    [
        ("parse_dcb_pfc", "pfc-cap 8 delay 0\n"),
        ("parse_dcb_pfc", "prio-pfc 0:off 1:off 2:maybe 3:on 4:off 5:off 6:off 7:off\n"),
        ("parse_dcb_ets", "prio-tc 0:0 1:1\ntc-tsa all:strict\ntc-bw all:0\n"),
        ("parse_dcb_app", "dscp-prio NOPE:3\n"),
        ("parse_dcb_buffer", "prio-buffer all:0\n"),
        ("parse_rdma_system", "copy-on-fork on\n"),
        ("parse_setpci_word", "setpci: Unknown register\n"),
    ],
)
def test_parsers_reject_malformed_output(parser, text):
    with pytest.raises(ParseError):
        PARSERS[parser](text)


@pytest.mark.parametrize(
    ("mtu", "active"), [(1500, 1024), (4200, 4096), (4192, 4096), (4191, 2048), (9000, 4096), (2144, 2048)]
)
def test_roce_active_mtu_follows_iboe_overhead(mtu, active):
    assert _qos_parsers.roce_active_mtu(mtu) == active


@pytest.mark.parametrize(("text", "value"), [("Global tclass=106\n", 106), ("106\n", 106), ("", None), (None, None)])
def test_traffic_class_forms(text, value):
    assert _qos_parsers.parse_traffic_class(text) == value
