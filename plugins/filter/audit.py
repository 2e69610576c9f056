# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the audit (playbooks/audit.yml): thin wrappers over module_utils/proof/audit."""

from __future__ import annotations

import json

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_native


def _plain(value):
    """Plain dicts and lists (Ansible's lazy containers and tagged strings dropped)."""
    return json.loads(json.dumps(value, default=to_native))


def audit_findings(state, node):
    """The findings of one node from what the audit read (see proof/audit.py for ``state``)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import audit as _audit

    try:
        return _audit.findings(str(node), _plain(state or {}))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnsibleFilterError(f"audit_findings: {exc}") from exc


def audit_report(findings):
    """``{checks, not_run}``: the findings in the validate report's shape."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import audit_report as _audit_report

    try:
        checks, missing = _audit_report.report(_plain(list(findings or [])))
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError(f"audit_report: {exc}") from exc
    return {"checks": checks, "not_run": missing}


def audit_summary(findings):
    """The console's closing lines: counts per status and every failure."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import audit_report as _audit_report

    try:
        return _audit_report.summary(_plain(list(findings or [])))
    except (KeyError, TypeError) as exc:
        raise AnsibleFilterError(f"audit_summary: {exc}") from exc


class FilterModule:
    def filters(self):
        return {"audit_findings": audit_findings, "audit_report": audit_report, "audit_summary": audit_summary}
