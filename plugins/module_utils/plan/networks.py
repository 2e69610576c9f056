# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster networking plan: intent (`gpufabric_rails`) + topology facts of all GPU nodes -> objects.

The pieces: intent/cluster.py (intent, node groups, rail matching, address plan),
plan/network_rails.py (one rail: capacity, VLAN, pool, NADs), plan/network_objects.py (the Kubernetes
objects), proof/cluster_report.py (the report section); this file assembles them.

Pure and typed. `plan_cluster()` returns node groups, per-rail resources / pools / NADs, node labels,
NCCL environment per node group and every Kubernetes object the cluster roles apply or render.
It takes the values the plan checked (plan/cluster.py): `gpufabric_rails` with every default filled
and the fabric with `roce_tos` resolved. An intent the nodes cannot carry raises ClusterPlanError
whose message names the rail (or node group) and the numbers.

Object shapes follow docs/facts.md, "Network Operator and secondary-network objects" (NicClusterPolicy,
NicNodePolicy, RDMA shared device plugin config, nv-ipam IPPool/CIDRPool, NetworkAttachmentDefinition,
whereabouts IPAM, SR-IOV operator CRs).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

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
    require_netaddr,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import (
    CRD_NAMES,
    device_plugin_config,
    nccl_env,
    node_policy_refusal,
    object_meta,
    release_images,
    sriov_objects,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_rails import plan_rail
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import network_operator as _network_operator


# --------------------------------------------------------------------------------------------- policies, ConfigMaps
def network_operator_policies(
    cfg: Dict[str, Any],
    specs: List[Dict[str, Any]],
    groups: List[Dict[str, Any]],
    rails_of: Dict[str, Any],
    components: Dict[str, Any],
    network_operator_version: Any,
    accepts: Dict[str, Any],
    group_label: str,
) -> List[Dict[str, Any]]:
    """The NicClusterPolicy and, with shared-device rails on several node groups, one NicNodePolicy per
    node group (its own RDMA shared device plugin configuration)."""
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

    return policies


def nccl_configmaps(
    cfg: Dict[str, Any],
    specs: List[Dict[str, Any]],
    groups: List[Dict[str, Any]],
    rails_of: Dict[str, Any],
    fabric: Dict[str, Any],
    nccl_version: Any,
    group_label: str,
) -> Tuple[List[Dict[str, Any]], Dict[str, Dict[str, str]]]:
    """The NCCL environment ConfigMap of each node group with rails (and the GID-index script for an
    NCCL that needs it), and the environment itself by node group."""
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

    return configmaps, nccl


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
        rail_out, pool, rail_nad_objects = plan_rail(cfg, spec, rails_of, group_label)
        rails_out.append(rail_out)
        if pool is not None:
            pools.append(pool)
        nads.extend(rail_nad_objects)

    policies = network_operator_policies(
        cfg, specs, groups, rails_of, components, network_operator_version, accepts, group_label
    )
    configmaps, nccl = nccl_configmaps(cfg, specs, groups, rails_of, fabric, nccl_version, group_label)

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
