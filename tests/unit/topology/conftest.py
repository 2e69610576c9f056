"""Shared fixtures for the topology tests: snapshots materialized once per session."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"


def load_snapshots():
    spec = importlib.util.spec_from_file_location("gpufabric_snapshots_build", REPO / "lab/snapshots/build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def snapshots():
    return load_snapshots()


@pytest.fixture(scope="session")
def sysroot(tmp_path_factory, snapshots):
    """sysroot(name) -> path of the unpacked snapshot (cached for the session)."""
    cache = {}

    def get(name):
        if name not in cache:
            dest = tmp_path_factory.mktemp(name.replace("@", "_at_"))
            cache[name] = str(snapshots.materialize(name, str(dest)))
        return cache[name]

    return get
