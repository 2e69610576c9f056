# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster networking intent against the nodes: nodes grouped by hardware, rails matched to each
group's NICs, subnets carved and checked; _cluster_plan.py assembles the plan. ``gpufabric_rails``
arrives as the plan checked it (argument specs + intent.network_rules.rails_rules, every default filled);
what is refused here needs the nodes or the carved subnets, and the errors name the rail or node
group and the numbers.

Pure and typed, no AnsibleModule.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import re
from typing import Any, Dict, List, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.registry import DEFAULT_DRIVER
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.ipplan import (
    address,
    carve,
    check_gateway,
    default_gateway,
    find_overlaps,
    network,
)

SHARED_TYPES = ("macvlan", "ipvlan", "host-device")


class ClusterPlanError(ValueError):
    """Intent and discovered hardware do not make a valid cluster plan."""


# --------------------------------------------------------------------------------------------- helpers
def label_value(text: Any) -> str:
    """A Kubernetes label value from free text ("ConnectX-7" stays, "A100 80GB" -> "A100-80GB")."""
    value = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text or "unknown")).strip("-_.")[:63].strip("-_.")
    return value or "unknown"


def dns_name(text: str) -> str:
    value = re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-")
    return value[:63].strip("-") or "x"


def short_list(names: List[str], limit: int = 4) -> str:
    if len(names) <= limit:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:limit]), len(names) - limit)


def node_rails(node: str, facts: Dict[str, Any]) -> Dict[int, Dict[str, Any]]:
    """rail index -> facts of the NIC serving it on this node (compute NICs with a rail)."""
    by_rail: Dict[int, Dict[str, Any]] = {}
    rail_netdev = {r.get("rail"): r.get("netdev") for r in facts.get("rails") or []}
    rail_roce = {r.get("rail"): r.get("roce_netdev") for r in facts.get("rails") or []}
    rail_vlan = {r.get("rail"): r.get("roce_vlan") for r in facts.get("rails") or []}
    for nic in facts.get("nics") or []:
        rail = nic.get("rail")
        if rail is None:
            continue
        netdev = rail_netdev.get(rail) or (nic.get("netdevs") or [None])[0]
        port = None
        for p in nic.get("ports") or []:
            if p.get("netdev") == netdev or port is None:
                port = p
        by_rail[int(rail)] = {
            "rail": int(rail),
            "bdf": nic.get("bdf"),
            "vendor_id": str(nic.get("vendor_id") or ""),
            "device_id": str(nic.get("device_id") or ""),
            "model": nic.get("model") or "unknown",
            "driver": nic.get("driver") or DEFAULT_DRIVER.name,
            "function": nic.get("function") or "pf",
            "numa_node": nic.get("numa_node"),
            "netdev": netdev,
            # where the RoCE v2 IPv4 address and GID live: a VLAN netdev on the PF, or the PF's own
            "roce_netdev": rail_roce.get(rail) or netdev,
            # its 802.1Q VLAN id when that is a VLAN netdev whose id discovery read (else None)
            "roce_vlan": rail_vlan.get(rail) if (rail_roce.get(rail) or netdev) != netdev else None,
            "rdma_device": nic.get("rdma_device"),
            "port": int((port or {}).get("port") or 1),
            "mtu": (port or {}).get("mtu"),
            "sriov": nic.get("sriov"),
        }
    return by_rail


# --------------------------------------------------------------------------------------------- groups
# The node labels of a node group (under the label prefix): the keys the cluster plan owns on Nodes.
GROUP_LABELS = ("node-group", "gpu-model", "gpu-count", "nic-model", "rails", "numa-nodes", "rail-numa")


def group_nodes(
    nodes: Dict[str, Dict[str, Any]], label_prefix: str
) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[int, Dict[str, Any]]]]:
    """Group nodes by hardware signature; NICs and rails must look the same on every node of a group."""
    rails_of: Dict[str, Dict[int, Dict[str, Any]]] = {}
    by_sig: Dict[Tuple, Dict[str, Any]] = {}
    for node in sorted(nodes):
        facts = nodes[node] or {}
        rails = node_rails(node, facts)
        rails_of[node] = rails
        gpus = facts.get("gpus") or []
        gpu_model = gpus[0].get("model") if gpus else "none"
        sig = (
            gpu_model,
            len(gpus),
            tuple(
                (
                    r,
                    rails[r]["model"],
                    rails[r]["vendor_id"],
                    rails[r]["device_id"],
                    rails[r]["netdev"],
                    rails[r]["roce_netdev"],
                    rails[r]["roce_vlan"],
                    rails[r]["rdma_device"],
                    rails[r]["port"],
                )
                for r in sorted(rails)
            ),
        )
        group = by_sig.get(sig)
        if group is None:
            nic_models = sorted({rails[r]["model"] for r in rails}) or ["none"]
            group = by_sig[sig] = {
                "base": dns_name("%s-%s-%dr" % (gpu_model, "-".join(nic_models), len(rails))),
                "gpu_model": gpu_model,
                "gpu_count": len(gpus),
                "nic_models": nic_models,
                "rail_indexes": sorted(rails),
                "nodes": [],
                "numa_nodes": len(facts.get("numa_nodes") or []),
                "rail_numa": [rails[r]["numa_node"] for r in sorted(rails)],
                "net_gdr_level": (facts.get("nccl") or {}).get("net_gdr_level"),
                "example": node,
            }
        group["nodes"].append(node)
    groups = sorted(by_sig.values(), key=lambda g: (g["base"], g["example"]))
    seen: Dict[str, int] = {}
    for group in groups:
        n = seen.get(group["base"], 0) + 1
        seen[group["base"]] = n
        group["name"] = group["base"] if n == 1 else "%s-%d" % (group["base"][:60], n)
        del group["base"]
        numa = group["rail_numa"]
        layout = ".".join("x" if v is None else str(v) for v in numa)
        # GROUP_LABELS names every key set here (the keys the node_labels module owns).
        group["labels"] = {
            label_prefix + "/node-group": group["name"],
            label_prefix + "/gpu-model": label_value(group["gpu_model"]),
            label_prefix + "/gpu-count": str(group["gpu_count"]),
            label_prefix + "/nic-model": label_value("_".join(group["nic_models"])),
            label_prefix + "/rails": str(len(group["rail_indexes"])),
            label_prefix + "/numa-nodes": str(group["numa_nodes"]),
        }
        if layout and len(layout) <= 63:
            group["labels"][label_prefix + "/rail-numa"] = layout
    return groups, rails_of


# --------------------------------------------------------------------------------------------- rails
def rail_specs(cfg: Dict[str, Any], groups: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One spec per rail: the listed rails, or every rail index discovery found. Names, nad types
    and VLANs were checked by the plan (argument specs, intent.network_rules.rails_rules)."""
    if cfg["rails"] is None:
        indexes = sorted({r for g in groups for r in g["rail_indexes"]})
        specs = [{"rail": r} for r in indexes]
    else:
        specs = [dict(item) for item in cfg["rails"]]
    if not specs:
        raise ClusterPlanError("no rails: gpufabric_rails.rails is empty and no node reports a compute NIC with a rail")
    names = set()
    for spec in specs:
        spec["name"] = str(spec.get("name") or "%s%d" % (cfg["name_prefix"], int(spec["rail"])))
        if spec["name"] in names:
            raise ClusterPlanError("rail {}: name used twice".format(spec["name"]))
        names.add(spec["name"])
        spec["nad_type"] = spec.get("nad_type") or cfg["nad_type"]
        spec["block_size"] = int(spec.get("block_size") or cfg["block_size"])
    return specs


def address_plan(cfg: Dict[str, Any], specs: List[Dict[str, Any]], cluster_cidrs: Dict[str, Any]) -> None:
    reserved: List[Tuple[str, Any]] = []
    for key in sorted(cluster_cidrs or {}):
        values = cluster_cidrs[key]
        for value in values if isinstance(values, list) else [values]:
            if value:
                reserved.append((f"cluster {key} {value}", network(value, f"gpufabric_cluster_cidrs.{key}")))
    explicit = [s for s in specs if s.get("subnet")]
    for spec in explicit:
        spec["_net"] = network(spec["subnet"], "rail {} subnet".format(spec["name"]))
    missing = [s for s in specs if not s.get("subnet")]
    if missing:
        if not cfg["supernet"]:
            raise ClusterPlanError(
                "rails {} have no subnet and gpufabric_rails.supernet is not set".format(
                    short_list([s["name"] for s in missing])
                )
            )
        supernet = network(cfg["supernet"], "gpufabric_rails.supernet")
        avoid = [net for _name, net in reserved] + [s["_net"] for s in explicit]
        for spec, net in zip(
            missing, carve(supernet, int(cfg["rail_prefix"]), len(missing), avoid, "gpufabric_rails.supernet")
        ):
            spec["_net"] = net
    named = [("rail {} {}".format(s["name"], s["_net"]), s["_net"]) for s in specs] + reserved
    clashes = find_overlaps(named)
    if clashes:
        a, _net_a, b, _net_b = clashes[0]
        more = "" if len(clashes) == 1 else " (and %d more overlapping pairs)" % (len(clashes) - 1)
        raise ClusterPlanError(f"overlapping subnets: {a} overlaps {b}{more}")
    for spec in specs:
        gw = spec.get("gateway")
        if gw is False or gw == "":
            spec["_gw"] = None
        elif gw is None:
            spec["_gw"] = default_gateway(spec["_net"])
        else:
            spec["_gw"] = address(gw, "rail {} gateway".format(spec["name"]))
        if spec["_gw"] is not None:
            check_gateway(spec["name"], spec["_net"], spec["_gw"])


def match_rails(
    specs: List[Dict[str, Any]],
    groups: List[Dict[str, Any]],
    rails_of: Dict[str, Dict[int, Dict[str, Any]]],
    fabric: Dict[str, Any],
) -> None:
    group_names = [g["name"] for g in groups]
    for spec in specs:
        wanted = spec.get("node_groups")
        if wanted:
            unknown = sorted(set(wanted) - set(group_names))
            if unknown:
                raise ClusterPlanError(
                    "rail {}: node_groups {} do not exist; discovered groups: {}".format(
                        spec["name"], unknown, group_names
                    )
                )
            spec["_groups"] = [g for g in groups if g["name"] in wanted]
        else:
            spec["_groups"] = list(groups)
        rail = int(spec["rail"])
        lacking = [n for g in spec["_groups"] for n in g["nodes"] if rail not in rails_of[n]]
        if lacking:
            total = sum(len(g["nodes"]) for g in spec["_groups"])
            raise ClusterPlanError(
                "rail %s (index %d): no matching NIC on %d of %d nodes: %s (limit the rail with node_groups)"
                % (spec["name"], rail, len(lacking), total, short_list(lacking))
            )
        mtus: Dict[Any, List[str]] = {}
        for g in spec["_groups"]:
            for n in g["nodes"]:
                mtus.setdefault(rails_of[n][rail]["mtu"], []).append(n)
        reported = {k: v for k, v in mtus.items() if k is not None}
        if spec.get("mtu") is not None:
            wrong = {k: v for k, v in reported.items() if int(k) != int(spec["mtu"])}
            if wrong:
                parts = ["%s on %d nodes (%s)" % (k, len(v), short_list(v)) for k, v in sorted(wrong.items())]
                raise ClusterPlanError(
                    "rail {}: MTU differs within the rail: intent {}, NICs report {}".format(
                        spec["name"], spec["mtu"], "; ".join(parts)
                    )
                )
            spec["_mtu"] = int(spec["mtu"])
        elif len(reported) > 1:
            parts = ["%s on %d nodes (%s)" % (k, len(v), short_list(v)) for k, v in sorted(reported.items())]
            raise ClusterPlanError("rail {}: MTU differs within the rail: {}".format(spec["name"], "; ".join(parts)))
        elif reported:
            spec["_mtu"] = int(next(iter(reported)))
        else:
            spec["_mtu"] = int(fabric.get("mtu") or 9000)
        spec["_nodes"] = sum(len(g["nodes"]) for g in spec["_groups"])


def check_netns(specs: List[Dict[str, Any]], groups: List[Dict[str, Any]], fabric: Dict[str, Any]) -> None:
    mode = fabric.get("rdma_netns_mode") or "shared"
    for group in groups:
        on = [s for s in specs if any(g is group for g in s["_groups"])]
        shared = [s["name"] for s in on if s["nad_type"] in SHARED_TYPES]
        exclusive = [s["name"] for s in on if s["nad_type"] == "sriov"]
        if shared and exclusive:
            raise ClusterPlanError(
                "node group {}: mixes shared RDMA netns rails ({}) and exclusive SR-IOV rails ({}); "
                "one node pool uses one mode".format(group["name"], ", ".join(shared), ", ".join(exclusive))
            )
        if exclusive and mode != "exclusive":
            raise ClusterPlanError(
                "node group {}: SR-IOV rails {} need gpufabric_fabric.rdma_netns_mode exclusive, it is {}".format(
                    group["name"], ", ".join(exclusive), mode
                )
            )
        if shared and mode != "shared":
            raise ClusterPlanError(
                "node group {}: rails {} use the RDMA shared device plugin, which needs "
                "gpufabric_fabric.rdma_netns_mode shared, it is {}".format(group["name"], ", ".join(shared), mode)
            )
