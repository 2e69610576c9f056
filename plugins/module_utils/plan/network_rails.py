# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One rail of the cluster networking plan (plan/networks.py assembles them): its address capacity,
the VLAN it follows, its IP pool, its NetworkAttachmentDefinitions with their parent netdev in each
node group and why, and the rail's summary in the plan's output.

Pure and typed; an intent the nodes cannot carry raises ClusterPlanError naming the rail.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import (
    ClusterPlanError,
    dns_name,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.ipplan import (
    IPPlanError,
    check_ip_capacity,
    check_prefix_capacity,
    prefix_for_block,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import (
    nad_object,
    pool_object,
)


# --------------------------------------------------------------------------------------------- RoCE VLAN
def _explicit_vlan(spec: Dict[str, Any]) -> str:
    return "set it explicitly: a gpufabric_rails.rails entry {{rail: {}, vlan: <VLAN id>}}".format(spec["rail"])


def roce_vlan_of(spec: Dict[str, Any], rails_of: Dict[str, Dict[int, Dict[str, Any]]]) -> Optional[Dict[str, Any]]:
    """The VLAN a rail follows from the netdev that carries its NICs' RoCE v2 IPv4 address, or None.

    SR-IOV rails: VFs are made on the PF and carry no VLAN tag unless the SR-IOV CNI sets one, so when
    the node's RoCE address (and GID) is on a VLAN netdev of the rail NIC, a VF without a tag sits on
    the untagged network while the node's RoCE traffic is on the VLAN. A rail without a ``vlan`` of its
    own therefore takes the VLAN id discovery read (``roce_vlan``) when every node group's rail NIC
    carries its RoCE address on a VLAN netdev with the same id; it stays untagged when none does. The
    plan refuses (ClusterPlanError naming the rail, the node group and the netdev) when the groups
    differ (another VLAN id, or tagged in one group and untagged in another: one SriovNetwork carries
    one VLAN) or when a group's RoCE address is on another netdev whose VLAN id is unknown (the 8021q
    files were unreadable or the netdev is not a VLAN, e.g. a bond): guessing would put the Pods on the
    wrong network. An explicit ``vlan`` always wins, and no NIC is looked at then.

    host-device rails: the whole PF netdev moves into the Pod, so its RoCE address on a VLAN netdev of
    that PF cannot follow (the VLAN netdev stays on the host, the Pod gets the untagged PF and its
    untagged GIDs, and the host's RoCE address loses its carrier). A user who put the RoCE address on
    a VLAN expects the Pods on that VLAN, so the plan refuses rather than plan the untagged network,
    and names the NAD types that do follow the VLAN (macvlan/ipvlan hang off the VLAN netdev, sriov
    tags the VFs).

    Returns ``{"vlan": id, "netdev_by_group": {group: VLAN netdev}}`` for a followed VLAN, else None.
    """
    kind = spec["nad_type"]
    if kind not in ("sriov", "host-device") or spec.get("vlan") is not None:
        return None
    rail = int(spec["rail"])
    found: Dict[str, Any] = {}  # group name -> (VLAN id or None for untagged, RoCE netdev)
    for g in spec["_groups"]:
        nic = rails_of[g["example"]][rail]
        roce = nic.get("roce_netdev") or nic["netdev"]
        if roce == nic["netdev"]:
            found[g["name"]] = (None, roce)
            continue
        if kind == "host-device":
            raise ClusterPlanError(
                "rail {rail} (host-device), node group {group}: the RoCE v2 IPv4 address of {dev} is on {roce}, "
                "not on {netdev}; host-device moves {netdev} into the Pod, which would get the untagged network "
                "and leave {roce} without its carrier. Use nad_type macvlan or ipvlan (they hang off {roce}) or "
                "sriov (VFs tagged with its VLAN), or put the RoCE address on {netdev}".format(
                    rail=spec["name"], group=g["name"], dev=nic.get("rdma_device"), roce=roce, netdev=nic["netdev"]
                )
            )
        vid = nic.get("roce_vlan")
        if vid is None or isinstance(vid, bool) or not isinstance(vid, int) or not 1 <= vid <= 4094:
            raise ClusterPlanError(
                "rail {rail} (sriov), node group {group}: the RoCE v2 IPv4 address of {dev} is on {roce}, whose "
                "VLAN id discovery could not read (/proc/net/vlan; not a VLAN netdev, or 8021q not loaded); the "
                "VFs would not be on the node's RoCE network. Check {roce} on the nodes, or {explicit}".format(
                    rail=spec["name"],
                    group=g["name"],
                    dev=nic.get("rdma_device"),
                    roce=roce,
                    explicit=_explicit_vlan(spec),
                )
            )
        found[g["name"]] = (vid, roce)
    vids = {vid for vid, _dev in found.values()}
    if len(vids) > 1:
        seen = ", ".join(
            "{}: {}".format(name, "untagged on " + dev if vid is None else f"VLAN {vid} on {dev}")
            for name, (vid, dev) in sorted(found.items())
        )
        raise ClusterPlanError(
            "rail {} (sriov): its node groups carry the RoCE v2 IPv4 address on different VLANs ({}); "
            "one SriovNetwork has one VLAN: {}, or limit the rail to node groups of one VLAN "
            "(gpufabric_rails.rails node_groups)".format(spec["name"], seen, _explicit_vlan(spec))
        )
    (vid,) = vids or {None}
    if vid is None:
        return None
    return {"vlan": vid, "netdev_by_group": {name: dev for name, (_vid, dev) in found.items()}}


# --------------------------------------------------------------------------------------------- main
def parent_netdevs(
    spec: Dict[str, Any], rails_of: Dict[str, Any], follow_roce: bool
) -> Dict[Any, List[Dict[str, Any]]]:
    """The rail's parent netdev in each node group, grouped: {netdev: [node group, ...]}. A macvlan/ipvlan
    rail without a VLAN of its own hangs off the netdev that carries the node's RoCE address (a VLAN
    netdev when the address is there), so Pods share its GID."""
    rail = int(spec["rail"])
    by_dev: Dict[Any, List[Dict[str, Any]]] = {}
    for g in spec["_groups"]:
        nic = rails_of[g["example"]][rail]
        by_dev.setdefault((nic.get("roce_netdev") or nic["netdev"]) if follow_roce else nic["netdev"], []).append(g)
    return by_dev


def rail_nads(
    cfg: Dict[str, Any], spec: Dict[str, Any], by_dev: Dict[Any, List[Dict[str, Any]]]
) -> Tuple[List[Dict[str, Any]], List[str], Dict[str, str]]:
    """The rail's NADs, their names and the NAD a Pod of each node group attaches: one NAD per rail
    when the parent netdev has one name everywhere, else one per node group; none for SR-IOV rails
    whose NADs the SR-IOV operator generates from the SriovNetwork."""
    nads: List[Dict[str, Any]] = []
    nad_names: List[str] = []
    nad_by_group: Dict[str, str] = {}
    if spec["nad_type"] == "sriov" and cfg["sriov_nad_owner"] == "sriovnetwork":
        nad_names = [spec["name"]]
    elif spec["nad_type"] == "sriov" or len(by_dev) == 1:
        nads.append(nad_object(cfg, spec, spec["name"], next(iter(by_dev))))
        nad_names.append(spec["name"])
    else:
        for dev, gs in sorted(by_dev.items(), key=lambda kv: kv[1][0]["name"]):
            for g in gs:
                name = dns_name("{}-{}".format(spec["name"], g["name"]))
                nads.append(nad_object(cfg, spec, name, dev))
                nad_names.append(name)
                nad_by_group[g["name"]] = name
    for g in spec["_groups"]:
        nad_by_group.setdefault(g["name"], spec["name"])
    return nads, nad_names, nad_by_group


def parent_reasons(
    spec: Dict[str, Any],
    rails_of: Dict[str, Any],
    by_dev: Dict[Any, List[Dict[str, Any]]],
    follow_roce: bool,
    followed: Optional[Dict[str, Any]],
) -> Dict[str, Dict[str, Any]]:
    """The parent netdev of the rail's NADs in each node group, and why it is that one."""
    rail = int(spec["rail"])
    out: Dict[str, Dict[str, Any]] = {}
    for dev, gs in by_dev.items():
        for g in gs:
            if follow_roce and dev != rails_of[g["example"]][rail]["netdev"]:
                why = "carries the RoCE v2 IPv4 address (VLAN netdev)"
            elif followed is not None:
                why = (
                    "the rail NIC's netdev; its VFs are tagged with VLAN {}, the VLAN of {} that carries "
                    "the RoCE v2 IPv4 address".format(followed["vlan"], followed["netdev_by_group"][g["name"]])
                )
            else:
                why = "the rail NIC's netdev"
            out[g["name"]] = {"netdev": dev, "why": why}
    return out


def plan_rail(
    cfg: Dict[str, Any], spec: Dict[str, Any], rails_of: Dict[str, Any], group_label: str
) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]], List[Dict[str, Any]]]:
    """One rail of the plan: its summary for the plan's output, its IP pool object (None without
    one) and its NetworkAttachmentDefinitions."""
    rail = int(spec["rail"])
    spec["_pool"] = spec["name"]
    prefix = cfg["sriov_resource_prefix"] if spec["nad_type"] == "sriov" else cfg["resource_prefix"]
    spec["_resource"] = "{}/{}".format(prefix, spec["name"])
    try:
        if cfg["ipam"] == "nv-ipam-cidrpool":
            spec["_prefix"] = int(cfg["per_node_prefix"] or prefix_for_block(spec["_net"], spec["block_size"]))
            capacity = check_prefix_capacity(spec["name"], spec["_net"], spec["_prefix"], spec["_nodes"])
        else:
            capacity = check_ip_capacity(spec["name"], spec["_net"], spec["_gw"], spec["_nodes"], spec["block_size"])
    except IPPlanError as exc:
        raise ClusterPlanError(str(exc)) from None
    # An SR-IOV rail without a VLAN of its own tags its VFs with the VLAN of the netdev that
    # carries the node's RoCE address (refused when the node groups disagree or it is unknown).
    followed = roce_vlan_of(spec, rails_of)
    if followed is not None:
        spec["vlan"] = followed["vlan"]
    pool = pool_object(cfg, spec, group_label)
    # One NAD per rail when the parent netdev has one name everywhere, else one per node group.
    # A macvlan/ipvlan rail without a VLAN of its own hangs off the netdev that carries the
    # node's RoCE address (a VLAN netdev when the address is there), so Pods share its GID.
    follow_roce = spec["nad_type"] in ("macvlan", "ipvlan") and spec.get("vlan") is None
    by_dev = parent_netdevs(spec, rails_of, follow_roce)
    nads, nad_names, nad_by_group = rail_nads(cfg, spec, by_dev)
    return (
        {
            "rail": rail,
            "name": spec["name"],
            "nad_type": spec["nad_type"],
            "subnet": str(spec["_net"]),
            "gateway": None if spec["_gw"] is None else str(spec["_gw"]),
            "vlan": spec.get("vlan"),
            # where the VLAN comes from: the intent, the netdev carrying the RoCE address, or none
            "vlan_source": None
            if spec.get("vlan") is None
            else ("roce_netdev" if followed is not None else "gpufabric_rails"),
            "mtu": spec["_mtu"],
            "resource": spec["_resource"],
            "ipam": cfg["ipam"],
            "pool": None if pool is None else spec["_pool"],
            "block_size": spec["block_size"],
            "per_node_prefix": spec.get("_prefix"),
            "nads": nad_names,
            "nad_by_group": nad_by_group,
            # the parent netdev of the rail's NADs in each node group, and why
            "parent_by_group": parent_reasons(spec, rails_of, by_dev, follow_roce, followed),
            "node_groups": [g["name"] for g in spec["_groups"]],
            "nodes": spec["_nodes"],
            "capacity": capacity,
            "ifnames": sorted({d for d in by_dev if d}),
            "vendors": sorted({rails_of[g["example"]][rail]["vendor_id"] for g in spec["_groups"]}),
            "device_ids": sorted({rails_of[g["example"]][rail]["device_id"] for g in spec["_groups"]}),
        },
        pool,
        nads,
    )
