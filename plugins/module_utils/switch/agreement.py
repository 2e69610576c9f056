# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Do the leaves agree with the hosts? Each leaf's running QoS (switch.running) is compared, port
by port over the ports that face GPU nodes, with what the hosts were planned with (the leaf's
``intent`` in the switch plan): PFC on the lossless priority and not on the CNPs', DSCP trust, the
DSCP of RoCE data and of CNPs mapped to their priorities, ECN on the lossless traffic class with
the planned thresholds, and a port MTU that carries the hosts' MTU.

A finding names the switch, the ports (as ranges), the nodes on them, the setting and both values;
ports that share a setting, an expected and a found value make one finding.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports as _ports
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import running as _running


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "none"
    return str(value)


def port_mismatches(wanted: Mapping[str, Any], found: Mapping[str, Any]) -> List[Tuple[str, str, str]]:
    """[(setting, expected, found)] of one port."""
    out: List[Tuple[str, str, str]] = []
    lossless, cnp = wanted["lossless_priority"], wanted["cnp_priority"]
    pfc = list(found.get("pfc") or [])
    if wanted["pfc"] and (lossless not in pfc or cnp in pfc):
        out.append(("PFC priority", f"{lossless} (not the CNP priority {cnp})", _text(pfc)))
    if not wanted["pfc"] and lossless in pfc:
        out.append(("PFC priority", f"none on {lossless} (gpufabric_fabric.pfc is false)", _text(pfc)))
    dscp = found.get("dscp")
    if dscp is None:
        out.append(("DSCP trust", "DSCP (trust l3)", _text(found.get("trust"))))
    else:
        for what, code, prio in (("RoCE DSCP", wanted["data_dscp"], lossless), ("CNP DSCP", wanted["cnp_dscp"], cnp)):
            if dscp.get(code) != prio:
                out.append((f"{what} {code} to priority", str(prio), _text(dscp.get(code))))
    tc = (found.get("prio_tc") or {}).get(lossless)
    ecn = (found.get("ecn") or {}).get(tc) or {"enabled": False}
    if bool(ecn.get("enabled")) != wanted["ecn"]["enabled"]:
        out.append(
            (
                f"ECN on traffic class {tc} (priority {lossless})",
                _text(wanted["ecn"]["enabled"]),
                _text(bool(ecn.get("enabled"))),
            )
        )
    elif wanted["ecn"]["enabled"]:
        for field in ("min_threshold", "max_threshold", "probability"):
            if ecn.get(field) != wanted["ecn"][field]:
                out.append(
                    (
                        f"ECN {field.replace('_', ' ')} on traffic class {tc}",
                        str(wanted["ecn"][field]),
                        _text(ecn.get(field)),
                    )
                )
    mtu = found.get("mtu")
    if mtu is None or mtu < wanted["host_mtu"]:
        out.append(("MTU", f">= {wanted['host_mtu']} (gpufabric_fabric.mtu)", _text(mtu)))
    return out


def leaf_findings(name: str, leaf: Mapping[str, Any], export: Any) -> List[Dict[str, Any]]:
    """Findings of one leaf against its export (an unreadable export is one finding)."""
    faced = {port: f for port, f in leaf["ports"].items() if f.get("node")}
    try:
        running = _running.read(leaf["os"], export, list(faced))
    except _running.RunningError as exc:
        return [_finding(name, [], [], "running configuration", f"{leaf['os']} export", str(exc))]
    grouped: Dict[Tuple[str, str, str], List[str]] = {}
    for port in sorted(faced, key=_ports.number):
        for key in port_mismatches(leaf["intent"], running[port]):
            grouped.setdefault(key, []).append(port)
    return [
        _finding(name, ports, [faced[p]["node"] for p in ports], setting, expected, found)
        for (setting, expected, found), ports in grouped.items()
    ]


def _finding(
    switch: str, ports: List[str], nodes: List[str], setting: str, expected: str, found: str
) -> Dict[str, Any]:
    where = f"{switch} {_ports.compress(ports)}" if ports else switch
    on = f" ({', '.join(nodes)})" if nodes else ""
    return {
        "switch": switch,
        "port": _ports.compress(ports),
        "nodes": nodes,
        "setting": setting,
        "expected": expected,
        "found": found,
        "message": f"{where}{on}: {setting} is {found}, the hosts need {expected}",
    }


def export_file(name: str, os_name: str) -> str:
    """The file name of a leaf's export in an export directory: ``LEAF.json`` (NVUE, ``nv config show
    -o json``) or ``LEAF.config_db.json`` (SONiC)."""
    return f"{name}.json" if os_name == "nvue" else f"{name}.config_db.json"


def check(leaves: Mapping[str, Mapping[str, Any]], exports: Mapping[str, Any]) -> Dict[str, Any]:
    """{ok, findings, checked, missing} over every planned leaf; a leaf without an export is missing."""
    findings: List[Dict[str, Any]] = []
    missing: List[str] = []
    for name, leaf in sorted(leaves.items()):
        export: Optional[Any] = exports.get(name)
        if export is None:
            missing.append(name)
            continue
        findings.extend(leaf_findings(name, leaf, export))
    return {
        "ok": not findings and not missing,
        "findings": findings,
        "checked": sorted(set(leaves) - set(missing)),
        "missing": missing,
    }
