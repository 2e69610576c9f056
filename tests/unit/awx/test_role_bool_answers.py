"""AWX surveys answer a boolean question with the string "true" or "false" (there is no boolean
question type; awx/main/constants.py SURVEY_TYPE_MAPPING). ansible-core 2.19 refuses a conditional
whose result is a string, and "false" is truthy in a Jinja ``if``. So every boolean option that a
survey asks must be read through ``| bool`` (or only tested with ``is none`` / ``is defined``) in
the role's tasks, handlers, vars and templates.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml
from _awx_support import REPO_ROOT, stage_surveys

_RAW_EXPRESSION_KEYS = {"when", "failed_when", "changed_when", "until", "that"}
_JINJA = re.compile(r"{{(.*?)}}|{%(.*?)%}", re.S)


def _expressions_in_yaml(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _expressions_in_yaml(v, k)
    elif isinstance(node, list):
        for item in node:
            yield from _expressions_in_yaml(item, key)
    elif isinstance(node, str):
        if key in _RAW_EXPRESSION_KEYS:
            yield node
        else:
            for match in _JINJA.finditer(node):
                yield match.group(1) or match.group(2)


@functools.lru_cache(maxsize=None)
def _expressions(path: Path) -> tuple:
    text = path.read_text()
    if path.suffix == ".j2":
        return tuple(m.group(1) or m.group(2) for m in _JINJA.finditer(text))
    return tuple(_expressions_in_yaml(yaml.safe_load(text)))


def unsafe_reads(role_dir: Path, variable: str) -> list:
    """Expressions in the role that read ``variable`` as a boolean without ``| bool``."""
    use = re.compile(
        r"(?<![\w.'\"])"
        + re.escape(variable)
        + r"\b(?!\s*\|\s*bool\b)(?!\s+is\s+(?:not\s+)?(?:none|defined|undefined)\b)"
    )
    found = []
    for path in sorted(role_dir.rglob("*")):
        if path.suffix not in (".yml", ".yaml", ".j2") or path.parts[-2] in ("defaults",) or path.parent.name == "meta":
            continue
        for expression in _expressions(path):
            if use.search(expression):
                found.append(f"{path.relative_to(role_dir.parent)}: {expression.strip()}")
    return found


def _surveyed_booleans():
    seen = set()
    for result in stage_surveys().values():
        for question in (result["survey_spec"] or {}).get("spec", []):
            if question["type"] == "multiplechoice" and question["choices"] == ["true", "false"]:
                role = question["question_description"].rsplit("(role ", 1)[1].rstrip(")")
                if (role, question["variable"]) not in seen:
                    seen.add((role, question["variable"]))
                    yield role, question["variable"]


SURVEYED_BOOLEANS = sorted(_surveyed_booleans())


def test_surveys_ask_booleans():
    assert len(SURVEYED_BOOLEANS) > 10


@pytest.mark.parametrize(("role", "variable"), SURVEYED_BOOLEANS, ids=[pair[1] for pair in SURVEYED_BOOLEANS])
def test_boolean_option_is_read_through_bool(role, variable):
    found = []
    for role_dir in sorted((REPO_ROOT / "roles").iterdir()):
        found += unsafe_reads(role_dir, variable)
    assert not found, f"{variable} (a yes/no survey question) is read without '| bool':\n" + "\n".join(found)


def test_the_check_finds_a_bare_read(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "main.yml").write_text(
        "- name: A\n  ansible.builtin.debug:\n    msg: \"{{ 'x' if flag_b else 'y' }}\"\n  when: flag_a\n"
        '- name: B\n  ansible.builtin.debug:\n    msg: "{{ flag_c | bool }}"\n  when: flag_d is none or flag_d | bool\n'
    )
    assert len(unsafe_reads(tmp_path, "flag_a")) == 1
    assert len(unsafe_reads(tmp_path, "flag_b")) == 1
    assert unsafe_reads(tmp_path, "flag_c") == []
    assert unsafe_reads(tmp_path, "flag_d") == []
