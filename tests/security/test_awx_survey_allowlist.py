"""Issue 37, finding 3: an AWX user with only Execute answers the survey, and the answers are extra
vars that reach root on every node. Every question of every generated stage survey must be on the
allow-list, and nothing that redirects what runs or what is trusted may ever be asked."""

from __future__ import annotations

import re

import pytest
from _awx_support import load_stages, role_argument_specs, stage_roles, stage_surveys

from ansible_collections.gpufabric.rollout.plugins.filter.awx import awx_survey
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import awx as _awx

STAGES = load_stages()
ALLOW = STAGES.get("gpufabric_awx_survey_allow")
SPECS = role_argument_specs()
STAGE_NAMES = [s["name"] for s in STAGES["gpufabric_awx_stages"]]

# What the attack in the issue used, independently of the module's own patterns: a repository or
# key URL with [trusted=yes], TLS or signature checks off, another helm binary, another image, the
# reload/reboot flags.
ATTACK = re.compile(
    r"_url$|gpg_check|validate_certs|_helm_binary$|_image$|image_registry|chart_repo|chart_path"
    r"|allow_reload|allow_reboot|allow_restart|_binary$|_python$|_path$|_dir$|_file$|_src$"
)


def _asked(result):
    return [q["variable"] for q in (result["survey_spec"] or {}).get("spec", [])]


@pytest.mark.parametrize("mode", ["describe", "prefill"])
@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_every_survey_question_is_allow_listed(stage, mode):
    assert ALLOW, "playbooks/vars/awx_stages.yml has no gpufabric_awx_survey_allow"
    asked = _asked(stage_surveys(mode)[stage])
    assert [v for v in asked if v not in ALLOW] == [], f"{stage}: asked without being allow-listed"
    assert [v for v in asked if ATTACK.search(v)] == [], f"{stage}: asks a variable that redirects root"


@pytest.mark.parametrize("stage", STAGE_NAMES)
def test_no_path_or_secret_option_is_asked(stage):
    stage_def = next(s for s in STAGES["gpufabric_awx_stages"] if s["name"] == stage)
    options = {}
    for role in stage_roles(STAGES, stage_def):
        name, _sep, entry = role.partition(":")
        options.update(SPECS[name]["argument_specs"][entry or "main"]["options"])
    for var in _asked(stage_surveys()[stage]):
        assert options[var].get("type") != "path" and not options[var].get("no_log"), var


def test_allow_list_names_only_declared_variables():
    declared = {
        var
        for document in SPECS.values()
        for entry in (document.get("argument_specs") or {}).values()
        for var in (entry.get("options") or {})
    }
    assert sorted(set(ALLOW) - declared) == []
    assert len(ALLOW) == len(set(ALLOW)), "an allow-list entry is repeated"


@pytest.mark.parametrize(
    "var",
    [
        "doca_ofed_repo_base_url",
        "doca_ofed_gpg_check",
        "gpu_driver_repo_url",
        "gpu_driver_repo_key_url",
        "gpu_driver_validate_certs",
        "storage_client_weka_installer_url",
        "gpu_operator_helm_binary",
        "network_operator_chart_repo_url",
        "validate_nccl_image",
        "gpu_operator_image_registry",
        "doca_ofed_allow_reload",
        "gpu_driver_allow_reboot",
        "gpufabric_upgrade_allow_reboot",
        "validate_probe_python",
        "gpufabric_report_path",
    ],
)
def test_allow_listing_a_dangerous_variable_is_refused(var):
    """An allow-list edited to add a dangerous variable fails the awx.yml run, naming it."""
    roles = STAGES["gpufabric_awx_intent_roles"] + [r for s in STAGES["gpufabric_awx_stages"] for r in s["roles"]]
    with pytest.raises(Exception, match=var):
        awx_survey(SPECS, roles, name="t", allow=[*ALLOW, var])


def test_a_survey_needs_an_allow_list():
    with pytest.raises(_awx.SurveyError, match="allow"):
        _awx.survey([{"source": "r", "argument_spec": {"options": {"x_opt": {"type": "str"}}}}], "t")
