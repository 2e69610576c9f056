# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lossless RoCE planning: the per-NIC plan the roce_qos module and the boot script apply,
the ACS endpoints, and the per-rail summary compared across nodes.

It plans from values the plan has checked (plugins/module_utils/plan/node.py): the fabric with
every default filled and ``roce_tos`` resolved, and every roce option present (the roce role's
argument spec holds the defaults). Pure Python (>= 3.8), stdlib only, no AnsibleModule.
"""

from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import NUM_PRIO


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
    """Desired per-NIC state (the 'plan'): the module's input and the boot script's file.

    ``fabric`` and ``options`` are the checked values (see the module docstring); ``options`` has
    the keys of _plan_node.ROCE_OPTIONS, None where a setting is left as the NIC has it.
    """
    lossless = fabric["lossless_priority"]
    pfc_prios = sorted(set(options.get("pfc_priorities") or [lossless])) if fabric["pfc"] else []
    ecn_prios = sorted(set(options.get("ecn_priorities") or [lossless]))
    interfaces = []
    for nic in select_nics(topology, options):
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
                "dscp2prio": {str(fabric["data_dscp"]): lossless, str(fabric["cnp_dscp"]): fabric["cnp_priority"]},
                "pfc": [1 if p in pfc_prios else 0 for p in range(NUM_PRIO)],
                "ecn": {"enabled": bool(fabric["ecn"]), "priorities": ecn_prios},
                "cnp_dscp": fabric["cnp_dscp"],
                "cnp_prio": fabric["cnp_priority"],
                "roce_tos": fabric["roce_tos"],
                "traffic_class": fabric["roce_tos"] if options.get("set_traffic_class") else None,
                "roce_mode": options.get("roce_mode"),
                "mtu": fabric["mtu"],
                "global_pause_off": bool(options.get("global_pause_off")) and bool(pfc_prios),
                "default_prio": options.get("default_priority"),
                "ets": dict(options["ets"]) if options.get("ets") else None,
                "buffer_size": list(options["buffer_size"]) if options.get("buffer_size") else None,
                "prio2buffer": list(options["prio2buffer"]) if options.get("prio2buffer") else None,
                "cable_len": options.get("cable_len"),
            }
            interfaces.append(entry)
    endpoints = acs_endpoints(topology) if options.get("disable_acs_redirect") else []
    return {
        "schema_version": 1,
        "sysroot": sysroot,
        "backend": options["backend"],
        "netns_mode": fabric["rdma_netns_mode"],
        "interfaces": interfaces,
        "acs": {"endpoints": endpoints, "clear_mask": options["acs_clear_mask"]},
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
