# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate stage's report: a text summary, one self-contained HTML file with its plots
embedded as PNG data URIs, and JUnit XML for CI systems and AWX.

Input: the check records of ``_gates`` and the measured series that plots need
(``{"nccl": [{name, bytes: [..], busbw: [..], threshold, expected}], "allreduce": [{node,
bytes: [..], busbw: [..], plain_bytes, plain_busbw, limit, threshold}]}``). Plots are drawn
with matplotlib (a controller dependency, imported only by ``plots``); text and JUnit need only
the standard library. Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import base64
import binascii
import html
import io
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates

CATEGORIES = (
    ("host", "Host read-back"),
    ("rdma", "RDMA per rail (perftest)"),
    ("nccl", "NCCL all-reduce across nodes"),
    ("gds", "GPUDirect Storage (gdsio)"),
    ("gpu", "GPU probe"),
)
_COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "gate": "#1f1f1f", "alt": "#1565c0"}


def _fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def render_text(checks: List[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    s = _gates.summary(checks)
    lines = [
        f"Validation report: {meta.get('title', 'gpufabric.rollout')}",
        f"Generated {meta.get('generated', '')}; {s['passed']}/{s['total']} checks passed"
        + ("" if s["ok"] else f", {s['failed']} FAILED"),
    ]
    if meta.get("measurement"):
        lines.append(meta["measurement"])
    lines.append("")
    for key, title in CATEGORIES:
        group = [c for c in checks if c["category"] == key]
        if not group:
            continue
        lines.append(f"== {title} ({sum(c['passed'] for c in group)}/{len(group)} passed)")
        lines.extend("  " + _gates.describe(c) for c in group)
        lines.append("")
    failed = [c for c in checks if not c["passed"]]
    if failed:
        lines.append("Failing checks:")
        lines.extend("  " + _gates.describe(c) for c in failed)
    else:
        lines.append("Result: every gate passed; the cluster is ready for training.")
    return "\n".join(lines) + "\n"


def render_junit(checks: List[Dict[str, Any]], meta: Dict[str, Any]) -> str:
    """JUnit XML: one testsuite per category, one testcase per check, a failure element with
    the numbers for each failed check."""
    root = ET.Element("testsuites", name=str(meta.get("title", "gpufabric.rollout validate")))
    root.set("tests", str(len(checks)))
    root.set("failures", str(sum(not c["passed"] for c in checks)))
    for key, _title in CATEGORIES:
        group = [c for c in checks if c["category"] == key]
        if not group:
            continue
        suite = ET.SubElement(root, "testsuite", name=f"validate.{key}", tests=str(len(group)))
        suite.set("failures", str(sum(not c["passed"] for c in group)))
        suite.set("errors", "0")
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
    if hasattr(ET, "indent"):  # Python >= 3.9
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _bar_plot(plt, title: str, group: Sequence[Dict[str, Any]], unit: str):
    labels = [f"{c['node']} {c['subject']}\n{c['name']}" for c in group]
    height = max(2.4, 0.42 * len(group) + 1.2)
    fig, ax = plt.subplots(figsize=(9, height))
    ys = list(range(len(group)))
    values = [c["measured"] if isinstance(c["measured"], (int, float)) else 0 for c in group]
    colours = [_COLOURS["pass"] if c["passed"] else _COLOURS["fail"] for c in group]
    ax.barh(ys, values, color=colours, height=0.6)
    for y, c in zip(ys, group):
        if c.get("threshold") is not None:
            ax.plot([c["threshold"], c["threshold"]], [y - 0.4, y + 0.4], color=_COLOURS["gate"], linewidth=2)
        ax.text(values[y], y, f" {values[y]:.1f}", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"{unit} (bar: measured, black line: gate)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return fig


def _line_plot(plt, title: str, series: Sequence[Dict[str, Any]], node_key: str, extra: bool):
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for s in series:
        ax.plot(s["bytes"], s["busbw"], marker="o", markersize=3, label=f"{s[node_key]} bus bandwidth")
        if extra and s.get("plain_bytes"):
            ax.plot(
                s["plain_bytes"], s["plain_busbw"], "s", color=_COLOURS["alt"], label=f"{s[node_key]} plain PyTorch"
            )
        if s.get("threshold") is not None:
            ax.axhline(s["threshold"], color=_COLOURS["gate"], linestyle="--", linewidth=1, label="gate")
        ref = s.get("expected") if s.get("expected") is not None else s.get("limit")
        if ref is not None:
            ax.axhline(ref, color=_COLOURS["fail"], linestyle=":", linewidth=1, label="expected / limit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes, log scale)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    return fig


def figure_inputs(checks: List[Dict[str, Any]], series: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What the report's figures are drawn from, and nothing else: the RDMA and GDS checks, the
    GPU probe's numeric copy and device-memory checks, and the NCCL and all-reduce series. Checks of
    other kinds (read-back, Jobs, links) leave the figures as they are."""
    series = series or {}
    gpu = [c for c in checks if c["category"] == "gpu" and isinstance(c["measured"], (int, float))]
    gpu = [c for c in gpu if not isinstance(c["measured"], bool) and c["subject"] != "NVLink"]
    return {
        "rdma": [c for c in checks if c["category"] == "rdma"],
        "nccl": series.get("nccl") or [],
        "gds": [c for c in checks if c["category"] == "gds"],
        "copy": [c for c in gpu if not c["name"].startswith("device memory")],
        "device memory": [c for c in gpu if c["name"].startswith("device memory")],
        "allreduce": series.get("allreduce") or [],
    }


def plots(checks: List[Dict[str, Any]], series: Optional[Dict[str, Any]] = None) -> List[Dict[str, str]]:
    """The report's figures as ``[{title, png (base64)}]``, drawn from ``figure_inputs``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    given = figure_inputs(checks, series)
    figures = []
    if given["rdma"]:
        figures.append(
            ("RDMA bandwidth per rail and node pair", _bar_plot(plt, "perftest per rail", given["rdma"], "Gb/s"))
        )
    if given["nccl"]:
        figures.append(
            ("NCCL all-reduce bus bandwidth", _line_plot(plt, "NCCL all-reduce", given["nccl"], "name", False))
        )
    if given["gds"]:
        figures.append(("GDS throughput", _bar_plot(plt, "gdsio throughput", given["gds"], "GB/s")))
    for name in ("copy", "device memory"):
        if given[name]:
            title = "GPU host<->device copies" if name == "copy" else "GPU device memory bandwidth"
            figures.append((title, _bar_plot(plt, title, given[name], "GB/s")))
    if given["allreduce"]:
        figures.append(
            (
                "NVLink all-reduce (GPU probe)",
                _line_plot(plt, "all-reduce across the node's GPUs", given["allreduce"], "node", True),
            )
        )
    out = []
    for title, fig in figures:
        out.append({"title": title, "png": _png(fig)})
        plt.close(fig)
    return out


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1200px}
body{overflow-wrap:anywhere}
h1{font-size:1.5em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
.ok{color:#2e7d32;font-weight:bold} .bad{color:#c62828;font-weight:bold}
table{border-collapse:collapse;font-size:.85em;width:100%} td,th{border:1px solid #ddd;padding:3px 6px;text-align:left}
th{background:#f3f3f3} tr.fail td{background:#fdecea} td.num{text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1em 0} figure img{max-width:100%;border:1px solid #eee} pre{background:#f7f7f7;padding:.8em;overflow:auto}
"""


_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_data(fig: Dict[str, str]) -> str:
    """``fig["png"]`` checked to be strict base64 of a PNG, so that nothing else reaches the
    ``src`` attribute (a figures cache on disk is input, not trusted markup)."""
    if not isinstance(fig, dict):
        raise ValueError("a figure must be a mapping of title and png")
    value = fig.get("png")
    try:
        raw = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        raw = b""
    if not raw.startswith(_PNG_MAGIC):
        raise ValueError(f"figure {fig.get('title')!r}: png must be base64 of a PNG image")
    return value


def render_html(checks: List[Dict[str, Any]], figures: List[Dict[str, str]], meta: Dict[str, Any]) -> str:
    s = _gates.summary(checks)
    esc = html.escape
    verdict = (
        '<span class="ok">every gate passed</span>'
        if s["ok"]
        else f'<span class="bad">{s["failed"]} of {s["total"]} checks FAILED</span>'
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(str(meta.get('title', 'Validation report')))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(str(meta.get('title', 'Validation report')))}</h1>",
        f"<p>Generated {esc(str(meta.get('generated', '')))}: {verdict} ({s['passed']}/{s['total']} passed).</p>",
    ]
    if meta.get("measurement"):
        parts.append(f"<p>{esc(str(meta['measurement']))}</p>")
    failed = [c for c in checks if not c["passed"]]
    if failed:
        parts.append("<h2>Failing checks</h2><ul>")
        parts.extend(f"<li>{esc(_gates.describe(c))}</li>" for c in failed)
        parts.append("</ul>")
    for key, title in CATEGORIES:
        group = [c for c in checks if c["category"] == key]
        if not group:
            continue
        parts.append(f"<h2>{esc(title)}</h2><table><tr><th>result</th><th>node</th><th>subject</th><th>check</th>")
        parts.append("<th>measured</th><th>threshold</th><th>expected</th><th>unit</th><th>detail</th></tr>")
        for c in group:
            cls = "" if c["passed"] else ' class="fail"'
            state = '<span class="ok">pass</span>' if c["passed"] else '<span class="bad">FAIL</span>'
            cells = [c["node"], c["subject"], c["name"]]
            nums = [c.get("measured"), c.get("threshold"), c.get("expected")]
            parts.append(
                f"<tr{cls}><td>{state}</td>"
                + "".join(f"<td>{esc(str(v))}</td>" for v in cells)
                + "".join(f'<td class="num">{esc(_fmt(v))}</td>' for v in nums)
                + f"<td>{esc(str(c.get('unit') or ''))}</td><td>{esc(str(c.get('detail') or ''))}</td></tr>"
            )
        parts.append("</table>")
    if figures:
        parts.append("<h2>Plots</h2>")
        for fig in figures:
            parts.append(
                f'<figure><img alt="{esc(str(fig["title"]))}" src="data:image/png;base64,{png_data(fig)}">'
                f"<figcaption>{esc(str(fig['title']))}</figcaption></figure>"
            )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
