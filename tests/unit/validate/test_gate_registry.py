"""The gate defaults are one registry (plugins/module_utils/proof/gates.py DEFAULT_GATES): the validate
role's defaults, its argument spec and what its report task passes must be those same gates with
those same values, so that a gate changed in one place and not the others fails here."""

from __future__ import annotations

import re

import yaml
from validate_support import REPO

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates

ROLE = REPO / "roles" / "validate"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
REPORT_TASKS = (ROLE / "tasks" / "report.yml").read_text()
# Gates the user sets through a role variable validate_<gate>. nccl_min_bytes is not one: it is the
# smallest message size the NCCL gate reads, fixed by the gate's definition (the bus bandwidth of
# smaller messages is latency-bound).
USER_GATES = sorted(set(_gates.DEFAULT_GATES) - {"nccl_min_bytes"})


def test_every_gate_has_the_registry_default_in_the_role_and_its_spec():
    for gate in USER_GATES:
        name = f"validate_{gate}"
        assert DEFAULTS.get(name) == _gates.DEFAULT_GATES[gate], name
        assert SPEC[name]["default"] == _gates.DEFAULT_GATES[gate], name
        assert SPEC[name]["type"] == "float", name


def test_the_report_passes_every_gate_and_no_other():
    passed = dict(re.findall(r"^\s+(\w+): \"\{\{ validate_(\w+) \| float \}\}\"", REPORT_TASKS, re.M))
    assert sorted(passed) == USER_GATES
    assert all(passed[gate] == gate for gate in passed)


def test_no_role_variable_looks_like_a_gate_the_registry_lacks():
    gate_like = sorted(
        name[len("validate_") :]
        for name in DEFAULTS
        if name.startswith("validate_") and name.endswith(("_fraction", "_efficiency"))
    )
    assert gate_like == USER_GATES
