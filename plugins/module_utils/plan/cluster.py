# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster plan: every GPU node's record + the cluster intent -> what the cluster roles publish.

A node's *record* is the part of its plan and discovery that the cluster side needs (Kubernetes
node name, fabric, NCCL version, rail QoS summary, a compact topology). Records of the nodes in
this run are stored on the controller; nodes outside ``--limit`` (or outside a job slice) are
planned from their stored record, so the cluster objects do not change with the slice that runs.
The same compact record feeds the planner in both cases, so a sliced run and an unsliced run
plan the same objects.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import rails as _topology_rails
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import networks as _cluster_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import roce as _qos_plan
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage as _plan_storage
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import storage_csi as _plan_storage_csi
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import cluster_report as _cluster_report

SCHEMA_VERSION = 1
# 2: gpu.driver carries managed_by and precompiled; 3: storage (the node's filesystems);
# 4: upgrade (what an upgrade changes)
RECORD_VERSION = 4
_NIC_KEYS = (
    "bdf",
    "vendor_id",
    "device_id",
    "model",
    "driver",
    "function",
    "numa_node",
    "rail",
    "role",
    "rdma_device",
    "netdevs",
    "sriov",
)
_PORT_KEYS = ("port", "netdev", "mtu")


def compact_topology(topology: Mapping[str, Any]) -> Dict[str, Any]:
    """The discovery subset the cluster planner reads (a few KiB instead of the full facts)."""
    nics = []
    for nic in topology.get("nics") or []:
        item = {key: nic.get(key) for key in _NIC_KEYS}
        item["ports"] = [{key: port.get(key) for key in _PORT_KEYS} for port in nic.get("ports") or []]
        nics.append(item)
    return {
        "gpus": [{"model": g.get("model"), "bdf": g.get("bdf")} for g in topology.get("gpus") or []],
        "nics": nics,
        "rails": [
            {k: r.get(k) for k in ("rail", "gpu", "gpu_bdf", "nic", "netdev", "roce_netdev", "roce_vlan")}
            for r in topology.get("rails") or []
        ],
        "rails_excluded": [dict(x) for x in topology.get("rails_excluded") or []],
        "numa_nodes": list(topology.get("numa_nodes") or []),
        "nccl": {"net_gdr_level": _nccl.net_gdr_level(topology)},
    }


def node_record(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "record_version": RECORD_VERSION,
        "k8s_node_name": node_plan.get("k8s_node_name"),
        "fabric": node_plan.get("fabric"),
        "nccl_version": node_plan.get("nccl_version"),
        # What must match across the nodes of a rail; {} when the node opts out (roce_check_rail_consistency).
        "roce_rails": ((node_plan.get("roce") or {}).get("rails") or {})
        if (node_plan.get("roce") or {}).get("check_rail_consistency", True)
        else {},
        "summary": node_summary(node_plan, topology),
        "gpu": gpu_record(node_plan, topology),
        "topology": compact_topology(topology),
        "storage": _plan_storage.record(node_plan.get("storage_client")),
        # What the upgrade would change on the node (playbooks/upgrade.yml plans its batches from it).
        "upgrade": {
            "changes": list(((node_plan.get("upgrade") or {}).get("changes")) or []),
            "window": bool((node_plan.get("upgrade") or {}).get("window")),
        },
    }


def gpu_record(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> Dict[str, Any]:
    """What the cluster side needs to know of a node's GPU stack (the GPU Operator's driver mode, GDS)."""
    rdma = node_plan.get("gpudirect_rdma") or {}
    gds = node_plan.get("gpudirect_storage")
    driver = rdma.get("driver") or {}
    planned = node_plan.get("gpu_driver") or {}
    return {
        "models": sorted({str(g.get("model")) for g in topology.get("gpus") or []}),
        "count": len(topology.get("gpus") or []),
        # The driver the node runs (managed_by host) or the one the GPU Operator will install (operator).
        "driver": {
            "flavour": driver.get("flavour"),
            "version": driver.get("version"),
            "managed_by": planned.get("managed_by", "host"),
            "precompiled": bool(planned.get("precompiled")),
        },
        "cuda_version": rdma.get("cuda_version"),
        "rdma_method": rdma.get("method"),
        "mofed": bool(rdma.get("mofed")),
        "doca_ofed": node_plan.get("doca_ofed") is not None,
        "gds": None if not gds else {"mode": gds.get("mode")},
    }


class DiscoveryStore:
    """<dir>/<inventory host>.json: the last record of each node, written atomically."""

    def __init__(self, path: str):
        self.path = path

    def _file(self, host: str) -> str:
        return os.path.join(self.path, os.path.basename(str(host)) + ".json")

    def load(self, host: str) -> Optional[Dict[str, Any]]:
        try:
            with open(self._file(host), encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("record_version") != RECORD_VERSION:
            return None
        return data

    def save(self, host: str, record: Mapping[str, Any]) -> bool:
        """Write the record when it changed; True when the file was written."""
        old = self.load(host)
        body = dict(record)
        if old is not None and {k: v for k, v in old.items() if k != "stored_at"} == body:
            return False
        body["stored_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.makedirs(self.path, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path, prefix=".record-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(body, handle, indent=1, sort_keys=True)
        os.replace(tmp, self._file(host))
        return True


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
    nodes = {host: dict(record) for host, record in records.items() if record is not None}
    problems = cross_node_problems(nodes)
    rail_problems, rail_notes = rail_exclusions(values, nodes)
    problems.extend(rail_problems)
    if problems:
        raise PlanError(problems)
    first = nodes[sorted(nodes)[0]]
    fabric = first["fabric"]
    rails = dict(values.get("gpufabric_rails") or {})
    try:
        network = _cluster_plan.plan_cluster(
            rails,
            {r["k8s_node_name"]: r["topology"] for r in nodes.values()},
            values.get("gpufabric_cluster_cidrs") or {},
            fabric,
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
    label_prefix = network["config"]["label_prefix"]
    gpu_operator = _plan_gpu_operator.plan(values, nodes, label_prefix, problems)
    storage = _plan_storage_csi.plan(values, nodes, label_prefix, problems)
    skew_notes: List[str] = []
    if skew_rules is not None:
        refused, skew_notes = _skew.target_set(values, nodes, skew_rules)
        problems.extend(refused)
    if problems:
        raise PlanError(problems)
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
        "network_operator": {"chart_values": network_operator_values(values, rails)},
        "storage": storage,
        "gpu_operator": gpu_operator,
        "skew_notes": skew_notes,
        "rail_notes": rail_notes,
        "charts": chart_sources(values, storage),
    }
    result["summary"] = summary_text(result)
    return result


# --------------------------------------------------------------------------------------------- text
def node_summary(node_plan: Mapping[str, Any], topology: Mapping[str, Any]) -> str:
    pre = node_plan.get("preflight") or {}
    gpus = topology.get("gpus") or []
    model = gpus[0].get("model") if gpus else "none"
    roce = node_plan.get("roce") or {}
    parts = [
        f"{pre.get('os')}, kernel {pre.get('kernel')}",
        f"{len(gpus)}x {model}",
        f"QoS on {len(roce.get('interfaces') or [])} NICs ({roce.get('backend')})",
    ]
    rail_nics = sorted({r.get("nic") for r in topology.get("rails") or []}, key=_topology_rails.name_key)
    rails = f"{len(rail_nics)} rails ({', '.join(rail_nics) or 'none'})"
    left_out = [
        f"{x['nic']} {x['state']} (needed by {', '.join(x['gpus']) or 'no GPU'})"
        for x in topology.get("rails_excluded") or []
    ]
    if left_out:
        rails += "; not a rail: " + "; ".join(left_out)
    parts.append(rails)
    for acs in roce.get("acs_redirect") or []:
        parts.append(
            "ACS redirect on {} ({}): {}".format(
                acs["bridge"], ", ".join(acs["paths"]) or "GPU-NIC path", acs["action"]
            )
        )
    doca = node_plan.get("doca_ofed")
    if doca:
        parts.append(
            "DOCA-OFED {} {}".format(doca["profile"]["profile"], doca.get("selected") or "(version from repository)")
        )
        if doca.get("unsigned"):
            parts.append("DOCA repository UNSIGNED (doca_ofed_gpg_check false, acknowledged)")
    rdma = node_plan.get("gpudirect_rdma") or {}
    parts.append(f"GPUDirect RDMA {rdma.get('method')}")
    gds = node_plan.get("gpudirect_storage")
    parts.append(f"GDS {gds['mode']}" if gds else "GDS off")
    return "; ".join(parts)


def _chart_source(var: str, name: str, version: Any, repo: str, path: str, keyring: str) -> Dict[str, Any]:
    if path:
        return {
            "chart": name or path,
            "source": path,
            "provenance": "local chart (verified by whoever placed it there)",
        }
    source = f"{repo} {name} {version}"
    if keyring:
        return {"chart": name, "source": source, "provenance": f"verified against its provenance ({keyring})"}
    return {"chart": name, "source": source, "provenance": f"NOT verified ({var} is empty)"}


def chart_sources(values: Mapping[str, Any], storage: Optional[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Where each chart the cluster roles install comes from, and whether its provenance is verified
    (helm pull --verify with the keyring given), for the summary."""
    out = []
    roles = values.get("plan_cluster_roles") or []
    for role in ("network_operator", "gpu_operator"):
        if role in roles and values.get(f"{role}_install_chart", True):
            out.append(
                _chart_source(
                    f"{role}_chart_keyring",
                    str(values.get(f"{role}_chart_name") or ""),
                    values.get(f"{role}_chart_version"),
                    str(values.get(f"{role}_chart_repo_url") or ""),
                    str(values.get(f"{role}_chart_path") or ""),
                    str(values.get(f"{role}_chart_keyring") or ""),
                )
            )
    for key, driver in sorted(((storage or {}).get("drivers") or {}).items()):
        if driver.get("kind") == "helm" and driver.get("install", True):
            out.append(
                _chart_source(
                    f"storage_csi_drivers.{key}.chart_keyring",
                    str(driver.get("chart_name") or ""),
                    driver.get("chart_version"),
                    str(driver.get("chart_repo_url") or ""),
                    str(driver.get("chart_path") or ""),
                    str(driver.get("chart_keyring") or ""),
                )
            )
    return out


def summary_text(result: Mapping[str, Any]) -> str:
    fab = result["fabric"]
    lines = [
        "gpufabric.rollout plan: {} GPU node(s), {} node group(s), mode {}".format(
            len(result["nodes"]), len(result["network"]["node_groups"]), result.get("k8s_mode")
        ),
        "fabric: {} lossless priority {}, data DSCP {} -> ToS {} (ECN {}), CNP DSCP {} on priority {}, "
        "MTU {}, PFC {}, RDMA netns {}".format(
            fab.get("transport"),
            fab.get("lossless_priority"),
            fab.get("data_dscp"),
            fab.get("roce_tos"),
            "on" if fab.get("ecn") else "off",
            fab.get("cnp_dscp"),
            fab.get("cnp_priority"),
            fab.get("mtu"),
            "on" if fab.get("pfc") else "off",
            fab.get("rdma_netns_mode"),
        ),
        "NCCL {}: NCCL_IB_TC {} on hosts and in Pods".format(result["nccl_version"], fab.get("roce_tos")),
        "nodes:",
    ]
    for host, node in result["nodes"].items():
        origin = "" if node.get("source") == "this run" else f" [stored {node.get('stored_at')}]"
        lines.append(f"  {host}: {node.get('summary')}{origin}")
    lines.append(_cluster_report.report_text(result["network"]).rstrip("\n"))
    lines.extend(_plan_gpu_operator.summary_lines(result.get("gpu_operator")))
    counts = ", ".join(f"{part} {len(objs)}" for part, objs in result["network"]["objects"].items())
    lines.append(f"objects: {counts}")
    lines.extend(_plan_storage_csi.summary_lines(result.get("storage")))
    lines.extend(f"chart {c['chart']}: {c['source']}, {c['provenance']}" for c in result.get("charts") or [])
    lines.extend(f"version skew: {note}" for note in result.get("skew_notes") or [])
    lines.extend(f"rails: {note}" for note in result.get("rail_notes") or [])
    return "\n".join(lines) + "\n"


def write_plan(plan_dir: str, result: Mapping[str, Any]) -> List[str]:
    """plan.json (the cluster plan and the plan of every node in this run) and summary.txt in
    plan_dir, rewritten only when their content changes."""
    os.makedirs(plan_dir, exist_ok=True)
    written = []
    for name, text in (
        ("plan.json", json.dumps(result, indent=1, sort_keys=True) + "\n"),
        ("summary.txt", result["summary"]),
    ):
        path = os.path.join(plan_dir, name)
        try:
            with open(path, encoding="utf-8") as handle:
                if handle.read() == text:
                    written.append(path)
                    continue
        except OSError:
            pass
        fd, tmp = tempfile.mkstemp(dir=plan_dir, prefix=".plan-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written
