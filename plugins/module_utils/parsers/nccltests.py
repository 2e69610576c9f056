# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests output (``all_reduce_perf`` and the other ``*_perf`` binaries): parsing.

Layout (NVIDIA/nccl-tests ``src/util.cu``): optional ``# nccl-tests version V nccl-headers=H
nccl-library=L`` and ``# Collective test starting: NAME`` lines, ``# nThread ... nGpus ...``,
``# Using devices`` then one ``#  Rank  R Group  G Pid  P on HOST device  D [BUS] NAME`` line per
rank, a two- or three-line column header (``size count type redop root``, then per placement
``time algbw busbw #wrong``, out-of-place first, optionally the per-iteration ``i_min i_max i_p99
i_cv%`` columns and a timestamp), one row per message size, and the footer ``# Out of bounds
values : N OK|FAILED`` and ``# Avg bus bandwidth : X [OK|FAILED]``. ``#wrong`` is ``N/A`` when
checking is off (``-c 0``). Older releases print no ``redop``/``root`` columns for some
collectives; the header is read to find the columns, so both layouts parse.

Pure Python (>= 3.8), no Ansible imports; ``NcclTestsError`` is the only exception raised for
bad input. Counts are read as ASCII digits, at most 20 of them (_parse.MAX_DIGITS).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional

_UINT = re.compile(r"[0-9]{1,20}", re.ASCII)
_VERSION = re.compile(r"#\s*nccl-tests version\s+(\S+)(?:.*?nccl-headers=(\d+))?(?:.*?nccl-library=(\d+))?")
_STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_RANK = re.compile(
    r"#\s+Rank\s+(?P<rank>[0-9]{1,20})\s+(?:Group\s+[0-9]{1,20}\s+)?Pid\s+(?P<pid>[0-9]{1,20})\s+on\s+(?P<host>\S+)"
    r"\s+device\s+(?P<device>[0-9]{1,20})\s+\[(?P<bus>[^\]]*)\]\s+(?P<name>.*?)\s*$",
    re.ASCII,
)
_OOB = re.compile(r"#\s*Out of bounds values\s*:\s*([0-9]{1,20})\s*(OK|FAILED)?", re.ASCII)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)\s*(OK|FAILED)?", re.IGNORECASE)
_NTHREAD = re.compile(r"nThread\s+([0-9]{1,20})\s+nGpus\s+([0-9]{1,20})", re.ASCII)
_TIME_KEYS = ("time", "cputime")


class NcclTestsError(ValueError):
    """nccl-tests output that cannot be read as a result table."""


def nccl_version(code: Optional[str]) -> Optional[str]:
    """NCCL_VERSION_CODE (e.g. 22902 = 2.29.2, 21903 = 2.19.3; 2703 = 2.7.3 before 2.9) as text."""
    if not code or not _UINT.fullmatch(code):
        return None
    value = int(code)
    if value >= 20900:
        return f"{value // 10000}.{value // 100 % 100}.{value % 100}"
    return f"{value // 1000}.{value // 100 % 10}.{value % 100}"


def _columns(header: str) -> Optional[Dict[str, Any]]:
    """Column positions from the ``size count type ...`` header line, or None if it is not one."""
    tokens = header.lstrip("#").split()
    if len(tokens) < 6 or tokens[0] != "size" or tokens[1] != "count" or tokens[2] != "type":
        return None
    fixed = 3
    while fixed < len(tokens) and tokens[fixed] in ("redop", "root"):
        fixed += 1
    groups: List[Dict[str, int]] = []
    for pos in range(fixed, len(tokens)):
        if tokens[pos] in _TIME_KEYS:
            groups.append({"time": pos})
        elif groups and tokens[pos] in ("algbw", "busbw", "#wrong", "error"):
            groups[-1][tokens[pos].lstrip("#").replace("error", "wrong")] = pos
    groups = [g for g in groups if {"time", "algbw", "busbw"} <= set(g)]
    if not groups:
        return None
    return {"names": tokens[:fixed], "groups": groups[:2], "width": len(tokens)}


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError as exc:
        raise NcclTestsError(f"{what} '{text[:40]}' is not a number") from exc


def _count(text: str, what: str) -> int:
    if not _UINT.fullmatch(text):
        raise NcclTestsError(f"{what} '{text[:40]}' is not a count")
    return int(text)


def _row(tokens: List[str], cols: Dict[str, Any]) -> Dict[str, Any]:
    names = cols["names"]
    row: Dict[str, Any] = {"bytes": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2]}
    for i, name in enumerate(names[3:], start=3):
        row[name] = tokens[i]
    for key, group in zip(("out_of_place", "in_place"), cols["groups"]):
        wrong_pos = group.get("wrong")
        wrong = tokens[wrong_pos] if wrong_pos is not None and wrong_pos < len(tokens) else "N/A"
        row[key] = {
            "time_us": _number(tokens[group["time"]], "time"),
            "algbw_gbps": _number(tokens[group["algbw"]], "algbw"),
            "busbw_gbps": _number(tokens[group["busbw"]], "busbw"),
            "wrong": None if wrong == "N/A" else _count(wrong, "#wrong"),
        }
    return row


def _preamble_line(
    stripped: str, out: Dict[str, Any], devices: List[Dict[str, Any]], tail: Dict[str, Any]
) -> Optional[Dict[str, Any]]:
    """Read one line outside the result rows into ``out`` (version, collective, threads and GPUs),
    ``devices`` (one per rank) or ``tail`` (the out-of-bounds and average lines); the columns when
    the line is the table's header, else None."""
    match = _VERSION.match(stripped)
    if match:
        out["version"] = match.group(1)
        out["nccl"] = nccl_version(match.group(3) or match.group(2))
        return None
    match = _STARTING.match(stripped)
    if match:
        out["collective"] = match.group(1)
        return None
    match = _NTHREAD.search(stripped)
    if match and "minBytes" in stripped:
        out["nthread"], out["ngpus"] = int(match.group(1)), int(match.group(2))
        return None
    match = _RANK.match(stripped if stripped.startswith("#") else "# " + stripped)
    if match:
        devices.append(
            {
                "rank": int(match.group("rank")),
                "host": match.group("host"),
                "device": int(match.group("device")),
                "bus": match.group("bus"),
                "name": match.group("name"),
            }
        )
        return None
    match = _OOB.match(stripped)
    if match:
        tail["oob"] = {"count": int(match.group(1)), "ok": match.group(2) != "FAILED" and int(match.group(1)) == 0}
        return None
    match = _AVG.match(stripped)
    if match:
        tail["avg"] = (_number(match.group(1), "avg bus bandwidth"), match.group(2))
        return None
    return _columns(stripped)


def parse(text: str) -> Dict[str, Any]:
    """Parse one nccl-tests run.

    Returns ``{version, nccl, collective, nthread, ngpus, ranks, hosts, devices, rows,
    wrong_total, out_of_bounds: {count, ok} | None, avg_busbw_gbps | None, avg_check | None,
    peak_busbw_gbps, peak_bytes}``. Each row: ``{bytes, count, type, [redop, root],
    out_of_place: {time_us, algbw_gbps, busbw_gbps, wrong}, in_place: {...}}`` (``wrong`` None
    when the test did not check). Raises NcclTestsError when there is no column header or no row.
    """
    if not isinstance(text, str):
        raise NcclTestsError(f"nccl-tests output must be text, got {type(text).__name__}")
    out: Dict[str, Any] = {"version": None, "nccl": None, "collective": None, "nthread": None, "ngpus": None}
    devices: List[Dict[str, Any]] = []
    rows: List[Dict[str, Any]] = []
    cols: Optional[Dict[str, Any]] = None
    tail: Dict[str, Any] = {"oob": None, "avg": None}  # the summary lines after the table
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#") or cols is None:
            cols = _preamble_line(stripped, out, devices, tail) or cols
            continue
        tokens = stripped.split()
        if not _UINT.fullmatch(tokens[0]) or not tokens[1:2] or not _UINT.fullmatch(tokens[1]):
            continue  # a log line of NCCL or MPI between rows
        needed = max(g[k] for g in cols["groups"] for k in ("time", "algbw", "busbw"))
        if len(tokens) <= needed:
            raise NcclTestsError(f"result row for {tokens[0]} bytes has {len(tokens)} fields, the header {needed + 1}")
        rows.append(_row(tokens, cols))
    if cols is None:
        raise NcclTestsError("no nccl-tests column header ('size count type ... time algbw busbw') in the output")
    if not rows:
        raise NcclTestsError("the nccl-tests result table has no rows")
    oob, avg = tail["oob"], tail["avg"]
    wrong_total = sum((r[k].get("wrong") or 0) for r in rows for k in ("out_of_place", "in_place") if k in r)
    peak = max(rows, key=lambda r: r["out_of_place"]["busbw_gbps"])
    out.update(
        {
            "ranks": len(devices) or None,
            "hosts": sorted({d["host"] for d in devices}),
            "devices": devices,
            "rows": rows,
            "wrong_total": wrong_total,
            "out_of_bounds": oob,
            "avg_busbw_gbps": avg[0] if avg else None,
            "avg_check": avg[1] if avg else None,
            "peak_busbw_gbps": peak["out_of_place"]["busbw_gbps"],
            "peak_bytes": peak["bytes"],
        }
    )
    return out


def busbw_factor(collective: str, ranks: int) -> float:
    """Bus bandwidth correction of nccl-tests doc/PERFORMANCE.md for ``ranks`` ranks."""
    if ranks < 1:
        raise NcclTestsError(f"ranks is {ranks}; it must be at least 1")
    name = collective.replace("_perf", "")
    if name == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if name in ("reduce_scatter", "all_gather", "alltoall"):
        return (ranks - 1) / ranks
    if name in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise NcclTestsError(f"collective '{collective}' has no bus bandwidth factor here")
