"""Helpers of the storage tests: the lab's storage intent (molecule/storage/group_vars), checked with the
collection's argument specs like the plan play checks it, and the node facts of the plan tests."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any, Dict

import yaml

HERE = Path(__file__).resolve().parent
UNIT = HERE.parent
REPO = UNIT.parents[1]
STORAGE_INTENT = REPO / "molecule" / "storage" / "group_vars" / "gpu_nodes" / "storage.yml"
CRDS = HERE / "fixtures" / "crds"


def _plan_conftest():
    """tests/unit/plan/conftest.py (the lab intent, the node facts and the checker), loaded by path."""
    spec = importlib.util.spec_from_file_location("plan_conftest_for_storage", UNIT / "plan" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLAN = _plan_conftest()


def storage_intent() -> Dict[str, Any]:
    return yaml.safe_load(STORAGE_INTENT.read_text())


def lab_variables(**changes) -> Dict[str, Any]:
    variables = PLAN.lab_intent()
    variables.update(copy.deepcopy(storage_intent()))
    variables.update(changes)
    return variables


def node_facts(node: int = 1) -> Dict[str, Any]:
    facts = PLAN.node_facts(node)
    # The DOCA index fixture predates the storage components; the lab repository carries them
    # (lab/repo/packages.yml), so plan without the index (the repository is read on the node).
    facts["doca_index"] = None
    return facts
