"""Loaders shared by the AWX tests: the stage list, the roles' argument specs, the surveys."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
STAGES_FILE = REPO_ROOT / "playbooks" / "vars" / "awx_stages.yml"


def load_stages() -> dict:
    return yaml.safe_load(STAGES_FILE.read_text())


def role_argument_specs() -> dict:
    return {
        path.parents[1].name: yaml.safe_load(path.read_text())
        for path in sorted((REPO_ROOT / "roles").glob("*/meta/argument_specs.yml"))
    }


def stage_roles(stages: dict, stage: dict) -> list:
    return (stages["gpufabric_awx_intent_roles"] if stage.get("intent") else []) + list(stage["roles"])


def stage_surveys(defaults: str = "describe", specs: dict | None = None) -> dict:
    """{stage name: awx_survey result} exactly as playbooks/awx.yml asks the filter for them."""
    from ansible_collections.gpufabric.rollout.plugins.filter.awx import awx_survey

    stages = load_stages()
    specs = role_argument_specs() if specs is None else specs
    return {
        stage["name"]: awx_survey(
            specs,
            stage_roles(stages, stage),
            name=f"gpufabric {stage['name']}",
            exclude=stages["gpufabric_awx_survey_exclude"],
            allow=stages["gpufabric_awx_survey_allow"],
            defaults=defaults,
        )
        for stage in stages["gpufabric_awx_stages"]
    }
