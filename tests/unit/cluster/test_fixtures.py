"""The committed topology fixtures are what discovery returns on the lab snapshots today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from _cluster_facts import node_facts

_MAKE_FACTS = Path(__file__).parent / "fixtures" / "make_facts.py"
_spec = importlib.util.spec_from_file_location("cluster_make_facts", _MAKE_FACTS)
make_facts = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_facts)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["dgx-h200-8x8", "pcie-l40s-4x2"])
def test_fixture_facts_match_discovery(layout):
    assert make_facts.discover(layout + "@2") == node_facts(layout, 2)
