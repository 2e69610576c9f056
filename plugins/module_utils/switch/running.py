# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A leaf's running QoS, read from what the network team exports or the switch's API returns, in one
shape for both operating systems, per port:

    {"trust": "l3" | "l2" | ..., "dscp": {dscp: priority} or None (DSCP not trusted),
     "pfc": [priorities], "prio_tc": {priority: traffic class},
     "ecn": {traffic class: {"enabled", "min_threshold", "max_threshold", "probability"}},
     "mtu": bytes}

NVUE: the output of ``nv config show -o json`` (``[{"header": ...}, {"set": TREE}]``) or the tree a
``GET /nvue_v1/?rev=applied`` returns. Only the configuration is there, so what ``nv set qos roce``
implies is filled in from NVIDIA's documented RoCE defaults (Cumulus Linux user guide, "RDMA over
Converged Ethernet - RoCE": trust on DSCP, DSCP N to switch priority N/8, switch priority 3 to
traffic class 3 and 6 to 6, the others to 0, PFC on switch priority 3 in lossless mode, ECN on
traffic classes 0 and 3 from 150000 to 1500000 bytes at probability 100) and an interface without
``link mtu`` has Cumulus Linux's 9216. The ``default-global`` profiles are read; per-port QoS
profiles are not.

SONiC: ``config_db.json`` (or its QoS tables): PORT_QOS_MAP (dscp_to_tc_map, tc_to_queue_map,
pfc_enable), DSCP_TO_TC_MAP, TC_TO_QUEUE_MAP, QUEUE (wred_profile), WRED_PROFILE (ecn, green_*) and
PORT (mtu, 9100 when absent), as the SONiC configuration manual describes them. The traffic class is
the priority there (PFC pauses the priorities of pfc_enable).
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Mapping, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports as _ports

PROFILE = "default-global"
NVUE_DEFAULT_MTU = 9216
SONIC_DEFAULT_MTU = 9100
ROCE_PFC = 3
ROCE_ECN = {"enabled": True, "min_threshold": 150000, "max_threshold": 1500000, "probability": 100}
ROCE_ECN_TCS = (0, 3)
ROCE_PRIO_TC = {p: (p if p in (3, 6) else 0) for p in range(8)}


class RunningError(ValueError):
    """An export this module cannot read; the message says what was expected."""


def number(value: Any) -> Optional[int]:
    """An integer from an int or a string of digits (config_db keeps every value as a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]+\s*", value):
        return int(value)
    return None


# --------------------------------------------------------------------------------------------- NVUE
def nvue_tree(export: Any) -> Mapping[str, Any]:
    """The configuration tree of an ``nv config show -o json`` export or of a revision's GET."""
    if isinstance(export, list):
        trees = [item["set"] for item in export if isinstance(item, Mapping) and isinstance(item.get("set"), Mapping)]
        if not trees:
            raise RunningError('an "nv config show -o json" export is a list with a {"set": {...}} item; none found')
        return trees[0]
    if isinstance(export, Mapping):
        return export.get("set") if isinstance(export.get("set"), Mapping) else export
    raise RunningError("an NVUE configuration is a JSON list or object")


def _nvue_interfaces(tree: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    """{swpN: its settings}; a key that names a range (swp1-32) or a list (swp1,swp3, or NVUE's
    shorter swp2,6) covers each port."""
    out: Dict[str, Mapping[str, Any]] = {}
    for key, value in (tree.get("interface") or {}).items():
        parts = [p.strip() for p in str(key).split(",")]
        # NVUE writes a list of ports of one prefix once: swp2,6 is swp2 and swp6.
        full = [p if not p[:1].isdigit() else "swp" + p for p in parts]
        try:
            names = _ports.expand(",".join(full), "nvue")
        except _ports.PortRangeError:
            continue  # not only front-panel ports (eth0, lo, bonds, VLANs)
        for name in names:
            out[name] = value if isinstance(value, Mapping) else {}
    return out


def nvue(export: Any, ports: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    tree = nvue_tree(export)
    qos = tree.get("qos") or {}
    roce = qos.get("roce")
    roce_on = isinstance(roce, Mapping) and roce.get("enable", "on") == "on"
    lossless = roce_on and roce.get("mode", "lossless") != "lossy"
    mapping = ((qos.get("mapping") or {}).get(PROFILE)) or {}
    trust = mapping.get("trust") or ("both" if roce_on else "l2")
    dscp: Optional[Dict[int, int]] = None
    if trust in ("l3", "both"):
        dscp = {d: d >> 3 for d in range(64)}
        for key, value in (mapping.get("dscp") or {}).items():
            if number(key) is not None and isinstance(value, Mapping):
                dscp[number(key)] = number(value.get("switch-priority"))
    prio_tc = dict(ROCE_PRIO_TC) if roce_on else {p: p for p in range(8)}
    egress = ((qos.get("egress-queue-mapping") or {}).get(PROFILE) or {}).get("switch-priority") or {}
    for key, value in egress.items():
        if number(key) is not None and isinstance(value, Mapping):
            prio_tc[number(key)] = number(value.get("traffic-class"))
    pfc_profile = (qos.get("pfc") or {}).get(PROFILE)
    if isinstance(pfc_profile, Mapping) and pfc_profile.get("switch-priority"):
        pfc = sorted(number(k) for k in pfc_profile["switch-priority"] if number(k) is not None)
    else:
        pfc = [ROCE_PFC] if lossless else []
    ecn: Dict[int, Dict[str, Any]] = {tc: dict(ROCE_ECN) for tc in ROCE_ECN_TCS} if roce_on else {}
    classes = ((qos.get("congestion-control") or {}).get(PROFILE) or {}).get("traffic-class") or {}
    for key, value in classes.items():
        for tc in _tc_keys(key):
            entry = ecn.setdefault(
                tc, {"enabled": False, "min_threshold": None, "max_threshold": None, "probability": None}
            )
            if isinstance(value, Mapping):
                if "ecn" in value:
                    entry["enabled"] = value["ecn"] in ("enable", "enabled", "on", True)
                for field in ("min-threshold", "max-threshold", "probability"):
                    if field in value:
                        entry[field.replace("-", "_")] = number(value[field])
    interfaces = _nvue_interfaces(tree)
    out = {}
    for port in ports:
        link = (interfaces.get(port) or {}).get("link") or {}
        mtu = number(link.get("mtu")) if "mtu" in link else NVUE_DEFAULT_MTU
        out[port] = {"trust": trust, "dscp": dscp, "pfc": pfc, "prio_tc": prio_tc, "ecn": ecn, "mtu": mtu}
    return out


def _tc_keys(key: Any) -> List[int]:
    """Traffic classes of a key: 3, "3", "4,5,7" or "0-2"."""
    out: List[int] = []
    for part in str(key).split(","):
        bounds = part.strip().split("-")
        if all(number(b) is not None for b in bounds) and len(bounds) in (1, 2):
            out.extend(range(number(bounds[0]), number(bounds[-1]) + 1))
    return out


# --------------------------------------------------------------------------------------------- SONiC
def _ref(value: Any) -> Optional[str]:
    """A table reference: NAME, or the older [TABLE|NAME]."""
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"\[[A-Z_]+\|(.+)\]", value.strip())
    return match.group(1) if match else value.strip()


def _sonic_keys(table: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    """{port: entry} of a per-port table whose keys may list several ports (Ethernet0,Ethernet4)."""
    out: Dict[str, Mapping[str, Any]] = {}
    for key, value in (table or {}).items():
        for port in str(key).split(","):
            out[port.strip()] = value
    return out


def _sonic_queues(table: Mapping[str, Any]) -> Dict[str, Dict[int, Mapping[str, Any]]]:
    """{port: {queue: entry}} of QUEUE, whose keys are PORTS|QUEUES (Ethernet0,Ethernet4|3-4)."""
    out: Dict[str, Dict[int, Mapping[str, Any]]] = {}
    for key, value in (table or {}).items():
        if "|" not in str(key):
            continue
        ports, queues = str(key).split("|", 1)
        for port in ports.split(","):
            for queue in _tc_keys(queues):
                out.setdefault(port.strip(), {})[queue] = value
    return out


def sonic(config_db: Any, ports: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    if not isinstance(config_db, Mapping):
        raise RunningError("a config_db.json is a JSON object of tables (PORT, PORT_QOS_MAP, ...)")
    port_qos = _sonic_keys(config_db.get("PORT_QOS_MAP") or {})
    port_table = config_db.get("PORT") or {}
    queues = _sonic_queues(config_db.get("QUEUE") or {})
    wred = config_db.get("WRED_PROFILE") or {}
    out = {}
    for port in ports:
        qos = port_qos.get(port) or {}
        dscp_map = (config_db.get("DSCP_TO_TC_MAP") or {}).get(_ref(qos.get("dscp_to_tc_map")) or "")
        dscp = {number(k): number(v) for k, v in dscp_map.items()} if isinstance(dscp_map, Mapping) else None
        tc_queue_map = (config_db.get("TC_TO_QUEUE_MAP") or {}).get(_ref(qos.get("tc_to_queue_map")) or "")
        tc_queue = {p: p for p in range(8)}
        if isinstance(tc_queue_map, Mapping):
            tc_queue.update({number(k): number(v) for k, v in tc_queue_map.items()})
        pfc = sorted(_tc_keys(qos.get("pfc_enable") or ""))
        ecn = {}
        for tc in range(8):
            entry = (queues.get(port) or {}).get(tc_queue.get(tc))
            profile = wred.get(_ref((entry or {}).get("wred_profile")) or "")
            if isinstance(profile, Mapping):
                ecn[tc] = {
                    "enabled": profile.get("ecn") not in (None, "ecn_none")
                    and str(profile.get("wred_green_enable", "true")) == "true",
                    "min_threshold": number(profile.get("green_min_threshold")),
                    "max_threshold": number(profile.get("green_max_threshold")),
                    "probability": number(profile.get("green_drop_probability")),
                }
        mtu_text = (port_table.get(port) or {}).get("mtu")
        out[port] = {
            "trust": "dscp" if dscp is not None else None,
            "dscp": dscp,
            "pfc": pfc,
            "prio_tc": {p: p for p in range(8)},
            "ecn": ecn,
            "mtu": number(mtu_text) if mtu_text is not None else SONIC_DEFAULT_MTU,
        }
    return out


def read(os_name: str, export: Any, ports: Iterable[str]) -> Dict[str, Dict[str, Any]]:
    return nvue(export, ports) if os_name == "nvue" else sonic(export, ports)
