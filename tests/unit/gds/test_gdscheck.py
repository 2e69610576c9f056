"""gdscheck -p parser over reports of different GDS releases (real and documented)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck

FIXTURES = Path(__file__).parent / "fixtures" / "gdscheck"
EXPECTED = yaml.safe_load((FIXTURES / "expected.yml").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_report_parses_to_expected_facts(name):
    facts = _gdscheck.parse((FIXTURES / name).read_text())
    want = dict(EXPECTED[name])
    subset = want.pop("config_subset", {})
    count = want.pop("config_count", None)
    for key, value in want.items():
        assert facts[key] == value, key
    for key, value in subset.items():
        assert facts["config"][key] == value, key
    if count is not None:
        assert len(facts["config"]) == count


def test_every_fixture_has_expectations():
    assert sorted(p.name for p in FIXTURES.glob("*.txt")) == sorted(EXPECTED)


def test_log_prefix_is_stripped():
    line = " 30-11-2026 01:18:59:824 [pid=623 tid=623] INFO   cufio-drv:254 NVMe               : Unsupported"
    assert _gdscheck.strip_log_prefix(line) == "NVMe               : Unsupported"


def test_unknown_lines_are_kept_not_fatal():
    facts = _gdscheck.parse("GDS release version: 9.9\nsomething new happened\nNew FS : Supported\n")
    assert facts["gds_release"] == "9.9"
    assert "something new happened" in facts["other"]


def test_summary_names_release_and_mode():
    facts = _gdscheck.parse((FIXTURES / "h200-gds-1.15.1.6-cufile-log.txt").read_text())
    text = "\n".join(_gdscheck.summary(facts))
    assert "GDS release 1.15.1.6" in text and "nvidia_fs not loaded" in text and "compat mode True" in text
