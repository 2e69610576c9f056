"""Path setup for the security tests: the collection from the checkout, as tests/unit does."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
for _path in (REPO_ROOT / ".collections", REPO_ROOT / "tests" / "unit" / "awx", REPO_ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
