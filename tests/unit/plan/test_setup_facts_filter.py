"""The plan's setup read (in the node check, part check_node with gather_subset) returns only the
facts listed in roles/plan/vars/main.yml (__plan_setup_facts). Every setup fact the collection
reads anywhere (``ansible_facts.NAME`` in roles, playbooks and templates; ``ansible.get("NAME")``
on the facts the plan action hands to plugins/module_utils/plan) must be in that list, or it would
silently read as undefined."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
# Facts the collection's own modules set (plan_facts and the others), and those of other fact
# modules a role runs itself (service_facts; validate's audit gathers env with its own setup).
OWN = {
    "gpufabric_topology",
    "gpufabric_gpudirect",
    "gpufabric_doca",
    "gpufabric_storage_readback",
    "gpufabric_upgrade_plan",
    "packages",
    "services",
    "env",
}
IN_YAML = re.compile(r"ansible_facts(?:\.|\[['\"])([a-z_0-9]+)")
IN_PYTHON = re.compile(r"\bansible\.get\(\s*[\"']([a-z_0-9]+)[\"']")


def _listed():
    variables = yaml.safe_load((REPO / "roles" / "plan" / "vars" / "main.yml").read_text())
    return {name.removeprefix("ansible_") for name in variables["__plan_setup_facts"]}


def _read():
    found = {}
    for folder in ("roles", "playbooks"):
        for path in (REPO / folder).rglob("*"):
            if path.suffix in (".yml", ".yaml", ".j2") and path.is_file():
                for name in IN_YAML.findall(path.read_text()):
                    found.setdefault(name, path.relative_to(REPO))
    for path in (REPO / "plugins" / "module_utils" / "plan").glob("*.py"):
        for name in IN_PYTHON.findall(path.read_text()):
            found.setdefault(name, path.relative_to(REPO))
    return found


def test_every_setup_fact_read_is_gathered():
    read = _read()
    assert {"kernel", "os_family", "default_ipv4", "memtotal_mb"} <= set(read), "the scan finds the known reads"
    missing = {name: str(where) for name, where in read.items() if name not in OWN and name not in _listed()}
    assert not missing, f"facts read but filtered out of the plan's setup (add them to __plan_setup_facts): {missing}"


def test_the_node_read_uses_the_list():
    tasks = yaml.safe_load((REPO / "roles" / "plan" / "tasks" / "main.yml").read_text())
    read = next(t for t in tasks if t.get("gpufabric.rollout.plan", {}).get("gather_subset"))
    assert read["gpufabric.rollout.plan"]["facts"] == "{{ __plan_setup_facts }}"
