# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE QoS: tool-output parsers, intent validation, planning and the apply engine.

Pure Python (stdlib only, Python >= 3.8) with no AnsibleModule inside, so that it is
unit-tested directly, reused by the ``roce_qos``/``rdma_netns``/``pcie_acs`` modules and the
``roce_*`` filters, and copied onto hosts as the library of the boot-time re-apply script
(one engine, one plan, at converge time and at every boot).

Formats parsed here (sources in tests/unit/roce/fixtures/README.md):
* ``mlnx_qos -i IF -a`` (Mellanox/mlnx-tools python/mlnx_qos pretty_print),
* ``dcb [-N] {pfc,ets,app,buffer} show dev IF`` (iproute2 dcb, man dcb-pfc/ets/app/buffer),
* ``rdma system show`` (iproute2 rdma-system(8)),
* ``setpci -s BDF ECAP_ACS+0x6.w`` (pciutils; 4 hex digits).
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

NUM_PRIO = 8
NUM_TC = 8
TSA_NAMES = ("strict", "ets", "vendor")
ROCE_OVERHEAD = 96  # GRH 40 + UDP 8 + BTH 12 + XRC-ETH 4 + AtomicETH 28 + ICRC 4 (ib_addr.h iboe_get_mtu)
IB_MTUS = (4096, 2048, 1024, 512, 256)
MIN_MTU_FOR_4096 = 4096 + ROCE_OVERHEAD
MAX_MTU = 9978  # mlx5 hard maximum
ACS_RR = 0x04
ACS_CR = 0x08
ACS_REDIRECT_MASK = ACS_RR | ACS_CR

# DSCP code point names iproute2 prints without -N (from /etc/iproute2/rt_dsfield, shifted by 2).
_DSCP_NAMES = {f"CS{i}": i * 8 for i in range(8)}
_DSCP_NAMES.update({f"AF{c}{d}": c * 8 + d * 2 for c in range(1, 5) for d in range(1, 4)})
_DSCP_NAMES.update({"EF": 46, "VA": 44, "LE": 1})


class QosError(Exception):
    """A tool failed, printed something unparseable, or a setting cannot be applied."""


# --------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------
def _ints(text: str) -> List[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def parse_mlnx_qos(text: str) -> Dict[str, Any]:
    """Parse the state printed by ``mlnx_qos -i IF [-a]``.

    Returns dcbx ('os'|'fw'|None), trust ('dscp'|'pcp'|None), dscp2prio {dscp: [prio...]}
    (only listed when trust is dscp), default_prio (int|None), buffer_size ([8]|None),
    total_size, cable_len, pfc ([8] of 0/1), prio2buffer ([8]|None), prio_tc ([8]),
    tsa ([8], None for TCs not printed), tc_bw ([8]), ratelimit_gbps ([8]).
    """
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
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
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
                state["default_prio"] = int(rest)
        elif line.startswith("Receive buffer size (bytes):"):
            section = None
            body = line.split(":", 1)[1]
            total = re.search(r"total_size=(\d+)", body)
            if total:
                state["total_size"] = int(total.group(1))
                body = body[: total.start()]
            sizes = [int(x) for x in body.split(",") if x.strip()]
            state["buffer_size"] = (sizes + [0] * NUM_PRIO)[:NUM_PRIO]
        elif line.startswith("Cable len:"):
            state["cable_len"] = int(line.split(":", 1)[1])
            section = None
        elif line.startswith("PFC configuration:"):
            section = "pfc"
        elif line.startswith("tc:"):
            section = "tc"
            seen_tc = True
            m = re.match(r"tc:\s*(\d+)\s+ratelimit:\s*([^,]+),\s*tsa:\s*(\w+)(?:,\s*bw:\s*(\d+)%)?", line)
            if not m:
                raise QosError(f"unparseable mlnx_qos TC line: {raw!r}")
            current_tc = int(m.group(1))
            rate = m.group(2).strip()
            state["ratelimit_gbps"][current_tc] = None if rate == "unlimited" else float(rate.split()[0])
            state["tsa"][current_tc] = m.group(3)
            state["tc_bw"][current_tc] = int(m.group(4)) if m.group(4) is not None else 0
        elif section == "dscp2prio" and line.startswith("prio:"):
            m = re.match(r"prio:(\d+)\s+dscp:([\d,\s]*)", line)
            if not m:
                raise QosError(f"unparseable mlnx_qos dscp2prio line: {raw!r}")
            prio = int(m.group(1))
            for dscp in _ints(m.group(2)):
                state["dscp2prio"].setdefault(dscp, []).append(prio)
        elif section == "default_prio" and line.startswith("prio:"):
            state["default_prio"] = int(line.split(":", 1)[1])
        elif section == "pfc" and line.startswith("enabled"):
            state["pfc"] = _ints(line)[:NUM_PRIO]
        elif section == "pfc" and line.startswith("buffer"):
            state["prio2buffer"] = _ints(line)[:NUM_PRIO]
        elif section == "tc" and line.startswith("priority:"):
            if current_tc is None:
                raise QosError(f"priority line before any tc line: {raw!r}")
            state["prio_tc"][_ints(line)[0]] = current_tc
        # other lines (lldpad warnings, "not supported" notes, the PFC header) carry no state
    if state["pfc"] is None or len(state["pfc"]) != NUM_PRIO:
        raise QosError("mlnx_qos output has no PFC 'enabled' row")
    if not seen_tc:
        raise QosError("mlnx_qos output has no 'tc:' lines")
    for dscp in state["dscp2prio"]:
        state["dscp2prio"][dscp] = sorted(set(state["dscp2prio"][dscp]))
    return state


def _dcb_tokens(text: str) -> Dict[str, Any]:
    """Split dcb 'show' output into {key: scalar} or {key: [(k, v), ...]} entries.

    A bare word is a key; it takes the next word as its scalar value unless that word is a
    ``k:v`` mapping, in which case every following mapping belongs to the key.
    """
    out = {}  # type: Dict[str, Any]
    tokens = text.split()
    i = 0
    key = None
    while i < len(tokens):
        tok = tokens[i]
        if ":" in tok and key is not None and isinstance(out.get(key), list):
            k, v = tok.rsplit(":", 1)
            out[key].append((k, v))
            i += 1
            continue
        if ":" in tok:
            raise QosError(f"dcb output: mapping {tok!r} without a key")
        key = tok
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if nxt is not None and ":" not in nxt:
            out[key] = nxt
            i += 2
        else:
            out.setdefault(key, [])
            if not isinstance(out[key], list):
                out[key] = []
            i += 1
    return out


def _on_off(value: str) -> int:
    if value not in ("on", "off"):
        raise QosError(f"expected on/off, got {value!r}")
    return 1 if value == "on" else 0


def _index_map(pairs: List[Tuple[str, str]], convert: Callable[[str], Any], what: str) -> List[Any]:
    result = [None] * NUM_PRIO  # type: List[Any]
    for k, v in pairs:
        if k == "all":
            result = [convert(v)] * NUM_PRIO
        else:
            idx = int(k)
            if not 0 <= idx < NUM_PRIO:
                raise QosError(f"{what} index {idx} out of range")
            result[idx] = convert(v)
    if any(x is None for x in result):
        raise QosError(f"{what} lists fewer than 8 entries")
    return result


def parse_dcb_pfc(text: str) -> Dict[str, Any]:
    """``dcb pfc show dev IF``: pfc-cap, macsec-bypass, delay, prio-pfc."""
    tok = _dcb_tokens(text)
    if "prio-pfc" not in tok:
        raise QosError("dcb pfc output has no prio-pfc")
    return {
        "pfc_cap": int(tok["pfc-cap"]) if "pfc-cap" in tok else None,
        "delay": int(tok["delay"], 0) if "delay" in tok else None,
        "pfc": _index_map(tok["prio-pfc"], _on_off, "prio-pfc"),
    }


def parse_dcb_ets(text: str) -> Dict[str, Any]:
    """``dcb ets show dev IF``: prio-tc, tc-tsa, tc-bw (plus willing)."""
    tok = _dcb_tokens(text)
    for key in ("prio-tc", "tc-tsa", "tc-bw"):
        if key not in tok:
            raise QosError(f"dcb ets output has no {key}")
    return {
        "willing": tok.get("willing"),
        "prio_tc": _index_map(tok["prio-tc"], int, "prio-tc"),
        "tsa": _index_map(tok["tc-tsa"], str, "tc-tsa"),
        "tc_bw": _index_map(tok["tc-bw"], int, "tc-bw"),
    }


def _dscp_value(name: str) -> int:
    if name.isdigit():
        return int(name)
    if name.upper() in _DSCP_NAMES:
        return _DSCP_NAMES[name.upper()]
    raise QosError(f"unknown DSCP name {name!r} (run dcb with -N)")


def parse_dcb_app(text: str) -> Dict[str, Any]:
    """``dcb [-N] app show dev IF``: dscp-prio table, default-prio, pcp-prio."""
    tok = _dcb_tokens(text)
    dscp2prio = {}  # type: Dict[int, List[int]]
    for k, v in tok.get("dscp-prio", []) if isinstance(tok.get("dscp-prio"), list) else []:
        dscp2prio.setdefault(_dscp_value(k), []).append(int(v))
    for dscp in dscp2prio:
        dscp2prio[dscp] = sorted(set(dscp2prio[dscp]))
    default = tok.get("default-prio")
    return {
        "dscp2prio": dscp2prio,
        "default_prio": int(default) if isinstance(default, str) else None,
        "trust": "dscp" if dscp2prio else "pcp",
    }


_SIZE_UNITS = {"b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(value: str) -> int:
    """iproute2 print_size/get_size forms: ``0b``, ``10Kb``, ``1.5Mb``, ``100K``, ``87296``."""
    m = re.match(r"^(\d+(?:\.\d+)?)([A-Za-z]*)$", value.strip())
    if not m:
        raise QosError(f"bad size {value!r}")
    unit = m.group(2).lower()
    if unit not in _SIZE_UNITS and unit != "":
        raise QosError(f"bad size unit in {value!r}")
    return round(float(m.group(1)) * _SIZE_UNITS.get(unit, 1))


def parse_dcb_buffer(text: str) -> Dict[str, Any]:
    """``dcb buffer show dev IF``: prio-buffer, buffer-size, total-size (sizes in bytes)."""
    tok = _dcb_tokens(text)
    if "prio-buffer" not in tok or "buffer-size" not in tok:
        raise QosError("dcb buffer output lacks prio-buffer or buffer-size")
    total = tok.get("total-size")
    return {
        "prio2buffer": _index_map(tok["prio-buffer"], int, "prio-buffer"),
        "buffer_size": _index_map(tok["buffer-size"], parse_size, "buffer-size"),
        "total_size": parse_size(total) if isinstance(total, str) else None,
    }


def parse_rdma_system(text: str) -> Dict[str, str]:
    """``rdma system show``: e.g. ``netns shared privileged-qkey off copy-on-fork on``."""
    words = text.split()
    result = {}
    for i in range(0, len(words) - 1, 2):
        result[words[i]] = words[i + 1]
    if result.get("netns") not in ("shared", "exclusive"):
        raise QosError(f"rdma system show printed no netns mode: {text.strip()!r}")
    return result


def parse_setpci_word(text: str) -> int:
    """``setpci -s BDF ECAP_ACS+0x6.w`` prints one 16-bit value as 4 hex digits."""
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not re.match(r"^[0-9a-fA-F]{1,4}$", value):
        raise QosError(f"setpci printed no 16-bit value: {text.strip()!r}")
    return int(value, 16)


def parse_ethtool_pause(text: str) -> Dict[str, Optional[bool]]:
    """``ethtool -a IF``: Autonegotiate/RX/TX lines with on/off."""
    result = {"autoneg": None, "rx": None, "tx": None}  # type: Dict[str, Optional[bool]]
    names = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx"}
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, val = [x.strip().lower() for x in line.split(":", 1)]
        if key in names and val in ("on", "off"):
            result[names[key]] = val == "on"
    return result


def parse_traffic_class(text: Optional[str]) -> Optional[int]:
    """MOFED ``/sys/class/infiniband/DEV/tc/1/traffic_class``: ``Global tclass=106`` or a bare
    number once set; empty when unset."""
    if text is None:
        return None
    nums = re.findall(r"(\d+)", text)
    return int(nums[-1]) if nums else None


def roce_active_mtu(netdev_mtu: int) -> int:
    """The RoCE path MTU the kernel derives from a netdev MTU (ib_addr.h iboe_get_mtu)."""
    for ib in IB_MTUS:
        if netdev_mtu - ROCE_OVERHEAD >= ib:
            return ib
    return 0


# --------------------------------------------------------------------------------------------
# Intent validation and planning
# --------------------------------------------------------------------------------------------
DEFAULT_OPTIONS = {
    "backend": "auto",
    "include_storage": False,
    "interfaces": [],
    "pfc_priorities": [],
    "allow_pfc_on_other_priorities": False,
    "ecn_priorities": [],
    "ets": {},
    "default_priority": None,
    "buffer_size": [],
    "prio2buffer": [],
    "cable_len": None,
    "global_pause_off": True,
    "roce_mode": "RoCE v2",
    "set_traffic_class": True,
    "disable_acs_redirect": False,
    "acs_clear_mask": ACS_REDIRECT_MASK,
}  # type: Dict[str, Any]

FABRIC_DEFAULTS = {
    "transport": "roce",
    "lossless_priority": 3,
    "data_dscp": 26,
    "cnp_dscp": 48,
    "cnp_priority": 6,
    "roce_tos": 106,
    "mtu": 9000,
    "ecn": True,
    "pfc": True,
    "rdma_netns_mode": "shared",
}  # type: Dict[str, Any]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_range(errors: List[str], name: str, value: Any, low: int, high: int) -> bool:
    if not _is_int(value) or not low <= value <= high:
        errors.append(f"{name} must be an integer in {low}..{high}, got {value!r}")
        return False
    return True


def _nic_names(topology: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    names = {}
    for nic in (topology or {}).get("nics") or []:
        for netdev in nic.get("netdevs") or []:
            names[netdev] = nic
        if nic.get("rdma_device"):
            names[nic["rdma_device"]] = nic
    return names


def validate_intent(
    fabric: Dict[str, Any], options: Dict[str, Any], topology: Optional[Dict[str, Any]] = None
) -> List[str]:
    """Every problem with the intent, each naming the variable; empty when it is good."""
    fab = dict(FABRIC_DEFAULTS)
    fab.update(fabric or {})
    opts = dict(DEFAULT_OPTIONS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None or k in ("default_priority", "cable_len")})
    errors = []  # type: List[str]
    f = "gpufabric_fabric."
    if fab.get("transport") != "roce":
        errors.append(f"{f}transport must be 'roce' for the roce role, got {fab.get('transport')!r}")
    prio_ok = _check_range(errors, f + "lossless_priority", fab.get("lossless_priority"), 0, 7)
    cnp_ok = _check_range(errors, f + "cnp_priority", fab.get("cnp_priority"), 0, 7)
    dscp_ok = _check_range(errors, f + "data_dscp", fab.get("data_dscp"), 0, 63)
    cnp_dscp_ok = _check_range(errors, f + "cnp_dscp", fab.get("cnp_dscp"), 0, 63)
    tos_ok = _check_range(errors, f + "roce_tos", fab.get("roce_tos"), 0, 255)
    if prio_ok and cnp_ok and fab["cnp_priority"] == fab["lossless_priority"]:
        errors.append(
            f"{f}cnp_priority ({fab['cnp_priority']}) must differ from {f}lossless_priority "
            f"({fab['lossless_priority']}): CNPs must not be paused by PFC"
        )
    if dscp_ok and cnp_dscp_ok and fab["cnp_dscp"] == fab["data_dscp"]:
        errors.append(f"{f}cnp_dscp ({fab['cnp_dscp']}) must differ from {f}data_dscp ({fab['data_dscp']})")
    if tos_ok and dscp_ok:
        if fab["roce_tos"] >> 2 != fab["data_dscp"]:
            errors.append(
                f"{f}roce_tos {fab['roce_tos']} carries DSCP {fab['roce_tos'] >> 2} but {f}data_dscp is "
                f"{fab['data_dscp']} (expected ToS {(fab['data_dscp'] << 2) | 2} = data_dscp << 2 | ECT(0))"
            )
        elif fab["roce_tos"] & 3 == 3:
            errors.append(
                f"{f}roce_tos {fab['roce_tos']} sets ECN bits to CE (0b11); use ECT(0) ({(fab['data_dscp'] << 2) | 2})"
            )
    mtu = fab.get("mtu")
    if not _is_int(mtu) or mtu < MIN_MTU_FOR_4096 or mtu > MAX_MTU:
        errors.append(
            f"{f}mtu must be an integer in {MIN_MTU_FOR_4096}..{MAX_MTU} (RoCE MTU 4096 needs "
            f"4096 + {ROCE_OVERHEAD} bytes of headers), got {mtu!r}"
        )
    for key in ("ecn", "pfc"):
        if not isinstance(fab.get(key), bool):
            errors.append(f"{f}{key} must be true or false, got {fab.get(key)!r}")
    if fab.get("rdma_netns_mode") not in ("shared", "exclusive"):
        errors.append(f"{f}rdma_netns_mode must be one of shared, exclusive, got {fab.get('rdma_netns_mode')!r}")

    if opts.get("backend") not in ("auto", "mlnx_qos", "dcb"):
        errors.append(f"roce_backend must be one of auto, mlnx_qos, dcb, got {opts.get('backend')!r}")
    pfc_prios = opts.get("pfc_priorities") or []
    for p in pfc_prios:
        if not _check_range(errors, "roce_pfc_priorities[]", p, 0, 7):
            continue
        if prio_ok and p != fab["lossless_priority"] and not opts.get("allow_pfc_on_other_priorities"):
            errors.append(
                f"roce_pfc_priorities enables PFC on priority {p}, which is not {f}lossless_priority "
                f"({fab['lossless_priority']}); set roce_allow_pfc_on_other_priorities: true if the "
                "switches are configured for it"
            )
        if cnp_ok and p == fab["cnp_priority"]:
            errors.append(f"roce_pfc_priorities enables PFC on the CNP priority {p} ({f}cnp_priority)")
    if pfc_prios and not fab.get("pfc"):
        errors.append(f"roce_pfc_priorities is set but {f}pfc is false")
    for p in opts.get("ecn_priorities") or []:
        _check_range(errors, "roce_ecn_priorities[]", p, 0, 7)
    if opts.get("default_priority") is not None:
        _check_range(errors, "roce_default_priority", opts["default_priority"], 0, 7)
    if opts.get("cable_len") is not None:
        _check_range(errors, "roce_cable_len", opts["cable_len"], 0, 0xFFFF)
    _validate_ets(errors, opts.get("ets") or {})
    bsize = opts.get("buffer_size") or []
    p2b = opts.get("prio2buffer") or []
    if bsize and (len(bsize) != 8 or not all(_is_int(x) and x >= 0 for x in bsize)):
        errors.append(f"roce_buffer_size must list 8 non-negative byte sizes, got {bsize!r}")
    if p2b and (len(p2b) != 8 or not all(_is_int(x) and 0 <= x <= 7 for x in p2b)):
        errors.append(f"roce_prio2buffer must list 8 buffer indexes in 0..7, got {p2b!r}")
    lossless_buf = p2b[fab["lossless_priority"]] if prio_ok and len(p2b) == 8 else None
    if len(bsize) == 8 and _is_int(lossless_buf) and 0 <= lossless_buf <= 7 and bsize[lossless_buf] == 0:
        errors.append(
            f"roce_buffer_size gives 0 bytes to buffer {lossless_buf}, which roce_prio2buffer assigns to "
            "the lossless priority"
        )
    mode = opts.get("roce_mode")
    if mode not in ("RoCE v2", "IB/RoCE v1"):
        errors.append(f"roce_mode must be 'RoCE v2' or 'IB/RoCE v1', got {mode!r}")
    mask = opts.get("acs_clear_mask")
    if not _is_int(mask) or not 0 < mask <= 0x7F:
        errors.append(f"roce_acs_clear_mask must be an ACS control bit mask in 1..0x7f, got {mask!r}")

    known = _nic_names(topology) if topology is not None else None
    for name in opts.get("interfaces") or []:
        if known is not None and name not in known:
            errors.append(
                f"roce_interfaces names {name!r}, which discovery did not find among the RDMA NICs "
                f"(known: {', '.join(sorted(known)) or 'none'})"
            )
    if topology is not None and opts.get("disable_acs_redirect") and topology.get("virtualized"):
        errors.append(
            "roce_disable_acs_redirect is true but this host is a virtual machine: ACS must stay on in VMs "
            "(enable ATS on the NIC instead); set roce_disable_acs_redirect: false"
        )
    return errors


def _validate_ets(errors: List[str], ets: Dict[str, Any]) -> None:
    if not ets:
        return
    unknown = set(ets) - {"prio_tc", "tsa", "tc_bw"}
    if unknown:
        errors.append(f"roce_ets has unknown keys {sorted(unknown)} (allowed: prio_tc, tsa, tc_bw)")
    prio_tc = ets.get("prio_tc") or []
    tsa = ets.get("tsa") or []
    bw = ets.get("tc_bw") or []
    if len(prio_tc) != 8 or not all(_is_int(x) and 0 <= x <= 7 for x in prio_tc):
        errors.append(f"roce_ets.prio_tc must list 8 TC numbers in 0..7, got {prio_tc!r}")
    if len(tsa) != 8 or not all(x in TSA_NAMES for x in tsa):
        errors.append(f"roce_ets.tsa must list 8 of {'/'.join(TSA_NAMES)}, got {tsa!r}")
    if len(bw) != 8 or not all(_is_int(x) and 0 <= x <= 100 for x in bw):
        errors.append(f"roce_ets.tc_bw must list 8 percentages in 0..100, got {bw!r}")
    elif len(tsa) == 8 and all(x in TSA_NAMES for x in tsa):
        ets_bw = [b for b, t in zip(bw, tsa) if t == "ets"]
        if ets_bw and sum(ets_bw) != 100:
            errors.append(f"roce_ets.tc_bw of the ets TCs must sum to 100, got {sum(ets_bw)}")
        if any(b for b, t in zip(bw, tsa) if t != "ets"):
            errors.append("roce_ets.tc_bw must be 0 for TCs whose tsa is not ets")


def select_nics(topology: Dict[str, Any], options: Dict[str, Any]) -> List[Dict[str, Any]]:
    """NICs to configure: explicit ``interfaces`` (netdev or RDMA names), else the compute
    (rail) NICs plus storage NICs when asked. PFs only: ECN/QoS are per physical port."""
    wanted = options.get("interfaces") or []
    chosen = []
    for nic in (topology or {}).get("nics") or []:
        names = set(nic.get("netdevs") or []) | ({nic["rdma_device"]} if nic.get("rdma_device") else set())
        if wanted:
            if names & set(wanted):
                chosen.append(nic)
        elif nic.get("function", "pf") == "pf" and (
            nic.get("role") == "compute" or (options.get("include_storage") and nic.get("role") == "storage")
        ):
            chosen.append(nic)
    return chosen


def build_plan(
    fabric: Dict[str, Any], options: Dict[str, Any], topology: Dict[str, Any], sysroot: str = "/"
) -> Dict[str, Any]:
    """Desired per-NIC state (the 'plan'): the module's input and the boot script's file."""
    fab = dict(FABRIC_DEFAULTS)
    fab.update(fabric or {})
    opts = dict(DEFAULT_OPTIONS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    lossless = fab["lossless_priority"]
    pfc_prios = sorted(set(opts.get("pfc_priorities") or [lossless])) if fab["pfc"] else []
    ecn_prios = sorted(set(opts.get("ecn_priorities") or [lossless]))
    interfaces = []
    for nic in select_nics(topology, opts):
        ports = nic.get("ports") or [{"port": 1, "netdev": (nic.get("netdevs") or [None])[0]}]
        for port in ports:
            netdev = port.get("netdev") or (nic.get("netdevs") or [None])[0]
            if not netdev:
                continue
            entry = {
                "netdev": netdev,
                "rdma_device": nic.get("rdma_device"),
                "port": port.get("port", 1),
                "role": nic.get("role"),
                "rail": nic.get("rail"),
                "trust": "dscp",
                "dscp2prio": {str(fab["data_dscp"]): lossless, str(fab["cnp_dscp"]): fab["cnp_priority"]},
                "pfc": [1 if p in pfc_prios else 0 for p in range(NUM_PRIO)],
                "ecn": {"enabled": bool(fab["ecn"]), "priorities": ecn_prios},
                "cnp_dscp": fab["cnp_dscp"],
                "cnp_prio": fab["cnp_priority"],
                "roce_tos": fab["roce_tos"],
                "traffic_class": fab["roce_tos"] if opts.get("set_traffic_class") else None,
                "roce_mode": opts.get("roce_mode"),
                "mtu": fab["mtu"],
                "global_pause_off": bool(opts.get("global_pause_off")) and bool(pfc_prios),
                "default_prio": opts.get("default_priority"),
                "ets": dict(opts["ets"]) if opts.get("ets") else None,
                "buffer_size": list(opts["buffer_size"]) if opts.get("buffer_size") else None,
                "prio2buffer": list(opts["prio2buffer"]) if opts.get("prio2buffer") else None,
                "cable_len": opts.get("cable_len"),
            }
            interfaces.append(entry)
    endpoints = acs_endpoints(topology) if opts.get("disable_acs_redirect") else []
    return {
        "schema_version": 1,
        "sysroot": sysroot,
        "backend": opts.get("backend", "auto"),
        "netns_mode": fab["rdma_netns_mode"],
        "interfaces": interfaces,
        "acs": {"endpoints": endpoints, "clear_mask": opts.get("acs_clear_mask", ACS_REDIRECT_MASK)},
    }


def acs_endpoints(topology: Dict[str, Any]) -> List[str]:
    """PCI functions whose upstream bridges carry GPUDirect traffic: every rail GPU and rail
    NIC (and, without rails, every GPU and compute NIC) found by discovery."""
    topo = topology or {}
    nic_bdf = {n.get("rdma_device"): n.get("bdf") for n in topo.get("nics") or []}
    endpoints = set()
    for rail in topo.get("rails") or []:
        if rail.get("gpu_bdf"):
            endpoints.add(rail["gpu_bdf"])
        if nic_bdf.get(rail.get("nic")):
            endpoints.add(nic_bdf[rail["nic"]])
    if not endpoints:
        endpoints.update(g["bdf"] for g in topo.get("gpus") or [] if g.get("bdf"))
        endpoints.update(n["bdf"] for n in topo.get("nics") or [] if n.get("bdf") and n.get("role") == "compute")
    return sorted(endpoints)


_BDF_RE = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def upstream_bridges(io: HostIO, endpoints: List[str]) -> List[str]:
    """Bridges between each endpoint and its host bridge, from the sysfs device path
    (realpath of sys/bus/pci/devices/BDF: pci0000:17/<root port>/<switch ports>/<endpoint>)."""
    bridges = set()
    for bdf in endpoints:
        link = io.path(f"sys/bus/pci/devices/{bdf}")
        if not os.path.exists(link):
            continue
        parts = os.path.realpath(link).split(os.sep)
        for comp in parts[:-1]:
            if _BDF_RE.match(comp):
                bridges.add(comp)
    return sorted(bridges)


def rail_summary(plan: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    """What must match across the nodes of a rail: {rail: {priority, dscp, cnp_dscp, mtu}}."""
    out = {}
    for iface in plan.get("interfaces") or []:
        if iface.get("rail") is None:
            continue
        data_dscp = [int(d) for d, p in iface["dscp2prio"].items() if iface["pfc"][p]] or [
            int(d) for d in iface["dscp2prio"]
        ][:1]
        prios = [p for p in range(NUM_PRIO) if iface["pfc"][p]]
        out[str(iface["rail"])] = {
            "priority": prios[0] if len(prios) == 1 else prios,
            "dscp": data_dscp[0] if len(data_dscp) == 1 else data_dscp,
            "cnp_dscp": iface.get("cnp_dscp"),
            "mtu": iface.get("mtu"),
        }
    return out


def rail_consistency_errors(per_node: Dict[str, Dict[str, Dict[str, Any]]]) -> List[str]:
    """Compare rails across nodes. ``per_node`` = {node: rail_summary(plan)}. Each rail's
    reference is the most common settings; every node that differs is named with its values."""
    rails = {}  # type: Dict[str, Dict[str, Dict[str, Any]]]
    for node, summary in sorted(per_node.items()):
        for rail, values in (summary or {}).items():
            rails.setdefault(str(rail), {})[node] = values
    errors = []
    for rail in sorted(rails, key=lambda r: (len(r), r)):
        nodes = rails[rail]
        counts = {}  # type: Dict[str, int]
        for values in nodes.values():
            key = repr(sorted(values.items()))
            counts[key] = counts.get(key, 0) + 1
        if len(counts) < 2:
            continue
        ref_key = sorted(counts, key=lambda k: (-counts[k], k))[0]
        ref_nodes = sorted(n for n, v in nodes.items() if repr(sorted(v.items())) == ref_key)
        ref = nodes[ref_nodes[0]]
        for node in sorted(nodes):
            values = nodes[node]
            if repr(sorted(values.items())) == ref_key:
                continue
            diffs = ", ".join(
                f"{k}={values.get(k)!r} (expected {ref.get(k)!r})"
                for k in sorted(set(values) | set(ref))
                if values.get(k) != ref.get(k)
            )
            errors.append(
                f"rail {rail}: node {node} has {diffs}; {', '.join(ref_nodes)} agree on "
                + ", ".join(f"{k}={ref[k]!r}" for k in sorted(ref))
            )
    return errors


# --------------------------------------------------------------------------------------------
# Apply engine: read -> diff -> apply, with I/O injected
# --------------------------------------------------------------------------------------------
class HostIO:
    """Host access used by the engine. The module and the boot script give real ones; tests
    give fakes. ``run(argv) -> (rc, stdout, stderr)``; ``which(name) -> path or None``."""

    def __init__(
        self,
        run: Callable[[List[str]], Tuple[int, str, str]],
        which: Callable[[str], Optional[str]],
        sysroot: str = "/",
    ) -> None:
        self.run = run
        self.which = which
        self.sysroot = sysroot or "/"

    def path(self, rel: str) -> str:
        return os.path.join(self.sysroot, rel.lstrip("/"))

    def read(self, rel: str) -> Optional[str]:
        try:
            with open(self.path(rel)) as handle:
                return handle.read()
        except OSError:
            return None

    def write(self, rel: str, value: str) -> None:
        with open(self.path(rel), "w") as handle:
            handle.write(value)

    def exists(self, rel: str) -> bool:
        return os.path.exists(self.path(rel))

    def mkdir(self, rel: str) -> None:
        if not os.path.isdir(self.path(rel)):
            os.mkdir(self.path(rel))

    def check(self, argv: List[str]) -> str:
        rc, out, err = self.run(argv)
        if rc != 0:
            raise QosError(f"{' '.join(argv)} failed (rc={rc}): {(err or out).strip()}")
        return out


def choose_backend(requested: str, io: HostIO) -> str:
    if requested in ("mlnx_qos", "dcb"):
        if not io.which(requested):
            raise QosError(f"backend {requested} requested but the {requested} command is not installed")
        return requested
    if io.which("mlnx_qos"):
        return "mlnx_qos"
    if io.which("dcb"):
        return "dcb"
    raise QosError("neither mlnx_qos (MOFED/DOCA mlnx-tools) nor dcb (iproute2) is installed")


def _read_int(io: HostIO, rel: str) -> Optional[int]:
    text = io.read(rel)
    if text is None or not text.strip():
        return None
    try:
        return int(text.strip().split()[0])
    except ValueError:
        return None


def _sysfs_paths(iface: Dict[str, Any]) -> Dict[str, str]:
    nd = iface["netdev"]
    dev = iface.get("rdma_device") or ""
    port = iface.get("port", 1)
    return {
        "ecn": f"sys/class/net/{nd}/ecn",
        "mtu": f"sys/class/net/{nd}/mtu",
        "tc": f"sys/class/infiniband/{dev}/tc/1/traffic_class",
        "cm_dev": f"sys/kernel/config/rdma_cm/{dev}",
        "cm_port": f"sys/kernel/config/rdma_cm/{dev}/ports/{port}",
    }


def read_state(iface: Dict[str, Any], backend: str, io: HostIO) -> Tuple[Dict[str, Any], Dict[str, Any], List[str]]:
    """Current values of every key the plan manages (None = not readable here).

    Returns (state, raw, warnings); raw keeps the full tool state for apply."""
    nd = iface["netdev"]
    warnings = []  # type: List[str]
    if backend == "mlnx_qos":
        raw = parse_mlnx_qos(io.check(["mlnx_qos", "-i", nd, "-a"]))
        raw["delay"] = raw.get("cable_len")
    else:
        raw = {}
        raw.update(parse_dcb_app(io.check(["dcb", "-N", "app", "show", "dev", nd])))
        raw.update(parse_dcb_pfc(io.check(["dcb", "pfc", "show", "dev", nd])))
        raw["cable_len"] = raw.get("delay")
        if iface.get("ets"):
            raw.update(parse_dcb_ets(io.check(["dcb", "ets", "show", "dev", nd])))
        if iface.get("buffer_size") or iface.get("prio2buffer"):
            raw.update(parse_dcb_buffer(io.check(["dcb", "buffer", "show", "dev", nd])))
    state = {
        "trust": raw.get("trust"),
        "dscp2prio": {d: raw["dscp2prio"].get(int(d), []) for d in sorted(iface["dscp2prio"], key=int)},
        "pfc": raw.get("pfc"),
    }  # type: Dict[str, Any]
    if iface.get("default_prio") is not None:
        state["default_prio"] = raw.get("default_prio")
    if iface.get("ets"):
        state["ets"] = {"prio_tc": raw.get("prio_tc"), "tsa": raw.get("tsa"), "tc_bw": raw.get("tc_bw")}
    if iface.get("buffer_size"):
        state["buffer_size"] = raw.get("buffer_size")
    if iface.get("prio2buffer"):
        state["prio2buffer"] = raw.get("prio2buffer")
    if iface.get("cable_len") is not None:
        state["cable_len"] = raw.get("cable_len")

    paths = _sysfs_paths(iface)
    ecn = iface.get("ecn") or {}
    if io.exists(paths["ecn"]):
        state["ecn"] = {}
        for point in ("roce_np", "roce_rp"):
            for prio in ecn.get("priorities") or []:
                state["ecn"][f"{point}/{prio}"] = _read_int(io, f"{paths['ecn']}/{point}/enable/{prio}")
        state["cnp_dscp"] = _read_int(io, paths["ecn"] + "/roce_np/cnp_dscp")
        state["cnp_prio"] = _read_int(io, paths["ecn"] + "/roce_np/cnp_802p_prio")
    else:
        dbg = _debugfs_cc(iface, io)
        if dbg:
            state["cnp_dscp"] = _read_int(io, dbg + "/np_cnp_dscp")
            state["cnp_prio"] = _read_int(io, dbg + "/np_cnp_prio")
        warnings.append(
            f"{nd}: no per-priority ECN sysfs (inbox driver); congestion control priorities follow the "
            "firmware setting ROCE_CC_PRIO_MASK (mlxconfig)"
        )
        if not dbg:
            warnings.append(f"{nd}: CNP DSCP/priority not exposed (no MOFED ecn sysfs, no mlx5 debugfs cc_params)")

    if iface.get("rdma_device"):
        if iface.get("traffic_class") is not None:
            if io.exists(os.path.dirname(paths["tc"])):
                state["traffic_class"] = parse_traffic_class(io.read(paths["tc"]))
            else:
                warnings.append(
                    f"{iface['rdma_device']}: verbs traffic class not exposed (MOFED only); "
                    f"set NCCL_IB_TC={iface['traffic_class']} in workloads"
                )
        if io.exists("sys/kernel/config/rdma_cm"):
            tos = io.read(paths["cm_port"] + "/default_roce_tos")
            mode = io.read(paths["cm_port"] + "/default_roce_mode")
            state["roce_tos"] = int(tos.strip()) if tos and tos.strip().isdigit() else None
            state["roce_mode"] = mode.strip() if mode and mode.strip() else None
        else:
            warnings.append(
                f"{iface['rdma_device']}: RDMA-CM configfs (sys/kernel/config/rdma_cm) absent: load rdma_cm "
                "and mount configfs to set the default RoCE ToS/mode"
            )
    state["mtu"] = _read_int(io, paths["mtu"])
    if iface.get("global_pause_off"):
        if io.which("ethtool"):
            pause = parse_ethtool_pause(io.check(["ethtool", "-a", nd]))
            state["global_pause"] = {"rx": pause["rx"], "tx": pause["tx"]}
        else:
            warnings.append(f"{nd}: ethtool not installed; global pause not checked")
    return state, raw, warnings


def _debugfs_cc(iface: Dict[str, Any], io: HostIO) -> Optional[str]:
    bdf_link = io.path(f"sys/class/net/{iface['netdev']}/device")
    bdf = os.path.basename(os.path.realpath(bdf_link)) if os.path.exists(bdf_link) else None
    rel = f"sys/kernel/debug/mlx5/{bdf}/cc_params" if bdf else None
    return rel if rel and io.exists(rel) else None


def desired_state(iface: Dict[str, Any], current: Dict[str, Any]) -> Dict[str, Any]:
    """The plan's values in the shape of ``current`` (keys that cannot be read are dropped)."""
    want = {
        "trust": iface["trust"],
        "dscp2prio": {d: [p] for d, p in iface["dscp2prio"].items()},
        "pfc": list(iface["pfc"]),
        "mtu": iface["mtu"],
    }  # type: Dict[str, Any]
    if iface.get("default_prio") is not None:
        want["default_prio"] = iface["default_prio"]
    if iface.get("ets"):
        want["ets"] = {
            "prio_tc": list(iface["ets"]["prio_tc"]),
            "tsa": list(iface["ets"]["tsa"]),
            "tc_bw": list(iface["ets"]["tc_bw"]),
        }
    if iface.get("buffer_size"):
        want["buffer_size"] = list(iface["buffer_size"])
    if iface.get("prio2buffer"):
        want["prio2buffer"] = list(iface["prio2buffer"])
    if iface.get("cable_len") is not None:
        want["cable_len"] = iface["cable_len"]
    if "ecn" in current:
        flag = 1 if (iface.get("ecn") or {}).get("enabled") else 0
        want["ecn"] = {k: flag for k in current["ecn"]}
    for key in ("cnp_dscp", "cnp_prio", "traffic_class"):
        if key in current and iface.get(key) is not None:
            want[key] = iface[key]
    if "roce_tos" in current:
        want["roce_tos"] = iface["roce_tos"]
    if "roce_mode" in current and iface.get("roce_mode"):
        want["roce_mode"] = iface["roce_mode"]
    if "global_pause" in current:
        want["global_pause"] = {"rx": False, "tx": False}
    return want


def diff_keys(current: Dict[str, Any], desired: Dict[str, Any]) -> List[str]:
    return sorted(k for k in desired if current.get(k) != desired[k])


def _csv(values: List[Any]) -> str:
    return ",".join(str(v) for v in values)


def _mlnx_qos_commands(nd: str, changed: List[str], want: Dict[str, Any], raw: Dict[str, Any]) -> List[List[str]]:
    cmds = []
    base = ["mlnx_qos", "-i", nd]
    if "trust" in changed:
        cmds.append([*base, "--trust", want["trust"]])
    if "dscp2prio" in changed:
        args = []
        for d in sorted(want["dscp2prio"], key=int):
            prio = want["dscp2prio"][d][0]
            for old in raw.get("dscp2prio", {}).get(int(d), []):
                if old != prio:
                    args += ["--dscp2prio", f"del,{d},{old}"]
            args += ["--dscp2prio", f"set,{d},{prio}"]
        cmds.append(base + args)
    if "pfc" in changed or "cable_len" in changed:
        # mlnx_qos sends PFC enable and delay (cable length) in one dcbnl call: passing only one
        # of them resets the other to 0, so always pass both.
        pfc = want.get("pfc", raw.get("pfc"))
        cable = want.get("cable_len", raw.get("cable_len") or 0)
        cmds.append([*base, "--pfc", _csv(pfc), "--cable_len", str(cable)])
    if "ets" in changed:
        ets = want["ets"]
        cmds.append([*base, "--prio_tc", _csv(ets["prio_tc"]), "--tsa", _csv(ets["tsa"]), "--tcbw", _csv(ets["tc_bw"])])
    if "prio2buffer" in changed:
        cmds.append([*base, "--prio2buffer", _csv(want["prio2buffer"])])
    if "buffer_size" in changed:
        cmds.append([*base, "--buffer_size", _csv(want["buffer_size"])])
    if "default_prio" in changed:
        cmds.append([*base, "--defltprio", f"set,{want['default_prio']}"])
    return cmds


def _dcb_commands(nd: str, changed: List[str], want: Dict[str, Any], raw: Dict[str, Any]) -> List[List[str]]:
    cmds = []
    if "trust" in changed and want["trust"] == "pcp":
        cmds.append(["dcb", "app", "flush", "dev", nd, "dscp-prio"])
    if "dscp2prio" in changed or ("trust" in changed and want["trust"] == "dscp"):
        pairs = [f"{d}:{want['dscp2prio'][d][0]}" for d in sorted(want["dscp2prio"], key=int)]
        cmds.append(["dcb", "app", "replace", "dev", nd, "dscp-prio", *pairs])
    if "default_prio" in changed:
        cmds.append(["dcb", "app", "replace", "dev", nd, "default-prio", str(want["default_prio"])])
    if "pfc" in changed or "cable_len" in changed:
        cmd = ["dcb", "pfc", "set", "dev", nd, "prio-pfc"]
        cmd += [f"{p}:{'on' if v else 'off'}" for p, v in enumerate(want["pfc"])]
        if "cable_len" in want:
            cmd += ["delay", str(want["cable_len"])]
        cmds.append(cmd)
    if "ets" in changed:
        ets = want["ets"]
        cmds.append(
            ["dcb", "ets", "set", "dev", nd, "prio-tc"]
            + [f"{p}:{t}" for p, t in enumerate(ets["prio_tc"])]
            + ["tc-tsa"]
            + [f"{t}:{s}" for t, s in enumerate(ets["tsa"])]
            + ["tc-bw"]
            + [f"{t}:{b}" for t, b in enumerate(ets["tc_bw"])]
        )
    if "prio2buffer" in changed or "buffer_size" in changed:
        cmd = ["dcb", "buffer", "set", "dev", nd]
        if "prio2buffer" in want:
            cmd += ["prio-buffer"] + [f"{p}:{b}" for p, b in enumerate(want["prio2buffer"])]
        if "buffer_size" in want:
            cmd += ["buffer-size"] + [f"{b}:{s}" for b, s in enumerate(want["buffer_size"])]
        cmds.append(cmd)
    return cmds


def apply_changes(
    iface: Dict[str, Any], backend: str, changed: List[str], want: Dict[str, Any], raw: Dict[str, Any], io: HostIO
) -> List[str]:
    """Make the host match ``want`` for the ``changed`` keys. Returns what was done."""
    nd = iface["netdev"]
    done = []
    if "mtu" in changed:
        # MTU first: the RoCE path MTU follows the netdev MTU.
        io.write(_sysfs_paths(iface)["mtu"], f"{want['mtu']}\n")
        done.append(f"mtu={want['mtu']}")
    builder = _mlnx_qos_commands if backend == "mlnx_qos" else _dcb_commands
    for cmd in builder(nd, changed, want, raw):
        io.check(cmd)
        done.append(" ".join(cmd))
    paths = _sysfs_paths(iface)
    if "ecn" in changed:
        for key, flag in sorted(want["ecn"].items()):
            point, prio = key.split("/")
            io.write(f"{paths['ecn']}/{point}/enable/{prio}", f"{flag}\n")
        done.append("ecn " + ",".join(f"{k}={v}" for k, v in sorted(want["ecn"].items())))
    if "cnp_dscp" in changed or "cnp_prio" in changed:
        if io.exists(paths["ecn"]):
            io.write(paths["ecn"] + "/roce_np/cnp_dscp", f"{want['cnp_dscp']}\n")
            io.write(paths["ecn"] + "/roce_np/cnp_802p_prio", f"{want['cnp_prio']}\n")
        else:
            dbg = _debugfs_cc(iface, io)
            if dbg:
                io.write(dbg + "/np_cnp_dscp", f"{want['cnp_dscp']}\n")
                io.write(dbg + "/np_cnp_prio", f"{want['cnp_prio']}\n")
        done.append(f"cnp dscp={want['cnp_dscp']} prio={want['cnp_prio']}")
    if "traffic_class" in changed:
        io.write(paths["tc"], f"{want['traffic_class']}\n")
        done.append(f"traffic_class={want['traffic_class']}")
    if "roce_tos" in changed or "roce_mode" in changed:
        io.mkdir(paths["cm_dev"])
        if not io.exists(paths["cm_port"]):  # configfs creates ports/N on mkdir; a lab tree does not
            os.makedirs(io.path(paths["cm_port"]))
        if "roce_mode" in changed:
            io.write(paths["cm_port"] + "/default_roce_mode", want["roce_mode"] + "\n")
            done.append(f"default_roce_mode={want['roce_mode']}")
        if "roce_tos" in changed:
            io.write(paths["cm_port"] + "/default_roce_tos", f"{want['roce_tos']}\n")
            done.append(f"default_roce_tos={want['roce_tos']}")
    if "global_pause" in changed:
        io.check(["ethtool", "-A", nd, "autoneg", "off", "rx", "off", "tx", "off"])
        done.append(f"ethtool -A {nd} autoneg off rx off tx off")
    return done


def run_plan_interfaces(
    interfaces: List[Dict[str, Any]], backend_req: str, io: HostIO, check_mode: bool
) -> Dict[str, Any]:
    """Read -> diff -> (apply) -> read back, for every interface of a plan."""
    backend = choose_backend(backend_req, io)
    results = []
    changed_any = False
    warnings = []  # type: List[str]
    for iface in interfaces:
        before, raw, warns = read_state(iface, backend, io)
        warnings.extend(warns)
        want = desired_state(iface, before)
        changed = diff_keys(before, want)
        done = []  # type: List[str]
        after = before
        if changed and not check_mode:
            done = apply_changes(iface, backend, changed, want, raw, io)
            after, _raw, _w = read_state(iface, backend, io)
            left = diff_keys(after, want)
            if left:
                still = "; ".join(f"{k}={after.get(k)!r} (want {want[k]!r})" for k in left)
                raise QosError(f"{iface['netdev']}: after applying, still different: {still}")
        elif changed:
            after = dict(before)
            after.update({k: want[k] for k in changed})
        changed_any = changed_any or bool(changed)
        results.append(
            {
                "netdev": iface["netdev"],
                "rdma_device": iface.get("rdma_device"),
                "rail": iface.get("rail"),
                "role": iface.get("role"),
                "changed_keys": changed,
                "actions": done,
                "before": before,
                "after": after,
                "roce_active_mtu": roce_active_mtu(after.get("mtu") or 0),
            }
        )
    return {"backend": backend, "changed": changed_any, "interfaces": results, "warnings": warnings}


def run_acs(bridges: List[str], clear_mask: int, io: HostIO, check_mode: bool) -> Dict[str, Any]:
    """Clear the ACS redirect bits on each bridge (setpci read -> diff -> write -> read back)."""
    results = []
    changed_any = False
    for bdf in bridges:
        reg = "ECAP_ACS+0x6.w"
        rc, out, err = io.run(["setpci", "-s", bdf, reg])
        if rc != 0 or not out.strip():
            results.append(
                {"bdf": bdf, "skipped": f"no ACS capability ({(err or out).strip()})", "before": None, "after": None}
            )
            continue
        before = parse_setpci_word(out)
        want = before & ~clear_mask & 0xFFFF
        after = before
        if want != before:
            changed_any = True
            if check_mode:
                after = want
            else:
                io.check(["setpci", "-s", bdf, f"{reg}={want:04x}"])
                after = parse_setpci_word(io.check(["setpci", "-s", bdf, reg]))
                if after != want:
                    raise QosError(f"{bdf}: ACS control reads {after:04x} after writing {want:04x}")
        results.append(
            {
                "bdf": bdf,
                "before": f"{before:04x}",
                "after": f"{after:04x}",
                "redirect": bool(after & ACS_REDIRECT_MASK),
            }
        )
    return {"changed": changed_any, "bridges": results}


def drift_lines(result: Dict[str, Any]) -> List[str]:
    """Human-readable drift from a run result, for the boot-time log."""
    lines = []
    for iface in result.get("interfaces") or []:
        for key in iface["changed_keys"]:
            lines.append(f"drift {iface['netdev']} {key}: {iface['before'].get(key)!r} -> {iface['after'].get(key)!r}")
    return lines
