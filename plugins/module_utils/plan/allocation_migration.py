# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Moving GPU nodes between the device plugins and DRA (``gpufabric_k8s_device_allocation``), node
group by node group, inside the rolling upgrade's drained windows (playbooks/upgrade.yml).

Which stack serves a node's GPUs is a per-node label the GPU Operator reads,
``nvidia.com/gpu-operator.resource-allocation.mode`` (``device-plugin`` or ``dra``): its ClusterPolicy
(device plugin) and GPUCluster (DRA driver) may run side by side, each node is served by the stack its
label names, and the operator never overwrites a value that is already there (docs/facts.md, "GPU
Operator: per-node allocation mode"). The collection writes that label in a drained window, and its own
``<label prefix>/device-allocation`` beside it: the record of what the collection moved, and the label
a node selector of the drivers it does not deploy (dranet) can follow.

- ``current_mode(labels, prefix)``: the mode a Node is in now. The collection's label first, then the
  operator's; a Node with neither was served by the device plugins (the only mode before DRA).
- ``node_labels(mode, prefix)``: the labels the window writes.
- ``plan(...)``: per GPU node of the run, whether its window switches it (``switch``), confirms a
  switch a failed run left unconfirmed, or leaves it alone; its node group.
- ``group_batches(groups, hosts, serial)``: the batches node group by node group (a batch never holds
  two groups), in the upgrade's batch size.
- ``missing(mode, node, slices, rails)``: what the node does not publish yet for its new mode (the
  wait in the window polls it).

Pure Python, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

VARIABLE = "gpufabric_k8s_device_allocation"
MODES = ("device_plugin", "dra")
# docs/facts.md, "GPU Operator: per-node allocation mode".
OPERATOR_LABEL = "nvidia.com/gpu-operator.resource-allocation.mode"
OPERATOR_VALUES = {"device_plugin": "device-plugin", "dra": "dra"}
OWN_LABEL = "device-allocation"
# docs/facts.md, "DRA drivers: names and device attributes".
GPU_DRIVER = "gpu.nvidia.com"
NIC_DRIVER = "dra.net"
GPU_RESOURCE = "nvidia.com/gpu"


def own_label(prefix: str) -> str:
    """The collection's record of a Node's mode, under the rails' label prefix."""
    return f"{prefix}/{OWN_LABEL}"


def node_labels(mode: str, prefix: str) -> Dict[str, str]:
    """The labels that put a Node in ``mode``: the GPU Operator's and the collection's."""
    if mode not in MODES:
        raise ValueError(f"{VARIABLE}: {mode!r} is not one of {', '.join(MODES)}")
    return {OPERATOR_LABEL: OPERATOR_VALUES[mode], own_label(prefix): mode}


def current_mode(labels: Optional[Mapping[str, Any]], prefix: str) -> str:
    """The mode a Node's labels say it is in; neither label: the device plugins."""
    labels = labels or {}
    own = labels.get(own_label(prefix))
    if own in MODES:
        return str(own)
    for mode, value in OPERATOR_VALUES.items():
        if labels.get(OPERATOR_LABEL) == value:
            return mode
    return "device_plugin"


def plan(
    target: str,
    prefix: str,
    hosts: Sequence[str],
    node_names: Mapping[str, str],
    cluster_nodes: Optional[Sequence[Mapping[str, Any]]],
    groups: Mapping[str, str],
    resuming: Sequence[str] = (),
    rails: Optional[Mapping[str, bool]] = None,
) -> Dict[str, Dict[str, Any]]:
    """{host: {k8s_node_name, node_group, from, to, switch, labels, rails}} for each host of the run whose window
    moves it to ``target`` (``switch``) or confirms a move a failed run left unconfirmed (a host in
    ``resuming`` whose labels already say ``target``, but not the device plugins' default). Without a
    cluster (render mode) there is nothing to read or move: {}."""
    if cluster_nodes is None:
        return {}
    by_name = {((n.get("metadata") or {}).get("name")): n for n in cluster_nodes}
    out: Dict[str, Dict[str, Any]] = {}
    for host in sorted(hosts):
        name = node_names.get(host) or host
        node = by_name.get(name)
        if node is None:
            continue
        labels = (node.get("metadata") or {}).get("labels") or {}
        now = current_mode(labels, prefix)
        confirm = host in resuming and now == target and own_label(prefix) in labels
        if now == target and not confirm:
            continue
        out[host] = {
            "k8s_node_name": name,
            "node_group": groups.get(host) or "(no group)",
            "from": now,
            "to": target,
            "switch": now != target,
            "labels": node_labels(target, prefix),
            # whether the node has rails: in dra mode, dranet must publish its NICs too
            "rails": bool((rails or {}).get(host)),
        }
    return out


def change_text(entry: Mapping[str, Any]) -> str:
    """One line for the plan and the node's maintenance annotation."""
    if entry["switch"]:
        return "device allocation {} -> {} (node group {})".format(entry["from"], entry["to"], entry["node_group"])
    return "device allocation {}: confirm the node publishes its devices".format(entry["to"])


def group_batches(groups: Mapping[str, str], hosts: Sequence[str], size: int) -> List[List[str]]:
    """The hosts node group by node group (groups in name order, hosts in name order inside each), in
    batches of ``size`` that never span two groups: a failed batch stops the run inside one group."""
    if size < 1:
        raise ValueError("the batch size must be at least 1")
    by_group: Dict[str, List[str]] = {}
    for host in sorted(hosts):
        by_group.setdefault(groups.get(host) or "", []).append(host)
    out: List[List[str]] = []
    for group in sorted(by_group):
        members = by_group[group]
        out.extend(members[i : i + size] for i in range(0, len(members), size))
    return out


def missing(
    mode: str,
    node: Optional[Mapping[str, Any]],
    slices: Optional[Sequence[Mapping[str, Any]]],
    rails: bool,
) -> List[str]:
    """What the Node does not show yet for ``mode`` (empty: it is ready to uncordon).

    dra: a ResourceSlice of the GPU DRA driver for the node, and of dranet where the node has rails.
    device_plugin: allocatable ``nvidia.com/gpu`` above 0, and no GPU DRA driver slice left, so the
    scheduler cannot give the same GPU out twice."""
    name = ((node or {}).get("metadata") or {}).get("name") or "(unknown)"
    drivers = {str((s.get("spec") or {}).get("driver")) for s in slices or [] if s}
    out: List[str] = []
    if mode == "dra":
        for driver in [GPU_DRIVER] + ([NIC_DRIVER] if rails else []):
            if driver not in drivers:
                out.append(f"no ResourceSlice of {driver} for Node {name}")
        return out
    allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
    try:
        gpus = int(str(allocatable.get(GPU_RESOURCE, "0")))
    except ValueError:
        gpus = 0
    if gpus < 1:
        out.append(f"Node {name} has no allocatable {GPU_RESOURCE}")
    if GPU_DRIVER in drivers:
        out.append(f"Node {name} still has a ResourceSlice of {GPU_DRIVER}")
    return out


def summary_lines(migration: Mapping[str, Mapping[str, Any]], target: str, read: bool) -> List[str]:
    """The plan summary's lines about the move."""
    if not read:
        return [f"device allocation: not read (no cluster in render mode); {VARIABLE}: {target}"]
    moving = {h: e for h, e in migration.items() if e["switch"]}
    if not migration:
        return [f"device allocation: every GPU node of this run is at {target}"]
    groups: Dict[str, List[str]] = {}
    for host in sorted(migration):
        groups.setdefault(migration[host]["node_group"], []).append(host)
    lines = [
        f"device allocation: {len(moving)} node(s) move to {target}, node group by node group, each in its "
        f"drained window (labels {OPERATOR_LABEL} and the collection's own)"
    ]
    lines.extend(f"  node group {group}: {', '.join(hosts)}" for group, hosts in sorted(groups.items()))
    return lines
