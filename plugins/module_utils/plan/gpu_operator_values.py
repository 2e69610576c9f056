# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU Operator's chart values and NVIDIADriver objects, from the checked cluster values and the
nodes' driver groups (plan/gpu_operator.py puts them in the plan): the components, image
repositories and chart keys, what the plan owns, the checks of gpu_operator_extra_values and of the
chart source. Chart facts and sources: plan/gpu_operator.py.

Pure Python, no Ansible imports.
"""

from __future__ import annotations

import os
import re
import tarfile
from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.check import show, unknown_message
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import version_numbers

DRIVER_VAR = "gpufabric_gpu_driver"
DRA_VAR = "gpufabric_k8s_device_allocation"
DRA_VERSION_VAR = "gpu_operator_dra_driver_version"
# The GPU DRA driver's image (draDriver.repository default at v26.7.0), re-rooted under the mirror.
DRA_DRIVER_REPOSITORY = "nvcr.io/nvidia"
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
    "gpuCluster.deployCR": f"{DRA_VAR} (dra deploys the GPUCluster instead of the ClusterPolicy)",
    "draDriver.version": DRA_VERSION_VAR,
    "draDriver.repository": "gpu_operator_image_registry",
    **{f"{key}.enabled": f"gpu_operator_components.{name}" for name, key in COMPONENTS.items()},
}


def chart_numbers(text: Any) -> Tuple[int, ...]:
    """MAJOR.MINOR.PATCH of a chart version ('v24.9.0-rc.1' -> (24, 9, 0)); () without all three."""
    numbers = version_numbers(text)
    return numbers[:3] if len(numbers) >= 3 else ()


def repository(component: str, chart: Tuple[int, ...], registry: str) -> str:
    """The image repository of a component: the chart's upstream one, re-rooted under the mirror."""
    upstream = REPOSITORIES[component]
    if upstream is None:
        upstream = "nvcr.io/nvidia" if chart >= VALIDATOR_REPO_MOVED else "nvcr.io/nvidia/cloud-native"
    if not registry:
        return upstream
    return registry.rstrip("/") + "/" + upstream.split("/", 1)[1]


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


def gpu_cluster_values(values: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(chart values, GPUCluster spec fields they must produce) of dra mode.

    The chart renders the GPUCluster (nvidia.com/v1alpha1, the DRA-based stack: the GPU DRA driver,
    DCGM, DCGM Exporter and the DRA validator) with gpuCluster.deployCR, and refuses it together
    with the ClusterPolicy (templates/validations.yaml); the operator also refuses to reconcile a
    GPUCluster while a ClusterPolicy exists (controllers/gpucluster_controller.go). So dra turns the
    ClusterPolicy off. Sources: docs/facts.md, "GPU Operator: ClusterPolicy or GPUCluster".
    """
    registry = str(values.get("gpu_operator_image_registry") or "")
    secrets = list(values.get("gpu_operator_image_pull_secrets") or [])
    repo = registry.rstrip("/") + "/" + DRA_DRIVER_REPOSITORY.split("/", 1)[1] if registry else DRA_DRIVER_REPOSITORY
    version = str(values.get(DRA_VERSION_VAR))
    comps = values.get("gpu_operator_components") or {}
    dra_driver: Dict[str, Any] = {"repository": repo, "version": version}
    if secrets:
        dra_driver["imagePullSecrets"] = secrets
    generated = {"clusterPolicy": {"deployCR": False}, "gpuCluster": {"deployCR": True}, "draDriver": dra_driver}
    expect = {
        "draDriver.repository": repo,
        "draDriver.version": version,
        "dcgmExporter.enabled": bool(comps.get("dcgm_exporter")),
    }
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
