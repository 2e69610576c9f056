"""Security tests import the collection the way the unit tests do (their conftest's path setup)."""

from __future__ import annotations

import sys
from pathlib import Path

_COLLECTIONS = Path(__file__).resolve().parents[2] / ".collections"
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))
