"""playbooks/awx.yml against the installed awx.awx modules.

Every task is rendered as ansible-playbook would hand it to its module (render_playbook.py:
variables, loops, conditions, module_defaults, omit), and the arguments of each awx.awx task are
validated with Ansible's ArgumentSpecValidator against the module's real argument spec (taken
from the module's own main(), so the awx.awx version in the pinned `ansible` package decides).
Workflow nodes, a list of free dicts in the module's code, are validated against the suboptions
its DOCUMENTATION gives. No AWX is needed; unknown or mistyped arguments fail.
"""

from __future__ import annotations

import copy
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
import yaml
from _awx_support import REPO_ROOT, load_stages, stage_surveys
from ansible.module_utils import basic
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

STAGES = load_stages()
STAGE_NAMES = [s["name"] for s in STAGES["gpufabric_awx_stages"]]
FULL = {
    "gpufabric_awx_scm_url": "https://git.example.invalid/infra/gpufabric-rollout.git",
    "gpufabric_awx_ee_image": "registry.example.invalid/gpufabric/rollout-ee:0.1.0",
    "gpufabric_awx_machine_credential": "GPU nodes",
    "gpufabric_awx_scm_credential": "git read-only",
    "gpufabric_awx_ee_registry_credential": "registry",
    "gpufabric_awx_kubeconfig": "apiVersion: v1\nkind: Config\n",
    "gpufabric_awx_notification": {"type": "webhook", "configuration": {"url": "https://hooks.example.invalid/x"}},
    "gpufabric_awx_controller_host": "https://awx.example.invalid",
    "gpufabric_awx_controller_oauthtoken": "token",
    "gpufabric_awx_controller_validate_certs": True,
}
MINIMAL = {k: FULL[k] for k in ("gpufabric_awx_scm_url", "gpufabric_awx_ee_image")}
_SPEC_KEYS = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")


def _render(project: Path, extra_vars: dict) -> list:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("render_playbook.py")), str(project / "playbooks" / "awx.yml"),
         str(REPO_ROOT / ".collections"), json.dumps(extra_vars)],
        capture_output=True, text=True, check=False, cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def _project(tmp: Path, with_every_stage: bool) -> Path:
    """The repository's playbooks and roles; with_every_stage adds a stand-in for each stage playbook
    the repository does not have yet, so every job template is rendered."""
    shutil.copytree(REPO_ROOT / "playbooks", tmp / "playbooks")
    (tmp / "roles").symlink_to(REPO_ROOT / "roles")
    if with_every_stage:
        for stage in STAGES["gpufabric_awx_stages"]:
            path = tmp / stage["playbook"]
            if not path.exists():
                path.write_text("- name: Stand-in\n  hosts: localhost\n  tasks: []\n")
    return tmp


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return _render(_project(tmp_path_factory.mktemp("every-stage"), True), FULL)


@pytest.fixture(scope="module")
def rendered_minimal(tmp_path_factory):
    return _render(_project(tmp_path_factory.mktemp("every-stage-minimal"), True), MINIMAL)


@pytest.fixture(scope="module")
def rendered_repository(tmp_path_factory):
    return _render(_project(tmp_path_factory.mktemp("repository"), False), MINIMAL)


class _Captured(Exception):
    pass


def module_argument_spec(action: str) -> dict:
    """The module's full argument spec and constraints, as its main() hands them to AnsibleModule."""
    namespace, collection, name = action.split(".")
    module = importlib.import_module(f"ansible_collections.{namespace}.{collection}.plugins.modules.{name}")
    captured = {}

    def capture(self, argument_spec=None, **kwargs):
        captured.update(argument_spec=argument_spec, **{k: kwargs[k] for k in _SPEC_KEYS if k in kwargs})
        raise _Captured

    with mock.patch.object(basic.AnsibleModule, "__init__", capture), pytest.raises(_Captured):
        module.main()
    return captured


def _doc_to_spec(options: dict) -> dict:
    spec = {}
    for name, doc in options.items():
        entry = {k: doc[k] for k in ("type", "elements", "choices", "required", "aliases") if k in doc}
        if "suboptions" in doc:
            entry["options"] = _doc_to_spec(doc["suboptions"])
        spec[name] = entry
    return spec


def validation_errors(action: str, args: dict) -> list:
    captured = module_argument_spec(action)
    spec = captured.pop("argument_spec")
    return list(ArgumentSpecValidator(spec, **captured).validate(args).error_messages)


def _awx_tasks(rendered):
    return [t for t in rendered if t["action"].startswith("awx.awx.")]


def test_every_awx_task_matches_its_module(rendered, rendered_minimal):
    tasks = _awx_tasks(rendered) + _awx_tasks(rendered_minimal)
    assert len(tasks) > 15
    for task in tasks:
        errors = validation_errors(task["action"], task["args"])
        assert not errors, f"{task['name']} ({task['action']}): {errors}"


def test_workflow_nodes_match_the_documented_suboptions(rendered):
    (workflow,) = [t for t in rendered if t["action"] == "awx.awx.workflow_job_template"]
    module = importlib.import_module("ansible_collections.awx.awx.plugins.modules.workflow_job_template")
    node_spec = _doc_to_spec(yaml.safe_load(module.DOCUMENTATION)["options"]["workflow_nodes"]["suboptions"])
    for node in workflow["args"]["workflow_nodes"]:
        errors = ArgumentSpecValidator(node_spec).validate(node).error_messages
        assert not errors, f"workflow node {node.get('identifier')}: {errors}"
    assert [n["identifier"] for n in workflow["args"]["workflow_nodes"]] == [
        n["identifier"] for n in STAGES["gpufabric_awx_workflow"]
    ]


@pytest.mark.parametrize(
    ("action", "change", "message"),
    [
        ("awx.awx.job_template", {"survey_enabeld": True}, "survey_enabeld. Supported parameters include"),
        ("awx.awx.job_template", {"job_slice_count": "two"}, "job_slice_count"),
        ("awx.awx.job_template", {"verbosity": 9}, "verbosity"),
        ("awx.awx.credential_type", {"kind": "kubernetes"}, "kind"),
        ("awx.awx.project", {"scm_type": "github"}, "scm_type"),
    ],
)
def test_the_check_refuses_unknown_and_mistyped_arguments(rendered, action, change, message):
    task = copy.deepcopy(next(t for t in rendered if t["action"] == action))
    task["args"].update(change)
    errors = validation_errors(action, task["args"])
    assert errors and any(message in e for e in errors), errors


def _job_templates(rendered):
    return {t["args"]["name"]: t["args"] for t in rendered if t["action"] == "awx.awx.job_template"}


def test_one_job_template_per_stage_with_the_generated_survey(rendered):
    templates = _job_templates(rendered)
    assert sorted(templates) == sorted(f"gpufabric {s}" for s in STAGE_NAMES)
    surveys = stage_surveys()
    for stage in STAGES["gpufabric_awx_stages"]:
        args = templates[f"gpufabric {stage['name']}"]
        assert args["playbook"] == stage["playbook"]
        assert args["survey_enabled"] == surveys[stage["name"]]["enabled"]
        expected_spec = surveys[stage["name"]]["survey_spec"]
        assert args["survey_spec"].get("spec") == expected_spec.get("spec")
        if expected_spec:
            assert args["survey_spec"]["name"] == f"gpufabric {stage['name']}"
            assert args["survey_spec"]["description"].startswith("Generated from the argument specs of: ")
        expected = {"machine": "GPU nodes", "kubeconfig": "gpufabric kubeconfig"}
        assert args["credentials"] == [expected[c] for c in stage["credentials"]]
        assert args["ask_credential_on_launch"] is False
        assert args["become_enabled"] is stage["become"] and args["use_fact_cache"] is stage["fact_cache"]
        notified = ["gpufabric report"] if stage.get("report") else []
        assert args["notification_templates_success"] == notified == args["notification_templates_error"]
    assert templates["gpufabric hosts"]["survey_spec"]["spec"], "the hosts stage has a survey"


def test_kubeconfig_credential_type_injects_a_file(rendered):
    (ctype,) = [t["args"] for t in rendered if t["action"] == "awx.awx.credential_type"]
    assert ctype["kind"] == "cloud"
    (field,) = ctype["inputs"]["fields"]
    assert field["secret"] is True and field["multiline"] is True and ctype["inputs"]["required"] == ["kubeconfig"]
    # left for AWX to render: the file it writes and the path it injects
    assert ctype["injectors"] == {
        "file": {"template.kubeconfig": "{{ kubeconfig }}"},
        "env": {"K8S_AUTH_KUBECONFIG": "{{ tower.filename.kubeconfig }}"},
        "extra_vars": {"gpufabric_kubeconfig": "{{ tower.filename.kubeconfig }}"},
    }
    (cred,) = [t["args"] for t in rendered if t["action"] == "awx.awx.credential"]
    assert cred["credential_type"] == "gpufabric kubeconfig" and cred["inputs"] == {
        "kubeconfig": FULL["gpufabric_awx_kubeconfig"]
    }


def test_notification_sends_the_report_artifact(rendered):
    (note,) = [t["args"] for t in rendered if t["action"] == "awx.awx.notification_template"]
    body = note["messages"]["error"]["body"]
    assert "job.artifacts.gpufabric_report" in body
    # AWX renders the body with its sandboxed Jinja and requires JSON for webhooks
    import jinja2.sandbox

    context = {
        "job": {
            "name": "gpufabric validate",
            "id": 7,
            "status": "failed",
            "artifacts": {"gpufabric_report": 'a "report"\n'},
        },
        "url": "u",
    }
    rendered_body = jinja2.sandbox.ImmutableSandboxedEnvironment().from_string(body).render(**context)
    assert json.loads(rendered_body)["report"] == 'a "report"\n'
    (workflow,) = [t["args"] for t in rendered if t["action"] == "awx.awx.workflow_job_template"]
    assert workflow["notification_templates_error"] == ["gpufabric report"]


def test_minimal_inputs_create_no_credential_and_no_notification(rendered_minimal):
    actions = [t["action"] for t in rendered_minimal]
    assert "awx.awx.credential" not in actions and "awx.awx.notification_template" not in actions
    for args in _job_templates(rendered_minimal).values():
        assert "GPU nodes" not in args["credentials"] and args["notification_templates_error"] == []
    assert _job_templates(rendered_minimal)["gpufabric hosts"]["ask_credential_on_launch"] is True
    assert all("controller_host" not in t["args"] for t in _awx_tasks(rendered_minimal)), (
        "omit drops unset controller_* defaults"
    )


def test_stages_missing_from_the_repository_get_no_template_and_no_workflow(rendered_repository):
    present = {s["name"] for s in STAGES["gpufabric_awx_stages"] if (REPO_ROOT / s["playbook"]).is_file()}
    assert sorted(_job_templates(rendered_repository)) == sorted(f"gpufabric {s}" for s in present)
    workflow_stages = {n["stage"] for n in STAGES["gpufabric_awx_workflow"]}
    has_workflow = any(t["action"] == "awx.awx.workflow_job_template" for t in rendered_repository)
    assert has_workflow == workflow_stages.issubset(present)


@pytest.mark.parametrize("stage", STAGES["gpufabric_awx_stages"], ids=STAGE_NAMES)
def test_stage_playbook_is_a_valid_playbook(stage):
    path = REPO_ROOT / stage["playbook"]
    if not path.is_file():
        pytest.skip(
            f"{stage['playbook']} is not in the repository yet (stage {stage['name']} in playbooks/vars/awx_stages.yml)"
        )
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), "--syntax-check", "-i", "localhost,", str(path)],
        capture_output=True, text=True, check=False, cwd=REPO_ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_stage_list_is_consistent():
    names = [s["name"] for s in STAGES["gpufabric_awx_stages"]]
    assert names == ["plan", "hosts", "cluster", "validate", "upgrade", "audit", "snapshot"]
    for stage in STAGES["gpufabric_awx_stages"]:
        for item in stage["roles"]:
            role, _sep, entry = item.partition(":")
            path = REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml"
            assert path.is_file(), f"{stage['name']}: role {role}"
            assert (entry or "main") in yaml.safe_load(path.read_text())["argument_specs"], f"{stage['name']}: {item}"
        assert set(stage["credentials"]) <= {"machine", "kubeconfig"}
    for item in STAGES["gpufabric_awx_intent_roles"]:
        role, _sep, entry = item.partition(":")
        path = REPO_ROOT / "roles" / role / "meta" / "argument_specs.yml"
        assert path.is_file(), f"intent role {role}"
        assert entry in yaml.safe_load(path.read_text())["argument_specs"], f"intent entry point {item}"
    # every playbook in playbooks/ that is a stage is listed; awx.yml and report.yml are not stages,
    # rbac.yml renders the RBAC an administrator applies before any stage (docs/rbac/README.md),
    # and site.yml (the main job) is the first four stages in their order, nothing else. switches.yml
    # and fabric_check.yml are not stages yet: they need the switches' API password, which no AWX
    # credential the stages attach carries (machine, kubeconfig); docs/switches.md says so.
    listed = {s["playbook"] for s in STAGES["gpufabric_awx_stages"]}
    not_stages = ("awx.yml", "report.yml", "site.yml", "rbac.yml", "switches.yml", "fabric_check.yml")
    for path in sorted((REPO_ROOT / "playbooks").glob("*.yml")):
        rel = f"playbooks/{path.name}"
        assert rel in listed or path.name in not_stages, f"{rel} is a playbook no AWX stage runs"
    site = yaml.safe_load((REPO_ROOT / "playbooks" / "site.yml").read_text())
    imported = [f"playbooks/{play['ansible.builtin.import_playbook']}" for play in site]
    assert imported == [s["playbook"] for s in STAGES["gpufabric_awx_stages"][:4]]


def test_the_audit_stage_asks_nothing_and_needs_no_cluster():
    """The audit's job template: read-only on the nodes (machine credential, become for root-only
    files and the GPU devices), no kubeconfig, no survey, and its report sent like validate's."""
    audit = next(s for s in STAGES["gpufabric_awx_stages"] if s["name"] == "audit")
    assert audit["credentials"] == ["machine"] and audit["roles"] == [] and audit["intent"] is False
    assert audit["report"] is True and audit["become"] is True
    # the report the notifications send (job.artifacts.gpufabric_report) is published by the audit
    tasks = yaml.safe_load((REPO_ROOT / "roles" / "validate" / "tasks" / "audit_report.yml").read_text())
    stats = [t["ansible.builtin.set_stats"]["data"] for t in tasks if "ansible.builtin.set_stats" in t]
    assert stats and "audit.txt" in stats[0]["gpufabric_report"]
