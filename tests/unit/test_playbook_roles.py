"""Ansible's own argument-spec check runs at the start of every role, as it does for any role: no
playbook switches it off (rolespec_validate: false), and every role that works from the plan
requires it in its main spec, saying how to get it. So a role run alone, without the plan, stops at
its first task naming the plan and the playbook that computes it, instead of failing somewhere
inside on an undefined variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from role_runner import ansible_playbook

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = [*sorted((REPO / "playbooks").glob("*.yml")), REPO / "site.yml"]
ROLE_ACTIONS = {"ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"}
HINT = "run gpufabric.rollout.plan first"


class _Loader(yaml.SafeLoader):
    """YAML as Ansible reads it, as far as these tests need: !unsafe values are plain strings."""


_Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def _load(path: Path):
    return yaml.load(path.read_text(), Loader=_Loader) or []  # a SafeLoader subclass


def _plan_roles() -> dict:
    """{role: the plan variable it works from}: the node roles the plan checks take the node's plan,
    the cluster roles the cluster plan."""
    defaults = yaml.safe_load((REPO / "roles" / "plan" / "defaults" / "main.yml").read_text())
    roles = {role: "gpufabric_node_plan" for role in defaults["plan_node_roles"]}
    roles.update({role: "gpufabric_plan" for role in defaults["plan_cluster_roles"]})
    return roles


def _tasks(items):
    """Every task of a task list, blocks included."""
    for item in items or []:
        yield item
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key))


def _role_uses():
    """(playbook, role arguments) for every include_role/import_role of every playbook and role."""
    files = [*PLAYBOOKS, *sorted((REPO / "roles").glob("*/tasks/*.yml"))]
    for path in files:
        data = _load(path)
        plays = data if path in PLAYBOOKS else [{"tasks": data}]
        for play in plays:
            for section in ("pre_tasks", "tasks", "post_tasks", "handlers"):
                for task in _tasks(play.get(section)):
                    for action in ROLE_ACTIONS & set(task):
                        yield path, task[action]


def test_the_role_inclusions_are_found():
    """Guards the test below against passing vacuously."""
    names = {(path.name, args["name"]) for path, args in _role_uses()}
    assert ("hosts.yml", "gpufabric.rollout.roce") in names
    assert ("cluster.yml", "gpufabric.rollout.network_operator") in names
    assert ("validate.yml", "gpufabric.rollout.validate") in names


def test_nothing_switches_off_ansibles_argument_check():
    off = [f"{path.relative_to(REPO)}: {args['name']}" for path, args in _role_uses() if "rolespec_validate" in args]
    assert off == []


@pytest.mark.parametrize("role,variable", sorted(_plan_roles().items()))
def test_each_plan_role_requires_the_plan_and_says_how_to_get_it(role, variable):
    spec = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())
    option = spec["argument_specs"]["main"]["options"][variable]
    assert option.get("required") is True and option.get("type") == "dict"
    assert HINT in " ".join(option["description"]).replace("\n", " ")


def _alone(tmp_path: Path, role: str) -> subprocess.CompletedProcess:
    play = tmp_path / "alone.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "A role without the plan",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "tasks": [
                        {"name": "Include it", "ansible.builtin.include_role": {"name": f"gpufabric.rollout.{role}"}}
                    ],
                }
            ]
        )
    )
    return ansible_playbook(
        tmp_path, "-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", str(play)
    )


@pytest.mark.parametrize("role", ["nccl_config", "rdma_networks"])
def test_a_role_run_alone_stops_first_naming_the_plan(tmp_path, role):
    done = _alone(tmp_path, role)
    out = done.stdout + done.stderr
    assert done.returncode != 0
    variable = _plan_roles()[role]
    assert f"missing required arguments: {variable}" in out, out[-3000:]
    assert HINT in " ".join(out.split())
    # it stopped at the argument check, before any task of the role
    assert out.count(f"TASK [gpufabric.rollout.{role} :") == 1
