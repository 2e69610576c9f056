"""Shared inputs of the switch tests: the lab's fabric intent and the example switch intent with the
argument specs' defaults filled in (the plan gives the planners checked values)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Dict

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FIXTURES = HERE / "fixtures"


def fabric() -> Dict[str, Any]:
    return dict(
        yaml.safe_load((REPO / "inventory" / "lab" / "group_vars" / "all" / "fabric.yml").read_text())[
            "gpufabric_fabric"
        ]
    )


def switches() -> Dict[str, Any]:
    """gpufabric_switches of fixtures/switches.yml, defaults as the argument spec gives them."""
    given = copy.deepcopy(yaml.safe_load((FIXTURES / "switches.yml").read_text())["gpufabric_switches"])
    given.setdefault("mtu", 9216)
    given.setdefault("ecn", {"min_threshold": 150000, "max_threshold": 1500000, "probability": 100})
    return given
