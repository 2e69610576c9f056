"""Where the tests find the upstream CRD schemas, in one place: LAB_CRDS_DIR when set, else the
shared CRD schemas the test machines keep beside the checkout. Where they are not given, a test
that needs them skips and says why, and under CI=true (CI has them) it fails instead.

Run as a script (the Makefile's test targets) it prints the directory, or nothing when there is
none; `make lab` takes LAB_CRDS_DIR alone.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UPSTREAM_CRDS = Path(os.environ.get("LAB_CRDS_DIR") or REPO.parent / "shared" / "crds")


def require(what: str) -> Path:
    """The upstream CRD directory; without it skip `what`, or fail it under CI=true."""
    if UPSTREAM_CRDS.is_dir():
        return UPSTREAM_CRDS
    import pytest  # only the tests call this; the script does not need pytest

    message = f"{what}: no upstream CRDs in {UPSTREAM_CRDS} (set LAB_CRDS_DIR, see docs/lab.md)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def main() -> int:
    if os.environ.get("LAB_CRDS_DIR") or UPSTREAM_CRDS.is_dir():
        print(UPSTREAM_CRDS.resolve() if UPSTREAM_CRDS.is_dir() else UPSTREAM_CRDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
