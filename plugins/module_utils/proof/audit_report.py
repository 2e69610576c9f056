# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's findings (proof/audit.py) in the validate report's shape: check records for what
was judged, not-run entries for what does not apply and for what an audit never measures; and the
console's closing lines. Pure; no Ansible imports."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.audit import STATUSES, Finding

# Area -> the report's layer.
CATEGORY = {"plan": "plan", "probe": "gpu"}
# Measurements the audit never makes (one node, nothing started): the verdict stays "not proven".
ACROSS_NODES = (
    ("rdma", "an audit reads one node and starts no traffic; playbooks/validate.yml measures RDMA per rail"),
    ("nccl", "an audit starts no Jobs; playbooks/validate.yml runs NCCL across the nodes in Pods"),
)


def check(f: Mapping[str, Any]) -> Dict[str, Any]:
    """A finding as a validate check record (ok and warn pass; warn is marked)."""
    category = CATEGORY.get(f["area"], "host")
    name = f["name"] if category != "host" else f"{f['area']}: {f['name']}"
    rec = _gates._check(
        category,
        f["node"],
        f["subject"],
        name,
        measured=_text(f["seen"]),
        expected=_text(f["expected"]),
        threshold=_text(f["expected"]),
        unit="",
        passed=f["status"] in ("ok", "warn"),
        detail=f["action"] or "",
    )
    if f["status"] == "warn":
        rec["status"] = "warn"
    return rec


def _text(value: Any) -> Any:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def report(found: List[Finding]) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(checks, not_run) for the validate report: a finding that does not apply is a gate not run,
    not needed for readiness; the measurements across nodes are not run and needed."""
    checks = [check(f) for f in found if f["status"] != "n/a"]
    missing = [
        _verdict.entry(CATEGORY.get(f["area"], "host"), f["node"], str(f["seen"]), False, f"{f['area']}: {f['name']}")
        for f in found
        if f["status"] == "n/a"
    ]
    missing += [_verdict.entry(cat, _verdict.ALL_NODES, why) for cat, why in ACROSS_NODES]
    return checks, missing


def summary(found: List[Finding]) -> List[str]:
    """The console's closing lines: counts per status, then every failure."""
    counts = {s: sum(f["status"] == s for f in found) for s in STATUSES}
    lines = ["Audit: " + ", ".join(f"{n} {s}" for s, n in counts.items())]
    lines += [
        f"FAIL {f['area']} {f['node']} {f['subject']}: {f['name']} = {f['seen']} (expected {f['expected']})"
        + (f" [{f['action']}]" if f["action"] else "")
        for f in found
        if f["status"] == "fail"
    ]
    return lines
