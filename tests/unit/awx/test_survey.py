"""Surveys generated from argument specs (plugins/module_utils/plan/awx.py, plugins/filter/awx.py).

The generated surveys are checked with AWX's own rules (awx_survey_rules.py, from the AWX source),
and each answer AWX accepts is checked against the role's argument spec with Ansible's
ArgumentSpecValidator, so a question can never offer what the role refuses.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from _awx_support import load_stages, role_argument_specs, stage_roles, stage_surveys
from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from awx_survey_rules import answer_errors, blank_is_sent, default_is_sent, spec_errors

from ansible_collections.gpufabric.rollout.plugins.filter.awx import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import awx as _awx

F = FilterModule().filters()
STAGES = load_stages()
STAGE_NAMES = [s["name"] for s in STAGES["gpufabric_awx_stages"]]
SPECS = role_argument_specs()
DESCRIBED = stage_surveys("describe")
PREFILLED = stage_surveys("prefill")


def _options(role):
    name, _sep, entry = role.partition(":")
    return SPECS[name]["argument_specs"][entry or "main"]["options"]


def _questions(result):
    return {q["variable"]: q for q in (result["survey_spec"] or {}).get("spec", [])}


def _entry(options):
    return {"argument_specs": {"main": {"short_description": "t", "options": options}}}


def _one(option, name="x_opt", **kwargs):
    kwargs.setdefault("allow", [name])
    result = F["awx_survey"]({"r": _entry({name: option})}, ["r"], "t", **kwargs)
    return _questions(result).get(name), result


# --- every job template's survey, against AWX's rules --------------------------------------


@pytest.mark.parametrize("mode", ["describe", "prefill"])
@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_stage_survey_passes_awx_validation(stage, mode):
    result = (DESCRIBED if mode == "describe" else PREFILLED)[stage]
    roles = stage_roles(STAGES, next(s for s in STAGES["gpufabric_awx_stages"] if s["name"] == stage))
    if not result["enabled"]:
        assert result["survey_spec"] == {}, "a stage without questions must delete its survey ({} in awx.awx)"
        assert not any(_options(r) for r in roles), f"{stage}: its roles have options but no question came out"
        return
    assert spec_errors(result["survey_spec"]) == []


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_every_option_is_asked_or_skipped_with_a_reason(stage):
    stage_def = next(s for s in STAGES["gpufabric_awx_stages"] if s["name"] == stage)
    result = DESCRIBED[stage]
    asked = set(_questions(result))
    skipped = {s["variable"]: s["reason"] for s in result["skipped"]}
    assert not asked & set(skipped)
    for role in stage_roles(STAGES, stage_def):
        for var in _options(role):
            assert var in asked or skipped.get(var), f"{stage}: {var} of role {role} is neither asked nor skipped"


def test_the_stages_with_roles_have_surveys():
    assert DESCRIBED["hosts"]["enabled"] and DESCRIBED["cluster"]["enabled"]
    assert len(_questions(DESCRIBED["hosts"])) > 50
    assert "gpufabric_kubeconfig" not in _questions(DESCRIBED["cluster"])
    assert {"variable": "gpufabric_kubeconfig", "source": "role plan (cluster_intent)"}.items() <= next(
        s for s in DESCRIBED["cluster"]["skipped"] if s["variable"] == "gpufabric_kubeconfig"
    ).items()


def _example_answers(question):
    """Answers AWX accepts for this question, typed as AWX sends them."""
    qtype = question["type"]
    if qtype == "multiplechoice":
        return list(question["choices"])
    if qtype == "multiselect":
        return [[question["choices"][0]], list(question["choices"])]
    if qtype == "integer":
        return [question.get("min", 0), question.get("max", 7)]
    if qtype == "float":
        return [0.5]
    return ["x", "/a/path"]


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_answers_awx_accepts_pass_the_role_argument_spec(stage):
    stage_def = next(s for s in STAGES["gpufabric_awx_stages"] if s["name"] == stage)
    options = {}
    for role in reversed(stage_roles(STAGES, stage_def)):
        options.update(_options(role))
    for var, question in _questions(DESCRIBED[stage]).items():
        spec = {var: {k: v for k, v in options[var].items() if k not in ("description", "default")}}
        for answer in _example_answers(question):
            assert answer_errors(question, {var: answer}) == [], (var, answer)
            result = ArgumentSpecValidator(spec).validate({var: answer})
            assert not result.error_messages, (
                f"{stage}: AWX accepts {answer!r} for {var}, the role refuses it: {result.error_messages}"
            )


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_describe_mode_sends_nothing_unanswered(stage):
    """Without answers, a launch must send no survey variable: the inventory keeps its say."""
    for question in _questions(DESCRIBED[stage]).values():
        assert "default" not in question
        assert not default_is_sent(question)
        if not question["required"]:
            assert not blank_is_sent(question), question["variable"]
        assert "Leave unanswered" in question["question_description"]


def test_prefill_mode_sends_the_role_defaults_awx_accepts():
    questions = _questions(PREFILLED["hosts"])
    assert questions["doca_ofed_reboot_timeout"]["default"] == 1800
    assert default_is_sent(questions["doca_ofed_reboot_timeout"])
    assert questions["roce_backend"]["default"] == "auto"
    assert questions["roce_persist"]["default"] == "true"
    assert questions["gpudirect_storage_rdma_nic_roles"]["default"] == "storage\ncompute"
    # templated role defaults cannot be pre-filled: AWX would send the template text
    templated = _one({"type": "str", "default": "{{ other_var }}"}, defaults="prefill")[0]
    assert "default" not in templated
    assert "computed by the role" in templated["question_description"]
    for question in questions.values():
        if "default" in question and question["type"] != "multiselect":
            assert default_is_sent(question), question["variable"]
    # AWX stores a multiselect default as a newline-separated string but checks the answers it
    # sends as a list, so it pre-fills the form and never sends the default by itself.
    assert not default_is_sent(questions["gpudirect_storage_rdma_nic_roles"])


# --- the mapping, type by type ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ({"type": "str"}, {"type": "text", "min": 1}),
        ({"type": "raw"}, {"type": "text", "min": 1}),
        ({"type": "str", "choices": ["a", "b"]}, {"type": "multiplechoice", "choices": ["a", "b"]}),
        ({"type": "bool"}, {"type": "multiplechoice", "choices": ["true", "false"]}),
        ({"type": "int"}, {"type": "integer"}),
        ({"type": "int", "choices": [1, 2, 4]}, {"type": "integer", "min": 1, "max": 4}),
        ({"type": "float"}, {"type": "float"}),
        ({"type": "list", "elements": "str", "choices": ["a", "b"]}, {"type": "multiselect", "choices": ["a", "b"]}),
        ({}, {"type": "text", "min": 1}),
    ],
)
def test_question_type(option, expected):
    question = _one({**option, "description": "D."})[0]
    assert {k: question[k] for k in expected} == expected
    assert question["required"] is False
    assert (
        set(question)
        - {"question_name", "question_description", "variable", "required", "type", "choices", "min", "max"}
        == set()
    )


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ({"type": "dict"}, "mapping"),
        ({"type": "dict", "options": {"a": {"type": "str"}}}, "mapping"),
        ({"type": "list", "elements": "str"}, "list of str without choices"),
        ({"type": "list", "elements": "dict", "options": {"a": {"type": "int"}}}, "list of dict"),
        ({"type": "list", "elements": "int"}, "list of int"),
        ({"type": "bits"}, "no AWX survey question type"),
        ({"type": "int", "choices": [1, "two"]}, "non-integer choices"),
    ],
)
def test_what_cannot_be_a_question_is_skipped_with_the_reason(option, reason):
    question, result = _one(option)
    assert question is None
    assert result["enabled"] is False and result["survey_spec"] == {}
    assert result["skipped"] == [{"variable": "x_opt", "source": "role r", "reason": result["skipped"][0]["reason"]}]
    assert reason in result["skipped"][0]["reason"]


def test_required_and_description_markup():
    question = _one(
        {
            "type": "str",
            "required": True,
            "default": "v",
            "description": [
                "Uses C(/etc/x) with O(other_opt=1), see M(gpufabric.rollout.roce_qos).",
                "L(Docs, https://d.invalid).",
            ],
        }
    )[0]
    assert question["required"] is True
    text = question["question_description"]
    assert text.startswith("Uses /etc/x with other_opt=1, see gpufabric.rollout.roce_qos. Docs (https://d.invalid).")
    assert "Role default: v." in text and "Leave unanswered" not in text and text.endswith("(role r)")


@pytest.mark.parametrize(
    ("option", "reason"),
    [({"type": "path"}, "a path"), ({"type": "str", "no_log": True}, "a secret"), ({"type": "str"}, None)],
)
def test_paths_and_secrets_are_never_asked(option, reason):
    if reason is None:  # a dangerous name is refused whatever its type
        with pytest.raises(AnsibleFilterError, match=r"x_helm_binary .*a program run"):
            _one(option, name="x_helm_binary")
        return
    with pytest.raises(AnsibleFilterError, match=rf"x_opt .*may never be asked: {reason}"):
        _one(option)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("gpufabric_instance", "the deployment's identity"),
        ("k8s_publish_instance", "the deployment's identity"),
        ("storage_client_weka_installer_sha256", "a checksum"),
        ("doca_ofed_insecure_repo_acknowledged", "a package or chart source"),
        ("gpu_driver_insecure_acknowledged", "an acknowledged risk"),
    ],
)
def test_identity_checksums_and_acknowledgements_are_never_asked(name, reason):
    with pytest.raises(AnsibleFilterError, match=rf"{name} .*{reason}"):
        _one({"type": "str"}, name=name)


def test_empty_choice_is_left_to_the_inventory():
    question = _one({"type": "str", "choices": ["auto", "", "PIX"], "default": "auto"})[0]
    assert question["choices"] == ["auto", "PIX"]
    assert "empty value is not offered" in question["question_description"]


def test_defaults_mode_is_checked():
    with pytest.raises(AnsibleFilterError, match="defaults: 'always' is not one of describe, prefill"):
        _one({"type": "str"}, defaults="always")


def test_shared_intent_variable_is_asked_once_and_must_agree():
    a = _entry({"gpufabric_k8s_mode": {"type": "str", "choices": ["apply", "render"], "default": "apply"}})
    b = _entry({"gpufabric_k8s_mode": {"type": "str", "choices": ["apply", "render"]}, "b_opt": {"type": "int"}})
    allow = ["gpufabric_k8s_mode", "b_opt"]
    result = F["awx_survey"]({"a": a, "b": b}, ["a", "b"], "t", allow=allow)
    assert [q["variable"] for q in result["survey_spec"]["spec"]] == ["gpufabric_k8s_mode", "b_opt"]
    bad = _entry({"gpufabric_k8s_mode": {"type": "str", "choices": ["apply"]}})
    with pytest.raises(AnsibleFilterError, match="gpufabric_k8s_mode: role a and role c declare it differently"):
        F["awx_survey"]({"a": a, "c": bad}, ["a", "c"], "t", allow=allow)


def test_exclude_and_unknown_role():
    result = F["awx_survey"](
        {"r": _entry({"k": {"type": "path"}, "n": {"type": "int"}})},
        ["r"],
        "t",
        exclude={"k": "from a credential"},
        allow=[],
    )
    assert result["skipped"] == [
        {"variable": "k", "source": "role r", "reason": "from a credential"},
        {"variable": "n", "source": "role r", "reason": _awx.NOT_ALLOWED},
    ]
    with pytest.raises(AnsibleFilterError, match="role nope: no argument specs were given"):
        F["awx_survey"]({}, ["nope"], "t")
    with pytest.raises(AnsibleFilterError, match=r"role r: meta/argument_specs\.yml has no 'upgrade' entry point"):
        F["awx_survey"]({"r": _entry({})}, ["r"], "t", entry_point="upgrade")


# --- a changed argument spec changes the survey ---------------------------------------------------


def _hosts_survey(specs):
    return _questions(stage_surveys("prefill", specs)["hosts"])


def test_changed_argument_spec_changes_the_survey():
    before = _hosts_survey(SPECS)
    specs = copy.deepcopy(SPECS)
    roce = specs["roce"]["argument_specs"]["main"]["options"]
    roce["roce_backend"]["choices"].append("ethtool")
    roce["roce_backend"]["default"] = "dcb"
    roce["roce_acs_clear_mask"]["description"] = "Changed words."
    roce["roce_new_knob"] = {"type": "bool", "default": True, "description": "A new knob."}
    del roce["roce_persist"]
    doca = specs["doca_ofed"]["argument_specs"]["main"]["options"]
    doca["doca_ofed_reboot_timeout"]["type"] = "str"
    doca["doca_ofed_hold"]["required"] = True
    after = _hosts_survey(specs)

    assert after["roce_backend"]["choices"] == [*before["roce_backend"]["choices"], "ethtool"]
    assert before["roce_backend"]["default"] == "auto" and after["roce_backend"]["default"] == "dcb"
    assert after["roce_acs_clear_mask"]["question_description"].startswith("Changed words.")
    assert "roce_new_knob" not in before
    assert "roce_new_knob" not in after, "a new option is asked only once it is allow-listed"
    assert "roce_persist" in before and "roce_persist" not in after
    assert (before["doca_ofed_reboot_timeout"]["type"], after["doca_ofed_reboot_timeout"]["type"]) == (
        "integer",
        "text",
    )
    assert (before["doca_ofed_hold"]["required"], after["doca_ofed_hold"]["required"]) == (False, True)
    untouched = set(before) - {
        "roce_backend",
        "roce_acs_clear_mask",
        "roce_persist",
        "doca_ofed_reboot_timeout",
        "doca_ofed_hold",
    }
    assert all(before[v] == after[v] for v in untouched)


# --- the workflow graph -------------------------------------------------------------------------------


def test_workflow_nodes_from_the_stage_list():
    names = {s: f"gpufabric {s}" for s in STAGE_NAMES}
    nodes = F["awx_workflow_nodes"](STAGES["gpufabric_awx_workflow"], names, "gpufabric")
    by_id = {n["identifier"]: n for n in nodes}
    chain, node = [], "plan"
    while node:
        chain.append(node)
        successors = by_id[node]["related"]["success_nodes"]
        node = successors[0]["identifier"] if successors else None
    assert chain == ["plan", "hosts", "cluster", "validate"]
    assert by_id["hosts"]["related"]["failure_nodes"] == [{"identifier": "diagnose"}]
    assert by_id["cluster"]["related"]["failure_nodes"] == [{"identifier": "diagnose"}]
    assert by_id["plan"]["related"]["failure_nodes"] == []
    assert by_id["diagnose"]["unified_job_template"] == {
        "name": "gpufabric validate",
        "type": "job_template",
        "organization": {"name": "gpufabric"},
    }


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (
            [
                {"identifier": "a", "stage": "plan", "success": ["b"]},
                {"identifier": "b", "stage": "hosts", "failure": ["a"]},
            ],
            "cycle: a -> b -> a",
        ),
        ([{"identifier": "a", "stage": "plan", "success": ["zz"]}], "node a: success edge to unknown node 'zz'"),
        ([{"identifier": "a", "stage": "deploy"}], "node a: stage 'deploy' is not one of"),
        (
            [{"identifier": "a", "stage": "plan"}, {"identifier": "a", "stage": "hosts"}],
            "node a: the identifier is used twice",
        ),
        ([], "at least one node"),
    ],
)
def test_workflow_refusals(nodes, message):
    with pytest.raises(AnsibleFilterError, match=message):
        F["awx_workflow_nodes"](nodes, {s: s for s in STAGE_NAMES}, "o")


def test_survey_core_refuses_bad_sources():
    with pytest.raises(_awx.SurveyError, match=r"sources\[0\]: expected a mapping"):
        _awx.survey([["r", {}]], "t", allow=[])
    with pytest.raises(_awx.SurveyError, match="option 'bad-name' is not a valid variable name"):
        _awx.survey([{"source": "r", "argument_spec": {"options": {"bad-name": {}}}}], "t", allow=[])


# --- docs/awx.md's summary follows the specs -------------------------------------------------------


def test_awx_doc_summarises_the_generated_surveys():
    section = (Path(__file__).resolve().parents[3] / "docs" / "awx.md").read_text()
    for stage, result in DESCRIBED.items():
        if not result["enabled"]:
            continue
        match = re.search(rf"^- {stage} \((\d+) questions\): (.*?)\.\n(?=- |\n)", section, re.M | re.S)
        assert match, f"docs/awx.md: no summary line for the {stage} survey"
        assert int(match.group(1)) == len(result["survey_spec"]["spec"]), f"docs/awx.md: {stage} question count"
        listed = re.findall(r"`(\w+)`", match.group(2))
        assert listed == [q["variable"] for q in result["survey_spec"]["spec"]], (
            f"docs/awx.md: {stage} questions; run python tests/unit/awx/readme_surveys.py --write"
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"allow": "validate_rdma"},
            "allow: must be a list (- item) of variable names, got the string 'validate_rdma'",
        ),
        ({"allow": {"validate_rdma": True}}, "got a mapping {'validate_rdma': True}"),
        (
            {"allow": [], "exclude": "validate_rdma"},
            "exclude: must be a mapping (key: value) of variable to reason or a list (- item), got the string",
        ),
    ],
)
def test_survey_settings_of_the_wrong_type_are_named_in_the_inventory_words(kwargs, message):
    """Issue 44 point 5: what the setting must be and what it is, in YAML's terms, not Python's class names."""
    source = {"source": "r", "argument_spec": {"options": {"validate_rdma": {"type": "bool"}}}}
    with pytest.raises(_awx.SurveyError) as err:
        _awx.survey([source], "t", **kwargs)
    assert message in str(err.value)
    assert not re.search(r"\b(str|dict|NoneType|class)\b", str(err.value)), str(err.value)
