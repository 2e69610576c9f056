# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate stage's text report and JUnit XML (for CI systems and AWX); the HTML report is
``report_html``, its figures ``plots``.

Input: the check records of ``_gates`` and the gates that did not run (``verdict.not_run``). The
text report opens with the verdict, the summary by layer and node, every failure and every gate
not run; the per-check lines follow. Pure Python (>= 3.8), standard library only, no Ansible
imports.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

CATEGORIES = _verdict.CATEGORIES
# The line between the summary (what the console and `make lab` show) and the per-check lines.
DETAILS_MARK = "== Details by layer"
# dra mode (meta["allocation"], plan/dra.py summary_lines): the claim templates and GPU -> NIC pairs.
ALLOCATION_TITLE = "Device allocation (gpufabric_k8s_device_allocation: dra)"


def summary_table(table: Sequence[Mapping[str, Any]]) -> List[str]:
    """The summary by layer and node as fixed-width text lines."""
    width = max([len(r["node"]) for r in table] + [4])
    out = [f"  {'layer':<30} {'node':<{width}} checks passed failed not run"]
    for r in table:
        counts = f"{r['checks']:>6} {r['passed']:>6} {r['failed']:>6} {r['not_run']:>7}"
        out.append(f"  {r['title']:<30} {r['node']:<{width}} {counts}")
    return out


def render_text(checks: List[Dict[str, Any]], meta: Dict[str, Any], missing: Sequence[Mapping[str, Any]] = ()) -> str:
    """The text report: the verdict, the summary by layer and node, in dra mode the GPU -> NIC pairs
    a claim gets per node group (``meta["allocation"]``), every failure, every gate not run, then
    (after ``DETAILS_MARK``) every check by layer and node."""
    missing = list(missing)
    s = _gates.summary(checks)
    prediction = bool(meta.get("prediction"))
    lines = [meta.get("heading") or f"Validation report: {meta.get('title', 'gpufabric.rollout')}"]
    if prediction:
        lines.append(_verdict.PREDICTION)
    lines.append(
        f"Generated {meta.get('generated', '')}; {s['total']} checks, {s['passed']} passed, {s['failed']} failed, "
        f"{len(missing)} gate(s) not run"
    )
    if meta.get("measurement"):
        lines.append(meta["measurement"])
    lines += [_verdict.verdict(checks, missing, prediction)["text"], "", "Summary by layer and node:"]
    lines += summary_table(_verdict.rows(checks, missing))
    if meta.get("allocation"):  # dra mode: what a claim gives each GPU, per node group
        lines += ["", ALLOCATION_TITLE + ":"] + ["  " + line for line in meta["allocation"]]
    failed = [c for c in checks if not c["passed"]]
    if failed:
        lines += ["", f"Failing checks ({len(failed)}):"] + ["  " + _gates.describe(c) for c in failed]
    if missing:
        lines += ["", f"Not run ({len(missing)}):"] + ["  " + _verdict.missing_line(m) for m in missing]
    lines += ["", DETAILS_MARK + " and node", ""]
    for r in _verdict.rows(checks, missing):
        group = [c for c in checks if c["category"] == r["category"] and c["node"] == r["node"]]
        lines.append(f"== {r['title']} {r['node']} ({r['passed']}/{r['checks']} passed)")
        lines += [
            "  " + _verdict.missing_line(m) for m in missing if (m["category"], m["node"]) == (r["category"], r["node"])
        ]
        lines += ["  " + _gates.describe(c) for c in group]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_junit(checks: List[Dict[str, Any]], meta: Dict[str, Any], missing: Sequence[Mapping[str, Any]] = ()) -> str:
    """JUnit XML: one testsuite per category, one testcase per check, a failure element with
    the numbers for each failed check, a skipped testcase with its reason for each gate not run."""
    root = ET.Element("testsuites", name=str(meta.get("title", "gpufabric.rollout validate")))
    root.set("tests", str(len(checks) + len(missing)))
    root.set("failures", str(sum(not c["passed"] for c in checks)))
    root.set("skipped", str(len(missing)))
    for key, _title in CATEGORIES:
        group = [c for c in checks if c["category"] == key]
        gone = [m for m in missing if m["category"] == key]
        if not group and not gone:
            continue
        suite = ET.SubElement(root, "testsuite", name=f"validate.{key}", tests=str(len(group) + len(gone)))
        suite.set("failures", str(sum(not c["passed"] for c in group)))
        suite.set("errors", "0")
        suite.set("skipped", str(len(gone)))
        for c in group:
            case = ET.SubElement(suite, "testcase", classname=f"validate.{key}.{c['node']}", name=c["id"])
            case.set("time", "0")
            text = _gates.describe(c)
            if not c["passed"]:
                failure = ET.SubElement(case, "failure", message=text, type="GateFailed")
                failure.text = text
            else:
                out = ET.SubElement(case, "system-out")
                out.text = text
        for m in gone:
            case = ET.SubElement(
                suite, "testcase", classname=f"validate.{key}.{m['node']}", name=f"not run: {m['what']}"
            )
            case.set("time", "0")
            ET.SubElement(case, "skipped", message=_verdict.missing_line(m))
    if hasattr(ET, "indent"):  # Python >= 3.9
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
