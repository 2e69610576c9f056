"""One version reader: shared.parse.version_numbers. The readers that add a stage's own rule (the
NCCL version's format, a chart's MAJOR.MINOR.PATCH, the intent's format check) take its numbers,
and no module defines a reader of its own again (four did: version_tuple in discover.gpudirect,
plan.gpu_driver, plan.gpu_operator and intent.cluster, each a little different)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import values as _values
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator_values as _gpu_operator_values
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

REPO = Path(__file__).resolve().parents[2]
READERS = {("shared/parse.py", "version_numbers")}
# The stage rules on top of it: each one's numbers come from version_numbers (checked below).
WRAPPERS = {
    ("plan/nccl.py", "parse_version"),
    ("plan/gpu_operator_values.py", "chart_numbers"),
    ("intent/values.py", "version"),
}


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        ("5.15.0-91-generic", (5, 15, 0)),
        ("13.0", (13, 0)),
        ("v25.10.0", (25, 10, 0)),
        ("2.19.3-1+cuda12.2", (2, 19, 3)),
        ("580.95.05", (580, 95, 5)),
        ("", ()),
        (None, ()),
        ("cuda", ()),
    ],
)
def test_version_numbers(text, numbers):
    assert version_numbers(text) == numbers


@pytest.mark.parametrize("text", ["2.27.3", "2.18", "2.19.3-1+cuda12.2", "v2.21.0", "2.20.5.1"])
def test_the_stage_readers_take_its_numbers(text):
    assert _nccl.parse_version(text) == (*version_numbers(text), 0, 0)[:3]
    numbers = version_numbers(text)
    assert _gpu_operator_values.chart_numbers(text) == (numbers[:3] if len(numbers) >= 3 else ())
    problems = []
    checked = _values.version(problems, "x", text)
    assert checked == (numbers if not problems else None)


def version_functions():
    found = set()
    for path in sorted((REPO / "plugins").rglob("*.py")):
        rel = str(path.relative_to(REPO / "plugins" / "module_utils")) if "module_utils" in path.parts else str(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and ("version_tuple" in node.name or node.name.endswith("_numbers")):
                found.add((rel, node.name))
            if isinstance(node, ast.FunctionDef) and (rel, node.name) in WRAPPERS:
                calls = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
                assert "version_numbers" in calls, (rel, node.name)
                found.add((rel, node.name))
    return found


def test_no_module_defines_a_version_reader_of_its_own():
    assert version_functions() == READERS | WRAPPERS
