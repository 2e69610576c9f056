"""The playbooks skip Ansible's own argument-spec check at a role's start (rolespec_validate: false)
only where the plan has already checked that role's variables: a role the plan checks
(plan_node_roles, plan_cluster_roles), at its main entry point (the options the plan checks), in a
playbook that imports the plan before it. A role the plan does not check keeps Ansible's check."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = [*sorted((REPO / "playbooks").glob("*.yml")), REPO / "site.yml"]
ROLE_ACTIONS = {"ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"}


class _Loader(yaml.SafeLoader):
    """YAML as Ansible reads it, as far as these tests need: !unsafe values are plain strings."""


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _load(path: Path):
    return yaml.load(path.read_text(), Loader=_Loader) or []  # a SafeLoader subclass


def _plan_checked_roles() -> set:
    defaults = yaml.safe_load((REPO / "roles" / "plan" / "defaults" / "main.yml").read_text())
    return set(defaults["plan_node_roles"]) | set(defaults["plan_cluster_roles"])


def _tasks(items):
    """Every task of a task list, blocks included."""
    for item in items or []:
        yield item
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key))


def _role_uses(path: Path):
    """(play index, role arguments) for every include_role/import_role of a playbook."""
    for index, play in enumerate(_load(path)):
        for section in ("pre_tasks", "tasks", "post_tasks"):
            for task in _tasks(play.get(section)):
                for action in ROLE_ACTIONS & set(task):
                    yield index, task[action]


def _unchecked_uses():
    for path in PLAYBOOKS:
        for index, args in _role_uses(path):
            if args.get("rolespec_validate") is False:
                yield path, index, args


def test_the_playbooks_skip_the_repeated_check():
    """Guards the test below against passing vacuously: the host and cluster layers use the option."""
    names = {(path.name, args["name"]) for path, _index, args in _unchecked_uses()}
    assert ("hosts.yml", "gpufabric.rollout.roce") in names
    assert ("cluster.yml", "gpufabric.rollout.network_operator") in names
    assert ("validate.yml", "gpufabric.rollout.validate") in names


def _case_id(value):
    if isinstance(value, Path):
        return value.name
    return value.get("name") if isinstance(value, dict) else str(value)


@pytest.mark.parametrize(
    "path,index,args",
    list(_unchecked_uses()),
    ids=_case_id,
)
def test_skipped_checks_are_covered_by_the_plan(path, index, args):
    role = args["name"].rsplit(".", 1)[-1]
    assert role in _plan_checked_roles(), f"{path.name}: {role} is not checked by the plan; keep rolespec_validate"
    assert args.get("tasks_from", "main") in ("main", "main.yml"), (
        f"{path.name}: the plan checks the main entry point of {role}, not {args['tasks_from']}"
    )
    plays = _load(path)
    imports = [play.get("ansible.builtin.import_playbook") for play in plays[:index]]
    assert "plan.yml" in imports, f"{path.name}: the plan must be imported before play {index} includes {role}"


def test_plays_do_not_list_plan_checked_roles():
    """A role under a play's roles: is always checked again (the keyword has no rolespec_validate)."""
    listed = []
    for path in PLAYBOOKS:
        for play in _load(path):
            for entry in play.get("roles") or []:
                name = entry if isinstance(entry, str) else entry.get("role") or entry.get("name")
                if name.rsplit(".", 1)[-1] in _plan_checked_roles():
                    listed.append(f"{path.name}: {name}")
    assert listed == []
