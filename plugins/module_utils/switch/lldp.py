# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cabling by LLDP: does rail r's NIC on every GPU node reach rail r's leaf, on the port the switch
intent gives that node?

``neighbours`` reads lldpd's ``lldpctl -f json`` or ``-f json0`` output (shapes as lldpd's own
integration tests show them, tests/integration/test_lldpcli.py of github.com/lldpd/lldpd): per
local interface the neighbour's chassis (its system name) and port (its ID, an ifname such as swp9
or Ethernet36 on Cumulus Linux and SONiC, and its description). ``check`` compares each rail NIC's
neighbour with the switch plan and names every NIC that reaches another switch or port, or none.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple


class LldpError(ValueError):
    """Output this module cannot read; the message says what was expected."""


def _value(item: Any) -> Optional[str]:
    """json0 wraps every value as [{"value": V}]; json gives V."""
    if isinstance(item, list):
        item = item[0] if item else None
    if isinstance(item, Mapping):
        item = item.get("value")
    return None if item is None else str(item)


def _interfaces(export: Any) -> List[Tuple[str, Mapping[str, Any]]]:
    """[(local interface, its entry)] of either format."""
    if not isinstance(export, Mapping) or "lldp" not in export:
        raise LldpError('lldpctl -f json output is an object with an "lldp" key')
    lldp = export["lldp"]
    if isinstance(lldp, list):  # json0: [{"interface": [{"name": ..., ...}]}]
        return [(str(i.get("name")), i) for block in lldp for i in (block.get("interface") or [])]
    interfaces = (lldp or {}).get("interface") or {}
    if isinstance(interfaces, Mapping):  # json, one interface: {"eth0": {...}}
        return list(interfaces.items())
    return [(name, entry) for item in interfaces for name, entry in item.items()]  # json, several


def _chassis(entry: Mapping[str, Any]) -> Optional[str]:
    chassis = entry.get("chassis")
    if isinstance(chassis, list):  # json0
        chassis = chassis[0] if chassis else {}
        return _value(chassis.get("name")) or _value((chassis.get("id") or [{}])[0])
    if isinstance(chassis, Mapping) and chassis:
        name, body = next(iter(chassis.items()))
        if name == "id" or not isinstance(body, Mapping):  # no system name: the chassis ID itself
            return _value(chassis.get("id"))
        return name
    return None


def _port(entry: Mapping[str, Any]) -> Tuple[Optional[str], Optional[str]]:
    port = entry.get("port")
    if isinstance(port, list):
        port = port[0] if port else {}
    port = port or {}
    return _value(port.get("id")), _value(port.get("descr"))


def neighbours(export: Any) -> Dict[str, Dict[str, Optional[str]]]:
    """{local interface: {switch, port, descr}} of the neighbours lldpd has heard."""
    out = {}
    for name, entry in _interfaces(export):
        port, descr = _port(entry)
        out[name] = {"switch": _chassis(entry), "port": port, "descr": descr}
    return out


def expected_ports(leaves: Mapping[str, Mapping[str, Any]]) -> Dict[Tuple[str, int], Tuple[str, str]]:
    """{(node, rail): (leaf, port)} of the switch plan."""
    out = {}
    for leaf, plan in leaves.items():
        for port, facing in plan["ports"].items():
            if facing.get("node"):
                out[(facing["node"], int(facing["rail"]))] = (leaf, port)
    return out


def check(leaves: Mapping[str, Mapping[str, Any]], nodes: Mapping[str, Mapping[str, Any]]) -> Dict[str, Any]:
    """``nodes``: {node: {"rails": [{rail, nic, netdev}], "lldp": lldpctl output}}; ``"lldp": None`` with a
    ``"reason"`` is a node where no LLDP source could be read (lldpd absent or not running): each of its
    rail NICs fails with that reason rather than passing unseen. Returns {ok, findings, checked}: a
    finding per rail NIC whose neighbour is not rail r's leaf on the planned port, naming node, NIC,
    netdev, rail, expected and found switch and port; ``checked`` has every rail NIC with ``passed``."""
    wanted = expected_ports(leaves)
    findings: List[Dict[str, Any]] = []
    checked: List[Dict[str, Any]] = []
    for node, data in sorted(nodes.items()):
        heard: Dict[str, Dict[str, Optional[str]]] = {}
        silent = None
        if data.get("lldp") is None:
            silent = f"no LLDP source ({data.get('reason') or 'nothing was read'})"
        else:
            try:
                heard = neighbours(data.get("lldp"))
            except LldpError as exc:
                findings.append(_finding(node, None, None, None, None, f"unreadable LLDP output ({exc})"))
                continue
        for rail in sorted(data.get("rails") or [], key=lambda r: int(r["rail"])):
            expected = wanted.get((node, int(rail["rail"])))
            found = heard.get(rail["netdev"])
            passed = False
            if silent:
                text = silent
            elif found is None or not found.get("switch"):
                text = "no LLDP neighbour"
            else:
                text = f"{found['switch']} {found['port']}"
                passed = (
                    bool(expected) and found["switch"] == expected[0] and expected[1] in (found["port"], found["descr"])
                )
            record = _finding(node, rail["nic"], rail["netdev"], int(rail["rail"]), expected, text)
            checked.append(dict(record, passed=passed))
            if not passed:
                findings.append(record)
    return {"ok": not findings, "findings": findings, "checked": checked}


def _finding(node, nic, netdev, rail, expected, found: str) -> Dict[str, Any]:
    want = (
        f"{expected[0]} {expected[1]}"
        if expected
        else "a port in gpufabric_switches (none names this node on this rail)"
    )
    where = f"{node} {nic} ({netdev}, rail {rail})" if nic else node
    return {
        "node": node,
        "nic": nic,
        "netdev": netdev,
        "rail": rail,
        "expected": want,
        "found": found,
        "message": f"{where}: {found}, expected {want}"
        if found.startswith(("no LLDP", "unreadable"))
        else f"{where}: reaches {found}, expected {want}",
    }
