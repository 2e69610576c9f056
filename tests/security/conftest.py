"""The security suite: each test reproduces an attack (or the hole it goes through) and fails on the
code before its fix. Same import setup as tests/unit (the checkout is the collection: .collections),
plus tests (role_runner), tests/unit, tests/unit/storage and tests/unit/awx for their helpers."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
for _path in (
    REPO_ROOT / ".collections",
    REPO_ROOT / "tests",
    REPO_ROOT / "tests" / "unit",
    REPO_ROOT / "tests" / "unit" / "storage",
    REPO_ROOT / "tests" / "unit" / "awx",
    Path(__file__).resolve().parent,
):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
