# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling upgrade (playbooks/upgrade.yml): which nodes change what, in which batches, and when
the run stops.

- ``node_section(plan, facts)`` runs inside every node plan: the node's installed versions against
  the plan's targets, layer by layer in the order of the skew rules (DOCA-OFED, GPU driver,
  nvidia-peermem, nvidia-fs, QoS), and whether the node needs a maintenance window (cordon, drain,
  reload, validate, uncordon). A node already at its targets needs none and is never drained.
- ``plan(values, records, ...)`` runs on the controller for the upgrade: the nodes to change (and
  the nodes a failed run left cordoned, which it resumes), the batches (``serial`` as a number or a
  percentage, the way Ansible computes it, so the batches printed are the batches run), the cluster
  phase in the skew rules' order with the operators' upgrade paths checked, and the summary that
  ``--check`` prints.
- ``stop(failed, total, max_fail_percentage)``: the run stops once more than that share of the
  nodes to upgrade has failed.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError, group_nodes
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_migration as _migration
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew

# Node annotations of a maintenance window (written by the node_maintenance role).
ANNOTATION_PREFIX = "rollout.gpufabric.io/"
CORDONED_BY = ANNOTATION_PREFIX + "cordoned-by"
FAILED = ANNOTATION_PREFIX + "failed"
SERIAL_RE = re.compile(r"^\s*([0-9]+)\s*(%?)\s*$")
# The upgrade variables (the plan role's ``upgrade`` entry point) the rolling play reads back from
# the plan, checked, with their defaults.
SETTINGS = {
    "gpufabric_upgrade_serial": "1",
    "gpufabric_upgrade_max_fail_percentage": 0,
    "gpufabric_upgrade_drain_timeout": 600,
    "gpufabric_upgrade_drain_retry_delay": 10,
    "gpufabric_upgrade_drain_grace_period": -1,
    "gpufabric_upgrade_allow_reboot": False,
    "gpufabric_upgrade_reboot_timeout": 1800,
    "gpufabric_upgrade_gpu_probe": True,
    "gpufabric_upgrade_cluster": True,
    "gpufabric_upgrade_allocation_timeout": 600,
    "gpufabric_upgrade_allocation_per_node": False,
}

# Why a move of the device allocation node by node needs the user's word (docs/upgrade.md, docs/facts.md
# "GPU Operator: per-node allocation mode"): it relies on a GPU Operator that serves the ClusterPolicy's
# device plugins and the GPUCluster's DRA driver side by side, each node choosing by a label. That
# label was read from the operator's main branch; the release the collection pins (v26.7.0) serves
# one of the two per cluster, and with it no node would ever show its DRA devices inside its window.
PER_NODE = "gpufabric_upgrade_allocation_per_node"


class UpgradeError(ValueError):
    """The upgrade cannot be planned; ``problems`` names each cause."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


# --------------------------------------------------------------------------------------------- node
def installed_version(packages: Optional[Mapping[str, Any]], name: str) -> Optional[str]:
    """The installed version of a package from ansible_facts.packages (deb: version-revision; rpm adds release)."""
    entries = (packages or {}).get(name) or []
    if not entries:
        return None
    entry = entries[0]
    version = str(entry.get("version", ""))
    return f"{version}-{entry['release']}" if entry.get("release") else version


def driver_matches(package_version: Optional[str], driver_version: Optional[str]) -> bool:
    """A driver package version (580.95.05-1, 3:580.95.05-1.el9) carries the driver version 580.95.05."""
    if not package_version or not driver_version:
        return False
    upstream = str(package_version).split(":", 1)[-1].split("-", 1)[0]
    return upstream == str(driver_version)


def _entry(layer: str, installed: Any, target: Any, action: str, what: str) -> Dict[str, Any]:
    return {"layer": layer, "installed": installed, "target": target, "action": action, "what": what}


def node_section(plan: Mapping[str, Any], facts: Mapping[str, Any]) -> Dict[str, Any]:
    """What the upgrade changes on this node, layer by layer, and whether it needs a window."""
    layers: List[Dict[str, Any]] = []
    packages = (facts.get("ansible") or {}).get("packages") or {}
    doca = plan.get("doca_ofed")
    doca_reload = False
    if doca and doca.get("selected"):
        meta = doca["profile"]["metapackage"]
        installed = installed_version(packages, meta)
        kernel = bool(doca["profile"].get("kernel_modules"))
        stack = facts.get("doca") or {}
        install = installed != doca["selected"]
        pending = _doca.pending_reload(stack, doca.get("expected_release"), kernel)
        doca_reload = kernel and (pending is not None or (install and stack.get("loaded") != "none"))
        action = "+".join(a for a, on in (("install", install), ("reload", doca_reload)) if on) or "none"
        what = "{} {} -> {}{}".format(
            meta, installed or "(none)", doca["selected"], " (openibd reload)" if doca_reload else ""
        )
        if not install and doca_reload:
            running = stack.get("loaded_release") or stack.get("loaded")
            what = f"{meta} {installed} installed, mlx5_core {running} loaded (openibd reload)"
        layers.append(_entry("doca_ofed", installed, doca["selected"], action, what))
    driver = plan.get("gpu_driver") or {}
    driver_reload = False
    if driver.get("managed_by") == "host" and driver.get("packages"):
        target = driver.get("version")
        installed = driver.get("installed")
        loaded = driver.get("loaded")
        install = not driver_matches(installed, target)
        driver_reload = bool(loaded) and loaded != target
        action = "+".join(a for a, on in (("install", install), ("reload", driver_reload)) if on) or "none"
        what = "NVIDIA driver {} -> {}{}".format(
            loaded or installed or "(none)", target, " (module reload)" if driver_reload else ""
        )
        layers.append(_entry("gpu_driver", installed, target, action, what))
    elif driver.get("managed_by") == "operator":
        layers.append(
            _entry("gpu_driver", None, driver.get("version"), "none", "the GPU Operator's upgrade controller rolls it")
        )
    moved = doca_reload or driver_reload
    rdma = plan.get("gpudirect_rdma") or {}
    if rdma.get("method") == "peermem" and rdma.get("peermem_loaded_by") == "host":
        layers.append(_entry("nvidia_peermem", None, None, "reload" if moved else "none", "nvidia-peermem reload"))
    gds = plan.get("gpudirect_storage") or {}
    if gds.get("mode") == "nvidia_fs" and gds.get("nvidia_fs_loaded_by") == "host":
        layers.append(_entry("nvidia_fs", None, None, "reload" if moved else "none", "nvidia-fs reload"))
    if plan.get("roce"):
        layers.append(
            _entry("qos", None, None, "reapply" if doca_reload else "none", "QoS re-applied after the mlx5 reload")
        )
    changes = [layer["what"] for layer in layers if layer["action"] != "none"]
    return {"layers": layers, "changes": changes, "window": bool(changes)}


# --------------------------------------------------------------------------------------------- batches
def serial_sizes(serial: Any, count: int) -> List[int]:
    """Batch sizes for ``count`` nodes: a number, or a percentage of ``count`` rounded down (at least 1),
    as Ansible's ``serial`` computes it (ansible.utils.helpers.pct_to_int)."""
    match = SERIAL_RE.match(str(serial))
    if not match:
        raise UpgradeError([f"gpufabric_upgrade_serial: {serial!r} is not a number of nodes or a percentage like 25%"])
    number, percent = int(match.group(1)), bool(match.group(2))
    size = (int(number / 100.0 * count) or 1) if percent else number
    if number < 1 or (percent and number > 100):
        raise UpgradeError([f"gpufabric_upgrade_serial: {serial!r} must be at least 1 (or 1%-100%)"])
    sizes, left = [], count
    while left > 0:
        sizes.append(min(size, left))
        left -= size
    return sizes


def batches(hosts: Sequence[str], serial: Any) -> List[List[str]]:
    """The hosts in name order (the rolling play runs with ``order: sorted``), cut into batches."""
    ordered = sorted(hosts)
    out, start = [], 0
    for size in serial_sizes(serial, len(ordered)):
        out.append(ordered[start : start + size])
        start += size
    return out


def stop(failed: int, total: int, max_fail_percentage: int) -> bool:
    """True when more than ``max_fail_percentage`` percent of the ``total`` nodes to upgrade failed."""
    return total > 0 and failed * 100 > int(max_fail_percentage) * total


# --------------------------------------------------------------------------------------------- plan
def _node_state(node: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    annotations = dict(((node or {}).get("metadata") or {}).get("annotations") or {})
    return {
        "exists": node is not None,
        "unschedulable": bool(((node or {}).get("spec") or {}).get("unschedulable")),
        "cordoned_by": annotations.get(CORDONED_BY),
        "failed": annotations.get(FAILED),
    }


def plan(
    values: Mapping[str, Any],
    records: Mapping[str, Mapping[str, Any]],
    cluster_nodes: Optional[Sequence[Mapping[str, Any]]],
    current: Mapping[str, Optional[str]],
    rules: Mapping[str, Any],
    hosts: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """The upgrade plan; raises UpgradeError naming every refusal."""
    problems: List[str] = []
    notes: List[str] = []
    by_name = {((n.get("metadata") or {}).get("name")): n for n in cluster_nodes or []}
    in_run = set(hosts) if hosts is not None else set(records)
    states = {
        host: _node_state(by_name.get((records[host] or {}).get("k8s_node_name") or host))
        if cluster_nodes is not None
        else _node_state(None)
        for host in records
    }
    migration, groups = _allocation(values, records, cluster_nodes, in_run, states, problems)
    nodes: Dict[str, Dict[str, Any]] = {}
    for host in sorted(records):
        record = records[host] or {}
        section = record.get("upgrade") or {}
        name = record.get("k8s_node_name") or host
        state = states[host]
        changes = list(section.get("changes") or [])
        if host in migration:
            changes.append(_migration.change_text(migration[host]))
        resume = bool(state["failed"]) or (state["cordoned_by"] == "upgrade")
        if host not in in_run:
            status = "outside this run"
        elif changes:
            status = "to upgrade"
        elif resume:
            status = "to resume"
        else:
            status = "at target"
        if status in ("to upgrade", "to resume") and cluster_nodes is not None and not state["exists"]:
            notes.append(f"{host}: no Node {name!r} in the cluster; it is upgraded without a drain")
        if status == "to upgrade" and state["unschedulable"] and not state["cordoned_by"]:
            notes.append(f"{host}: Node {name} is cordoned by someone else; it is upgraded and left cordoned")
        nodes[host] = {
            "k8s_node_name": name,
            "status": status,
            "changes": changes,
            "failed_before": state["failed"],
            "in_cluster": state["exists"],
        }
    pending = [h for h, n in nodes.items() if n["status"] in ("to upgrade", "to resume")]
    serial = values.get("gpufabric_upgrade_serial", "1")
    try:
        if pending and migration:
            # Node group by node group: the first batch's size (a number, or a share of all the nodes to change).
            plan_batches = _migration.group_batches(groups, pending, serial_sizes(serial, len(pending))[0])
        else:
            plan_batches = batches(pending, serial) if pending else []
    except UpgradeError as exc:
        problems.extend(exc.problems)
        plan_batches = []
    cluster: List[Dict[str, Any]] = []
    if values.get("gpufabric_upgrade_cluster", True):
        for component in _skew.CLUSTER_LAYERS:
            variable = f"{component}_chart_version"
            if variable not in values or not values.get(f"{component}_install_chart", True):
                continue
            target = values.get(variable)
            now = current.get(component)
            found, warned = _skew.upgrade_path(component, variable, now, target, rules)
            problems.extend(found)
            notes.extend(warned)
            change = str(now or "").lstrip("v") != str(target).lstrip("v")
            cluster.append({"layer": component, "current": now, "target": target, "change": change})
    if problems:
        raise UpgradeError(problems)
    result = {
        "nodes": nodes,
        "pending": sorted(pending),
        # The rolling play's host order (the batches, flattened): the play adds the hosts in this order.
        "host_order": [host for batch in plan_batches for host in batch],
        "batches": plan_batches,
        "serial": [len(b) for b in plan_batches],
        "max_fail_percentage": int(values.get("gpufabric_upgrade_max_fail_percentage", 0)),
        "cluster": cluster,
        "order": _skew.layer_order(rules),
        "notes": notes,
        "settings": {name: values.get(name, default) for name, default in SETTINGS.items()},
        "migration": {
            "target": _target(values),
            "read": cluster_nodes is not None,
            "nodes": migration,
            # The cluster-wide objects of the mode follow once every node moved (the upgrade's last play); a
            # rerun that confirms a node a failed run left switched applies them too.
            "cluster": bool(migration),
        },
    }
    result["summary"] = summary_text(result, values)
    return result


def _target(values: Mapping[str, Any]) -> str:
    return str(values.get(_migration.VARIABLE) or "device_plugin")


def _allocation(
    values: Mapping[str, Any],
    records: Mapping[str, Mapping[str, Any]],
    cluster_nodes: Optional[Sequence[Mapping[str, Any]]],
    in_run: Any,
    states: Mapping[str, Mapping[str, Any]],
    problems: List[str],
) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, str]]:
    """The nodes of this run whose window moves them to the planned device allocation (allocation_migration),
    and each host's node group (the groups of the cluster plan: intent.cluster.group_nodes)."""
    target = _target(values)
    if target not in _migration.MODES:
        problems.append(f"{_migration.VARIABLE}: {target!r} is not one of {', '.join(_migration.MODES)}")
        return {}, {}
    prefix = str((values.get("gpufabric_rails") or {}).get("label_prefix") or "gpufabric.io")
    names = {host: str((records[host] or {}).get("k8s_node_name") or host) for host in records}
    try:
        grouped, _rails = group_nodes({names[h]: (records[h] or {}).get("topology") or {} for h in records}, prefix)
    except ClusterPlanError as exc:
        problems.append(f"{_migration.VARIABLE}: the node groups cannot be planned: {exc}")
        return {}, {}
    by_name = {node: group["name"] for group in grouped for node in group["nodes"]}
    groups = {host: by_name.get(names[host], "") for host in records}
    resuming = [h for h, state in states.items() if state["failed"] or state["cordoned_by"] == "upgrade"]
    rails = {host: bool(((records[host] or {}).get("topology") or {}).get("rails")) for host in records}
    migration = _migration.plan(
        target, prefix, sorted(h for h in records if h in in_run), names, cluster_nodes, groups, resuming, rails
    )
    if migration and not values.get(PER_NODE, False):
        problems.append(
            f"{_migration.VARIABLE}: {len(migration)} node(s) would move to {target} one node group at a time, which "
            "needs a GPU Operator that serves the device plugins and the DRA driver side by side (the per-node label "
            "nvidia.com/gpu-operator.resource-allocation.mode); the GPU Operator release the collection pins serves "
            f"one of them per cluster. Set {PER_NODE}: true only with such an operator; otherwise the move is a "
            "cluster-wide change in a maintenance window (docs/upgrade.md)"
        )
        return {}, groups
    return migration, groups


def summary_text(result: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    nodes = result["nodes"]
    lines = [
        "gpufabric.rollout upgrade: {} of {} GPU node(s) to change, in {} batch(es) (serial {}); the run stops "
        "when more than {}% of them fail".format(
            len(result["pending"]),
            len(nodes),
            len(result["batches"]),
            values.get("gpufabric_upgrade_serial", "1"),
            result["max_fail_percentage"],
        ),
        "order in each node's window: cordon, drain, "
        + ", ".join(item["layer"] for item in result["order"]["host"])
        + ", uncordon",
    ]
    for index, batch in enumerate(result["batches"], start=1):
        lines.append(f"batch {index}: {', '.join(batch)}")
        for host in batch:
            node = nodes[host]
            what = "; ".join(node["changes"]) or "no version change"
            if node["failed_before"]:
                what += f" (resumes: a run left it cordoned: {node['failed_before']})"
            lines.append(f"  {host} (Node {node['k8s_node_name']}): {what}")
    idle = [h for h, n in nodes.items() if n["status"] == "at target"]
    if idle:
        lines.append(f"at target, not drained: {', '.join(idle)}")
    outside = [h for h, n in nodes.items() if n["status"] == "outside this run"]
    if outside:
        lines.append(f"outside this run (--limit): {', '.join(outside)}")
    if result["cluster"]:
        parts = [
            "{} {} -> {}".format(c["layer"], c["current"] or "(not installed)", c["target"])
            if c["change"]
            else "{} {} (no change)".format(c["layer"], c["target"])
            for c in result["cluster"]
        ]
        lines.append("cluster phase, after the nodes: " + "; ".join(parts))
    else:
        lines.append("cluster phase: none")
    move = result["migration"]
    lines.extend(_migration.summary_lines(move["nodes"], move["target"], move["read"]))
    if move["cluster"]:
        lines.append(
            "then, once every node moved: the cluster-wide objects of {} (network_operator, gpu_operator, "
            "rdma_networks)".format(move["target"])
        )
    lines.extend(f"note: {note}" for note in result["notes"])
    return "\n".join(lines) + "\n"
