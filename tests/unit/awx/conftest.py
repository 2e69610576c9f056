"""Fixtures for the AWX tests (playbooks/awx.yml, the surveys, the execution environment)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _awx_support import load_stages


@pytest.fixture(scope="session")
def stages() -> dict:
    return load_stages()
