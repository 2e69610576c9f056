# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The leaves' QoS agreement (switch.agreement, run by gpufabric.rollout.switch_agreement) as
validate checks of category ``switches``, so that the validate report, its JUnit and the gate name
each disagreement like any other failed check: one passing check per leaf that agrees, one failing
check per finding (the leaf and its port range as the subject, the nodes on them in the detail,
the setting, the value found and the value the hosts need), and one failing check per leaf that
could not be read. The report's node column holds the leaf's name. Pure; no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check

CATEGORY = "switches"
AGREES = "agrees with the GPU nodes' fabric"


def checks(result: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Check records from switch_agreement's result ({findings, checked, missing})."""
    out: List[Dict[str, Any]] = []
    failing = {f["switch"] for f in result.get("findings") or []}
    for leaf in result.get("checked") or []:
        if leaf not in failing:
            out.append(_check(CATEGORY, leaf, leaf, "QoS", measured=AGREES, expected=AGREES, unit="", passed=True))
    for finding in result.get("findings") or []:
        subject = f"{finding['switch']} {finding['port']}".strip()
        nodes = ", ".join(dict.fromkeys(finding.get("nodes") or []))
        out.append(
            _check(
                CATEGORY,
                finding["switch"],
                subject,
                finding["setting"],
                measured=finding["found"],
                expected=finding["expected"],
                threshold=finding["expected"],
                unit="",
                passed=False,
                detail=f"ports facing {nodes}" if nodes else "",
            )
        )
    for missing in result.get("missing") or []:
        leaf, _sep, reason = str(missing).partition(": ")
        out.append(
            _check(
                CATEGORY,
                leaf,
                leaf,
                "running QoS",
                measured=f"not read: {reason or 'no source'}",
                expected="read from the switch's API or its export",
                unit="",
                passed=False,
            )
        )
    return out
