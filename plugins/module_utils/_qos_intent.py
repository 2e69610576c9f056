# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE intent: the fabric defaults, the roce role's options and their validation.

``validate_intent`` lists every problem with ``gpufabric_fabric`` and the ``roce_*`` options,
each message naming the variable and the allowed values. Moved here unchanged from _qos.py;
planning is in _qos_plan.py.

Pure Python (>= 3.8), stdlib only, no AnsibleModule.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils._qos_parsers import (
    MAX_MTU,
    MIN_MTU_FOR_4096,
    ROCE_OVERHEAD,
    TSA_NAMES,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils._topology_parsers import ACS_REDIRECT_MASK

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
