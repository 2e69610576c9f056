"""Preflight: every bad-intent case (cases/bad_intent.yml) is rejected, naming the variable."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils import _qos_intent

CASES = Path(__file__).parent / "cases"
BAD = yaml.safe_load((CASES / "bad_intent.yml").read_text())
TOPOLOGY = yaml.safe_load((CASES / "topology_dgx_subset.yml").read_text())
GOOD_FABRIC = {
    "transport": "roce",
    "lossless_priority": 3,
    "data_dscp": 26,
    "cnp_dscp": 48,
    "cnp_priority": 6,
    "roce_tos": 106,
    "mtu": 9000,
    "ecn": True,
    "pfc": True,
    "rdma_netns_mode": "shared",
}


def test_good_intent_passes():
    assert _qos_intent.validate_intent(GOOD_FABRIC, {"interfaces": ["enp24s0np0", "mlx5_2"]}, TOPOLOGY) == []


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_intent_is_rejected(name):
    case = BAD[name]
    fabric = dict(GOOD_FABRIC, **case.get("fabric", {}))
    topology = copy.deepcopy(TOPOLOGY)
    topology.update(case.get("topology", {}))
    errors = _qos_intent.validate_intent(fabric, case.get("options", {}), topology)
    assert any(case["error"] in e for e in errors), errors


def test_all_errors_reported_at_once():
    fabric = dict(GOOD_FABRIC, lossless_priority=9, data_dscp=70, mtu=1500)
    errors = _qos_intent.validate_intent(fabric, {"backend": "x"}, TOPOLOGY)
    assert len(errors) >= 4
