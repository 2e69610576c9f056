"""Fixtures of the storage tests (helpers in storage_support.py)."""

from __future__ import annotations

from typing import Any, Dict

import pytest
from storage_support import PLAN, REPO


@pytest.fixture(scope="session")
def specs():
    return PLAN.load_specs(str(REPO))


@pytest.fixture()
def check(specs):
    def run(scope: str, variables: Dict[str, Any]):
        return PLAN.check(specs, scope, variables)

    return run
