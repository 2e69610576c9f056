#!/usr/bin/python
# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_report
short_description: Gate validation measurements and write the validation report
version_added: "0.1.0"
description:
  - Parses the raw output of perftest (C(ib_write_bw)), nccl-tests (C(all_reduce_perf)), C(gdsio)
    and the collection's GPU probe, derives each expected figure from the nodes' topology facts
    (NIC link rates, PCIe generation and width, GPU model, NVLink counts), gates every
    measurement at a fraction of it and writes a text summary, one self-contained HTML file with
    plots and JUnit XML.
  - "Runs on the controller (C(delegate_to: localhost)); drawing the plots needs matplotlib there."
  - It never fails because a gate failed; it returns the checks and the failing ones, and the
    caller decides. Output that cannot be parsed becomes a failing check naming the node.
author:
  - gpufabric.rollout contributors (@gpufabric)
attributes:
  check_mode:
    support: full
    description: In check mode the report is rendered and compared but not written.
  diff_mode:
    support: none
    description: The report files are not shown as a diff.
options:
  topology:
    description: The C(gpufabric_topology) facts of every node, by inventory name.
    type: dict
    required: true
  rdma:
    description: perftest runs, one per NIC, node pair and memory kind.
    type: list
    elements: dict
    default: []
    suboptions:
      node:
        description: The node whose NIC sent (the perftest client).
        type: str
        required: true
      peer:
        description: The node at the other end.
        type: str
        required: true
      device:
        description: The RDMA device the run used (names the NIC when the output cannot be read).
        type: str
      memory:
        description: Where the buffers were, C(host) or C(gpu) (C(--use_cuda)).
        type: str
        choices: [host, gpu]
        default: host
      output:
        description: The client's standard output.
        type: str
        required: true
  nccl:
    description: nccl-tests runs across nodes.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: A name for the run (shown in the report).
        type: str
        required: true
      nodes:
        description: The nodes the run spanned; their rails give the expected bus bandwidth.
        type: list
        elements: str
        required: true
      output:
        description: The output of C(all_reduce_perf).
        type: str
        required: true
      source:
        description: Where the figures come from (for example the Job and the launcher Pod whose log this is); shown
          with every check of the run.
        type: str
  gds:
    description: gdsio runs, one per node, filesystem and direction.
    type: list
    elements: dict
    default: []
    suboptions:
      node:
        description: The node it ran on.
        type: str
        required: true
      filesystem:
        description: The GDS filesystem (mount point) it ran on.
        type: str
        required: true
      expected_gbps:
        description: Expected throughput in GB/s; without it the node's storage NICs' link rates / 8.
        type: float
      output:
        description: The output of C(gdsio).
        type: str
        required: true
  probe:
    description: GPU probe documents (C(roles/validate/files/gpu_probe.py)), one per node.
    type: list
    elements: dict
    default: []
    suboptions:
      node:
        description: The node it ran on.
        type: str
        required: true
      output:
        description: The probe's JSON.
        type: str
        required: true
  checks:
    description:
      - Checks made elsewhere, already in the report's shape, for example the host read-back
        (P(gpufabric.rollout.validate_readback#filter)); they join the report, its JUnit and the failure list.
    type: list
    elements: dict
    default: []
    suboptions:
      id:
        description: A unique id.
        type: str
        required: true
      category:
        description: The report section.
        type: str
        required: true
        choices: [host, cabling, switches, rdma, nccl, gds, gpu, plan]
      node:
        description: The node (or nodes) checked.
        type: str
        required: true
      subject:
        description: What on the node (a NIC, a file, a module).
        type: str
        required: true
      name:
        description: The setting or figure.
        type: str
        required: true
      measured:
        description: What was found.
        type: raw
      expected:
        description: What the plan or the hardware says.
        type: raw
      threshold:
        description: The gate (equal to C(expected) for exact checks).
        type: raw
      fraction:
        description: The gate's fraction of C(expected), for figures.
        type: float
      unit:
        description: The unit of the figures.
        type: str
      passed:
        description: Whether the check passed.
        type: bool
        required: true
      status:
        description:
          - C(warn) marks a check that passed with a warning (the findings of C(playbooks/audit.yml));
            it is counted as passed and shown as WARN.
        type: str
        choices: [warn]
      detail:
        description: Where the value was read, or why it failed.
        type: str
  not_run:
    description:
      - The gates that measured nothing in this run (render mode, no GPU, no PyTorch, switched off by a variable,
        check mode), from P(gpufabric.rollout.validate_not_run#filter). Each is listed as not run with its reason in
        every report and on the console; the verdict says ready for training only when none that readiness needs
        is among them.
    type: list
    elements: dict
    default: []
    suboptions:
      category:
        description: The layer.
        type: str
        required: true
        choices: [host, cabling, switches, rdma, nccl, gds, gpu, plan]
      node:
        description: The node, C(all nodes) or C(cluster).
        type: str
        required: true
      what:
        description: What did not run (default the layer's title).
        type: str
      reason:
        description: Why, in the user's terms.
        type: str
        required: true
      required:
        description: Whether readiness for training needs this gate.
        type: bool
        default: true
  prediction:
    description:
      - This is a check-mode run (C(ansible-playbook --check)); the reports are marked as a check-mode prediction,
        their verdict never says ready for training, and the caller writes them beside the validation report, not
        over it.
    type: bool
    default: false
  verbose:
    description: Add every passing check to the console lines (RV(console)); the report files always hold them.
    type: bool
    default: false
  plots:
    description: Draw the HTML report's plots (needs matplotlib on the controller); without them the report has none.
    type: bool
    default: true
  host_links:
    description: Add a check per GPU and RDMA NIC that its PCIe link runs at its maximum.
    type: bool
    default: true
  gates:
    description:
      - Gate overrides; keys C(rdma_fraction), C(nccl_efficiency), C(nccl_fraction),
        C(nccl_min_bytes), C(gds_fraction), C(pcie_fraction), C(hbm_fraction), C(nvlink_fraction).
    type: dict
    default: {}
  title:
    description: The report's title.
    type: str
    default: gpufabric.rollout validation
  heading:
    description: The text report's first line (default C(Validation report:) and the title).
    type: str
    default: ""
  dra:
    description:
      - The cluster plan's C(gpufabric_plan.dra) (C(gpufabric_k8s_device_allocation=dra)); null with the device
        plugins.
      - With it, the text and HTML reports list, after the summary, each node group's claim templates and the
        GPU -> NIC pairs a claim gets.
    type: dict
  text_path:
    description: Where to write the text summary.
    type: path
  html_path:
    description: Where to write the HTML report (needs matplotlib for its plots).
    type: path
  figures_cache:
    description:
      - Where to keep the HTML report's figures with a digest of what they show (the RDMA, GDS and GPU probe
        checks, the NCCL and all-reduce series). A run whose figures would show the same (a rerun that reused
        the measurement on unchanged nodes) takes them from there instead of drawing them again; other checks,
        such as the read-back's or the NCCL Jobs', do not count. Not written in check mode.
    type: path
  junit_path:
    description: Where to write the JUnit XML.
    type: path
  measurement:
    description:
      - Where the runs come from, from P(gpufabric.rollout.validate_reuse#filter). With C(reused) true the runs are
        those of the record (measured at C(measured)); the report says so and why, and the record is left as it is.
        Otherwise the runs were measured now, and C(reason) says why they were not reused.
    type: dict
    suboptions:
      reused:
        description: The runs are the record's.
        type: bool
        default: false
      measured:
        description: When the reused runs were measured.
        type: str
      reason:
        description: Why they were reused, or why this run measured.
        type: str
  record_path:
    description:
      - Where to keep the record of this run's measurement (its raw runs, the fingerprints in O(record) and whether
        every check passed), for a later run to reuse. Not written in check mode or when the runs were reused.
    type: path
  record:
    description: The fingerprints the record keeps, C(nodes) (node name to fingerprint) and C(options).
    type: dict
"""

EXAMPLES = r"""
- name: Gate the measurements and write the report
  gpufabric.rollout.validate_report:
    topology: "{{ __validate_topology }}"
    rdma: "{{ __validate_rdma_runs }}"
    html_path: /var/tmp/validate/report.html
    text_path: /var/tmp/validate/report.txt
    junit_path: /var/tmp/validate/junit.xml
  delegate_to: localhost
  run_once: true
  register: validate_report
"""

RETURN = r"""
checks:
  description: Every check with its numbers.
  returned: always
  type: list
  elements: dict
summary:
  description: C(total), C(passed), C(failed), C(ok).
  returned: always
  type: dict
failing:
  description: One line per failing check naming category, node, subject and the figures.
  returned: always
  type: list
  elements: str
text:
  description: The text report.
  returned: always
  type: str
console:
  description:
    - The lines to print. The verdict, one line per layer and node with its counts, every failure and every gate
      not run in full, and the report files; with O(verbose) every passing check too.
  returned: always
  type: list
  elements: str
verdict:
  description: C(state) (C(ready), C(failed) or C(unproven)) and C(text), the verdict's line.
  returned: always
  type: dict
not_run:
  description: The gates that did not run, as given in O(not_run) with defaults filled in.
  returned: always
  type: list
  elements: dict
gates:
  description: The gates in force (defaults with the overrides applied).
  returned: always
  type: dict
measurement:
  description: The report's line on where the figures come from (empty without O(measurement)).
  returned: always
  type: str
record_written:
  description: Whether the measurement record was written.
  returned: always
  type: bool
"""

import importlib.util
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdsio as _gdsio
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gpuprobe as _gpuprobe
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import perftest as _perftest
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _plan_dra
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gate_figures as _gate_figures
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import hardware_checks as _hardware_checks
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import plots as _plots
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _validate_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report_html as _report_html
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import reuse as _validate_reuse
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import atomic_file as _atomic_file

# matplotlib is imported by the plots themselves (Agg backend); here only its presence is checked.
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def _unreadable(category, node, subject, what, exc):
    return _gates._check(category, node, subject, what, passed=False, detail=f"output could not be read: {exc}")


def _rdma_checks(runs, topo, g):
    """One check per perftest run, or one naming the run whose output cannot be read."""
    checks = []
    for run in runs:
        try:
            result = _perftest.parse(run["output"])
        except _perftest.PerftestError as exc:
            subject = run.get("device") or run["peer"]
            checks.append(
                _unreadable("rdma", run["node"], subject, f"perftest {run['memory']} memory to {run['peer']}", exc)
            )
            continue
        checks.append(
            _gates.rdma_check(
                run["node"], run["peer"], topo.get(run["node"]) or {}, result, run["memory"], g["rdma_fraction"]
            )
        )
    return checks


def _nccl_checks(runs, topo, g, series):
    """The checks of each all-reduce run; its curve goes to ``series["nccl"]``."""
    checks = []
    for run in runs:
        try:
            result = _nccltests.parse(run["output"])
        except _nccltests.NcclTestsError as exc:
            checks.append(_unreadable("nccl", ",".join(run["nodes"]), run["name"], "all-reduce", exc))
            continue
        expected = _gate_figures.nccl_expected_gbs([topo.get(n) or {} for n in run["nodes"]], g["nccl_efficiency"])
        found = _gates.nccl_checks(run["name"], result, expected, g, source=run.get("source") or "", nodes=run["nodes"])
        checks.extend(found)
        series["nccl"].append(
            {
                "name": run["name"],
                "bytes": [r["bytes"] for r in result["rows"]],
                "busbw": [r["out_of_place"]["busbw_gbps"] for r in result["rows"]],
                "threshold": found[0]["threshold"],
                "expected": expected,
            }
        )
    return checks


def _gds_checks(runs, topo, g):
    """One check per gdsio result of each run, or one naming the run whose output cannot be read."""
    checks = []
    for run in runs:
        try:
            results = _gdsio.parse(run["output"])
        except _gdsio.GdsioError as exc:
            checks.append(_unreadable("gds", run["node"], run["filesystem"], "gdsio", exc))
            continue
        expected = run.get("expected_gbps") or _gate_figures.gds_expected_gbs(topo.get(run["node"]) or {})
        for result in results:
            checks.append(_gates.gds_check(run["node"], run["filesystem"], result, expected, g["gds_fraction"]))
    return checks


def _probe_checks(runs, topo, g, series):
    """The GPU probe's checks of each node (its failed sections first); its all-reduce curve goes to
    ``series["allreduce"]``."""
    checks = []
    for run in runs:
        try:
            doc = _gpuprobe.load(run["output"])
        except _gpuprobe.GpuProbeError as exc:
            checks.append(_unreadable("gpu", run["node"], "probe", "GPU probe", exc))
            continue
        for err in doc.get("errors") or []:
            checks.append(
                _gates._check(
                    "gpu",
                    run["node"],
                    "probe",
                    f"probe section {err.get('section')}",
                    passed=False,
                    detail=str(err.get("error")),
                )
            )
        found = _hardware_checks.probe_checks(run["node"], doc, topo.get(run["node"]) or {}, g)
        checks.extend(found)
        rows = (doc.get("allreduce") or {}).get("rows") or []
        if rows:
            plain = (doc.get("allreduce") or {}).get("plain") or []
            gate = next((c for c in found if c["subject"] == "NVLink" and c["unit"] == "GB/s"), {})
            series["allreduce"].append(
                {
                    "node": run["node"],
                    "bytes": [r["bytes"] for r in rows],
                    "busbw": [r["busbw_gbps"] for r in rows],
                    "plain_bytes": [r["bytes"] for r in plain],
                    "plain_busbw": [r["busbw_gbps"] for r in plain],
                    "limit": gate.get("expected"),
                    "threshold": gate.get("threshold"),
                }
            )
    return checks


def evaluate(params):
    """Every check of the report (the links, the given checks, then each measurement's) and the
    curves for the figures, with the gates applied."""
    g = _gates.gates(params["gates"])
    topo = params["topology"] or {}
    checks, series = [], {"nccl": [], "allreduce": []}
    if params["host_links"]:
        for node in sorted(topo):
            checks.extend(_hardware_checks.link_checks(node, topo[node] or {}))
    for given in params.get("checks") or []:
        check = dict(given, detail=given.get("detail") or "", unit=given.get("unit") or "")
        if not check.get("status"):
            check.pop("status", None)  # only a warning is marked
        checks.append(check)
    checks.extend(_rdma_checks(params["rdma"], topo, g))
    checks.extend(_nccl_checks(params["nccl"], topo, g, series))
    checks.extend(_gds_checks(params["gds"], topo, g))
    checks.extend(_probe_checks(params["probe"], topo, g, series))
    return checks, series, g


def _write(module, path, content):
    """Write a report file unless it holds ``content``: never through a symlink at ``path`` or at a
    temporary name someone could guess (_atomic_file)."""
    data = content.encode("utf-8")
    if _atomic_file.read_bytes(path) == data:
        return False
    if not module.check_mode:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        _atomic_file.write_atomic(path, data)
    return True


def figures(module, checks, series):
    """The HTML report's figures: from O(figures_cache) when it holds those drawn from the same
    inputs (the checks and series the figures show, not the read-back or Job checks around them),
    else drawn (matplotlib) and kept there."""
    path = module.params["figures_cache"]
    if not path:
        return _plots.plots(checks, series)
    key = _validate_reuse.digest({"style": _plots.STYLE, "inputs": _plots.figure_inputs(checks, series)})
    try:
        with open(path, encoding="utf-8") as fh:
            kept = json.load(fh)
        if isinstance(kept, dict) and kept.get("key") == key and isinstance(kept.get("figures"), list):
            for fig in kept["figures"]:
                _report_html.png_data(fig)  # ValueError: not a PNG, draw them again
            return kept["figures"]
    except (OSError, ValueError):
        pass  # none kept, unreadable or not PNGs: draw them
    drawn = _plots.plots(checks, series)
    if not module.check_mode:
        _write(module, path, json.dumps({"key": key, "figures": drawn}))
    return drawn


def measurement_note(measurement):
    """One line for the report: measured now or reused, and why."""
    if not measurement:
        return ""
    if measurement.get("reused"):
        return f"Figures reused from the measurement of {measurement.get('measured')}: {measurement.get('reason')}."
    return f"Figures measured now ({measurement.get('reason')})." if measurement.get("reason") else ""


def write_record(module, checks, now):
    """Keep this run's raw runs and fingerprints for a later run (not in check mode, not for a
    check-mode prediction, not when reused)."""
    params = module.params
    if not params["record_path"] or not params["record"] or module.check_mode or params["prediction"]:
        return False
    if (params["measurement"] or {}).get("reused"):
        return False
    fingerprints = params["record"]
    runs = {kind: params[kind] for kind in _validate_reuse.RUN_KINDS}
    text = _validate_reuse.record(
        fingerprints.get("nodes") or {},
        fingerprints.get("options") or "",
        runs,
        _gates.summary(checks)["ok"],
        now,
    )
    return _write(module, params["record_path"], text)


# The module's arguments (its DOCUMENTATION says what each is).
ARGUMENT_SPEC = {
    "topology": {"type": "dict", "required": True},
    "rdma": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "node": {"type": "str", "required": True},
            "peer": {"type": "str", "required": True},
            "device": {"type": "str"},
            "memory": {"type": "str", "choices": ["host", "gpu"], "default": "host"},
            "output": {"type": "str", "required": True},
        },
    },
    "nccl": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "name": {"type": "str", "required": True},
            "nodes": {"type": "list", "elements": "str", "required": True},
            "output": {"type": "str", "required": True},
            "source": {"type": "str"},
        },
    },
    "gds": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "node": {"type": "str", "required": True},
            "filesystem": {"type": "str", "required": True},
            "expected_gbps": {"type": "float"},
            "output": {"type": "str", "required": True},
        },
    },
    "probe": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {"node": {"type": "str", "required": True}, "output": {"type": "str", "required": True}},
    },
    "checks": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "id": {"type": "str", "required": True},
            "category": {
                "type": "str",
                "required": True,
                "choices": [c[0] for c in _validate_report.CATEGORIES],
            },
            "node": {"type": "str", "required": True},
            "subject": {"type": "str", "required": True},
            "name": {"type": "str", "required": True},
            "measured": {"type": "raw"},
            "expected": {"type": "raw"},
            "threshold": {"type": "raw"},
            "fraction": {"type": "float"},
            "unit": {"type": "str"},
            "passed": {"type": "bool", "required": True},
            "status": {"type": "str", "choices": ["warn"]},
            "detail": {"type": "str"},
        },
    },
    "not_run": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {
            "category": {
                "type": "str",
                "required": True,
                "choices": [c[0] for c in _validate_report.CATEGORIES],
            },
            "node": {"type": "str", "required": True},
            "what": {"type": "str"},
            "reason": {"type": "str", "required": True},
            "required": {"type": "bool", "default": True},
        },
    },
    "prediction": {"type": "bool", "default": False},
    "verbose": {"type": "bool", "default": False},
    "plots": {"type": "bool", "default": True},
    "host_links": {"type": "bool", "default": True},
    "gates": {"type": "dict", "default": {}},
    "title": {"type": "str", "default": "gpufabric.rollout validation"},
    "heading": {"type": "str", "default": ""},
    "dra": {"type": "dict"},
    "text_path": {"type": "path"},
    "html_path": {"type": "path"},
    "junit_path": {"type": "path"},
    "measurement": {
        "type": "dict",
        "options": {
            "reused": {"type": "bool", "default": False},
            "measured": {"type": "str"},
            "reason": {"type": "str"},
        },
    },
    "record_path": {"type": "path"},
    "figures_cache": {"type": "path"},
    "record": {"type": "dict"},
}


def write_reports(module, checks, series, meta, missing):
    """Write the text, JUnit and HTML reports asked for; True when a file changed."""
    params = module.params
    text = _validate_report.render_text(checks, meta, missing)
    changed = False
    if params["text_path"]:
        changed |= _write(module, params["text_path"], text)
    if params["junit_path"]:
        changed |= _write(module, params["junit_path"], _validate_report.render_junit(checks, meta, missing))
    if params["html_path"]:
        drawn = figures(module, checks, series) if params["plots"] else []
        changed |= _write(module, params["html_path"], _report_html.render_html(checks, drawn, meta, missing))
    return text, changed


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    if module.params["html_path"] and module.params["plots"] and not HAS_MATPLOTLIB:
        module.fail_json(msg=missing_required_lib("matplotlib"))
    try:
        checks, series, g = evaluate(module.params)
    except _gates.GateError as exc:
        module.fail_json(msg=f"gates: {exc}")
    # One clock read: the report's time and the record's are the same minute.
    now = time.time()
    params = module.params
    missing = _verdict.check_not_run(params["not_run"])
    meta = {
        "title": params["title"],
        "heading": params["heading"],
        "generated": _validate_reuse.when(now),
        "measurement": measurement_note(params["measurement"]),
        "prediction": params["prediction"],
        # dra mode: the claim templates and GPU -> NIC pairs per node group (plan/dra.py)
        "allocation": _plan_dra.summary_lines(params["dra"]) if params["dra"] else [],
    }
    text, changed = write_reports(module, checks, series, meta, missing)
    record_written = write_record(module, checks, now)
    paths = [p for p in (params["html_path"], params["text_path"], params["junit_path"]) if p]
    module.exit_json(
        changed=changed or record_written,
        record_written=record_written,
        measurement=meta["measurement"],
        checks=checks,
        summary=_gates.summary(checks),
        failing=[_gates.describe(c) for c in checks if not c["passed"]],
        not_run=missing,
        verdict=_verdict.verdict(checks, missing, params["prediction"]),
        console=_verdict.console(checks, missing, _gates.describe, paths, params["verbose"], params["prediction"]),
        text=text,
        gates=g,
    )


if __name__ == "__main__":
    main()
