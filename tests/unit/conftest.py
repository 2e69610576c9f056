"""Make `ansible_collections.gpufabric.rollout` importable from the checkout.

`make venv` creates .collections/ansible_collections/gpufabric/rollout as a link back to the
repository root; putting .collections on sys.path lets tests import the collection's
module_utils, modules and filters exactly as Ansible does.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_COLLECTIONS = REPO_ROOT / ".collections"
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))
# module_support.py (helpers for module tests) lives here, role_runner.py (a role run on localhost,
# shared with tests/controlplane) one level up
for _helpers in (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent):
    if str(_helpers) not in sys.path:
        sys.path.insert(1, str(_helpers))
