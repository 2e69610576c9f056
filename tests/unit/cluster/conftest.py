"""Fixtures for the cluster networking planner tests.

Topology facts come from the lab hardware snapshots (lab/snapshots/build.py) run through the
discovery code (plugins/module_utils/discover/topology.py) -- see _cluster_facts.py beside this file.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cluster_facts import cluster_facts


@pytest.fixture(scope="session")
def dgx_cluster() -> Dict[str, Dict[str, Any]]:
    """8 nodes x 8 rails: gpu-node-1..8 from snapshots dgx-h200-8x8@1..8."""
    return cluster_facts([("dgx-h200-8x8", 8, "gpu-node")])


@pytest.fixture(scope="session")
def mixed_cluster() -> Dict[str, Dict[str, Any]]:
    """4 DGX H200 nodes (8 rails, ConnectX-7) + 2 L40S PCIe nodes (2 rails, ConnectX-6 Dx)."""
    return cluster_facts([("dgx-h200-8x8", 4, "h200-node"), ("pcie-l40s-4x2", 2, "l40s-node")])


@pytest.fixture()
def dgx(dgx_cluster):
    return copy.deepcopy(dgx_cluster)


@pytest.fixture()
def mixed(mixed_cluster):
    return copy.deepcopy(mixed_cluster)
