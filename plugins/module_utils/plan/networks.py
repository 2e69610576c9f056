# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster networking plan: intent (`gpufabric_rails`) + topology facts of all GPU nodes -> objects.

The pieces: _cluster_intent.py (intent, node groups, rail matching, address plan),
_cluster_objects.py (the Kubernetes objects), _cluster_report.py (the report section); this
file assembles them.

Pure and typed. `plan_cluster()` returns node groups, per-rail resources / pools / NADs, node labels,
NCCL environment per node group and every Kubernetes object the cluster roles apply or render.
It takes the values the plan checked (_plan_cluster.py): `gpufabric_rails` with every default filled
and the fabric with `roce_tos` resolved. An intent the nodes cannot carry raises ClusterPlanError
whose message names the rail (or node group) and the numbers.

Object shapes follow docs/facts.md, "Network Operator and secondary-network objects" (NicClusterPolicy,
NicNodePolicy, RDMA shared device plugin config, nv-ipam IPPool/CIDRPool, NetworkAttachmentDefinition,
whereabouts IPAM, SR-IOV operator CRs).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import (
    GROUP_LABELS,
    SHARED_TYPES,
    ClusterPlanError,
    address_plan,
    check_netns,
    dns_name,
    group_nodes,
    match_rails,
    rail_specs,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import gid_index_script
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.ipplan import (
    IPPlanError,
    check_ip_capacity,
    check_prefix_capacity,
    prefix_for_block,
    require_netaddr,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import (
    CRD_NAMES,
    device_plugin_config,
    nad_object,
    nccl_env,
    node_policy_refusal,
    object_meta,
    pool_object,
    release_images,
    sriov_objects,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import network_operator as _network_operator


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
def plan_cluster(
    intent: Dict[str, Any],
    nodes: Dict[str, Dict[str, Any]],
    cluster_cidrs: Optional[Dict[str, Any]] = None,
    fabric: Optional[Dict[str, Any]] = None,
    nccl_version: Any = None,
    components: Optional[Dict[str, Any]] = None,
    network_operator_version: Any = None,
) -> Dict[str, Any]:
    """Plan the cluster side; see the module docstring. `nodes` maps node name -> gpufabric_topology facts.
    The Network Operator objects are written for the release `network_operator_version` names (None: the newest
    supported one)."""
    try:
        require_netaddr()
    except IPPlanError as exc:
        raise ClusterPlanError(str(exc)) from None
    cfg = dict(intent)
    fabric = dict(fabric or {})
    components = dict(components or {})
    accepts = _network_operator.features(network_operator_version)
    if not nodes:
        raise ClusterPlanError("no GPU nodes: the plan needs the topology facts of at least one node")
    groups, rails_of = group_nodes(nodes, cfg["label_prefix"])
    specs = rail_specs(cfg, groups)
    try:
        address_plan(cfg, specs, cluster_cidrs or {})
    except IPPlanError as exc:
        raise ClusterPlanError(str(exc)) from None
    match_rails(specs, groups, rails_of, fabric)
    check_netns(specs, groups, fabric)

    group_label = cfg["label_prefix"] + "/node-group"
    rails_out: List[Dict[str, Any]] = []
    pools: List[Dict[str, Any]] = []
    nads: List[Dict[str, Any]] = []
    for spec in specs:
        rail = int(spec["rail"])
        spec["_pool"] = spec["name"]
        prefix = cfg["sriov_resource_prefix"] if spec["nad_type"] == "sriov" else cfg["resource_prefix"]
        spec["_resource"] = "{}/{}".format(prefix, spec["name"])
        try:
            if cfg["ipam"] == "nv-ipam-cidrpool":
                spec["_prefix"] = int(cfg["per_node_prefix"] or prefix_for_block(spec["_net"], spec["block_size"]))
                capacity = check_prefix_capacity(spec["name"], spec["_net"], spec["_prefix"], spec["_nodes"])
            else:
                capacity = check_ip_capacity(
                    spec["name"], spec["_net"], spec["_gw"], spec["_nodes"], spec["block_size"]
                )
        except IPPlanError as exc:
            raise ClusterPlanError(str(exc)) from None
        # An SR-IOV rail without a VLAN of its own tags its VFs with the VLAN of the netdev that
        # carries the node's RoCE address (refused when the node groups disagree or it is unknown).
        followed = roce_vlan_of(spec, rails_of)
        if followed is not None:
            spec["vlan"] = followed["vlan"]
        pool = pool_object(cfg, spec, group_label)
        if pool is not None:
            pools.append(pool)
        # One NAD per rail when the parent netdev has one name everywhere, else one per node group.
        # A macvlan/ipvlan rail without a VLAN of its own hangs off the netdev that carries the
        # node's RoCE address (a VLAN netdev when the address is there), so Pods share its GID.
        by_dev: Dict[Any, List[Dict[str, Any]]] = {}
        follow_roce = spec["nad_type"] in ("macvlan", "ipvlan") and spec.get("vlan") is None
        for g in spec["_groups"]:
            nic = rails_of[g["example"]][rail]
            by_dev.setdefault((nic.get("roce_netdev") or nic["netdev"]) if follow_roce else nic["netdev"], []).append(g)
        nad_names = []
        nad_by_group: Dict[str, str] = {}  # the NAD a Pod of each node group attaches for this rail
        if spec["nad_type"] == "sriov" and cfg["sriov_nad_owner"] == "sriovnetwork":
            nad_names = [spec["name"]]  # generated by the SR-IOV operator from the SriovNetwork
        elif spec["nad_type"] == "sriov" or len(by_dev) == 1:
            nad = nad_object(cfg, spec, spec["name"], next(iter(by_dev)))
            nads.append(nad)
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
        rails_out.append(
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
                "parent_by_group": {
                    g["name"]: {
                        "netdev": dev,
                        "why": "carries the RoCE v2 IPv4 address (VLAN netdev)"
                        if follow_roce and dev != rails_of[g["example"]][rail]["netdev"]
                        else "the rail NIC's netdev; its VFs are tagged with VLAN {}, the VLAN of {} that carries "
                        "the RoCE v2 IPv4 address".format(followed["vlan"], followed["netdev_by_group"][g["name"]])
                        if followed is not None
                        else "the rail NIC's netdev",
                    }
                    for dev, gs in by_dev.items()
                    for g in gs
                },
                "node_groups": [g["name"] for g in spec["_groups"]],
                "nodes": spec["_nodes"],
                "capacity": capacity,
                "ifnames": sorted({d for d in by_dev if d}),
                "vendors": sorted({rails_of[g["example"]][rail]["vendor_id"] for g in spec["_groups"]}),
                "device_ids": sorted({rails_of[g["example"]][rail]["device_id"] for g in spec["_groups"]}),
            }
        )

    shared_specs = [s for s in specs if s["nad_type"] in SHARED_TYPES]
    policies: List[Dict[str, Any]] = []
    images = release_images(components, network_operator_version, accepts, cfg["ipam"] != "whereabouts")
    ncp_spec: Dict[str, Any] = {
        "secondaryNetwork": {"multus": images["multus"], "cniPlugins": images["cni_plugins"]},
    }
    if cfg["ipam"] != "whereabouts":
        ncp_spec["nvIpam"] = dict(images["nv_ipam"], enableWebhook=False)
    if shared_specs and len(groups) > 1 and not accepts["nic_node_policy"]:
        raise ClusterPlanError(node_policy_refusal(network_operator_version, shared_specs, groups))
    if shared_specs and len(groups) == 1:
        plugin = images["rdma_shared_device_plugin"]
        ncp_spec["rdmaSharedDevicePlugin"] = dict(plugin, config=device_plugin_config(cfg, specs, groups, rails_of))
    policies.append(
        {
            "apiVersion": "mellanox.com/v1alpha1",
            "kind": "NicClusterPolicy",
            "metadata": object_meta("nic-cluster-policy"),
            "spec": ncp_spec,
        }
    )
    if shared_specs and len(groups) > 1:
        for group in groups:
            if not any(any(g is group for g in s["_groups"]) for s in shared_specs):
                continue
            policies.append(
                {
                    "apiVersion": "mellanox.com/v1alpha1",
                    "kind": "NicNodePolicy",
                    "metadata": object_meta(dns_name("gpufabric-" + group["name"])),
                    "spec": {
                        "nodeSelector": {group_label: group["name"]},
                        "rdmaSharedDevicePlugin": dict(
                            images["rdma_shared_device_plugin"],
                            config=device_plugin_config(cfg, specs, [group], rails_of),
                        ),
                    },
                }
            )

    configmaps: List[Dict[str, Any]] = []
    nccl: Dict[str, Dict[str, str]] = {}
    for group in groups:
        if not any(any(g is group for g in s["_groups"]) for s in specs):
            continue
        env = nccl_env(cfg, group, specs, rails_of, fabric, nccl_version)
        nccl[group["name"]] = env
        group["nccl_configmap"] = dns_name("nccl-env-" + group["name"])
        configmaps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": object_meta(group["nccl_configmap"], cfg["nad_namespace"], {group_label: group["name"]}),
                "data": env,
            }
        )
    if _nccl.needs_gid_index(nccl_version):
        configmaps.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": object_meta("nccl-gid-index", cfg["nad_namespace"]),
                "data": {"find-gid-index.sh": gid_index_script()},
            }
        )

    node_labels: Dict[str, Dict[str, str]] = {}
    for group in groups:
        for node in group["nodes"]:
            node_labels[node] = group["labels"]

    objects = {
        "network_operator": policies,
        "rdma_networks": pools + nads + configmaps,
        "sriov_networks": sriov_objects(cfg, specs, rails_of),
    }
    return {
        "config": {k: v for k, v in cfg.items() if k != "rails"},
        "crds": {
            part: sorted({CRD_NAMES[o["kind"]] for o in objs if o["kind"] in CRD_NAMES})
            for part, objs in objects.items()
        },
        "namespaces": sorted(
            {o["metadata"]["namespace"] for objs in objects.values() for o in objs if o["metadata"].get("namespace")}
        ),
        "node_groups": [{k: v for k, v in g.items() if k != "example"} for g in groups],
        "rails": rails_out,
        "node_labels": node_labels,
        # the keys node_labels owns on every Node: one of them no longer wanted is removed
        "node_label_owned": [cfg["label_prefix"] + "/" + name for name in GROUP_LABELS],
        "nccl": nccl,
        "objects": objects,
    }
