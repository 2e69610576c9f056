"""make test-fast's two parts of the unit tests (Makefile: UNIT_EARLY, UNIT_LATE): together every test
file of pyproject.toml's testpaths, each in one part only, and the paths pytest cannot be given in any
order last."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def make_paths(name: str) -> list:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name} := (.*)$", text, re.MULTILINE)
    assert match, f"Makefile: {name} is not set"
    return match.group(1).split()


def files_under(paths) -> set:
    return {p.relative_to(REPO).as_posix() for path in paths for p in (REPO / path).rglob("test_*.py")}


def under(path: str, parents) -> bool:
    return any(path == parent or path.startswith(parent + "/") for parent in parents)


def test_the_two_parts_run_every_unit_test_once():
    match = re.search(r"^testpaths = \[(.*)\]$", (REPO / "pyproject.toml").read_text(encoding="utf-8"), re.MULTILINE)
    testpaths = re.findall(r'"([^"]+)"', match.group(1))
    assert testpaths
    early, late = make_paths("UNIT_EARLY"), make_paths("UNIT_LATE")
    every = files_under(testpaths)
    # unit-early runs UNIT_EARLY with UNIT_LATE ignored; pytest ignores no path it is given itself, so
    # no UNIT_EARLY path may lie inside (or be) a UNIT_LATE one.
    assert not [path for path in early if under(path, late)]
    early_files = {f for f in files_under(early) if not under(f, late)}
    late_files = files_under(late)
    assert early_files | late_files == every, sorted(every ^ (early_files | late_files))
    assert not early_files & late_files
    assert len(every) > 100  # the suite, not an empty glob


def test_the_paths_whose_tests_import_conftest_by_name_come_last():
    # pytest loads the conftest.py of each path it is given, in order, all as `conftest`: a test that
    # imports from it gets the last one's.
    late = make_paths("UNIT_LATE")
    by_name = {
        path
        for path in late
        for test in (REPO / path).rglob("test_*.py")
        if re.search(r"^from conftest import|^import conftest", test.read_text(encoding="utf-8"), re.MULTILINE)
    }
    assert by_name <= {late[-1]}, by_name
