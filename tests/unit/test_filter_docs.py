"""Every filter the collection exports has its documentation, as `ansible-doc -t filter` reads it.

ansible-core reads a filter's documentation from a YAML file beside the plugin file,
plugins/filter/<filter name>.yml, with DOCUMENTATION, EXAMPLES and RETURN. A filter without one is
listed as UNDOCUMENTED and `ansible-doc -t filter gpufabric.rollout.<name>` fails.
"""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
FILTER_DIR = REPO / "plugins" / "filter"
PACKAGE = "ansible_collections.gpufabric.rollout.plugins.filter."


def exported() -> dict[str, object]:
    """{filter name: function} of every FilterModule in plugins/filter/*.py."""
    found: dict[str, object] = {}
    for path in sorted(FILTER_DIR.glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(PACKAGE + path.stem)
        for name, function in module.FilterModule().filters().items():
            assert name not in found, f"filter {name} is exported twice"
            found[name] = function
    return found


FILTERS = exported()


def _doc(name: str) -> dict:
    path = FILTER_DIR / f"{name}.yml"
    assert path.is_file(), (
        f"filter {name} has no documentation: add plugins/filter/{name}.yml (DOCUMENTATION, EXAMPLES, RETURN)"
    )
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_the_collection_exports_filters():
    assert len(FILTERS) >= 10, sorted(FILTERS)


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filter_has_documentation_with_the_required_keys(name):
    data = _doc(name)
    assert set(data) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, f"{name}.yml has {sorted(data)}"
    doc = data["DOCUMENTATION"]
    assert doc["name"] == name, f"{name}.yml documents {doc['name']!r}"
    for key in ("short_description", "description", "version_added", "options", "positional"):
        assert doc.get(key), f"{name}.yml: DOCUMENTATION has no {key}"
    assert "_input" in doc["options"], f"{name}.yml: the filter's input (_input) is not documented"
    assert f"gpufabric.rollout.{name}" in data["EXAMPLES"], f"{name}.yml: no example uses gpufabric.rollout.{name}"
    assert data["RETURN"].get("_value", {}).get("description"), f"{name}.yml: RETURN has no _value description"


@pytest.mark.parametrize("name", sorted(FILTERS))
def test_filter_documentation_names_the_functions_arguments(name):
    """The options are the function's arguments after the input: a renamed or added argument shows up."""
    params = list(inspect.signature(FILTERS[name]).parameters.values())
    named = {
        p.name for p in params[1:] if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and not p.name.startswith("_")
    }
    options = set(_doc(name)["DOCUMENTATION"]["options"]) - {"_input"}
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in params)
    assert named <= options, f"{name}.yml does not document {sorted(named - options)}"
    if not takes_kwargs:
        assert options <= named, f"{name}.yml documents {sorted(options - named)}, which {name} does not take"
    positional = [p.strip() for p in _doc(name)["DOCUMENTATION"]["positional"].split(",")]
    assert positional[0] == "_input" and set(positional[1:]) <= options, f"{name}.yml: positional {positional}"


def test_no_documentation_without_its_filter():
    stale = sorted(p.stem for p in FILTER_DIR.glob("*.yml") if p.stem not in FILTERS)
    assert not stale, f"documentation of filters the collection no longer exports: {stale}"


def test_ansible_doc_lists_every_filter_documented():
    """What a user runs: `ansible-doc -t filter -l gpufabric.rollout`, with the checkout's ansible.cfg."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"))
    result = subprocess.run(
        ["ansible-doc", "-t", "filter", "-l", "gpufabric.rollout"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    listed = {}
    for line in result.stdout.splitlines():
        words = line.split(None, 1)
        if words and words[0].startswith("gpufabric.rollout."):
            listed[words[0].removeprefix("gpufabric.rollout.")] = words[1].strip() if len(words) > 1 else ""
    assert set(listed) == set(FILTERS), f"listed {sorted(set(listed) ^ set(FILTERS))} differently"
    undocumented = sorted(name for name, text in listed.items() if text == "UNDOCUMENTED")
    assert not undocumented, f"ansible-doc finds no documentation for {undocumented}"
