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
import os
import re
import tarfile
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show, unknown_message
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import dns_name, label_value
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

DRIVER_VAR = "gpufabric_gpu_driver"
CLUSTER_POLICY = "cluster-policy"
MANAGED_BY = {_k8s_publish.MANAGED_BY_KEY: _k8s_publish.MANAGED_BY}
KERNEL_MODULE_TYPE_SINCE = (25, 3, 0)
VALIDATOR_REPO_MOVED = (25, 10, 0)  # validator and node status exporter left nvcr.io/nvidia/cloud-native
GPU_TOLERATIONS = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]

# gpu_operator_components key -> chart values key (and ClusterPolicy spec key).
COMPONENTS = {
    "toolkit": "toolkit",
    "device_plugin": "devicePlugin",
    "dcgm_exporter": "dcgmExporter",
    "gpu_feature_discovery": "gfd",
    "mig_manager": "migManager",
    "node_status_exporter": "nodeStatusExporter",
}
# Upstream repository of each image the chart pulls (values.yaml), re-rooted under
# gpu_operator_image_registry with the same path; None: depends on the chart version.
REPOSITORIES = {
    "operator": "nvcr.io/nvidia",
    "validator": None,
    "driver": "nvcr.io/nvidia",
    "toolkit": "nvcr.io/nvidia/k8s",
    "devicePlugin": "nvcr.io/nvidia",
    "dcgm": "nvcr.io/nvidia/cloud-native",
    "dcgmExporter": "nvcr.io/nvidia/k8s",
    "gfd": "nvcr.io/nvidia",
    "migManager": "nvcr.io/nvidia/cloud-native",
    "nodeStatusExporter": None,
    "gds": "nvcr.io/nvidia/cloud-native",
    "gdrcopy": "nvcr.io/nvidia/cloud-native",
}
NFD_REPOSITORY = "registry.k8s.io/nfd/node-feature-discovery"
# Top-level keys of the chart's values (v24.9.0 ... v26.7.0), for gpu_operator_extra_values.
CHART_KEYS = [
    "platform",
    "nfd",
    "psa",
    "cdi",
    "sandboxWorkloads",
    "hostPaths",
    "daemonsets",
    "validator",
    "operator",
    "mig",
    "driver",
    "toolkit",
    "devicePlugin",
    "dcgm",
    "dcgmExporter",
    "gfd",
    "migManager",
    "nodeStatusExporter",
    "gds",
    "gdrcopy",
    "vgpuManager",
    "vgpuDeviceManager",
    "vfioManager",
    "kataManager",
    "sandboxDevicePlugin",
    "kataSandboxDevicePlugin",
    "ccManager",
    "clusterPolicy",
    "gpuCluster",
    "draDriver",
    "extraObjects",
    "node-feature-discovery",
]
# Values the plan writes, and the variable that decides each (extra_values may not override them).
OWNED = {
    "driver.enabled": f"{DRIVER_VAR}.managed_by",
    "driver.version": f"{DRIVER_VAR}.version",
    "driver.kernelModuleType": f"{DRIVER_VAR}.kernel_module",
    "driver.useOpenKernelModules": f"{DRIVER_VAR}.kernel_module",
    "driver.usePrecompiled": f"{DRIVER_VAR}.precompiled",
    "driver.rdma": "gpudirect_rdma_method and the nodes' MOFED (planned per node)",
    "driver.nvidiaDriverCRD": "gpu_operator_driver_crd",
    "gds.enabled": "gpufabric_gds_enabled and gpudirect_storage_mode",
    "nfd.enabled": "gpu_operator_nfd_enabled",
    "mig.strategy": "gpu_operator_mig_strategy",
    "clusterPolicy.deployCR": "the role (the chart deploys the ClusterPolicy)",
    **{f"{key}.enabled": f"gpu_operator_components.{name}" for name, key in COMPONENTS.items()},
}
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


def chart_numbers(text: Any) -> Tuple[int, ...]:
    """MAJOR.MINOR.PATCH of a chart version ('v24.9.0-rc.1' -> (24, 9, 0)); () without all three."""
    numbers = version_numbers(text)
    return numbers[:3] if len(numbers) >= 3 else ()


def _short(hosts: List[str], limit: int = 4) -> str:
    return (
        ", ".join(hosts)
        if len(hosts) <= limit
        else "{} and {} more".format(", ".join(hosts[:limit]), len(hosts) - limit)
    )


def repository(component: str, chart: Tuple[int, ...], registry: str) -> str:
    """The image repository of a component: the chart's upstream one, re-rooted under the mirror."""
    upstream = REPOSITORIES[component]
    if upstream is None:
        upstream = "nvcr.io/nvidia" if chart >= VALIDATOR_REPO_MOVED else "nvcr.io/nvidia/cloud-native"
    if not registry:
        return upstream
    return registry.rstrip("/") + "/" + upstream.split("/", 1)[1]


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


# --------------------------------------------------------------------------------------------- values
def check_extra_values(extra: Mapping[str, Any], problems: List[str]) -> None:
    """gpu_operator_extra_values: known top-level keys only, and none of the values the plan owns."""
    for key in extra:
        if key not in CHART_KEYS:
            problems.append(unknown_message("gpu_operator_extra_values", key, CHART_KEYS))
    for path, owner in OWNED.items():
        node: Any = extra
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
            if node is None:
                break
        if node is not None:
            problems.append(
                f"gpu_operator_extra_values.{path}: {show(node)} would override a value the plan derives from "
                f"{owner}; set that instead"
            )


def deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """Helm-style merge: mappings merge key by key, anything else in ``extra`` replaces."""
    out = dict(base)
    for key, value in (extra or {}).items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _images(values: Mapping[str, Any], chart: Tuple[int, ...], nfd: bool) -> Dict[str, Any]:
    """Repository and pull-secret values for an image mirror (empty without one)."""
    registry = str(values.get("gpu_operator_image_registry") or "")
    secrets = list(values.get("gpu_operator_image_pull_secrets") or [])
    out: Dict[str, Any] = {}
    for component in REPOSITORIES:
        entry: Dict[str, Any] = {}
        if registry:
            entry["repository"] = repository(component, chart, registry)
        if secrets:
            entry["imagePullSecrets"] = list(secrets)
        if entry:
            out[component] = entry
    if registry:
        out.setdefault("driver", {})["manager"] = {"repository": registry.rstrip("/") + "/nvidia/cloud-native"}
    if nfd and (registry or secrets):
        sub: Dict[str, Any] = {}
        if registry:
            sub["image"] = {"repository": registry.rstrip("/") + "/" + NFD_REPOSITORY.split("/", 1)[1]}
        if secrets:
            sub["imagePullSecrets"] = [{"name": name} for name in secrets]
        out["node-feature-discovery"] = sub
    return out


def chart_values(
    values: Mapping[str, Any], mode: str, groups: List[Dict[str, Any]], crd_path: bool, nfd: bool
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(chart values, ClusterPolicy spec fields they must produce) for one driver mode."""
    chart = chart_numbers(values.get("gpu_operator_chart_version"))
    comps = values.get("gpu_operator_components") or {}
    gds = any(g["gds"] for g in groups) if mode == "operator" else False
    generated: Dict[str, Any] = {
        "nfd": {"enabled": nfd},
        "mig": {"strategy": values.get("gpu_operator_mig_strategy")},
        "gds": {"enabled": gds, "version": str(values.get("gpu_operator_gds_version"))},
        "driver": {"enabled": mode == "operator"},
    }
    expect: Dict[str, Any] = {
        "driver.enabled": mode == "operator",
        "mig.strategy": values.get("gpu_operator_mig_strategy"),
        "gds.enabled": gds,
    }
    for name, key in COMPONENTS.items():
        generated[key] = {"enabled": bool(comps.get(name))}
        expect[f"{key}.enabled"] = bool(comps.get(name))
    if chart < KERNEL_MODULE_TYPE_SINCE:
        generated["operator"] = {"defaultRuntime": values.get("gpu_operator_default_runtime")}
    driver = generated["driver"]
    driver["nvidiaDriverCRD"] = {"enabled": crd_path, "deployDefaultCR": False}
    expect["driver.useNvidiaDriverCRD"] = crd_path
    if mode == "host":
        # The host roles load nvidia-peermem (rdma.enabled stays false: no operator driver pod);
        # useHostMofed records where MOFED comes from when peermem is the method.
        driver["rdma"] = {"enabled": False, "useHostMofed": any(g["rdma"] for g in groups)}
    elif not crd_path:
        group = groups[0]
        driver.update({"version": group["version"], "usePrecompiled": group["precompiled"]})
        driver["rdma"] = {"enabled": group["rdma"], "useHostMofed": group["use_host_mofed"]}
        if chart >= KERNEL_MODULE_TYPE_SINCE:
            driver["kernelModuleType"] = group["kernel_module"]
            expect["driver.kernelModuleType"] = group["kernel_module"]
        else:
            driver["useOpenKernelModules"] = group["kernel_module"] == "open"
            expect["driver.useOpenKernelModules"] = group["kernel_module"] == "open"
        expect.update({"driver.version": group["version"], "driver.usePrecompiled": group["precompiled"]})
    if "rdma" in driver and not crd_path:
        expect["driver.rdma.enabled"] = driver["rdma"]["enabled"]
        expect["driver.rdma.useHostMofed"] = driver["rdma"]["useHostMofed"]
    generated = deep_merge(generated, _images(values, chart, nfd))
    return generated, expect


def nvidia_driver(values: Mapping[str, Any], group: Mapping[str, Any], label: str) -> Dict[str, Any]:
    """One NVIDIADriver (nvidia.com/v1alpha1) for a node group, selected by the planned node label."""
    chart = chart_numbers(values.get("gpu_operator_chart_version"))
    registry = str(values.get("gpu_operator_image_registry") or "")
    secrets = list(values.get("gpu_operator_image_pull_secrets") or [])
    spec: Dict[str, Any] = {
        "driverType": "gpu",
        "default": False,
        "repository": repository("driver", chart, registry),
        "image": "driver",
        "version": group["version"],
        "usePrecompiled": group["precompiled"],
        "rdma": {"enabled": group["rdma"], "useHostMofed": group["use_host_mofed"]},
        "nodeSelector": {label: group["name"]},
        "tolerations": [dict(t) for t in GPU_TOLERATIONS],
    }
    if chart >= KERNEL_MODULE_TYPE_SINCE:
        spec["kernelModuleType"] = group["kernel_module"]
    else:
        spec["useOpenKernelModules"] = group["kernel_module"] == "open"
    if group["gds"]:
        spec["gds"] = {
            "enabled": True,
            "repository": repository("gds", chart, registry),
            "image": "nvidia-fs",
            "version": str(values.get("gpu_operator_gds_version")),
        }
    if secrets:
        spec["imagePullSecrets"] = secrets
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "NVIDIADriver",
        "metadata": {"name": "driver-" + group["name"], "labels": dict(MANAGED_BY)},
        "spec": spec,
    }


# --------------------------------------------------------------------------------------------- chart
def local_chart(path: str) -> Dict[str, str]:
    """name and version of a local chart (a directory with Chart.yaml, or a packaged .tgz); raises OSError."""
    if os.path.isdir(path):
        with open(os.path.join(path, "Chart.yaml"), encoding="utf-8") as handle:
            text = handle.read()
    else:
        with tarfile.open(path, "r:*") as archive:
            member = next(
                (m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/Chart.yaml")), None
            )
            if member is None:
                raise OSError(f"{path}: no <chart>/Chart.yaml in the archive")
            text = archive.extractfile(member).read().decode("utf-8")
    out = {}
    for key in ("name", "version"):
        match = re.search(rf"^{key}:\s*['\"]?([^'\"\s#]+)", text, re.M)
        out[key] = match.group(1) if match else ""
    return out


def check_chart_source(values: Mapping[str, Any], problems: List[str]) -> None:
    """A local chart must be the GPU Operator chart of the pinned version (the values are planned for it)."""
    path = str(values.get("gpu_operator_chart_path") or "")
    if not path or not values.get("gpu_operator_install_chart", True):
        return
    try:
        chart = local_chart(path)
    except (OSError, tarfile.TarError) as exc:
        problems.append(f"gpu_operator_chart_path: {path!r} cannot be read as a Helm chart ({exc})")
        return
    pinned = str(values.get("gpu_operator_chart_version"))
    if chart["name"] != "gpu-operator" or chart_numbers(chart["version"]) != chart_numbers(pinned):
        problems.append(
            f"gpu_operator_chart_path: {path!r} holds chart {chart['name']} {chart['version']}, but "
            f"gpu_operator_chart_version is {pinned} (the values are planned for that version); name the chart's "
            "version there, or point the path at the gpu-operator chart of that version"
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
    extra = values.get("gpu_operator_extra_values") or {}
    check_extra_values(extra, problems)
    check_chart_source(values, problems)
    nfd = nfd_owner(values, problems) if values.get("gpu_operator_install_chart", True) else "external"
    generated, expect = chart_values(values, mode, groups, crd_path, nfd == "gpu_operator")
    label = f"{label_prefix}/gpu-driver"
    drivers = [nvidia_driver(values, g, label) for g in groups] if crd_path and mode == "operator" else []
    node_labels: Dict[str, Dict[str, str]] = {}
    for group in groups if drivers else []:
        for node in group["nodes"]:
            node_labels[node] = {label: label_value(group["name"])}
    return {
        "driver_mode": mode,
        "driver_crd": crd_path,
        "nfd": nfd,
        "driver_groups": groups,
        "chart_values": deep_merge(generated, extra),
        "cluster_policy": {"name": CLUSTER_POLICY, "expect": expect},
        "nvidia_drivers": drivers,
        "node_labels": node_labels,
        "node_label_owned": [label],
        "crds": ["clusterpolicies.nvidia.com"] + (["nvidiadrivers.nvidia.com"] if crd_path else []),
    }


def summary_lines(section: Optional[Mapping[str, Any]]) -> List[str]:
    if not section:
        return ["GPU Operator: not part of this cluster layer"]
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
def spec_drift(cluster_policy: Optional[Mapping[str, Any]], expect: Mapping[str, Any]) -> List[str]:
    """The planned ClusterPolicy fields the live object does not have (a chart that ignored a value)."""
    if not cluster_policy:
        return [f"ClusterPolicy/{CLUSTER_POLICY} does not exist: the chart did not deploy it"]
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
) -> List[str]:
    """What is not ready, one line each: the ClusterPolicy's operand states (as components), the
    operator's DaemonSets short of ready pods, and NVIDIADrivers; [] when everything is ready."""
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
            lines.append(f"ClusterPolicy/{CLUSTER_POLICY} {status.get('state') or 'has no state'}: not ready: {named}")
        else:
            lines.append(
                f"ClusterPolicy/{CLUSTER_POLICY} state {status.get('state') or '(none)'}"
                + (f": {message.strip()}" if message.strip() else "")
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
