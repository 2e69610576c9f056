# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the validate role may reuse its last measurements instead of measuring again.

Measuring (perftest per rail, gdsio, the GPU probe, NCCL Jobs in the cluster) takes the GPUs and
the fabric from whatever runs on them. A rerun of site.yml that changed nothing does not need a
new measurement: the validate role keeps the raw outputs of its last measurement in a record on the
controller, with a fingerprint of each node (its variables, its discovered hardware and its read-back)
and of the measurement options, and measures again only when one of these differs, when the last
measurement did not pass every check, when a read-back check fails now, or when the record is older
than validate_reuse_hours. The gates are applied to the raw outputs on every run, so a changed gate
takes effect on reused figures too.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import time
from typing import Any, Dict, List, Mapping, Optional

FORMAT = 1
RUN_KINDS = ("rdma", "nccl", "gds", "probe")
# Link speed a GPU reports at idle drops (PCIe power management lowers it until traffic comes);
# it says nothing about the node's setup, and would make every fingerprint differ.
_VOLATILE_GPU_LINK = ("current_speed", "current_speed_gts")


class ReuseError(Exception):
    pass


def digest(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _stable_topology(topology: Mapping[str, Any]) -> Dict[str, Any]:
    topo = dict(topology or {})
    gpus = []
    for gpu in topo.get("gpus") or []:
        gpu = dict(gpu)
        if isinstance(gpu.get("pcie"), Mapping):
            gpu["pcie"] = {k: v for k, v in gpu["pcie"].items() if k not in _VOLATILE_GPU_LINK}
        gpus.append(gpu)
    topo["gpus"] = gpus
    return topo


def node_fingerprint(intent: Mapping[str, Any], topology: Mapping[str, Any], checks: List[Mapping[str, Any]]) -> str:
    """One node: what it was asked to be, its hardware as discovered now and what its read-back found.

    ``intent`` is the node's checked variables (gpufabric_intent), not its plan: the plan also holds
    what the node had before the run (packages, driver), which a first run changes. The validate_*
    variables are left out: the gates apply to reused runs, the measurement options have their own
    fingerprint.
    """
    wanted = {k: v for k, v in (intent or {}).items() if not str(k).startswith("validate_")}
    readback = sorted(
        (str(c.get("id")), json.dumps(c.get("measured"), sort_keys=True, default=str), bool(c.get("passed")))
        for c in checks or []
    )
    return digest({"intent": wanted, "topology": _stable_topology(topology), "readback": readback})


def options_fingerprint(options: Mapping[str, Any]) -> str:
    """What a measurement ran with (tools, sizes, durations, filesystems, the cluster's node groups)."""
    return digest(options or {})


def when(epoch: float) -> str:
    """The minute of ``epoch`` as the report writes it (2026-12-02 09:40 UTC)."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def load(text: str) -> Optional[Dict[str, Any]]:
    """The record from its JSON text; None for no record; ReuseError for one that cannot be read."""
    if not (text or "").strip():
        return None
    try:
        record = json.loads(text)
    except ValueError as exc:
        raise ReuseError(f"not JSON ({exc})") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ReuseError(f"not a measurement record of format {FORMAT}")
    nodes, runs, at = record.get("nodes"), record.get("runs"), record.get("measured_at")
    if not isinstance(nodes, dict) or not isinstance(runs, dict) or not isinstance(at, (int, float)):
        raise ReuseError("nodes, runs or measured_at missing")
    if any(not isinstance(runs.get(kind, []), list) for kind in RUN_KINDS):
        raise ReuseError("runs are not lists")
    return record


def decide(
    text: str,
    nodes: Mapping[str, str],
    options: str,
    max_age_hours: float,
    readback: bool,
    readback_ok: bool,
    now: Optional[float] = None,
) -> Dict[str, Any]:
    """Reuse the record's runs or measure; ``reason`` says why, for the report.

    ``nodes`` maps each node of this run to its node_fingerprint, ``options`` is this run's
    options_fingerprint. Returns reuse, reason, measured (when the reused runs were measured) and
    runs (empty lists unless reused).
    """
    out: Dict[str, Any] = {"reuse": False, "reason": "", "measured": "", "runs": {k: [] for k in RUN_KINDS}}
    if max_age_hours <= 0:
        out["reason"] = "validate_reuse_hours is 0: every run measures"
        return out
    if not readback:
        out["reason"] = "validate_readback is off: nothing shows that the nodes are unchanged"
        return out
    try:
        record = load(text)
    except ReuseError as exc:
        out["reason"] = f"the last measurement record cannot be read ({exc})"
        return out
    if record is None:
        out["reason"] = "no earlier measurement on record"
        return out
    now = time.time() if now is None else now
    age = now - float(record["measured_at"])
    measured = when(float(record["measured_at"]))
    if age < 0:
        out["reason"] = f"the last measurement ({measured}) is dated in the future"
    elif age > max_age_hours * 3600:
        out["reason"] = f"the last measurement ({measured}) is {age / 3600:.1f} h old, over validate_reuse_hours"
    elif not record.get("ok"):
        out["reason"] = f"the last measurement ({measured}) did not pass every check"
    elif not readback_ok:
        out["reason"] = "a read-back check fails now"
    elif set(record["nodes"]) != set(nodes):
        added = sorted(set(nodes) - set(record["nodes"]))
        gone = sorted(set(record["nodes"]) - set(nodes))
        out["reason"] = (
            f"the nodes differ from the last measurement's (new: {', '.join(added) or 'none'}; "
            f"not in this run: {', '.join(gone) or 'none'})"
        )
    elif record.get("options") != options:
        out["reason"] = "the measurement options or the cluster's node groups changed"
    else:
        changed = sorted(n for n in nodes if record["nodes"][n] != nodes[n])
        if changed:
            out["reason"] = f"variables, hardware or read-back changed on {', '.join(changed)}"
        else:
            out.update(
                reuse=True,
                reason=f"nothing changed since then (variables, hardware and read-back of every node, "
                f"measurement options); validate_reuse_hours {max_age_hours:g}",
                runs={k: list(record["runs"].get(k) or []) for k in RUN_KINDS},
            )
    out["measured"] = measured
    return out


def record(nodes: Mapping[str, str], options: str, runs: Mapping[str, List[Any]], ok: bool, now: float) -> str:
    """The JSON text of a record of this run's measurement."""
    doc = {
        "format": FORMAT,
        "measured_at": now,
        "measured": when(now),
        "ok": bool(ok),
        "options": options,
        "nodes": dict(nodes),
        "runs": {k: list(runs.get(k) or []) for k in RUN_KINDS},
    }
    return json.dumps(doc, sort_keys=True, indent=1) + "\n"
