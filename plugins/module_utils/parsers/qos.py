# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the RoCE QoS tools' output, and the figures those formats and the RoCE MTU rule use.

Formats (sources in tests/unit/roce/fixtures/README.md):
* ``mlnx_qos -i IF -a`` (Mellanox/mlnx-tools python/mlnx_qos pretty_print),
* ``dcb [-N] {pfc,ets,app,buffer} show dev IF`` (iproute2 dcb, man dcb-pfc/ets/app/buffer),
* ``rdma system show`` (iproute2 rdma-system(8)),
* ``ethtool -a IF`` (ethtool(8) pause parameters),
* MOFED ``/sys/class/infiniband/DEV/tc/1/traffic_class``.

Contract: every parser takes text (str or bytes) and returns its documented dict, or raises
``ParseError`` naming the offending line; ``parse_ethtool_pause`` and ``parse_traffic_class``
return their documented "unknown" values (None) instead. Priorities and TCs are 0..7, DSCPs
0..63, percentages 0..100; a value outside its range is an error, never an IndexError.

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import (
    ParseError,
    as_text,
    integer,
    integer_or_none,
    number,
    numbered,
)

NUM_PRIO = 8
NUM_TC = 8
TSA_NAMES = ("strict", "ets", "vendor")
ROCE_OVERHEAD = 96  # GRH 40 + UDP 8 + BTH 12 + XRC-ETH 4 + AtomicETH 28 + ICRC 4 (ib_addr.h iboe_get_mtu)
IB_MTUS = (4096, 2048, 1024, 512, 256)
MIN_MTU_FOR_4096 = 4096 + ROCE_OVERHEAD

# DSCP code point names iproute2 prints without -N (from /etc/iproute2/rt_dsfield, shifted by 2).
_DSCP_NAMES = {f"CS{i}": i * 8 for i in range(8)}
_DSCP_NAMES.update({f"AF{c}{d}": c * 8 + d * 2 for c in range(1, 5) for d in range(1, 4)})
_DSCP_NAMES.update({"EF": 46, "VA": 44, "LE": 1})
_SIZE_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "k": 1024, "m": 1024**2, "g": 1024**3}


def roce_active_mtu(netdev_mtu: int) -> int:
    """The RoCE path MTU the kernel derives from a netdev MTU (ib_addr.h iboe_get_mtu)."""
    for ib in IB_MTUS:
        if netdev_mtu - ROCE_OVERHEAD >= ib:
            return ib
    return 0


# --------------------------------------------------------------------------------------------
# mlnx_qos
# --------------------------------------------------------------------------------------------
def _mlnx_tc_line(line: str, raw: str, lineno: int, state: Dict[str, Any], num: Callable[..., int]) -> int:
    """Read one ``tc: N ratelimit: R, tsa: T[, bw: B%]`` line into ``state``; the TC it names."""
    m = re.match(r"tc:\s*(\S+)\s+ratelimit:\s*([^,]*),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\S+?)%)?", line)
    if not m:
        raise ParseError("unparseable mlnx_qos TC line", line=raw, lineno=lineno)
    current_tc = num(m.group(1), "TC", 0, NUM_TC - 1)
    rate = m.group(2).strip()
    if rate == "unlimited":
        state["ratelimit_gbps"][current_tc] = None
    else:  # "25.0 Gbps"
        value = rate.split()[0] if rate.split() else rate
        state["ratelimit_gbps"][current_tc] = number(value, "TC rate limit", line=raw, lineno=lineno)
    state["tsa"][current_tc] = m.group(3)
    state["tc_bw"][current_tc] = num(m.group(4), "TC bandwidth", 0, 100) if m.group(4) is not None else 0
    return current_tc


def _mlnx_section_line(
    section: str,
    line: str,
    raw: str,
    lineno: int,
    state: Dict[str, Any],
    num: Callable[..., int],
    current_tc: Optional[int],
) -> None:
    """Read one line inside a section (dscp2prio, default priority, PFC, a TC's priorities) into ``state``."""
    if section == "dscp2prio" and line.startswith("prio:"):
        m = re.match(r"prio:(\S+)\s+dscp:([0-9,\s]*)", line)
        if not m:
            raise ParseError("unparseable mlnx_qos dscp2prio line", line=raw, lineno=lineno)
        prio = num(m.group(1), "priority", 0, NUM_PRIO - 1)
        for dscp in re.findall(r"[0-9]+", m.group(2)):
            state["dscp2prio"].setdefault(num(dscp, "DSCP", 0, 63), []).append(prio)
    elif section == "default_prio" and line.startswith("prio:"):
        state["default_prio"] = num(line.split(":", 1)[1], "default priority", 0, NUM_PRIO - 1)
    elif section == "pfc" and line.startswith("enabled"):
        state["pfc"] = [num(x, "PFC enable flag", 0, 1) for x in line.split()[1:]][:NUM_PRIO]
        if len(state["pfc"]) != NUM_PRIO:
            raise ParseError("PFC 'enabled' row lists fewer than 8 flags", line=raw, lineno=lineno)
    elif section == "pfc" and line.startswith("buffer"):
        state["prio2buffer"] = [num(x, "receive buffer index", 0, 7) for x in line.split()[1:]][:NUM_PRIO]
        if len(state["prio2buffer"]) != NUM_PRIO:
            raise ParseError("PFC 'buffer' row lists fewer than 8 buffers", line=raw, lineno=lineno)
    elif section == "tc" and line.startswith("priority:"):
        if current_tc is None:
            raise ParseError("priority line before any tc line", line=raw, lineno=lineno)
        state["prio_tc"][num(line.split(":", 1)[1], "priority", 0, NUM_PRIO - 1)] = current_tc


def parse_mlnx_qos(text: Any) -> Dict[str, Any]:
    """Parse the state printed by ``mlnx_qos -i IF [-a]``.

    Returns dcbx ('os'|'fw'|None), trust ('dscp'|'pcp'|None), dscp2prio {dscp: [prio...]}
    (only listed when trust is dscp), default_prio (int|None), buffer_size ([8]|None),
    total_size, cable_len, pfc ([8] of 0/1), prio2buffer ([8]|None), prio_tc ([8]),
    tsa ([8], None for TCs not printed), tc_bw ([8]), ratelimit_gbps ([8]).
    """
    text = as_text(text, "mlnx_qos output")
    state = {
        "dcbx": None,
        "trust": None,
        "dscp2prio": {},
        "default_prio": None,
        "buffer_size": None,
        "total_size": None,
        "cable_len": None,
        "pfc": None,
        "prio2buffer": None,
        "prio_tc": [0] * NUM_PRIO,
        "tsa": [None] * NUM_TC,
        "tc_bw": [0] * NUM_TC,
        "ratelimit_gbps": [None] * NUM_TC,
    }  # type: Dict[str, Any]
    section = None
    current_tc = None
    seen_tc = False
    for lineno, raw in numbered(text):
        line = raw.strip()
        if not line:
            continue

        def num(token: str, what: str, low: int = 0, high: Optional[int] = None) -> int:
            return integer(token, what, low, high, line=raw, lineno=lineno)  # noqa: B023 (called in this loop turn)

        if line.startswith("DCBX mode:"):
            state["dcbx"] = "os" if "OS" in line else "fw"
            section = None
        elif line.startswith("Priority trust state:"):
            state["trust"] = line.split(":", 1)[1].strip() or None
            section = None
        elif line.startswith("dscp2prio mapping:"):
            section = "dscp2prio"
        elif line.startswith("default priority:"):
            section = "default_prio"
            rest = line.split(":", 1)[1].strip()
            if rest:
                state["default_prio"] = num(rest, "default priority", 0, NUM_PRIO - 1)
        elif line.startswith("Receive buffer size (bytes):"):
            section = None
            body = line.split(":", 1)[1]
            total = re.search(r"total_size=(\S*)", body)
            if total:
                state["total_size"] = num(total.group(1), "total buffer size")
                body = body[: total.start()]
            sizes = [num(x, "receive buffer size") for x in body.split(",") if x.strip()]
            state["buffer_size"] = (sizes + [0] * NUM_PRIO)[:NUM_PRIO]
        elif line.startswith("Cable len:"):
            state["cable_len"] = num(line.split(":", 1)[1], "cable length")
            section = None
        elif line.startswith("PFC configuration:"):
            section = "pfc"
        elif line.startswith("tc:"):
            section = "tc"
            seen_tc = True
            current_tc = _mlnx_tc_line(line, raw, lineno, state, num)
        elif section is not None:
            _mlnx_section_line(section, line, raw, lineno, state, num, current_tc)
        # other lines (lldpad warnings, "not supported" notes, the PFC header) carry no state
    if state["pfc"] is None:
        raise ParseError("mlnx_qos output has no PFC 'enabled' row")
    if not seen_tc:
        raise ParseError("mlnx_qos output has no 'tc:' lines")
    for dscp in state["dscp2prio"]:
        state["dscp2prio"][dscp] = sorted(set(state["dscp2prio"][dscp]))
    return state


# --------------------------------------------------------------------------------------------
# iproute2 dcb
# --------------------------------------------------------------------------------------------
Loc = Tuple[int, str]  # (line number, line) of a token, for messages


def _dcb_tokens(text: Any, tool: str) -> Dict[str, Any]:
    """Split dcb 'show' output into {key: scalar} or {key: [(k, v, loc), ...]} entries.

    A bare word is a key; it takes the next word as its scalar value unless that word is a
    ``k:v`` mapping, in which case every following mapping belongs to the key.
    """
    text = as_text(text, f"{tool} output")
    tokens = [(tok, (n, raw)) for n, raw in numbered(text) for tok in raw.split()]
    out = {}  # type: Dict[str, Any]
    i = 0
    key = None
    while i < len(tokens):
        tok, loc = tokens[i]
        if ":" in tok and key is not None and isinstance(out.get(key), list):
            k, v = tok.rsplit(":", 1)
            out[key].append((k, v, loc))
            i += 1
            continue
        if ":" in tok:
            raise ParseError(f"mapping {tok!r} without a key", lineno=loc[0], line=loc[1])
        key = tok
        nxt = tokens[i + 1][0] if i + 1 < len(tokens) else None
        if nxt is not None and ":" not in nxt:
            out[key] = nxt
            i += 2
        else:
            out.setdefault(key, [])
            if not isinstance(out[key], list):
                out[key] = []
            i += 1
    return out


def _mapping(tok: Dict[str, Any], key: str, tool: str) -> List[Tuple[str, str, Loc]]:
    value = tok.get(key)
    if not isinstance(value, list):
        raise ParseError(f"{tool} output has no {key} mapping" + ("" if value is None else f" ({key} {value})"))
    return value


def _on_off(value: str, what: str, loc: Loc) -> int:
    if value not in ("on", "off"):
        raise ParseError(f"{what}: expected on/off, got {value!r}", lineno=loc[0], line=loc[1])
    return 1 if value == "on" else 0


def _index_map(pairs: List[Tuple[str, str, Loc]], convert: Callable[[str, str, Loc], Any], what: str) -> List[Any]:
    result = [None] * NUM_PRIO  # type: List[Any]
    for k, v, loc in pairs:
        if k == "all":
            result = [convert(v, what, loc)] * NUM_PRIO
        else:
            result[integer(k, f"{what} index", 0, NUM_PRIO - 1, lineno=loc[0], line=loc[1])] = convert(v, what, loc)
    if any(x is None for x in result):
        loc = pairs[-1][2] if pairs else (None, None)
        raise ParseError(f"{what} lists fewer than 8 entries", lineno=loc[0], line=loc[1])
    return result


def _prio(value: str, what: str, loc: Loc) -> int:
    return integer(value, what, 0, NUM_PRIO - 1, lineno=loc[0], line=loc[1])


def _tsa(value: str, what: str, loc: Loc) -> str:
    if not re.fullmatch(r"[a-z]+", value):
        raise ParseError(f"{what}: {value!r} is not a TSA name", lineno=loc[0], line=loc[1])
    return value


def _percent(value: str, what: str, loc: Loc) -> int:
    return integer(value, what, 0, 100, lineno=loc[0], line=loc[1])


def parse_dcb_pfc(text: Any) -> Dict[str, Any]:
    """``dcb pfc show dev IF``: pfc-cap, macsec-bypass, delay, prio-pfc."""
    tok = _dcb_tokens(text, "dcb pfc")
    cap, delay = tok.get("pfc-cap"), tok.get("delay")
    return {
        "pfc_cap": integer(cap, "pfc-cap", 0, NUM_PRIO) if isinstance(cap, str) else None,
        "delay": integer(delay, "delay", 0, 0xFFFF, base=0) if isinstance(delay, str) else None,
        "pfc": _index_map(_mapping(tok, "prio-pfc", "dcb pfc"), _on_off, "prio-pfc"),
    }


def parse_dcb_ets(text: Any) -> Dict[str, Any]:
    """``dcb ets show dev IF``: prio-tc, tc-tsa, tc-bw (plus willing)."""
    tok = _dcb_tokens(text, "dcb ets")
    return {
        "willing": tok.get("willing") if isinstance(tok.get("willing"), str) else None,
        "prio_tc": _index_map(_mapping(tok, "prio-tc", "dcb ets"), _prio, "prio-tc"),
        "tsa": _index_map(_mapping(tok, "tc-tsa", "dcb ets"), _tsa, "tc-tsa"),
        "tc_bw": _index_map(_mapping(tok, "tc-bw", "dcb ets"), _percent, "tc-bw"),
    }


def _dscp_value(name: str, loc: Loc) -> int:
    if name.upper() in _DSCP_NAMES:
        return _DSCP_NAMES[name.upper()]
    if re.fullmatch(r"[0-9]+", name):
        return integer(name, "DSCP", 0, 63, lineno=loc[0], line=loc[1])
    raise ParseError(f"unknown DSCP name {name!r} (run dcb with -N)", lineno=loc[0], line=loc[1])


def parse_dcb_app(text: Any) -> Dict[str, Any]:
    """``dcb [-N] app show dev IF``: dscp-prio table, default-prio, pcp-prio."""
    tok = _dcb_tokens(text, "dcb app")
    dscp2prio = {}  # type: Dict[int, List[int]]
    pairs = tok.get("dscp-prio") if isinstance(tok.get("dscp-prio"), list) else []
    for k, v, loc in pairs:
        dscp2prio.setdefault(_dscp_value(k, loc), []).append(_prio(v, "dscp-prio priority", loc))
    for dscp in dscp2prio:
        dscp2prio[dscp] = sorted(set(dscp2prio[dscp]))
    default = tok.get("default-prio")
    return {
        "dscp2prio": dscp2prio,
        "default_prio": integer(default, "default-prio", 0, NUM_PRIO - 1) if isinstance(default, str) else None,
        "trust": "dscp" if dscp2prio else "pcp",
    }


def parse_size(value: Any, what: str = "size", loc: Optional[Loc] = None) -> int:
    """iproute2 print_size/get_size forms: ``0b``, ``10Kb``, ``1.5Mb``, ``100K``, ``87296``."""
    lineno, line = loc or (None, None)
    m = re.fullmatch(r"\s*([0-9.]+)([A-Za-z]*)\s*", value) if isinstance(value, str) else None
    if not m or m.group(2).lower() not in (*_SIZE_UNITS, ""):
        raise ParseError(f"{what}: bad size {value!r}", lineno=lineno, line=line)
    return round(number(m.group(1), what, lineno=lineno, line=line) * _SIZE_UNITS.get(m.group(2).lower(), 1))


def _size(value: str, what: str, loc: Loc) -> int:
    return parse_size(value, what, loc)


def parse_dcb_buffer(text: Any) -> Dict[str, Any]:
    """``dcb buffer show dev IF``: prio-buffer, buffer-size, total-size (sizes in bytes)."""
    tok = _dcb_tokens(text, "dcb buffer")
    total = tok.get("total-size")
    return {
        "prio2buffer": _index_map(_mapping(tok, "prio-buffer", "dcb buffer"), _prio, "prio-buffer"),
        "buffer_size": _index_map(_mapping(tok, "buffer-size", "dcb buffer"), _size, "buffer-size"),
        "total_size": parse_size(total, "total-size") if isinstance(total, str) else None,
    }


# --------------------------------------------------------------------------------------------
# rdma, ethtool, verbs traffic class
# --------------------------------------------------------------------------------------------
def parse_rdma_system(text: Any) -> Dict[str, str]:
    """``rdma system show``: e.g. ``netns shared privileged-qkey off copy-on-fork on``."""
    text = as_text(text, "rdma system show output")
    words = text.split()
    result = {}
    for i in range(0, len(words) - 1, 2):
        result[words[i]] = words[i + 1]
    if result.get("netns") not in ("shared", "exclusive"):
        first = text.strip().splitlines()[0] if text.strip() else ""
        raise ParseError("no netns mode (shared or exclusive) in the output", line=first, lineno=1)
    return result


def parse_ethtool_pause(text: Any) -> Dict[str, Optional[bool]]:
    """``ethtool -a IF``: Autonegotiate/RX/TX lines with on/off; None for a flag not printed."""
    result = {"autoneg": None, "rx": None, "tx": None}  # type: Dict[str, Optional[bool]]
    names = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx"}
    for line in as_text(text, "ethtool -a output").splitlines():
        if ":" not in line:
            continue
        key, val = [x.strip().lower() for x in line.split(":", 1)]
        if key in names and val in ("on", "off"):
            result[names[key]] = val == "on"
    return result


def parse_traffic_class(text: Any) -> Optional[int]:
    """MOFED ``/sys/class/infiniband/DEV/tc/1/traffic_class``: ``Global tclass=106`` or a bare
    number once set; empty when unset. None when it holds no traffic class (0..255)."""
    if text is None:
        return None
    nums = re.findall(r"[0-9]+", as_text(text, "traffic_class"))
    return integer_or_none(nums[-1], 0, 255) if nums else None
