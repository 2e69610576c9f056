"""Fixtures of the validate tests."""

from __future__ import annotations

import pytest
from validate_support import make_lab_nodes


@pytest.fixture(scope="session")
def lab_nodes(tmp_path_factory):
    """Two dgx-h200-8x8 lab nodes (node 1 and 2): name -> sysroot path."""
    return make_lab_nodes(tmp_path_factory)


@pytest.fixture(scope="session")
def chromium():
    """The headless browser the report tests open the HTML report in."""
    from browser import find_chromium

    return find_chromium()
