"""The support matrix holds together: requires_ansible names the oldest core that CI tests
(tests/matrix/cores.txt), and the matrix covers every minor release from it to the pinned newest."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def matrix_cores() -> list:
    lines = (REPO / "tests" / "matrix" / "cores.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def minor(version: str) -> tuple:
    parts = version.split(".")
    return int(parts[0]), int(parts[1])


def pinned_core() -> str:
    pins = re.findall(r"^ansible-core==(\S+)$", (REPO / "requirements.txt").read_text(), re.MULTILINE)
    assert len(pins) == 1, pins
    return pins[0]


def test_each_matrix_entry_is_an_exact_release_in_ascending_order():
    cores = matrix_cores()
    assert cores and all(re.fullmatch(r"2\.\d+\.\d+", c) for c in cores), cores
    assert [minor(c) for c in cores] == sorted({minor(c) for c in cores}), "one release per minor, oldest first"


def test_requires_ansible_is_the_oldest_core_the_matrix_tests():
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    found = re.fullmatch(r">=(\d+\.\d+)\.0", runtime["requires_ansible"])
    assert found, runtime["requires_ansible"]
    assert minor(found.group(1) + ".0") == minor(matrix_cores()[0])


def test_the_matrix_and_the_pinned_core_cover_every_minor_from_the_oldest_to_the_newest():
    newest = minor(pinned_core())
    tested = {minor(c) for c in matrix_cores()} | {newest}
    oldest = min(tested)
    assert newest == max(tested), "the pinned core must be the newest"
    assert tested == {(2, m) for m in range(oldest[1], newest[1] + 1)}
