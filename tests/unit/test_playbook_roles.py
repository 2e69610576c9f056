"""Ansible's own argument-spec check runs at the start of every role, as it does for any role, but
where the plan has checked the same variables on the same host: the plan role itself (its node
check checks its main spec with every other), in hosts.yml the host roles whose main specs the
plan checked on that node (gpufabric_intent.plan_node_roles), and in cluster.yml the cluster roles
whose main specs the plan checked on the controller (gpufabric_intent.plan_cluster_roles). Every
role that works from the plan requires it in its main spec, saying how to get it. So a role run alone, without the plan,
stops at its first task naming the plan and the playbook that computes it, instead of failing
somewhere inside on an undefined variable."""

from __future__ import annotations

import json
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


def _plan_defaults() -> dict:
    return yaml.safe_load((REPO / "roles" / "plan" / "defaults" / "main.yml").read_text())


def _hosts_plan_checked() -> str:
    """hosts.yml's expression of the roles the node's plan checked (its second play's variable)."""
    return _load(REPO / "playbooks" / "hosts.yml")[1]["vars"]["__hosts_plan_checked"]


def _cluster_plan_checked() -> str:
    """cluster.yml's expression of the roles the cluster plan checked (its play's variable)."""
    return _load(REPO / "playbooks" / "cluster.yml")[1]["vars"]["__cluster_plan_checked"]


def _plan_roles() -> dict:
    """{role: the plan variable it works from}: the node roles the plan checks take the node's plan,
    the cluster roles the cluster plan."""
    defaults = _plan_defaults()
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


# Where the argument check may be switched off: the plan role in plan.yml (its node check is the
# same check and more), hosts.yml's host roles for the nodes whose plan checked them, and
# cluster.yml's cluster roles when the cluster plan checked them.
PLAN_SKIP = {("plan.yml", "gpufabric.rollout.plan"): False}
HOSTS_SKIP = "{{{{ '{role}' not in __hosts_plan_checked }}}}"
CLUSTER_SKIP = "{{{{ '{role}' not in __cluster_plan_checked }}}}"


def test_the_argument_check_is_skipped_only_where_the_plan_checked_the_same_variables():
    defaults = _plan_defaults()
    skipped = {}
    for path, args in _role_uses():
        if "rolespec_validate" not in args:
            continue
        key = (path.name, args["name"])
        skipped[key] = args["rolespec_validate"]
        assert "tasks_from" not in args, f"{key}: the plan checks main specs only"
        if key in PLAN_SKIP:
            assert args["rolespec_validate"] is PLAN_SKIP[key], key
            continue
        role = args["name"].rpartition(".")[2]
        if path.name == "cluster.yml":
            assert role in defaults["plan_cluster_roles"], key
            assert args["rolespec_validate"] == CLUSTER_SKIP.format(role=role), key
            continue
        assert path.name == "hosts.yml" and role in defaults["plan_node_roles"], key
        assert args["rolespec_validate"] == HOSTS_SKIP.format(role=role), key
    assert _hosts_plan_checked() == "{{ gpufabric_intent.plan_node_roles | default([]) }}"
    assert _cluster_plan_checked() == "{{ gpufabric_intent.plan_cluster_roles | default([]) }}"
    # every host role of hosts.yml's main block is one of them (the test cannot pass on none)
    assert {k for k in skipped if k[0] == "hosts.yml"} == {
        ("hosts.yml", f"gpufabric.rollout.{role}") for role in defaults["plan_node_roles"] if role != "validate"
    }
    # and every cluster role of cluster.yml
    assert {k for k in skipped if k[0] == "cluster.yml"} == {
        ("cluster.yml", f"gpufabric.rollout.{role}") for role in defaults["plan_cluster_roles"]
    }


def test_the_kept_intent_names_the_roles_the_plan_checked():
    """hosts.yml reads gpufabric_intent.plan_node_roles: the node check returns every variable of the
    plan role's main spec with its default filled in, plan_node_roles among them."""
    from ansible_collections.gpufabric.rollout.plugins.action import plan as plan_action
    from ansible_collections.gpufabric.rollout.plugins.module_utils.intent import check as intent_check

    defaults = _plan_defaults()
    values, _problems = intent_check.check_scope(plan_action.SPECS, "node_intent", defaults["plan_node_roles"], {})
    assert values["plan_node_roles"] == defaults["plan_node_roles"]
    values, _problems = intent_check.check_scope(
        plan_action.SPECS, "node_intent", ["topology"], {"plan_node_roles": ["topology"]}
    )
    assert values["plan_node_roles"] == ["topology"]


@pytest.mark.parametrize(
    "playbook,role,other,key",
    [
        ("hosts.yml", "nccl_config", "topology", "plan_node_roles"),
        ("cluster.yml", "rdma_networks", "gpu_operator", "plan_cluster_roles"),
    ],
)
def test_the_switch_checks_a_role_the_plan_did_not_check(tmp_path, playbook, role, other, key):
    """The templated switch, as the playbook has it: off for a role in the checked list, on for any
    other and without the plan."""
    variable, expression = (
        ("__hosts_plan_checked", _hosts_plan_checked())
        if playbook == "hosts.yml"
        else ("__cluster_plan_checked", _cluster_plan_checked())
    )
    switch = (HOSTS_SKIP if playbook == "hosts.yml" else CLUSTER_SKIP).format(role=role)
    play = tmp_path / "skip.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": f"{playbook}'s switch",
                    "hosts": "localhost",
                    "gather_facts": False,
                    "vars": {variable: expression},
                    "tasks": [
                        {
                            "name": "Include it",
                            "ansible.builtin.include_role": {
                                "name": f"gpufabric.rollout.{role}",
                                "rolespec_validate": switch,
                            },
                        }
                    ],
                }
            ]
        )
    )
    base = ["-i", "localhost,", "-e", f"ansible_python_interpreter={sys.executable}", str(play)]
    for intent, checked in ((None, True), ([other], True), ([role], False)):
        extra = ["-e", json.dumps({"gpufabric_intent": {key: intent}})] if intent else []
        done = ansible_playbook(tmp_path, *extra, *base)
        out = done.stdout + done.stderr
        assert done.returncode != 0  # no plan: the role fails either way
        assert ("Validating arguments against arg spec 'main'" in out) is checked, (intent, out[-2000:])


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
