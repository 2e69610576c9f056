# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over plugins/module_utils/plan/awx.py (AWX surveys from role argument specs, workflow graphs)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def awx_survey(
    argument_specs, roles, name, description="", exclude=None, defaults="describe", entry_point="main", allow=None
):
    """{role: parsed meta/argument_specs.yml} + the roles of a job template -> AWX survey.

    Only the variables in ``allow`` (required) are asked; see ``_awx.NEVER_ASKED`` for what never is.

    Returns {survey_spec, enabled, skipped}; see the module_utils docstring for the mapping.
    """
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import awx as _awx

    try:
        sources = _awx.role_sources(argument_specs, list(roles or []), entry_point)
        return _awx.survey(sources, name, description, exclude=exclude, defaults=defaults, allow=allow)
    except _awx.SurveyError as exc:
        raise AnsibleFilterError(f"awx_survey: {exc}") from exc


def awx_workflow_nodes(nodes, templates, organization):
    """[{identifier, stage, success, failure, always}] -> awx.awx.workflow_job_template workflow_nodes."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import awx_workflow as _awx_workflow

    try:
        return _awx_workflow.workflow_nodes(nodes, templates, organization)
    except _awx_workflow.WorkflowError as exc:
        raise AnsibleFilterError(f"awx_workflow_nodes: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"awx_survey": awx_survey, "awx_workflow_nodes": awx_workflow_nodes}
