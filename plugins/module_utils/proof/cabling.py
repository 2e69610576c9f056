# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cabling by LLDP as validate checks: one check per rail NIC of a node, in the shape of ``_gates``
(category ``cabling``), so that the report, its JUnit and the failure list name the node, the NIC,
its netdev and rail, the switch and port the plan expects and the one LLDP found.

The comparison is switch.lldp's; this turns its records into checks. ``collected`` is what
``gpufabric.rollout.lldp_neighbours`` returned on the node: its ``lldp`` (lldpctl's JSON), or, with
``source`` none or a failed run (``msg``), the reason no LLDP source could be read, which fails
every rail NIC of the node rather than passing it. Pure; no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp as _lldp

CATEGORY = "cabling"


def rails_of(interfaces: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """The rail NICs of a node plan's ``roce.interfaces``: [{rail, nic, netdev}] (non-rail NICs left out)."""
    return [
        {"rail": int(i["rail"]), "nic": i.get("rdma_device") or i["netdev"], "netdev": i["netdev"]}
        for i in interfaces
        if i.get("rail") is not None and i.get("netdev")
    ]


def checks(
    node: str,
    leaves: Mapping[str, Mapping[str, Any]],
    interfaces: Sequence[Mapping[str, Any]],
    collected: Mapping[str, Any],
) -> List[Dict[str, Any]]:
    """One check per rail NIC of ``node`` (``interfaces``: its plan's ``roce.interfaces``) against the
    switch plan's ``leaves``; one failing check for the node when lldpctl's output cannot be read."""
    if collected.get("failed") or collected.get("msg") or collected.get("lldp") is None:
        data = {
            "lldp": None,
            "reason": collected.get("reason") or collected.get("msg") or "lldp_neighbours did not run",
        }
    else:
        data = {"lldp": collected["lldp"]}
    data["rails"] = rails_of(interfaces)
    result = _lldp.check(leaves, {node: data})
    out = [_record(node, rec, rec["passed"]) for rec in result["checked"]]
    out += [_record(node, rec, False) for rec in result["findings"] if rec["nic"] is None]
    return out


def _record(node: str, rec: Mapping[str, Any], passed: bool) -> Dict[str, Any]:
    subject = f"{rec['nic']} ({rec['netdev']}, rail {rec['rail']})" if rec["nic"] else "lldpctl"
    return _check(
        CATEGORY,
        node,
        subject,
        "LLDP neighbour",
        measured=rec["found"],
        expected=rec["expected"],
        threshold=rec["expected"],
        unit="",
        passed=passed,
    )
