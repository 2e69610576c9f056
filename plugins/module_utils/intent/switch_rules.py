# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of the switch intent (gpufabric_switches), run with the cluster intent: ranges, the port
ranges of each leaf, which rails the leaves carry and which nodes they face. Types, required keys
and the operating system's choices are the argument spec's. Called from ``intent.rules``.

Apply mode (``gpufabric_switches.mode: apply``) sends the NVUE leaves' QoS through the NVUE REST API
(playbooks/switches.yml); it needs the API user and password, and it refuses a SONiC leaf: applying
the rendered dellemc.enterprise_sonic tasks is not proven by the collection, and a partial apply
would leave a fabric half configured while reading as applied. The API's CA file and the directory
of exported configurations, when given, must exist on the controller.

A rail of gpufabric_rails.rails that no leaf carries is refused while gpufabric_switches names any
leaf: the agreement and cabling checks would pass that rail unseen, and a partial switch inventory
would read as a checked fabric.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.values import Problems, in_range, is_int
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import ports as _ports

MAX_SWITCH_MTU = 9216  # the largest port MTU of Cumulus Linux and SONiC
MAX_ECN_BYTES = 100000000
SECRETS = ("gpufabric_switch_api_password",)
MASK = "********"


def switches_rules(values: Mapping[str, Any], problems: Problems) -> None:
    _file_rules(values, problems)
    switches = values.get("gpufabric_switches")
    if not isinstance(switches, Mapping):
        return
    p = "gpufabric_switches."
    in_range(problems, p + "mtu", switches.get("mtu"), 1500, MAX_SWITCH_MTU)
    _ecn_rules(switches.get("ecn") or {}, problems)
    leaves = [leaf for leaf in switches.get("leaves") or [] if isinstance(leaf, Mapping)]
    names: Dict[str, int] = {}
    carried: Dict[int, List[str]] = {}
    faced: Dict[Tuple[Any, str], str] = {}  # (rail, node) -> where
    for index, leaf in enumerate(leaves):
        q = f"{p}leaves[{index}]"
        name = leaf.get("name")
        if isinstance(name, str) and name in names:
            problems.append(f"{q}.name: {name!r} is already used by leaves[{names[name]}]; leaf names are unique")
        names.setdefault(str(name), index)
        for rail in _leaf_rules(q, leaf, faced, problems):
            carried.setdefault(rail, []).append(str(name))
    _rail_rules(values, carried, bool(leaves), problems)
    _apply_rules(switches, leaves, values, problems)


def _file_rules(values: Mapping[str, Any], problems: Problems) -> None:
    """The switch API's CA file and the export directory exist on the controller, which reads them."""
    for name, kind, test in (
        ("gpufabric_switch_api_ca_path", "file", os.path.isfile),
        ("gpufabric_switch_export_dir", "directory", os.path.isdir),
    ):
        path = values.get(name)
        if path and not test(str(path)):
            problems.append(f"{name}: {show(path)} is not a {kind} on the controller, where the switches are read from")


def _apply_rules(
    switches: Mapping[str, Any], leaves: List[Mapping[str, Any]], values: Mapping[str, Any], problems: Problems
) -> None:
    """What apply mode needs: the API credentials, and NVUE leaves only."""
    if switches.get("mode") != "apply":
        return
    for index, leaf in enumerate(leaves):
        if leaf.get("os") == "sonic":
            problems.append(
                f"gpufabric_switches.leaves[{index}].os: leaf {show(leaf.get('name'))} is sonic, which mode apply "
                "does not configure (only nvue leaves are applied, through the NVUE REST API); set "
                "gpufabric_switches.mode to render and apply its switches/LEAF.sonic.yaml playbook yourself"
            )
    missing = [n for n in ("gpufabric_switch_api_user", "gpufabric_switch_api_password") if not values.get(n)]
    if missing:
        problems.append(
            f"{' and '.join(missing)}: required when gpufabric_switches.mode is apply (the NVUE user that may create "
            "and apply revisions, its password from Ansible Vault or an AWX credential)"
        )


def mask_secrets(values: Dict[str, Any]) -> Dict[str, Any]:
    """``values`` with the switch API password masked: the checked intent is returned by the plan action
    and feeds the plan files; the password stays in the inventory (the switch tasks read it, no_log)."""
    return {k: (MASK if k in SECRETS and v else v) for k, v in values.items()}


def _ecn_rules(ecn: Mapping[str, Any], problems: Problems) -> None:
    p = "gpufabric_switches.ecn."
    low = in_range(problems, p + "min_threshold", ecn.get("min_threshold"), 1, MAX_ECN_BYTES)
    high = in_range(problems, p + "max_threshold", ecn.get("max_threshold"), 1, MAX_ECN_BYTES)
    in_range(problems, p + "probability", ecn.get("probability"), 1, 100)
    if low and high and ecn["max_threshold"] <= ecn["min_threshold"]:
        problems.append(
            f"{p}max_threshold: {ecn['max_threshold']} is not above min_threshold {ecn['min_threshold']}; "
            "marking starts at min_threshold and reaches its probability at max_threshold"
        )


def _leaf_rules(q: str, leaf: Mapping[str, Any], faced: Dict[Tuple[Any, str], str], problems: Problems) -> List[int]:
    """The rails of one leaf (valid indexes only), its problems appended; ``faced`` collects which
    entry names each node on each rail (a rail NIC is cabled to one port)."""
    os_name = leaf.get("os")
    rails = [r for r in leaf.get("rails") or [] if isinstance(r, Mapping)]
    if not rails and leaf.get("rails") is not None:  # a missing key is the argument spec's "is required"
        problems.append(
            f"{q}.rails: leaf {show(leaf.get('name'))} carries no rail; give at least one rail with its ports"
        )
    used: Dict[str, Tuple[int, Any]] = {}  # port -> (rails index, rail)
    out: List[int] = []
    for index, item in enumerate(rails):
        r = f"{q}.rails[{index}]"
        rail = item.get("rail")
        if in_range(problems, r + ".rail", rail, 0, 63):
            out.append(rail)
        if os_name not in _ports.OSES:
            continue  # the argument spec names the allowed operating systems
        try:
            names = _ports.expand(item.get("ports"), os_name)
        except _ports.PortRangeError as exc:
            problems.append(f"{r}.ports: {exc}")
            continue
        clash = [port for port in names if port in used]
        if clash:
            other, other_rail = used[clash[0]]
            problems.append(
                f"{r}.ports: {item.get('ports')} overlaps rails[{other}] (rail {other_rail}) of leaf "
                f"{show(leaf.get('name'))} on {_ports.compress(clash)}; a port faces one rail"
            )
        for port in names:
            used.setdefault(port, (index, rail))
        nodes = list(item.get("nodes") or [])
        if len(nodes) > len(names):
            problems.append(
                f"{r}.nodes: {len(nodes)} nodes for {len(names)} ports ({item.get('ports')}); "
                "the n-th port faces the n-th node"
            )
        for node in nodes:
            if (rail, node) in faced:
                problems.append(
                    f"{r}.nodes: {node!r} on rail {rail} is already named by {faced[(rail, node)]}; "
                    "a node's rail NIC is cabled to one port"
                )
            faced.setdefault((rail, node), r)
    return out


def _rail_rules(
    values: Mapping[str, Any], carried: Mapping[int, List[str]], any_leaf: bool, problems: Problems
) -> None:
    """Every leaf's rail is a rail of gpufabric_rails.rails (when listed), and every listed rail has a leaf."""
    for rail, leaves in sorted(carried.items()):
        if len(set(leaves)) < len(leaves):
            problems.append(f"gpufabric_switches.leaves: leaf {leaves[0]!r} lists rail {rail} twice; join its ports")
    listed = [r.get("rail") for r in (values.get("gpufabric_rails") or {}).get("rails") or [] if isinstance(r, Mapping)]
    listed = [r for r in listed if is_int(r)]
    if not listed or not any_leaf:
        return  # rails from discovery: the cluster plan checks them against the nodes' rails
    allowed = ", ".join(str(r) for r in sorted(set(listed)))
    for rail, leaves in sorted(carried.items()):
        if rail not in listed:
            problems.append(
                f"gpufabric_switches.leaves: leaf {leaves[0]!r} carries rail {rail}, which is not one of "
                f"gpufabric_rails.rails; allowed: {allowed}"
            )
    for rail in sorted(set(listed) - set(carried)):
        problems.append(
            f"gpufabric_switches.leaves: no leaf carries rail {rail} of gpufabric_rails.rails; name its leaf "
            "(a rail without one would pass the switch checks unseen)"
        )
