"""Every role's meta/argument_specs.yml and defaults/main.yml describe the same variables with
the same defaults (house style: the argument spec is the documentation, and it must not drift)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROLES_DIR = Path(__file__).resolve().parents[2] / "roles"
ROLES = sorted(p.name for p in ROLES_DIR.iterdir() if (p / "tasks" / "main.yml").exists())


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text()) or {}


def _spec_options(role: str) -> dict:
    specs = _load(ROLES_DIR / role / "meta" / "argument_specs.yml").get("argument_specs", {})
    return (specs.get("main") or {}).get("options") or {}


def test_there_are_roles():
    assert "plan" in ROLES


@pytest.mark.parametrize("role", ROLES)
def test_role_has_argument_specs_and_readme(role):
    assert _spec_options(role), f"roles/{role}/meta/argument_specs.yml has no main options"
    assert (ROLES_DIR / role / "README.md").exists(), f"roles/{role} has no README.md"


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_specified_with_the_same_value(role):
    defaults = _load(ROLES_DIR / role / "defaults" / "main.yml")
    options = _spec_options(role)
    missing = sorted(set(defaults) - set(options))
    assert not missing, f"roles/{role}: defaults without an argument spec: {missing}"
    for name, value in defaults.items():
        spec = options[name]
        if isinstance(value, str) and "{{" in value:
            continue  # templated defaults are documented in prose, not as values
        assert spec.get("default") == value, (
            f"roles/{role}: {name} defaults to {value!r} but its argument spec says {spec.get('default')!r}"
        )


@pytest.mark.parametrize("role", ROLES)
def test_every_specified_option_is_documented_and_typed(role):
    for name, spec in _spec_options(role).items():
        assert spec.get("description"), f"roles/{role}: option {name} has no description"
        assert spec.get("type") or spec.get("choices"), f"roles/{role}: option {name} has no type"
        if spec.get("type") == "list":
            assert spec.get("elements"), f"roles/{role}: list option {name} has no elements type"


@pytest.mark.parametrize("role", ROLES)
def test_internal_vars_are_prefixed(role):
    internal = _load(ROLES_DIR / role / "vars" / "main.yml")
    bad = [name for name in internal if not name.startswith(f"__{role}_")]
    assert not bad, f"roles/{role}/vars/main.yml: internal variables must start with __{role}_: {bad}"
