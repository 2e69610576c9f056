# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's part of the cluster plan: chart values, per-node-group NVIDIADrivers, and the
ClusterPolicy fields the chart must render from those values.

Inputs are the checked cluster values (the gpu_operator role's variables) and every GPU node's
record, whose ``gpu`` part says which driver the node runs or will run (``managed_by`` host or
operator, version, kernel module flavour), how GPUDirect RDMA works there and whether GDS needs
nvidia-fs. Nothing here is a free-form values blob: each chart value comes from one variable or
from the nodes, and ``gpu_operator_extra_values`` may add to the values but not override those.

Chart facts (NVIDIA/gpu-operator, deployments/gpu-operator/values.yaml and
templates/clusterpolicy.yaml at v24.9.0 ... v26.7.0; controllers/object_controls.go):
- driver.enabled false leaves the driver to the host; driver.rdma.enabled adds the
  nvidia-peermem-ctr container to the operator's driver pod; driver.rdma.useHostMofed (only with
  rdma.enabled) builds nvidia-peermem against the host's MOFED (/usr/src/ofa_kernel) instead of
  the Network Operator's driver container; gds.enabled adds the nvidia-fs-ctr container;
- driver.kernelModuleType (auto|open|proprietary) since v25.3.0; driver.useOpenKernelModules and
  operator.defaultRuntime before it;
- driver.nvidiaDriverCRD.enabled hands the driver to NVIDIADriver objects (nvidia.com/v1alpha1),
  one per node group with a nodeSelector; deployDefaultCR false keeps the chart's own out;
- the device plugin mounts /dev/nvidia-fs* when nvidia_fs is loaded on the node (or gds.enabled),
  so a host-loaded nvidia-fs needs no operator value.

Node Feature Discovery runs once. When the Network Operator's chart is installed with its NFD, the
GPU Operator's stays off: the Network Operator's NFD labels GPUs (PCI classes 0300/0302 by vendor,
its chart default since v23.7.0) and NICs (a NodeFeatureRule), publishes the nvidia.com label
namespace, and is there first (cluster.yml runs network_operator before gpu_operator).

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import dns_name, label_value

# The chart values live in plan.gpu_operator_values.
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.gpu_operator_values import (
    DRA_VAR,
    DRIVER_VAR,
    chart_values,
    check_chart_source,
    check_extra_values,
    deep_merge,
    gpu_cluster_values,
    nvidia_driver,
)

CLUSTER_POLICY = "cluster-policy"
# The GPUCluster is a singleton of this name (its CRD's validation rule; the chart's helper).
GPU_CLUSTER = "gpu-cluster"
# What the operator needs served in dra mode: the GPUCluster, the ClusterPolicy kind (the GPUCluster
# controller lists ClusterPolicies to refuse a second stack) and the DRA driver's ComputeDomain kinds
# (the chart's crds/ at v26.7.0).
DRA_CRDS = [
    "clusterpolicies.nvidia.com",
    "gpuclusters.nvidia.com",
    "computedomains.resource.nvidia.com",
    "computedomaincliques.resource.nvidia.com",
]
# ClusterPolicy operands a GPUCluster does not deploy (internal/state/manager.go, newGPUClusterStates:
# the DRA driver, DCGM, DCGM Exporter and the DRA validator only).
NOT_IN_GPU_CLUSTER = ("toolkit", "gpu_feature_discovery", "mig_manager", "node_status_exporter")
# ClusterPolicy operand states (controllers/state_manager.go) -> the component they deploy.
STATE_COMPONENTS = {
    "pre-requisites": "operator",
    "state-operator-metrics": "operator",
    "state-driver": "driver",
    "state-container-toolkit": "toolkit",
    "state-operator-validation": "validator",
    "state-device-plugin": "devicePlugin",
    "state-mps-control-daemon": "devicePlugin (MPS)",
    "state-dcgm": "dcgm",
    "state-dcgm-exporter": "dcgmExporter",
    "gpu-feature-discovery": "gfd",
    "state-mig-manager": "migManager",
    "state-node-status-exporter": "nodeStatusExporter",
}


def _short(hosts: List[str], limit: int = 4) -> str:
    return (
        ", ".join(hosts)
        if len(hosts) <= limit
        else "{} and {} more".format(", ".join(hosts[:limit]), len(hosts) - limit)
    )


# --------------------------------------------------------------------------------------------- groups
def driver_groups(nodes: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Nodes that need the same driver from the operator (or run the same host driver), by key."""
    groups: Dict[Tuple, Dict[str, Any]] = {}
    for host in sorted(nodes):
        gpu = nodes[host].get("gpu") or {}
        driver = gpu.get("driver") or {}
        rdma = gpu.get("rdma_method") == "peermem"
        entry = {
            "version": driver.get("version"),
            "kernel_module": driver.get("flavour"),
            "precompiled": bool(driver.get("precompiled")),
            "rdma": rdma,
            "use_host_mofed": rdma and bool(gpu.get("mofed")),
            "gds": ((gpu.get("gds") or {}).get("mode")) == "nvidia_fs",
        }
        key = tuple(sorted(entry.items()))
        group = groups.setdefault(key, dict(entry, hosts=[], nodes=[]))
        group["hosts"].append(host)
        group["nodes"].append(nodes[host].get("k8s_node_name") or host)
    out = sorted(groups.values(), key=lambda g: (str(g["version"]), str(g["kernel_module"]), g["hosts"][0]))
    for group in out:
        parts = [str(group["version"]), str(group["kernel_module"])]
        parts += [flag for flag in ("precompiled", "rdma", "gds") if group[flag]]
        group["name"] = dns_name("-".join(parts).replace(".", "-"))
    return out


def _describe(group: Mapping[str, Any]) -> str:
    return "{} {}{}{}{} on {}".format(
        group["version"],
        group["kernel_module"],
        " precompiled" if group["precompiled"] else "",
        ", nvidia-peermem" if group["rdma"] else "",
        ", nvidia-fs" if group["gds"] else "",
        _short(group["hosts"]),
    )


# --------------------------------------------------------------------------------------------- plan
def nfd_owner(values: Mapping[str, Any], problems: List[str]) -> str:
    """Who deploys Node Feature Discovery: network_operator, gpu_operator or external (exactly one)."""
    network = bool(values.get("network_operator_install_chart")) and bool(values.get("network_operator_nfd_enabled"))
    wanted = values.get("gpu_operator_nfd_enabled")
    gpu = (not network) if wanted is None else bool(wanted)
    if gpu and network:
        problems.append(
            "gpu_operator_nfd_enabled: true, and network_operator_nfd_enabled: true with the Network Operator's chart "
            "installed: Node Feature Discovery would run twice (two masters and workers labelling the same nodes); "
            "leave gpu_operator_nfd_enabled unset (the Network Operator's NFD serves both) or set one of them false"
        )
    return "network_operator" if network else ("gpu_operator" if gpu else "external")


def plan(
    values: Mapping[str, Any], nodes: Mapping[str, Mapping[str, Any]], label_prefix: str, problems: List[str]
) -> Optional[Dict[str, Any]]:
    """The gpu_operator section of the cluster plan; None when the role is not part of the cluster layer."""
    by_mode: Dict[str, List[str]] = {}
    for host in sorted(nodes):
        mode = ((nodes[host].get("gpu") or {}).get("driver") or {}).get("managed_by") or "host"
        by_mode.setdefault(mode, []).append(host)
    if len(by_mode) > 1:
        problems.append(
            f"{DRIVER_VAR}.managed_by: differs between GPU nodes ("
            + "; ".join(f"{mode} on {_short(hosts)}" for mode, hosts in sorted(by_mode.items()))
            + "); the GPU Operator's driver.enabled is one value for the cluster, so set it once in group_vars"
        )
        return None
    mode = next(iter(by_mode), "host")
    if "gpu_operator_chart_version" not in values:
        if mode == "operator":
            problems.append(
                f"{DRIVER_VAR}.managed_by: operator on {_short(by_mode['operator'])}, but gpu_operator is not in "
                "plan_cluster_roles: nothing would install their driver; add it, or set managed_by: host"
            )
        return None
    groups = driver_groups(nodes)
    crd_path = bool(values.get("gpu_operator_driver_crd"))
    if crd_path and mode == "host":
        problems.append(
            f"gpu_operator_driver_crd: true hands the driver to NVIDIADriver objects, but {DRIVER_VAR}.managed_by is "
            "host on every node (driver.enabled false); set managed_by: operator, or gpu_operator_driver_crd: false"
        )
    if mode == "operator" and not crd_path and len(groups) > 1:
        problems.append(
            f"{DRIVER_VAR}: the GPU nodes need {len(groups)} different operator drivers ("
            + "; ".join(_describe(g) for g in groups)
            + "), but one ClusterPolicy deploys one; set gpu_operator_driver_crd: true for one NVIDIADriver per "
            "group, or make the driver, gpudirect_rdma_method and GDS intent the same on every node"
        )
    dra = values.get(DRA_VAR) == "dra"
    if dra and mode == "operator" and not crd_path:
        problems.append(
            f"{DRA_VAR}: dra deploys the GPU Operator's GPUCluster, and the chart installs a GPUCluster with an "
            f"operator-managed driver only through NVIDIADriver objects ({DRIVER_VAR}.managed_by: operator, "
            "gpu_operator_driver_crd: false); set gpu_operator_driver_crd: true, or managed_by: host"
        )
    extra = values.get("gpu_operator_extra_values") or {}
    check_extra_values(extra, problems)
    check_chart_source(values, problems)
    nfd = nfd_owner(values, problems) if values.get("gpu_operator_install_chart", True) else "external"
    generated, expect = chart_values(values, mode, groups, crd_path, nfd == "gpu_operator")
    gpu_cluster: Optional[Dict[str, Any]] = None
    if dra:
        dra_values, dra_expect = gpu_cluster_values(values)
        generated = deep_merge(generated, dra_values)
        gpu_cluster = {"kind": "GPUCluster", "api_version": "nvidia.com/v1alpha1", "name": GPU_CLUSTER}
        gpu_cluster["expect"] = dra_expect
        comps = values.get("gpu_operator_components") or {}
        gpu_cluster["not_deployed"] = [name for name in NOT_IN_GPU_CLUSTER if comps.get(name)]
    label = f"{label_prefix}/gpu-driver"
    drivers = [nvidia_driver(values, g, label) for g in groups] if crd_path and mode == "operator" else []
    node_labels: Dict[str, Dict[str, str]] = {}
    for group in groups if drivers else []:
        for node in group["nodes"]:
            node_labels[node] = {label: label_value(group["name"])}
    section = {
        "driver_mode": mode,
        "driver_crd": crd_path,
        "nfd": nfd,
        "driver_groups": groups,
        "chart_values": deep_merge(generated, extra),
        "cluster_policy": None if dra else {"name": CLUSTER_POLICY, "expect": expect},
        "nvidia_drivers": drivers,
        "node_labels": node_labels,
        "node_label_owned": [label],
        "crds": (list(DRA_CRDS) if dra else ["clusterpolicies.nvidia.com"])
        + (["nvidiadrivers.nvidia.com"] if crd_path else []),
    }
    if gpu_cluster:
        # Only in dra mode: device_plugin plans the section exactly as before.
        section["gpu_cluster"] = gpu_cluster
        section["mig_strategy"] = expect.get("mig.strategy")
    return section


def summary_lines(section: Optional[Mapping[str, Any]]) -> List[str]:
    if not section:
        return ["GPU Operator: not part of this cluster layer"]
    gpu_cluster = section.get("gpu_cluster")
    if gpu_cluster:
        lines = [
            "GPU Operator: GPUCluster/{} (GPU DRA driver {}, device plugin off), driver {} ({}), NFD from {}".format(
                gpu_cluster["name"],
                gpu_cluster["expect"]["draDriver.version"],
                "from the host" if section["driver_mode"] == "host" else "installed by the operator",
                "NVIDIADriver per group" if section["driver_crd"] else "no operator driver",
                section["nfd"],
            )
        ]
        if gpu_cluster["not_deployed"]:
            lines.append(
                "  not deployed in dra mode (the GPUCluster has no such operand): gpu_operator_components "
                + ", ".join(gpu_cluster["not_deployed"])
            )
    else:
        lines = [
            "GPU Operator: driver {} ({}), NFD from {}, MIG strategy {}".format(
                "from the host" if section["driver_mode"] == "host" else "installed by the operator",
                "NVIDIADriver per group" if section["driver_crd"] else "ClusterPolicy",
                section["nfd"],
                section["cluster_policy"]["expect"].get("mig.strategy"),
            )
        ]
    for group in section["driver_groups"]:
        lines.append("  driver " + _describe(group))
    return lines


# --------------------------------------------------------------------------------------------- status
def spec_drift(
    cluster_policy: Optional[Mapping[str, Any]],
    expect: Mapping[str, Any],
    name: str = f"ClusterPolicy/{CLUSTER_POLICY}",
) -> List[str]:
    """The planned fields of the operator's custom resource (``name``: the ClusterPolicy, or the
    GPUCluster in dra mode) the live object does not have (a chart that ignored a value)."""
    if not cluster_policy:
        return [f"{name} does not exist: the chart did not deploy it"]
    out = []
    for path, want in sorted(expect.items()):
        node: Any = cluster_policy.get("spec") or {}
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        if node != want:
            out.append(f"spec.{path}: planned {json.dumps(want)}, the chart rendered {json.dumps(node)}")
    return out


def not_ready(
    cluster_policy: Optional[Mapping[str, Any]],
    daemonsets: Optional[List[Mapping[str, Any]]] = None,
    drivers: Optional[List[Mapping[str, Any]]] = None,
    name: str = f"ClusterPolicy/{CLUSTER_POLICY}",
) -> List[str]:
    """What is not ready, one line each: the operator's custom resource (``name``: the ClusterPolicy
    with its operand states as components, or the GPUCluster), the operator's DaemonSets short of
    ready pods, and NVIDIADrivers; [] when everything is ready."""
    lines: List[str] = []
    status = (cluster_policy or {}).get("status") or {}
    if status.get("state") != "ready":
        message = " ".join(
            c.get("message") or ""
            for c in status.get("conditions") or []
            if c.get("type") == "Error" and c.get("status") == "True"
        )
        match = re.search(r"states not ready: \[([^\]]*)\]", message)
        states = match.group(1).replace(",", " ").split() if match else []
        if states:
            named = ", ".join(f"{STATE_COMPONENTS.get(s, s)} ({s})" for s in states)
            lines.append(f"{name} {status.get('state') or 'has no state'}: not ready: {named}")
        else:
            lines.append(
                f"{name} state {status.get('state') or '(none)'}" + (f": {message.strip()}" if message.strip() else "")
            )
    for ds in daemonsets or []:
        st = ds.get("status") or {}
        desired, ready = st.get("desiredNumberScheduled") or 0, st.get("numberReady") or 0
        if ready < desired:
            lines.append(f"DaemonSet/{(ds.get('metadata') or {}).get('name')}: {ready}/{desired} pods ready")
    for drv in drivers or []:
        state = (drv.get("status") or {}).get("state")
        if state != "ready":
            lines.append(f"NVIDIADriver/{(drv.get('metadata') or {}).get('name')}: state {state or '(none)'}")
    return lines
