# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate report as one self-contained HTML file (plots as PNG data URIs, no script).

Its first screen holds the verdict, the summary by layer and node (checks, passed, failed, not
run), every failure with its numbers, every gate that did not run with its reason, and the key
plots. The details follow, one collapsed ``<details>`` per layer and node; long values are cut
with the full value on hover. Nothing is wider than the window at 1280 px.
Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import base64
import binascii
import html
from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import plots as _plots
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import report as _validate_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:12px 20px;color:#222;
max-width:1240px;overflow-wrap:anywhere;font-size:14px}
h1{font-size:1.3em;margin:.2em 0} h2{font-size:1.05em;margin:.6em 0 .3em;border-bottom:1px solid #ccc}
p{margin:.3em 0} .meta{color:#555;font-size:.9em}
.verdict{font-size:1.15em;font-weight:bold;padding:.45em .7em;border-radius:4px;margin:.4em 0}
.verdict.ready{background:#e8f5e9;color:#1b5e20} .verdict.failed{background:#fdecea;color:#b71c1c}
.verdict.unproven{background:#fff8e1;color:#8d5a00}
.prediction{background:#e3f2fd;color:#0d47a1;padding:.35em .7em;border-left:4px solid #1565c0;font-weight:bold}
.top{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:16px}
.ok{color:#2e7d32;font-weight:bold} .bad{color:#c62828;font-weight:bold} .skip{color:#8d5a00;font-weight:bold}
table{border-collapse:collapse;font-size:.85em;width:100%} td,th{border:1px solid #ddd;padding:2px 5px;text-align:left}
th{background:#f3f3f3} tr.fail td{background:#fdecea} tr.notrun td{background:#fff8e1}
td.num{text-align:right;font-variant-numeric:tabular-nums}
table.checks td{overflow-wrap:anywhere;word-break:break-word}
table.checks{table-layout:fixed} ul.problems{margin:.2em 0;padding-left:1.2em;font-size:.85em}
.plots{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px}
figure{margin:0} figure img{width:100%;height:auto;border:1px solid #eee;display:block}
figcaption{font-size:.8em;color:#555}
figure.absent{border:1px dashed #d7b56d;background:#fffbf0;padding:.6em;font-size:.85em;min-height:8em}
details{margin:.25em 0;border:1px solid #e3e3e3;border-radius:3px;padding:.2em .5em}
summary{cursor:pointer;font-weight:600} summary .bad,summary .skip{margin-left:.5em}
"""
_WIDTHS = (5, 15, 21, 9, 9, 9, 5, 27)  # % of the details tables: result .. detail
_CUT = 60
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


def fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value).lower()
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def cell(value: Any, cls: str = "") -> str:
    """A table cell; a value longer than ``_CUT`` characters is cut, the whole value in its title."""
    text = fmt(value)
    attr = f' class="{cls}"' if cls else ""
    if len(text) <= _CUT:
        return f"<td{attr}>{html.escape(text)}</td>"
    short = html.escape(text[: _CUT - 1]) + "&hellip;"
    return f'<td{attr}><span title="{html.escape(text, quote=True)}">{short}</span></td>'


def _summary_table(table: Sequence[Mapping[str, Any]]) -> List[str]:
    out = ['<table class="summary" id="summary-table"><tr><th>layer</th><th>node</th>']
    out.append("<th>checks</th><th>passed</th><th>failed</th><th>not run</th></tr>")
    for r in table:
        cls = ' class="fail"' if r["failed"] else ' class="notrun"' if r["not_run"] else ""
        nums = "".join(
            f'<td class="num">{r[k]}</td>'
            if not r[k] or k == "passed" or k == "checks"
            else f'<td class="num"><span class="{"bad" if k == "failed" else "skip"}">{r[k]}</span></td>'
            for k in ("checks", "passed", "failed", "not_run")
        )
        out.append(f"<tr{cls}><td>{html.escape(r['title'])}</td><td>{html.escape(r['node'])}</td>{nums}</tr>")
    out.append("</table>")
    return out


def _problems(checks, missing) -> List[str]:
    failed = [c for c in checks if not c["passed"]]
    out = [f'<h2 id="failures">Failing checks ({len(failed)})</h2>']
    if failed:
        out.append('<ul class="problems">')
        out.extend(f"<li>{html.escape(_gates.describe(c))}</li>" for c in failed)
        out.append("</ul>")
    else:
        out.append("<p>None.</p>")
    out.append(f'<h2 id="not-run">Not run ({len(missing)})</h2>')
    if missing:
        out.append('<ul class="problems">')
        out.extend(f"<li>{html.escape(_verdict.missing_line(m))}</li>" for m in missing)
        out.append("</ul>")
    else:
        out.append("<p>Every gate ran.</p>")
    return out


def _figures(figures: Sequence[Dict[str, Any]], ident: str, missing: Sequence[Mapping] = ()) -> List[str]:
    """The figures in a grid; with ``missing``, a key figure whose layer did not run is a box that
    says so, in its place."""
    out = [f'<div class="plots" id="{ident}">']
    drawn = {str(f["title"]): f for f in figures}
    titles = [str(f["title"]) for f in figures]
    if missing:
        titles = [t for _c, t in _plots.KEY if t in drawn or any(m["category"] == _c for m in missing)]
        titles += [t for t in drawn if t not in titles]
    for name in titles:
        title = html.escape(name)
        if name in drawn:
            img = f'<img alt="{title}" src="data:image/png;base64,{png_data(drawn[name])}">'
            out.append(f"<figure>{img}<figcaption>{title}</figcaption></figure>")
            continue
        category = next(c for c, t in _plots.KEY if t == name)
        lines = "".join(
            f"<li>{html.escape(m['node'])}: {html.escape(m['reason'])}</li>"
            for m in missing
            if m["category"] == category
        )
        out.append(f'<figure class="absent"><p class="skip">{title}: not run</p><ul>{lines}</ul></figure>')
    out.append("</div>")
    return out


def _details(checks, missing) -> List[str]:
    out = ['<h2 id="details">Details by layer and node</h2>']
    cols = "".join(f'<col style="width:{w}%">' for w in _WIDTHS)
    head = "".join(
        f"<th>{h}</th>" for h in ("result", "subject", "check", "measured", "threshold", "expected", "unit", "detail")
    )
    for r in _verdict.rows(checks, missing):
        group = [c for c in checks if c["category"] == r["category"] and c["node"] == r["node"]]
        gone = [m for m in missing if m["category"] == r["category"] and m["node"] == r["node"]]
        marks = f'<span class="bad">{r["failed"]} failed</span>' if r["failed"] else ""
        marks += f'<span class="skip">{r["not_run"]} not run</span>' if r["not_run"] else ""
        out.append(
            f"<details><summary>{html.escape(r['title'])} &middot; {html.escape(r['node'])}: "
            f"{r['passed']}/{r['checks']} passed{marks}</summary>"
        )
        out.extend(f'<p class="skip">{html.escape(_verdict.missing_line(m))}</p>' for m in gone)
        if group:
            out.append(f'<table class="checks"><colgroup>{cols}</colgroup><tr>{head}</tr>')
            for c in group:
                state = (
                    '<td><span class="bad">FAIL</span></td>'
                    if not c["passed"]
                    else '<td><span class="skip">warn</span></td>'
                    if c.get("status") == "warn"
                    else '<td><span class="ok">pass</span></td>'
                )
                out.append(
                    ("<tr>" if c["passed"] else '<tr class="fail">')
                    + state
                    + "".join(cell(c.get(k)) for k in ("subject", "name"))
                    + "".join(cell(c.get(k), "num") for k in ("measured", "threshold", "expected"))
                    + cell(c.get("unit") or "")
                    + cell(c.get("detail") or "")
                    + "</tr>"
                )
            out.append("</table>")
        out.append("</details>")
    return out


def render_html(
    checks: List[Dict[str, Any]], figures: List[Dict[str, Any]], meta: Dict[str, Any], missing: Sequence[Mapping] = ()
) -> str:
    """The report. ``meta``: ``title``, ``generated``, ``measurement`` (where the figures come
    from), ``prediction`` (a check-mode run: marked as such at the top) and ``allocation`` (dra
    mode: the claim templates and GPU -> NIC pairs per node group)."""
    esc = html.escape
    title = esc(str(meta.get("title", "Validation report")))
    missing = list(missing)
    verdict = _verdict.verdict(checks, missing, bool(meta.get("prediction")))
    s = _gates.summary(checks)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta">Generated {esc(str(meta.get("generated", "")))}; {s["total"]} checks, {s["passed"]} passed, '
        f"{s['failed']} failed, {len(missing)} gate(s) not run. {esc(str(meta.get('measurement') or ''))}</p>",
    ]
    if meta.get("prediction"):
        parts.append(f'<p class="prediction" id="prediction">{esc(_verdict.PREDICTION)}</p>')
    parts.append(f'<p class="verdict {verdict["state"]}" id="verdict">{esc(verdict["text"])}</p>')
    parts.append('<div class="top"><section><h2>Summary by layer and node</h2>')
    parts += _summary_table(_verdict.rows(checks, missing))
    parts.append("</section><section>")
    parts += _problems(checks, missing)
    parts.append("</section></div>")
    if meta.get("allocation"):  # dra mode: the claim templates and GPU -> NIC pairs per node group
        parts.append(f'<section id="device-allocation"><h2>{esc(_validate_report.ALLOCATION_TITLE)}</h2>')
        parts.append("<pre>" + esc("\n".join(meta["allocation"])) + "</pre></section>")
    key = [f for f in figures if f.get("key")]
    more = [f for f in figures if not f.get("key")]
    if key or missing:
        parts.append('<h2 id="plots">Key plots</h2>')
        parts += _figures(key, "key-plots", missing)
    parts += _details(checks, missing)
    if more:
        parts.append('<h2 id="more-plots">More plots</h2>')
        parts += _figures(more, "more-plots")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
