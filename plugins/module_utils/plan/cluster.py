# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster plan: every GPU node's record + the cluster intent -> what the cluster roles publish.

A node's record (plan/node_records.py) is the part of its plan and discovery that the cluster side
needs. Records of the nodes in this run are stored on the controller; nodes outside ``--limit`` (or
outside a job slice) are planned from their stored record, so the cluster objects do not change
with the slice that runs. This file checks what must agree between the nodes and plans the cluster;
plan/cluster_summary.py writes what the plan says of itself.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _plan_dra
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra_mixes as _dra_mixes
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra_nccl as _plan_dra_nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dranet as _plan_dranet
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import networks as _cluster_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import roce as _qos_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.cluster_summary import chart_sources, summary_text
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError
from ansible_collections.gpufabric.rollout.plugins.module_utils.switch import cluster as _switch_cluster

SCHEMA_VERSION = 1


def _differs(nodes: Mapping[str, Mapping[str, Any]], key: str) -> Dict[str, List[str]]:
    by_value: Dict[str, List[str]] = {}
    for host, record in sorted(nodes.items()):
        by_value.setdefault(json.dumps(record.get(key), sort_keys=True), []).append(host)
    return by_value


def _short(hosts: List[str], limit: int = 4) -> str:
    return (
        ", ".join(hosts)
        if len(hosts) <= limit
        else "{} and {} more".format(", ".join(hosts[:limit]), len(hosts) - limit)
    )


def cross_node_problems(nodes: Mapping[str, Mapping[str, Any]]) -> List[str]:
    """What must agree between GPU nodes for one set of cluster objects."""
    problems = []
    fabrics = _differs(nodes, "fabric")
    if len(fabrics) > 1:
        parts = []
        for text, hosts in sorted(fabrics.items(), key=lambda kv: -len(kv[1])):
            fab = json.loads(text) or {}
            parts.append(
                "data_dscp {} / ToS {} / lossless priority {} / MTU {} / netns {} on {}".format(
                    fab.get("data_dscp"),
                    fab.get("roce_tos"),
                    fab.get("lossless_priority"),
                    fab.get("mtu"),
                    fab.get("rdma_netns_mode"),
                    _short(hosts),
                )
            )
        problems.append(
            "gpufabric_fabric: differs between GPU nodes ({}); the Pods' NCCL settings and the rails need one "
            "fabric, set it once in group_vars".format("; ".join(parts))
        )
    versions = _differs(nodes, "nccl_version")
    if len(versions) > 1:
        parts = [f"{json.loads(text)} on {_short(hosts)}" for text, hosts in sorted(versions.items())]
        problems.append(f"gpufabric_nccl_version: differs between GPU nodes ({'; '.join(parts)}); set it once")
    names = _differs(nodes, "k8s_node_name")
    for text, hosts in names.items():
        if len(hosts) > 1:
            problems.append(
                f"gpufabric_k8s_node_name: {json.loads(text)!r} is used by {_short(hosts)}; it must be unique"
            )
    problems.extend(_qos_plan.rail_consistency_errors({h: r.get("roce_rails") or {} for h, r in nodes.items()}))
    return problems


def rail_exclusions(values: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]]) -> Tuple[List[str], List[str]]:
    """(problems, notes) for the rail NICs discovery left out (port down, no RoCE v2 IPv4 GID,
    slower link). Refused unless ``gpufabric_rails.min_rails`` allows the rails that remain."""
    minimum = (values.get("gpufabric_rails") or {}).get("min_rails")
    problems: List[str] = []
    notes: List[str] = []
    for host, record in sorted(nodes.items()):
        topo = record.get("topology") or {}
        excluded = topo.get("rails_excluded") or []
        if not excluded:
            continue
        left = len({r.get("nic") for r in topo.get("rails") or []})
        what = "; ".join(
            "{} ({}): {}, needed by {}".format(x["nic"], x["bdf"], x["state"], ", ".join(x["gpus"]) or "no GPU")
            for x in excluded
        )
        if minimum is None or left < int(minimum):
            problems.append(
                f"gpufabric_rails.min_rails: {show(minimum)}; {host} has {left} healthy rail NIC(s) and "
                f"cannot use {what}; "
                f"repair the NIC, or set gpufabric_rails.min_rails to at most {left} to plan {left} rail(s) without it"
            )
        else:
            notes.append(f"{host}: {left} rail(s), left out {what} (gpufabric_rails.min_rails {minimum})")
    return problems, notes


def network_operator_values(values: Mapping[str, Any], rails: Mapping[str, Any]) -> Dict[str, Any]:
    """The Network Operator chart's values: structured variables, then the extra_values escape hatch."""
    sriov = values.get("network_operator_sriov_operator_enabled")
    if sriov is None or sriov == "":
        sriov = rails.get("nad_type") == "sriov"
    generated = {
        "nfd": {"enabled": bool(values.get("network_operator_nfd_enabled", True))},
        "sriovNetworkOperator": {"enabled": bool(sriov)},
        "maintenanceOperator": {"enabled": bool(values.get("network_operator_maintenance_operator_enabled"))},
    }
    return _plan_gpu_operator.deep_merge(generated, values.get("network_operator_extra_values") or {})


def _check_records(
    records: Mapping[str, Optional[Mapping[str, Any]]], discovery_dir: str, stored_discovery: bool
) -> None:
    """Refuse a plan without every GPU node's record, saying how to get the missing ones."""
    missing = sorted(host for host, record in records.items() if record is None)
    if missing and not stored_discovery:
        raise PlanError(
            [
                f"the cluster plan needs every GPU node, but {_short(missing)} are not in this run and "
                "plan_stored_discovery is false (no stored discovery is read); run without --limit, "
                "or set plan_stored_discovery: true"
            ]
        )
    if missing:
        raise PlanError(
            [
                f"the cluster plan needs every GPU node, but {_short(missing)} ran neither in this run nor "
                f"before (no stored discovery in {discovery_dir}); run playbooks/plan.yml with them once "
                "(without --limit), keeping plan_dir where every later run finds it (under AWX: storage "
                "every job mounts, not the job's own directory)"
            ]
        )
    if not records:
        raise PlanError(["gpu_nodes: the inventory has no GPU nodes to plan for"])


def _network(
    values: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], rails: Mapping[str, Any]
) -> Tuple[Dict[str, Any], str]:
    """The cluster networking plan of the nodes, every object owned by the run's instance, and the instance."""
    first = nodes[sorted(nodes)[0]]
    try:
        network = _cluster_plan.plan_cluster(
            rails,
            {r["k8s_node_name"]: r["topology"] for r in nodes.values()},
            values.get("gpufabric_cluster_cidrs") or {},
            first["fabric"],
            first["nccl_version"],
            values.get("network_operator_images"),
            values.get("network_operator_chart_version"),
        )
    except ClusterPlanError as exc:
        raise PlanError([str(exc)]) from None
    # Every object carries its owner's labels: the roles prune by them (_k8s_publish).
    try:
        instance = _k8s_publish.check_instance(values.get("gpufabric_instance"))
    except _k8s_publish.PublishError as exc:
        raise PlanError([str(exc)]) from None
    network["objects"] = {part: _k8s_publish.own(objs, part, instance) for part, objs in network["objects"].items()}
    return network, instance


def _dra(
    values: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], network: Mapping[str, Any], instance: str
) -> Optional[Dict[str, Any]]:
    """The DRA section (``gpufabric_k8s_device_allocation: dra``), its objects owned like the rails'
    (the rdma_networks component); None with the device plugins."""
    if (values.get(_plan_dra.VARIABLE) or "device_plugin") != "dra":
        return None
    config = network["config"]
    try:
        section = _plan_dra.plan(
            network["node_groups"],
            {r["k8s_node_name"]: r["topology"] for r in nodes.values()},
            config["nad_namespace"],
            config["label_prefix"] + "/node-group",
        )
    except _plan_dra.DraPlanError as exc:
        raise PlanError(str(exc).split("\n")) from None
    # The NCCL ConfigMaps must fit what a claim puts in the Pod (plan/dra_nccl.py).
    mismatched = _plan_dra_nccl.problems(section, network["nccl"])
    if mismatched:
        raise PlanError(mismatched)
    section["objects"] = _k8s_publish.own(section["objects"], "rdma_networks", instance)
    return section


def plan(
    values: Mapping[str, Any],
    records: Mapping[str, Optional[Mapping[str, Any]]],
    discovery_dir: str = "plan_dir/discovery",
    stored_discovery: bool = True,
    skew_rules: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    """The cluster plan from the checked cluster variables and every GPU node's record (None: the
    node is outside this run and has no record in `discovery_dir`, or stored records are off); with
    ``skew_rules`` (roles/plan/files/version_skew.yml) the target versions are checked against them."""
    _check_records(records, discovery_dir, stored_discovery)
    nodes = {host: dict(record) for host, record in records.items() if record is not None}
    problems = cross_node_problems(nodes)
    rail_problems, rail_notes = rail_exclusions(values, nodes)
    problems.extend(rail_problems)
    # Device-allocation mixes that cannot coexist: refused first, whatever else the plan finds.
    problems.extend(_dra_mixes.refusals(values))
    if problems:
        raise PlanError(problems)
    first = nodes[sorted(nodes)[0]]
    fabric = first["fabric"]
    rails = dict(values.get("gpufabric_rails") or {})
    network, instance = _network(values, nodes, rails)
    label_prefix = network["config"]["label_prefix"]
    gpu_operator = _plan_gpu_operator.plan(values, nodes, label_prefix, problems)
    # dra mode: dranet, the rail NICs' DRA driver, with the network_operator role (plan/dranet.py).
    dranet = _plan_dranet.plan(values, label_prefix + "/node-group", problems)
    storage = _plan_storage_csi.plan(values, nodes, label_prefix, problems)
    switches, switch_problems = _switch_cluster.section(values, fabric, nodes)
    problems.extend(switch_problems)
    skew_notes: List[str] = []
    if skew_rules is not None:
        refused, skew_notes = _skew.target_set(values, nodes, skew_rules)
        problems.extend(refused)
    if problems:
        raise PlanError(problems)
    dra = _dra(values, nodes, network, instance)
    if dra:
        # dra.net delivers the rail NICs: no rail NADs, pools or shared device plugin (plan/dra.py)
        network = _plan_dra.without_rail_attachments(network)
    if gpu_operator:
        gpu_operator["nvidia_drivers"] = _k8s_publish.own(gpu_operator["nvidia_drivers"], "gpu_operator", instance)
    if storage:
        storage["objects"] = {
            part: _k8s_publish.own(objs, "storage_csi", instance) for part, objs in storage["objects"].items()
        }
    result = {
        "schema_version": SCHEMA_VERSION,
        "fabric": fabric,
        "nccl_version": first["nccl_version"],
        "k8s_mode": values.get("gpufabric_k8s_mode"),
        "instance": instance,
        # What a field another manager holds does when the roles apply (apply.k8s_apply_outcome).
        "field_conflicts": values.get("gpufabric_field_conflicts") or "fail",
        "nodes": {
            host: {
                "k8s_node_name": r["k8s_node_name"],
                "source": r.get("source"),
                "stored_at": r.get("stored_at"),
                "summary": r.get("summary"),
            }
            for host, r in sorted(nodes.items())
        },
        "network": network,
        "network_operator": dict(
            {"chart_values": network_operator_values(values, rails)}, **({"dranet": dranet} if dranet else {})
        ),
        "storage": storage,
        "gpu_operator": gpu_operator,
        # gpufabric_k8s_device_allocation: dra: DeviceClasses and claim templates (plan/dra.py); else None.
        "device_allocation": values.get(_plan_dra.VARIABLE) or "device_plugin",
        "dra": dra,
        "skew_notes": skew_notes,
        "rail_notes": rail_notes,
        "charts": chart_sources(values, storage),
        # The leaves' QoS and their review files (plan_dir/switches); None without gpufabric_switches.
        "switches": switches,
    }
    result["summary"] = summary_text(result)
    return result


# --------------------------------------------------------------------------------------------- text
