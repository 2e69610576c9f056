# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VLAN id of an 802.1Q VLAN netdev, as Linux's 8021q module shows it under ``/proc/net/vlan``.

Source of the formats: torvalds/linux net/8021q/vlanproc.c (``vlan_seq_show``, ``vlandev_seq_show``).

* ``/proc/net/vlan/config``: two header lines (``VLAN Dev name | VLAN ID`` and ``Name-Type: <type>``),
  then one line per VLAN netdev: ``<name> | <VID> | <real device>``, the name padded with blanks.
* ``/proc/net/vlan/<VLAN netdev>``: its first line is
  ``<name>  VID: <VID>  REORDER_HDR: <0|1>  dev->priv_flags: <hex>`` (a tab after the VID); the
  statistics and the egress/ingress priority maps follow and are not read here.

A VID is 0..4094: the kernel refuses 4095 (VLAN_VID_MASK) when the netdev is made. Both parsers raise
ParseError naming the offending line on anything else; they never return a partial answer.

Runs on target hosts: Python >= 3.8, stdlib only.
"""

from __future__ import annotations

import re
from typing import Any, Dict

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError, as_text

MAX_VID = 4094
_NAME = re.compile(r"[^\s/|:]{1,15}")  # a netdev name: at most IFNAMSIZ - 1 characters, no blank or '/'
_VID = re.compile(r"[0-9]{1,4}", re.ASCII)
_DEV_LINE = re.compile(
    r"^(?P<name>\S+)\s+VID:\s+(?P<vid>\S+)\s+REORDER_HDR:\s+(?P<reorder>[01])\s+dev->priv_flags:\s+[0-9a-fA-F]+\s*$"
)


def _vid(text: str, line: str, lineno: int) -> int:
    if not _VID.fullmatch(text) or int(text) > MAX_VID:
        raise ParseError(f"VLAN id {text!r} is not a number 0..{MAX_VID}", line=line, lineno=lineno)
    return int(text)


def _name(text: str, what: str, line: str, lineno: int) -> str:
    if not _NAME.fullmatch(text):
        raise ParseError(f"{what} {text!r} is not a netdev name", line=line, lineno=lineno)
    return text


def parse_vlan_config(data: Any) -> Dict[str, Dict[str, Any]]:
    """``{VLAN netdev: {"vid": int, "real_dev": str}}`` of ``/proc/net/vlan/config`` ({} with no VLAN)."""
    lines = as_text(data, "/proc/net/vlan/config").splitlines()
    if len(lines) < 2:
        raise ParseError("expected the two header lines of /proc/net/vlan/config", lineno=len(lines) or None)
    if not lines[0].startswith("VLAN Dev name"):
        raise ParseError("the first line is not the 'VLAN Dev name | VLAN ID' header", line=lines[0], lineno=1)
    if not lines[1].startswith("Name-Type:"):
        raise ParseError("the second line is not the 'Name-Type:' header", line=lines[1], lineno=2)
    vlans: Dict[str, Dict[str, Any]] = {}
    for lineno, line in enumerate(lines[2:], start=3):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) != 3:
            raise ParseError("expected '<name> | <VID> | <real device>'", line=line, lineno=lineno)
        name = _name(fields[0], "VLAN netdev", line, lineno)
        if name in vlans:
            raise ParseError(f"VLAN netdev {name} is listed twice", line=line, lineno=lineno)
        vid = _vid(fields[1], line, lineno)
        vlans[name] = {"vid": vid, "real_dev": _name(fields[2], "real device", line, lineno)}
    return vlans


def parse_vlan_dev(data: Any) -> Dict[str, Any]:
    """``{"name": str, "vid": int, "reorder_hdr": bool}`` from the first line of ``/proc/net/vlan/<netdev>``."""
    lines = as_text(data, "/proc/net/vlan/<netdev>").splitlines()
    if not lines:
        raise ParseError("empty: expected '<name>  VID: <id>  REORDER_HDR: <0|1>  dev->priv_flags: <hex>'")
    m = _DEV_LINE.match(lines[0])
    if not m:
        raise ParseError(
            "expected '<name>  VID: <id>  REORDER_HDR: <0|1>  dev->priv_flags: <hex>'", line=lines[0], lineno=1
        )
    return {
        "name": _name(m.group("name"), "VLAN netdev", lines[0], 1),
        "vid": _vid(m.group("vid"), lines[0], 1),
        "reorder_hdr": m.group("reorder") == "1",
    }
