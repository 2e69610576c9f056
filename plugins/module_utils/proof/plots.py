# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validate report's figures, drawn with matplotlib (a controller dependency, imported only
when drawing) as PNGs, base64-encoded for data URIs.

Four *key* figures sit on the report's first screen, each small enough for half the page width:
per-rail RDMA bandwidth against the gate, NCCL bus bandwidth against message size, GDS
throughput and the GPU probe. Bars are measured figures, black ticks the gates. Further figures
(the probe's NVLink all-reduce) follow the details. Pure Python (>= 3.8), no Ansible imports.
"""

from __future__ import annotations

import base64
import io
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

# Part of the figures cache's key: a change of how figures look draws cached ones again.
STYLE = "compact-3"
COLOURS = {"pass": "#2e7d32", "fail": "#c62828", "gate": "#1f1f1f", "alt": "#1565c0"}
_SERIES = ("#2e7d32", "#1565c0", "#6a1b9a", "#ef6c00", "#00838f", "#827717")
_SIZE = (6.4, 2.7)
# The key figures by the layer they show: a layer that did not run shows its reason in the slot.
KEY = (
    ("rdma", "RDMA bandwidth per rail and node pair"),
    ("nccl", "NCCL all-reduce bus bandwidth"),
    ("gds", "GDS throughput"),
    ("gpu", "GPU probe: copies and device memory"),
)


def figure_inputs(checks: List[Dict[str, Any]], series: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """What the report's figures are drawn from, and nothing else: the RDMA and GDS checks, the
    GPU probe's numeric copy and device-memory checks, and the NCCL and all-reduce series. Checks of
    other kinds (read-back, Jobs, links) leave the figures as they are."""
    series = series or {}
    gpu = [c for c in checks if c["category"] == "gpu" and isinstance(c["measured"], (int, float))]
    gpu = [c for c in gpu if not isinstance(c["measured"], bool) and c["subject"] != "NVLink"]
    return {
        "rdma": [c for c in checks if c["category"] == "rdma" and _number(c)],
        "nccl": series.get("nccl") or [],
        "gds": [c for c in checks if c["category"] == "gds" and _number(c)],
        "copy": [c for c in gpu if not c["name"].startswith("device memory")],
        "device memory": [c for c in gpu if c["name"].startswith("device memory")],
        "allreduce": series.get("allreduce") or [],
    }


def _number(check: Mapping[str, Any]) -> bool:
    value = check.get("measured")
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def grouped_bars(ax, group: Sequence[Mapping[str, Any]], x_of: Callable, series_of: Callable, unit: str) -> None:
    """Vertical bars: one slot per ``x_of(check)``, one bar per ``series_of(check)`` in it, a
    failing bar in red, the gate as a black tick across its bar; the legend above the bars."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    xs: List[str] = []
    names: List[str] = []
    for c in group:
        xs += [] if x_of(c) in xs else [x_of(c)]
        names += [] if series_of(c) in names else [series_of(c)]
    width = 0.8 / max(1, len(names))
    top = 0.0
    for k, name in enumerate(names):
        colour = _SERIES[k % len(_SERIES)]
        for c in (c for c in group if series_of(c) == name):
            x = xs.index(x_of(c)) - 0.4 + width * (k + 0.5)
            ax.bar(x, c["measured"], width * 0.9, color=colour if c["passed"] else COLOURS["fail"])
            top = max(top, c["measured"], c.get("threshold") or 0)
            if c.get("threshold") is not None:
                ax.plot([x - width / 2, x + width / 2], [c["threshold"]] * 2, color=COLOURS["gate"], linewidth=1.6)
    handles = [Patch(color=_SERIES[k % len(_SERIES)], label=name) for k, name in enumerate(names)]
    handles.append(Line2D([], [], color=COLOURS["gate"], linewidth=1.6, label="gate"))
    if any(not c["passed"] for c in group):
        handles.append(Patch(color=COLOURS["fail"], label="below the gate"))
    ax.set_ylim(0, top * 1.35 or 1)
    ax.set_xticks(range(len(xs)))
    rotate = len(xs) > 8 or max(len(line) for x in xs for line in x.splitlines()) > 14
    ax.set_xticklabels(xs, fontsize=7, rotation=20 if rotate else 0, ha="right" if rotate else "center")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_ylabel(unit, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(handles=handles, fontsize=6, loc="upper center", ncol=min(4, len(handles)), framealpha=0.9)


def _bars(plt, title: str, group, x_of, series_of, unit: str):
    fig, ax = plt.subplots(figsize=_SIZE)
    grouped_bars(ax, group, x_of, series_of, unit)
    ax.set_title(title, fontsize=10)
    return fig


def _memory(check: Mapping[str, Any]) -> str:
    return "gpu memory" if check["name"].endswith("gpu memory") else "host memory"


def _node_memory(check: Mapping[str, Any]) -> str:
    return f"{check['node']} {_memory(check)}"


def _rail(check: Mapping[str, Any]) -> str:
    return check["name"].replace(" host memory", "").replace(" gpu memory", "")


def _gpu_probe(plt, copies, memory):
    fig, axes = plt.subplots(1, 2 if copies and memory else 1, figsize=_SIZE, squeeze=False)
    panels = [(g, t) for g, t in ((copies, "host<->device copies"), (memory, "device memory")) if g]
    for ax, (group, title) in zip(axes[0], panels):
        grouped_bars(
            ax, group, lambda c: f"{c['node']}\n{c['subject']}", lambda c: c["name"].replace(" copy", ""), "GB/s"
        )
        ax.set_title(f"GPU probe: {title}", fontsize=9)
    fig.tight_layout()
    return fig


def _line_plot(plt, title: str, series: Sequence[Dict[str, Any]], node_key: str, extra: bool):
    fig, ax = plt.subplots(figsize=_SIZE)
    for s in series:
        ax.plot(s["bytes"], s["busbw"], marker="o", markersize=3, label=f"{s[node_key]} bus bandwidth")
        if extra and s.get("plain_bytes"):
            ax.plot(s["plain_bytes"], s["plain_busbw"], "s", color=COLOURS["alt"], label=f"{s[node_key]} plain PyTorch")
    gates = sorted({s["threshold"] for s in series if s.get("threshold") is not None})
    refs = sorted({s.get("expected") if s.get("expected") is not None else s.get("limit") for s in series} - {None})
    for k, gate in enumerate(gates):
        ax.axhline(gate, color=COLOURS["gate"], linestyle="--", linewidth=1, label=None if k else "gate")
    for k, ref in enumerate(refs):
        ax.axhline(ref, color=COLOURS["fail"], linestyle=":", linewidth=1, label=None if k else "expected / limit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes, log scale)", fontsize=8)
    ax.set_ylabel("bus bandwidth (GB/s)", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="lower right")
    return fig


def plots(checks: List[Dict[str, Any]], series: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """The report's figures as ``[{title, png (base64), key}]``, drawn from ``figure_inputs``;
    ``key`` marks the four of the first screen."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    given = figure_inputs(checks, series)
    figures = []
    if given["rdma"]:
        fig = _bars(plt, "RDMA bandwidth per rail (perftest)", given["rdma"], _rail, _node_memory, "Gb/s")
        figures.append(("RDMA bandwidth per rail and node pair", fig, True))
    if given["nccl"]:
        figures.append(
            (
                "NCCL all-reduce bus bandwidth",
                _line_plot(plt, "NCCL all-reduce across nodes", given["nccl"], "name", False),
                True,
            )
        )
    if given["gds"]:
        fig = _bars(
            plt,
            "GDS throughput (gdsio)",
            given["gds"],
            lambda c: f"{c['node']}\n{c['subject']}",
            lambda c: c["name"],
            "GB/s",
        )
        figures.append(("GDS throughput", fig, True))
    if given["copy"] or given["device memory"]:
        figures.append(
            ("GPU probe: copies and device memory", _gpu_probe(plt, given["copy"], given["device memory"]), True)
        )
    if given["allreduce"]:
        fig = _line_plot(plt, "all-reduce across the node's GPUs", given["allreduce"], "node", True)
        figures.append(("NVLink all-reduce (GPU probe)", fig, False))
    out = []
    for title, fig, key in figures:
        out.append({"title": title, "png": _png(fig), "key": key})
        plt.close(fig)
    return out
