"""The security tests import the collection as the unit tests do (tests/unit/conftest.py: the
checkout's .collections on sys.path) and share tests/role_runner.py."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
for _path in (REPO_ROOT / ".collections", REPO_ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
