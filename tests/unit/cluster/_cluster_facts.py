"""Topology facts for the planner tests: discovery output on the lab snapshots (fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Tuple

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "topology"


def node_facts(layout: str, node: int) -> Dict[str, Any]:
    return json.loads((FIXTURES / f"{layout}.node{node}.json").read_text())


def cluster_facts(spec: List[Tuple[str, int, str]]) -> Dict[str, Dict[str, Any]]:
    """[(layout, count, name prefix)] -> {'<prefix>-<n>': facts of snapshot <layout>@<n>}."""
    out = {}
    for layout, count, prefix in spec:
        for n in range(1, count + 1):
            out[f"{prefix}-{n}"] = node_facts(layout, n)
    return out
