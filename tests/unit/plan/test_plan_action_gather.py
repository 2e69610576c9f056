"""The plan action's node check with gather_subset (roles/plan/tasks/main.yml): setup runs in the check's
task, and the check sees its facts as the node's variables, as it would after a setup task of its own."""

from __future__ import annotations

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpufabric.rollout.plugins.action import plan as plan_action

SETUP_FACTS = {
    "ansible_kernel": "6.8.0-45-generic",
    "ansible_os_family": "Debian",
    "discovered_interpreter_python": "/usr/bin/python3",
}


def action(module_result, calls):
    """An ActionModule with only what _gather uses: the module runner and a templar."""
    module = object.__new__(plan_action.ActionModule)

    def execute_module(**kwargs):
        calls.append(kwargs)
        return module_result

    module._execute_module = execute_module
    module._templar = Templar(loader=DataLoader(), variables={})
    return module


def test_facts_become_the_nodes_variables_under_ansible_facts_and_at_the_top_when_injected(monkeypatch):
    base = {"ansible_facts": {"machine_id": "abc"}, "inventory_hostname": "n1"}
    for inject in (True, False):
        monkeypatch.setattr(plan_action, "inject_facts", lambda on=inject: on)
        variables = plan_action.with_facts(base, SETUP_FACTS)
        assert variables["ansible_facts"] == {
            "machine_id": "abc",
            "kernel": "6.8.0-45-generic",
            "os_family": "Debian",
            "discovered_interpreter_python": "/usr/bin/python3",
        }
        assert ("ansible_kernel" in variables) is inject
        assert "discovered_interpreter_python" not in variables  # only ansible_* facts are injected
        assert variables["inventory_hostname"] == "n1"
    assert base == {"ansible_facts": {"machine_id": "abc"}, "inventory_hostname": "n1"}, "the task's variables are left"


def test_gather_runs_setup_with_the_subset_and_filter_and_checks_with_its_facts():
    calls = []
    module = action({"ansible_facts": SETUP_FACTS, "changed": False}, calls)
    result = module._gather(
        {"inventory_hostname": "n1"}, {"gather_subset": ["!all", "platform"], "facts": ["ansible_kernel"]}
    )
    assert calls == [
        {
            "module_name": "ansible.builtin.setup",
            "module_args": {"gather_subset": ["!all", "platform"], "filter": ["ansible_kernel"]},
            "task_vars": {"inventory_hostname": "n1"},
        }
    ]
    assert result["ansible_facts"] == SETUP_FACTS
    assert module._task_vars["ansible_facts"]["kernel"] == "6.8.0-45-generic"
    # the role defaults the check renders see the facts: the templar was given the node's new variables
    assert module._templar.available_variables["ansible_facts"]["os_family"] == "Debian"


def test_a_failed_or_unreachable_setup_is_returned_and_nothing_is_checked_with_it():
    for failure in ({"failed": True, "msg": "setup failed"}, {"unreachable": True, "msg": "ssh: no route"}):
        module = action(failure, [])
        module._task_vars = {"before": True}
        assert module._gather({}, {"gather_subset": ["platform"]}) is failure
        assert module._task_vars == {"before": True}


def test_the_specs_are_read_once_when_the_plugin_is_imported():
    assert plan_action.PLAN_ROLE in plan_action.SPECS
    assert plan_action.load_specs() == plan_action.SPECS
    # internals of every role, already marked trusted (rendered by role defaults)
    assert set(plan_action.INTERNAL_VARS) >= {"plan", "doca_ofed", "gpudirect_storage"}
    assert plan_action.INTERNAL_VARS["plan"] == plan_action.load_internal_vars(["plan"])
