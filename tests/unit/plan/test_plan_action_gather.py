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


# The node check with read (roles/plan/tasks/main.yml): one plan_facts call gathers setup's facts and
# reads the node before the check, with its arguments rendered from the node's variables as they stand.
READS = {"gpufabric_topology": {"gpus": []}, "packages": {"dkms": [{"version": "3.0.10"}]}}
GATHER = {"gather_subset": ["!all", "platform"], "facts": ["ansible_kernel"]}
NODE_VARS = {"inventory_hostname": "n1", "gpufabric_sysroot": "/srv/n1", "topology_rail_nics": ["mlx5_3"]}
GUESSED = {
    "sysroot": "/srv/n1",
    "storage_nics": [],
    "rail_nics": ["mlx5_3"],
    "nvidia_smi": "auto",
    "method": "auto",
    "cuda_version": "",
}


def scripted(*results):
    """An ActionModule whose module calls answer ``results`` in order (each call recorded)."""
    calls = []
    answers = list(results)

    def execute_module(**kwargs):
        calls.append(kwargs)
        return answers.pop(0)

    module = object.__new__(plan_action.ActionModule)
    module._execute_module = execute_module
    module._templar = Templar(loader=DataLoader(), variables={})
    return module, calls


def test_one_module_call_gathers_and_reads_before_the_check_and_none_after_when_the_check_agrees():
    module, calls = scripted({"changed": False, "ansible_facts": dict(SETUP_FACTS, **READS), "manager": "dpkg"})
    read = module._read_node(dict(NODE_VARS), GATHER)
    assert calls == [
        {
            "module_name": "gpufabric.rollout.plan_facts",
            "module_args": dict(GUESSED, gather_subset=["!all", "platform"], filter=["ansible_kernel"]),
            "task_vars": NODE_VARS,
        }
    ]
    assert read["setup_facts"] == SETUP_FACTS and read["ansible_facts"] == READS
    # the check sees setup's facts as the node's variables, not the reads
    assert module._task_vars["ansible_facts"]["kernel"] == "6.8.0-45-generic"
    assert "packages" not in module._task_vars["ansible_facts"]
    checked = {"gpufabric_sysroot": "/srv/n1", "topology_rail_nics": ["mlx5_3"], "gpudirect_rdma_method": "auto"}
    assert module._read_checked(read, checked, NODE_VARS) == {
        "changed": False,
        "ansible_facts": READS,
        "manager": "dpkg",
    }
    assert len(calls) == 1


def test_checked_values_that_differ_from_the_guess_read_again_with_them_without_gathering():
    again = {"changed": False, "ansible_facts": {"packages": {}, "gpufabric_topology": {"gpus": [1]}}}
    module, calls = scripted({"changed": False, "ansible_facts": dict(SETUP_FACTS, **READS)}, again)
    read = module._read_node(dict(NODE_VARS), GATHER)
    checked = {"gpufabric_sysroot": "/srv/n1", "topology_rail_nics": ["mlx5_3"], "topology_storage_nics": ["mlx5_0"]}
    assert module._read_checked(read, checked, NODE_VARS)["ansible_facts"] == again["ansible_facts"]
    assert calls[1]["module_args"] == dict(GUESSED, storage_nics=["mlx5_0"])  # no gather_subset: setup ran once


def test_a_value_that_needs_the_facts_gathers_with_setup_and_reads_after_the_check():
    # an inventory's value is a trusted template; the facts are not known yet
    node = dict(NODE_VARS, topology_storage_nics=plan_action.trust_as_template("{{ ansible_facts.kernel_nics }}"))
    module, calls = scripted({"changed": False, "ansible_facts": SETUP_FACTS}, {"ansible_facts": READS})
    read = module._read_node(node, GATHER)
    assert [c["module_name"] for c in calls] == ["ansible.builtin.setup"]
    assert read == {"setup_facts": SETUP_FACTS, "guessed": None}
    checked = {"gpufabric_sysroot": "/srv/n1", "topology_storage_nics": ["mlx5_0"]}
    assert module._read_checked(read, checked, node) == {"ansible_facts": READS}
    assert calls[1]["module_name"] == "gpufabric.rollout.plan_facts"
    assert calls[1]["module_args"] == dict(GUESSED, rail_nics=[], storage_nics=["mlx5_0"])


def test_an_argument_plan_facts_refuses_leaves_the_check_to_name_the_variable():
    """plan_facts refuses before it gathers (no setup_facts): setup gathers alone, and the check runs."""
    refused = {"failed": True, "msg": "value of nvidia_smi must be one of: auto, file, command, never, got: files"}
    module, calls = scripted(refused, {"changed": False, "ansible_facts": SETUP_FACTS})
    read = module._read_node(dict(NODE_VARS, topology_nvidia_smi="files"), GATHER)
    assert [c["module_name"] for c in calls] == ["gpufabric.rollout.plan_facts", "ansible.builtin.setup"]
    assert read == {"setup_facts": SETUP_FACTS, "guessed": None}
    assert module._task_vars["ansible_facts"]["os_family"] == "Debian"


def test_a_read_that_failed_after_gathering_is_the_result_once_the_check_passed():
    failed = {"failed": True, "msg": "sysroot /srv/n1 does not exist", "setup_facts": SETUP_FACTS}
    module, calls = scripted(failed)
    read = module._read_node(dict(NODE_VARS), GATHER)
    assert read["setup_facts"] == SETUP_FACTS and read["guessed"] == GUESSED
    out = module._read_checked(read, {"gpufabric_sysroot": "/srv/n1", "topology_rail_nics": ["mlx5_3"]}, NODE_VARS)
    assert out == {"failed": True, "msg": "sysroot /srv/n1 does not exist"}
    assert len(calls) == 1


def test_an_unreachable_node_is_returned_as_it_is():
    unreachable = {"unreachable": True, "msg": "ssh: no route"}
    module, calls = scripted(unreachable)
    module._task_vars = {"before": True}
    assert module._read_node(dict(NODE_VARS), GATHER) is unreachable
    assert module._task_vars == {"before": True} and len(calls) == 1
