"""The lab's cabling: which leaf port each rail NIC of a lab node faces, from the lab's switch intent.

    cabling.py NODE SNAPSHOT < gpufabric_switches.json    (prints the node's cabling map, JSON)

A lab node has no cable; its rail NICs "face" the ports that gpufabric_switches gives the node
(inventory/lab/group_vars/all/switches.yml: the n-th port of a rail's range faces the n-th node).
Which netdev is rail r's comes from the hardware snapshot the node runs on, read with the
collection's own discovery (plugins/module_utils/discover/topology.py), as the plan will read it; the
ports come from the same expansion the plan and the cabling check use (switch.qos_plan.leaf_ports,
switch.lldp.expected_ports). The map is {netdev: {switch, port, address, rail}}; lab/prepare.yml
writes it to the node, where the lldpctl stand-in (lab/simulators/lldpctl) reports it as the
neighbours lldpd would have heard. A rail the intent gives no port for this node is left out (the
stand-in then reports no neighbour for that NIC, as an unplugged cable would).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Mapping

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / ".collections"))

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.topology import discover
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import lldp, qos_plan


def _snapshots():
    spec = importlib.util.spec_from_file_location("gpufabric_lab_snapshots", REPO / "lab" / "snapshots" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rail_netdevs(snapshot: str) -> Dict[int, str]:
    """{rail: netdev} of the snapshot's hardware, as discovery finds the rails."""
    with tempfile.TemporaryDirectory(prefix="gpufabric-cabling.") as tmp:
        root = _snapshots().materialize(snapshot, tmp)
        topo = Path(root) / "nvidia-smi-topo-m.txt"
        facts = discover(root, topo.read_text() if topo.is_file() else None)
    return {int(r["rail"]): r["netdev"] for r in facts.get("rails") or []}


def cabling(node: str, rails: Mapping[int, str], switches: Mapping[str, Any]) -> Dict[str, Dict[str, Any]]:
    """{netdev: {switch, port, address, rail}} of ``node`` under the switch intent ``switches``."""
    leaves = {leaf["name"]: leaf for leaf in switches.get("leaves") or []}
    planned = {name: {"ports": qos_plan.leaf_ports(leaf)} for name, leaf in leaves.items()}
    out: Dict[str, Dict[str, Any]] = {}
    for (name, rail), (leaf, port) in sorted(lldp.expected_ports(planned).items()):
        if name == node and rail in rails:
            address = leaves[leaf].get("address") or leaf
            out[rails[rail]] = {"switch": leaf, "port": port, "address": address, "rail": rail}
    return out


def main(argv) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: cabling.py NODE SNAPSHOT < gpufabric_switches.json\n")
        return 2
    node, snapshot = argv
    switches = json.loads(sys.stdin.read() or "{}") or {}
    print(json.dumps(cabling(node, rail_netdevs(snapshot), switches), indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
