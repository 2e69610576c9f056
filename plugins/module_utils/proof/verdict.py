# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the validate report claims: the gates that did not run, the summary by layer and node,
the verdict and the console's few lines.

A *not run* record is ``{category, node, what, reason, required}``: a gate that measured nothing
in this run (render mode, no GPU, no PyTorch, switched off by a variable, check mode), with the
reason in the user's terms. ``required`` says whether readiness for training needs it; the words
"ready for training" appear only when every check passed and no required gate is missing.

Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

CATEGORIES = (
    ("host", "Host read-back"),
    ("cabling", "Cabling by LLDP"),
    ("switches", "Switch QoS agreement"),
    ("rdma", "RDMA per rail (perftest)"),
    ("nccl", "NCCL all-reduce across nodes"),
    ("gds", "GPUDirect Storage (gdsio)"),
    ("gpu", "GPU probe"),
    ("plan", "What the plan would change"),  # the audit's (playbooks/audit.yml)
)
TITLES = dict(CATEGORIES)
ALL_NODES = "all nodes"
CLUSTER = "cluster"
READY = "READY FOR TRAINING"
# The mark of a check-mode run's report (written beside, never over, the validation report).
PREDICTION = (
    "CHECK-MODE PREDICTION (ansible-playbook --check): nothing was changed, and the gates that need a real run "
    "(NCCL Jobs, gdsio) did not run. This is not the validation report."
)


def entry(category: str, node: str, reason: str, required: bool = True, what: str = "") -> Dict[str, Any]:
    """One gate that did not run; ``what`` defaults to its layer's title."""
    if category not in TITLES:
        raise ValueError(f"not run: unknown category {category!r}; allowed: {', '.join(TITLES)}")
    return {
        "category": category,
        "node": node,
        "what": what or TITLES[category],
        "reason": reason,
        "required": required,
    }


def not_run(state: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The gates of a run that measured nothing, from what the role knows of the run:

    ``readback``, ``probe``, ``rdma``, ``nccl`` (bool: the role's switches), ``cabling`` (bool: the
    switch plan has leaves, so the cabling by LLDP was checked), ``switches`` (``no_source``: the plan has leaves but
    nothing to read their running QoS from; else ``checked``), ``reused`` (the figures
    are a kept measurement's), ``check_mode``, ``hosts`` (the play's nodes), ``probe_skipped``
    (node -> why the probe could not run), ``gds_filesystems`` (how many are set) and
    ``nccl_notes`` (why NCCL across nodes did not run, or ran as a dry run)."""
    out: List[Dict[str, Any]] = []
    if not state.get("readback", True):
        out.append(entry("host", ALL_NODES, "switched off (validate_readback: false)"))
    if not state.get("cabling", True):
        out.append(
            entry("cabling", ALL_NODES, "no leaves in gpufabric_switches: nothing to check against", required=False)
        )
    if state.get("switches", "checked") == "no_source":  # without leaves, the cabling row says so
        out.append(
            entry(
                "switches",
                CLUSTER,
                "no source for the leaves' running QoS (gpufabric_switch_export_dir, or gpufabric_switch_api_user and "
                "gpufabric_switch_api_password); playbooks/fabric_check.yml checks it alone",
                required=False,
            )
        )
    if state.get("reused"):
        return out  # the figures are the record's, measured by an earlier run that passed
    hosts = list(state.get("hosts") or [])
    check_mode = bool(state.get("check_mode"))
    if not state.get("probe", True):
        out.append(entry("gpu", ALL_NODES, "switched off (validate_probe: false)"))
    else:
        for node, reason in sorted((state.get("probe_skipped") or {}).items()):
            if reason:
                out.append(entry("gpu", node, f"the probe could not run: {reason}"))
    if not state.get("rdma", True):
        out.append(entry("rdma", ALL_NODES, "switched off (validate_rdma: false)"))
    elif len(hosts) < 2:
        out.append(entry("rdma", ALL_NODES, "one node: perftest needs a peer", required=False))
    if not state.get("gds_filesystems"):
        out.append(entry("gds", ALL_NODES, "no GDS filesystem is set (validate_gds_filesystems)", required=False))
    elif check_mode:
        out.append(entry("gds", ALL_NODES, "check mode: gdsio writes files, so it does not run"))
    if not state.get("nccl", True):
        out.append(entry("nccl", CLUSTER, "switched off (validate_nccl: false)"))
    else:
        out.extend(entry("nccl", CLUSTER, str(note)) for note in state.get("nccl_notes") or [] if note)
    return out


def check_not_run(records: Iterable[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """``records`` as not-run entries, each checked (a ValueError names what is wrong)."""
    out = []
    for index, rec in enumerate(records or []):
        if not isinstance(rec, Mapping) or not rec.get("reason") or not rec.get("node"):
            raise ValueError(f"not_run[{index}]: must be a mapping with category, node and reason, got {rec!r}")
        out.append(
            entry(
                rec.get("category", ""),
                rec["node"],
                rec["reason"],
                bool(rec.get("required", True)),
                rec.get("what") or "",
            )
        )
    return out


def rows(checks: Sequence[Mapping[str, Any]], missing: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """One row per layer and node, in the layers' order: ``{category, title, node, checks, passed,
    failed, not_run}``."""
    table: Dict[tuple, Dict[str, Any]] = {}

    def row(category: str, node: str) -> Dict[str, Any]:
        key = (category, node)
        if key not in table:
            table[key] = {"category": category, "title": TITLES.get(category, category), "node": node}
            table[key].update({"checks": 0, "passed": 0, "failed": 0, "not_run": 0})
        return table[key]

    for c in checks:
        r = row(c["category"], c["node"])
        r["checks"] += 1
        r["passed" if c["passed"] else "failed"] += 1
    for m in missing:
        row(m["category"], m["node"])["not_run"] += 1
    order = {key: i for i, (key, _t) in enumerate(CATEGORIES)}
    return sorted(table.values(), key=lambda r: (order.get(r["category"], len(order)), r["node"]))


def verdict(
    checks: Sequence[Mapping[str, Any]], missing: Sequence[Mapping[str, Any]], prediction: bool = False
) -> Dict[str, str]:
    """``{state, text}``: ``failed`` (a check failed), ``unproven`` (every check that ran passed, but
    a gate readiness needs did not run, or this is a check-mode prediction) or ``ready``."""
    total = len(checks)
    failed = sum(not c["passed"] for c in checks)
    needed = [m for m in missing if m.get("required", True)]
    if failed:
        text = f"FAILED: {failed} of {total} checks failed"
        if needed:
            text += f", and {len(needed)} gate(s) did not run"
        return {"state": "failed", "text": text + "; the cluster is not proven ready."}
    if needed or not total or prediction:
        names = sorted({f"{m['what']} ({m['node']})" for m in needed})
        text = f"NOT PROVEN: the {total} checks that ran passed"
        if names:
            text += f", but {len(needed)} gate(s) that readiness needs did not run: " + ", ".join(names)
        if prediction:
            text += "; a check-mode run predicts, only a real run proves"
        return {"state": "unproven", "text": text + "."}
    text = f"{READY}: every gate passed ({total} checks)"
    optional = sorted({m["what"] for m in missing})
    if optional:
        text += "; not part of this cluster: " + ", ".join(optional)
    return {"state": "ready", "text": text + "."}


def row_line(r: Mapping[str, Any]) -> str:
    """``<layer> <node>: N checks, P passed, F failed, M not run``, for the console."""
    head = f"{r['category']} {r['node']}: {r['checks']} checks, {r['passed']} passed, {r['failed']} failed"
    return head + (f", {r['not_run']} not run" if r["not_run"] else "")


def missing_line(m: Mapping[str, Any]) -> str:
    need = "" if m.get("required", True) else " (not needed for readiness)"
    return f"NOT RUN {m['category']} {m['node']}: {m['what']}: {m['reason']}{need}"


def console(
    checks: Sequence[Mapping[str, Any]],
    missing: Sequence[Mapping[str, Any]],
    describe,
    paths: Optional[Sequence[str]] = None,
    verbose: bool = False,
    prediction: bool = False,
) -> List[str]:
    """The lines the role prints: the verdict, one line per layer and node, every failure and
    every gate not run in full, the report files. ``verbose`` adds every passing check."""
    lines = [verdict(checks, missing, prediction)["text"]]
    lines += ["  " + row_line(r) for r in rows(checks, missing)]
    lines += [describe(c) for c in checks if not c["passed"]]
    lines += [missing_line(m) for m in missing]
    if verbose:
        lines += [describe(c) for c in checks if c["passed"]]
    lines += [f"Report: {p}" for p in paths or []]
    return lines
