"""The GPU Operator part of the plan: the driver mode decided once and followed by the node plan
(RDMA, GDS, who loads nvidia-peermem and nvidia-fs) and by the chart values; the ClusterPolicy the
lab's stand-in chart renders from those values, and the NVIDIADrivers, validated against the
upstream CRDs (LAB_CRDS_DIR, else the shared schemas beside the checkout); NFD deployed once;
readiness and drift reports."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
import yaml
from conftest import REPO, UNIT, check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_driver as _plan_gpu_driver
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator_values as _gpu_operator_values
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

sys.path.insert(0, str(UNIT / "cluster"))
from validate import _SCHEMAS, validate

HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "lab" / "charts" / "gpu-operator"
NO_DRIVER = {"driver_version": None, "driver_flavour": None, "driver_loaded": False, "cuda_version": None}
OPERATOR = {"gpufabric_gpu_driver": {"managed_by": "operator", "version": "580.95.05"}}
V100 = [{"model": "Tesla V100-SXM2-32GB", "compute_cap": "7.0"}] * 8
needs_crds = pytest.mark.skipif(not _SCHEMAS, reason="the upstream CRDs are not given (LAB_CRDS_DIR, see docs/lab.md)")


def _merge(base: Dict[str, Any], extra: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in (extra or {}).items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def plan_all(
    specs,
    node_vars: Optional[Dict[str, Any]] = None,
    gpudirect: Optional[Dict[str, Any]] = None,
    cluster_vars: Optional[Dict[str, Any]] = None,
    node2_vars: Optional[Dict[str, Any]] = None,
    node2_gpudirect: Optional[Dict[str, Any]] = None,
) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    """(cluster plan, {host: node plan}) for the two lab nodes."""
    plans, records = {}, {}
    for index in (1, 2):
        host = f"gpu-node-0{index}"
        variables = _merge(lab_intent(), dict(node_vars or {}, gpufabric_k8s_node_name=host))
        facts = node_facts(index)
        facts["gpudirect"].update(gpudirect or {})
        if index == 2:
            variables = _merge(variables, node2_vars)
            facts["gpudirect"].update(node2_gpudirect or {})
        values, problems = check(specs, "node", variables)
        assert problems == []
        plans[host] = _plan_node.plan_node(values, facts)
        records[host] = _node_records.node_record(plans[host], facts["topology"])
    values, problems = check(specs, "cluster", _merge(lab_intent(), cluster_vars))
    assert problems == []
    return _plan_cluster.plan(values, records), plans


def helm_template(chart_values: Dict[str, Any], tmp_path: Path) -> List[Dict[str, Any]]:
    """The objects the stand-in chart renders from the planned values (helm template)."""
    assert HELM.exists(), "Helm is installed by `make tools` (mk/kube.mk): .tools/bin/helm is missing"
    values = tmp_path / "values.json"
    values.write_text(json.dumps(chart_values))
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(
        [str(HELM), "template", "gpu-operator", str(CHART), "-n", "gpu-operator", "-f", str(values)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def kind(objects: List[Dict[str, Any]], name: str) -> List[Dict[str, Any]]:
    return [o for o in objects if o["kind"] == name]


def load_play_operator():
    spec = importlib.util.spec_from_file_location("play_operator", REPO / "lab" / "cluster" / "play_operator.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------------- driver modes
def test_host_mode_leaves_the_driver_and_its_modules_to_the_host(specs):
    cluster, plans = plan_all(specs)
    node = plans["gpu-node-01"]
    assert node["gpu_driver"]["managed_by"] == "host"
    assert (node["gpu_driver"]["version"], node["gpu_driver"]["kernel_module"]) == ("580.95.05", "open")
    assert node["gpudirect_rdma"]["method"] == "dmabuf" and node["gpudirect_rdma"]["peermem_loaded_by"] is None
    assert node["gpudirect_storage"]["nvidia_fs_loaded_by"] == "host"
    section = cluster["gpu_operator"]
    values = section["chart_values"]
    assert values["driver"]["enabled"] is False
    assert "version" not in values["driver"] and "kernelModuleType" not in values["driver"]
    assert values["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}
    assert values["gds"]["enabled"] is False, "a host-loaded nvidia-fs needs no operator container"
    assert section["nvidia_drivers"] == [] and section["node_labels"] == {}
    assert section["cluster_policy"]["expect"]["driver.enabled"] is False
    record = _node_records.node_record(node, node_facts(1)["topology"])
    assert record["gpu"]["driver"] == {
        "flavour": "open",
        "version": "580.95.05",
        "managed_by": "host",
        "precompiled": False,
    }


def test_host_mode_with_peermem_records_the_host_mofed(specs):
    cluster, plans = plan_all(specs, {"gpudirect_rdma_method": "peermem"})
    assert plans["gpu-node-01"]["gpudirect_rdma"]["peermem_loaded_by"] == "host"
    assert cluster["gpu_operator"]["chart_values"]["driver"]["rdma"] == {"enabled": False, "useHostMofed": True}


def test_operator_mode_pins_the_driver_and_the_operator_loads_the_modules(specs):
    cluster, plans = plan_all(specs, OPERATOR, NO_DRIVER)
    node = plans["gpu-node-01"]
    assert node["gpu_driver"]["kernel_module"] == "open", "auto: every GPU is Hopper"
    # The decisions follow the planned driver: open R580 -> CUDA 13.0 -> DMA-BUF, though the host has no driver.
    assert node["gpudirect_rdma"]["method"] == "dmabuf"
    assert node["gpudirect_rdma"]["cuda_version"] == "13.0"
    assert node["gpudirect_storage"]["nvidia_fs_loaded_by"] == "operator"
    driver = cluster["gpu_operator"]["chart_values"]["driver"]
    assert driver["enabled"] is True
    assert (driver["version"], driver["kernelModuleType"], driver["usePrecompiled"]) == ("580.95.05", "open", False)
    assert driver["rdma"] == {"enabled": False, "useHostMofed": False}
    assert cluster["gpu_operator"]["chart_values"]["gds"] == {"enabled": True, "version": "2.29.4"}
    expect = cluster["gpu_operator"]["cluster_policy"]["expect"]
    assert expect["driver.kernelModuleType"] == "open" and expect["gds.enabled"] is True
    assert "GPU Operator: driver installed by the operator (ClusterPolicy)" in cluster["summary"]


def test_operator_mode_with_peermem_builds_it_against_the_host_mofed(specs):
    cluster, plans = plan_all(specs, dict(OPERATOR, gpudirect_rdma_method="peermem"), NO_DRIVER)
    assert plans["gpu-node-02"]["gpudirect_rdma"]["peermem_loaded_by"] == "operator"
    assert plans["gpu-node-02"]["gpudirect_rdma"]["mofed"] is True, "DOCA-OFED is planned on the lab nodes"
    assert cluster["gpu_operator"]["chart_values"]["driver"]["rdma"] == {"enabled": True, "useHostMofed": True}


def test_operator_mode_without_the_gpu_operator_role_is_refused(specs):
    _cluster, plans = plan_all(specs, OPERATOR, NO_DRIVER)
    records = {h: _node_records.node_record(p, node_facts(1)["topology"]) for h, p in plans.items()}
    problems: List[str] = []
    assert _plan_gpu_operator.plan({}, records, "gpufabric.io", problems) is None
    assert len(problems) == 1 and "gpu_operator is not in plan_cluster_roles" in problems[0]


# --------------------------------------------------------------------------------------------- CRDs
MODES = {
    "host": ({}, {}, {}),
    "host-peermem": ({"gpudirect_rdma_method": "peermem"}, {}, {}),
    "operator": (OPERATOR, NO_DRIVER, {}),
    "operator-peermem-mirror": (
        dict(OPERATOR, gpudirect_rdma_method="peermem"),
        NO_DRIVER,
        {"gpu_operator_image_registry": "registry.example.com:5000/mirror", "gpu_operator_image_pull_secrets": ["ngc"]},
    ),
    "operator-driver-crd": (OPERATOR, NO_DRIVER, {"gpu_operator_driver_crd": True}),
}


@needs_crds
@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_chart_renders_a_cluster_policy_the_crd_accepts_with_every_planned_field(mode, specs, tmp_path):
    node_vars, gpudirect, cluster_vars = MODES[mode]
    cluster, _plans = plan_all(specs, node_vars, gpudirect, cluster_vars)
    section = cluster["gpu_operator"]
    objects = helm_template(section["chart_values"], tmp_path)
    policies = kind(objects, "ClusterPolicy")
    assert len(policies) == 1
    assert {validate(o) for o in objects} == {"core", "crd"}
    assert _plan_gpu_operator.spec_drift(policies[0], section["cluster_policy"]["expect"]) == []
    assert kind(objects, "NVIDIADriver") == [], "the chart's default NVIDIADriver stays off"
    assert kind(objects, "ServiceAccount")[0]["metadata"]["name"] == "gpu-operator"
    assert not [o for o in objects if o["metadata"]["name"] == "node-feature-discovery"], "the Network Operator's NFD"
    for driver in section["nvidia_drivers"]:
        assert validate(driver) == "crd"


@needs_crds
def test_mixed_gpu_generations_get_one_nvidia_driver_per_group(specs, tmp_path):
    """An H200 node (open module, DMA-BUF, GDS) and a V100 node (auto -> proprietary, so nvidia-peermem)."""
    cluster, plans = plan_all(
        specs,
        OPERATOR,
        NO_DRIVER,
        {"gpu_operator_driver_crd": True},
        node2_vars={"gpufabric_gds_enabled": False},
        node2_gpudirect={"gpus": V100},
    )
    assert plans["gpu-node-02"]["gpu_driver"]["kernel_module"] == "proprietary"
    assert plans["gpu-node-02"]["gpudirect_rdma"]["method"] == "peermem"
    section = cluster["gpu_operator"]
    drivers = {d["metadata"]["name"]: d for d in section["nvidia_drivers"]}
    assert sorted(drivers) == ["driver-580-95-05-open-gds", "driver-580-95-05-proprietary-rdma"]
    for driver in drivers.values():
        assert validate(driver) == "crd"
        assert driver["spec"]["default"] is False and driver["metadata"]["labels"] == dict(
            _gpu_operator_values.MANAGED_BY,
            **{"gpufabric.io/component": "gpu_operator", "gpufabric.io/instance": "lab"},
        )
    hopper, volta = drivers["driver-580-95-05-open-gds"]["spec"], drivers["driver-580-95-05-proprietary-rdma"]["spec"]
    assert (hopper["kernelModuleType"], hopper["gds"]["enabled"], hopper["rdma"]["enabled"]) == ("open", True, False)
    assert (volta["kernelModuleType"], "gds" in volta, volta["rdma"]) == (
        "proprietary",
        False,
        {"enabled": True, "useHostMofed": True},
    )
    assert section["node_labels"] == {
        "gpu-node-01": {"gpufabric.io/gpu-driver": "580-95-05-open-gds"},
        "gpu-node-02": {"gpufabric.io/gpu-driver": "580-95-05-proprietary-rdma"},
    }
    assert hopper["nodeSelector"] == section["node_labels"]["gpu-node-01"]
    assert section["node_label_owned"] == ["gpufabric.io/gpu-driver"]  # the key node_labels owns
    values = section["chart_values"]
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
    assert "version" not in values["driver"] and "rdma" not in values["driver"]
    policy = kind(helm_template(values, tmp_path), "ClusterPolicy")[0]
    assert validate(policy) == "crd"
    assert policy["spec"]["driver"]["useNvidiaDriverCRD"] is True and "kernelModuleType" not in policy["spec"]["driver"]
    assert section["crds"] == ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"]


# --------------------------------------------------------------------------------------------- values
@pytest.mark.parametrize(
    "chart, keys, runtime",
    [
        ("v26.7.0", {"kernelModuleType": "open"}, None),
        ("v25.3.0", {"kernelModuleType": "open"}, None),
        ("v24.9.0", {"useOpenKernelModules": True}, "containerd"),
    ],
)
def test_the_values_follow_the_chart_version(chart, keys, runtime, specs):
    cluster, _plans = plan_all(
        specs, OPERATOR, NO_DRIVER, {"gpu_operator_chart_version": chart, "gpu_operator_chart_path": ""}
    )
    values = cluster["gpu_operator"]["chart_values"]
    for key, value in keys.items():
        assert values["driver"][key] == value
        assert cluster["gpu_operator"]["cluster_policy"]["expect"][f"driver.{key}"] == value
    assert {"kernelModuleType", "useOpenKernelModules"} - set(keys) - set(values["driver"]) == (
        {"kernelModuleType", "useOpenKernelModules"} - set(keys)
    )
    assert (values.get("operator") or {}).get("defaultRuntime") == runtime


def test_an_image_mirror_keeps_each_upstream_path(specs):
    mirror = "registry.example.com:5000/mirror"
    cluster_vars = {
        "gpu_operator_image_registry": mirror,
        "gpu_operator_image_pull_secrets": ["ngc"],
        "network_operator_install_chart": False,
    }
    cluster, _plans = plan_all(specs, OPERATOR, NO_DRIVER, cluster_vars)
    values = cluster["gpu_operator"]["chart_values"]
    assert values["toolkit"]["repository"] == f"{mirror}/nvidia/k8s"
    assert values["migManager"]["repository"] == f"{mirror}/nvidia/cloud-native"
    assert values["validator"]["repository"] == f"{mirror}/nvidia", "v25.10.0+ moved the validator"
    assert values["driver"]["repository"] == f"{mirror}/nvidia"
    assert values["driver"]["manager"]["repository"] == f"{mirror}/nvidia/cloud-native"
    assert values["toolkit"]["imagePullSecrets"] == ["ngc"]
    assert values["nfd"]["enabled"] is True, "without the Network Operator's chart this one deploys NFD"
    assert values["node-feature-discovery"] == {
        "image": {"repository": f"{mirror}/nfd/node-feature-discovery"},
        "imagePullSecrets": [{"name": "ngc"}],
    }
    assert _gpu_operator_values.repository("validator", (25, 3, 0), mirror) == f"{mirror}/nvidia/cloud-native"
    assert _gpu_operator_values.repository("toolkit", (26, 7, 0), "") == "nvcr.io/nvidia/k8s"


def test_extra_values_add_to_the_planned_values(specs):
    extra = {"dcgmExporter": {"serviceMonitor": {"enabled": False}}, "operator": {"logging": {"level": "debug"}}}
    cluster, _plans = plan_all(specs, cluster_vars={"gpu_operator_extra_values": extra})
    values = cluster["gpu_operator"]["chart_values"]
    assert values["dcgmExporter"] == {"enabled": True, "serviceMonitor": {"enabled": False}}
    assert values["operator"] == {"logging": {"level": "debug"}}
    assert values["driver"]["enabled"] is False


@pytest.mark.parametrize(
    "values, owner",
    [
        ({"network_operator_install_chart": True, "network_operator_nfd_enabled": True}, "network_operator"),
        ({"network_operator_install_chart": False, "network_operator_nfd_enabled": True}, "gpu_operator"),
        ({"network_operator_install_chart": True, "network_operator_nfd_enabled": False}, "gpu_operator"),
        ({}, "gpu_operator"),
        (
            {
                "network_operator_install_chart": True,
                "network_operator_nfd_enabled": False,
                "gpu_operator_nfd_enabled": False,
            },
            "external",
        ),
    ],
)
def test_node_feature_discovery_runs_once(values, owner):
    problems: List[str] = []
    assert _plan_gpu_operator.nfd_owner(values, problems) == owner
    assert problems == []


def test_the_lab_plan_deploys_nfd_from_exactly_one_chart(specs):
    cluster, _plans = plan_all(specs)
    assert cluster["network_operator"]["chart_values"]["nfd"]["enabled"] is True
    assert cluster["gpu_operator"]["chart_values"]["nfd"]["enabled"] is False
    assert cluster["gpu_operator"]["nfd"] == "network_operator"


def test_a_sliced_run_plans_the_same_gpu_operator_section(specs, tmp_path):
    whole, plans = plan_all(specs, OPERATOR, NO_DRIVER, {"gpu_operator_driver_crd": True})
    store = _node_records.DiscoveryStore(str(tmp_path))
    topology = node_facts(2)["topology"]
    store.save("gpu-node-02", _node_records.node_record(plans["gpu-node-02"], topology))
    records = {
        "gpu-node-01": _node_records.node_record(plans["gpu-node-01"], node_facts(1)["topology"]),
        "gpu-node-02": store.load("gpu-node-02"),
    }
    values, _problems = check(specs, "cluster", dict(lab_intent(), gpu_operator_driver_crd=True))
    assert _plan_cluster.plan(values, records)["gpu_operator"] == whole["gpu_operator"]


# --------------------------------------------------------------------------------------------- local chart
def test_a_local_chart_archive_is_read_and_its_version_checked(tmp_path):
    assert HELM.exists(), "Helm is installed by `make tools` (mk/kube.mk): .tools/bin/helm is missing"
    env = dict(os.environ, HOME=str(tmp_path))
    subprocess.run([str(HELM), "package", str(CHART), "-d", str(tmp_path)], check=True, capture_output=True, env=env)
    archive = tmp_path / "gpu-operator-v26.7.0.tgz"
    assert _gpu_operator_values.local_chart(str(archive)) == {"name": "gpu-operator", "version": "v26.7.0"}
    assert _gpu_operator_values.local_chart(str(CHART)) == {"name": "gpu-operator", "version": "v26.7.0"}
    problems: List[str] = []
    values = {"gpu_operator_chart_path": str(archive), "gpu_operator_chart_version": "v26.7.0"}
    _plan_gpu_operator.check_chart_source(values, problems)
    assert problems == []
    _plan_gpu_operator.check_chart_source(dict(values, gpu_operator_chart_version="v26.3.3"), problems)
    assert len(problems) == 1 and "holds chart gpu-operator v26.7.0" in problems[0]
    _plan_gpu_operator.check_chart_source(dict(values, gpu_operator_chart_path=str(tmp_path / "none.tgz")), problems)
    assert "cannot be read as a Helm chart" in problems[1]


# --------------------------------------------------------------------------------------------- driver facts
@pytest.mark.parametrize(
    "asked, version, archs, want",
    [
        ("auto", "580.95.05", ["hopper", "hopper"], "open"),
        ("auto", "570.86.15", ["turing"], "open"),
        ("auto", "580.95.05", ["volta", "volta"], "proprietary"),
        ("auto", "580.95.05", ["volta", "blackwell"], None),
        ("auto", "570.86.14", ["hopper"], None),
        ("auto", "580.95.05", [None], None),
        ("open", "550.127.05", ["ampere"], "open"),
        ("open", "580.95.05", ["pascal"], None),
        ("proprietary", "580.95.05", ["volta"], "proprietary"),
        ("proprietary", "580.95.05", ["blackwell"], None),
    ],
)
def test_the_kernel_module_type_is_resolved_as_the_driver_container_does(asked, version, archs, want):
    problems: List[str] = []
    module, _reason = _plan_gpu_driver.resolve_kernel_module(asked, version, archs, problems)
    assert module == want
    assert bool(problems) == (want is None)


def test_driver_packages_are_told_apart_from_other_nvidia_packages():
    installed = {
        name: [{}]
        for name in (
            "nvidia-driver-580-open",
            "nvidia-dkms-580-server",
            "nvidia-kernel-open-dkms",
            "linux-modules-nvidia-580-generic",
            "cuda-drivers-580",
            "kmod-nvidia-open-dkms",
            "nvidia-driver",
            "nvidia-container-toolkit",
            "nvidia-driver-assistant",
            "nvidia-fs-dkms",
            "libnvidia-compute-580",
            "nvidia-gds-13-0",
        )
    }
    assert _plan_gpu_driver.host_driver_packages(installed) == [
        "cuda-drivers-580",
        "kmod-nvidia-open-dkms",
        "linux-modules-nvidia-580-generic",
        "nvidia-dkms-580-server",
        "nvidia-driver",
        "nvidia-driver-580-open",
        "nvidia-kernel-open-dkms",
    ]


# --------------------------------------------------------------------------------------------- status
@needs_crds
def test_a_not_ready_cluster_policy_names_its_components(specs, tmp_path):
    cluster, _plans = plan_all(specs, OPERATOR, NO_DRIVER)
    policy = kind(helm_template(cluster["gpu_operator"]["chart_values"], tmp_path), "ClusterPolicy")[0]
    play = load_play_operator()
    held = dict(policy, status=play.cluster_policy_status(policy, "notReady"))
    assert validate(held) == "crd", "the lab's stand-in writes a status the CRD accepts"
    daemonsets = [
        {"metadata": {"name": "nvidia-driver-daemonset"}, "status": {"desiredNumberScheduled": 2, "numberReady": 0}},
        {
            "metadata": {"name": "nvidia-device-plugin-daemonset"},
            "status": {"desiredNumberScheduled": 2, "numberReady": 2},
        },
    ]
    lines = _plan_gpu_operator.not_ready(held, daemonsets)
    assert lines[0].startswith("ClusterPolicy/cluster-policy notReady: not ready: driver (state-driver), toolkit")
    assert "migManager (state-mig-manager)" in lines[0] and "nodeStatusExporter" not in lines[0]
    assert lines[1:] == ["DaemonSet/nvidia-driver-daemonset: 0/2 pods ready"]
    ready = dict(policy, status=play.cluster_policy_status(policy, "ready"))
    assert validate(ready) == "crd" and _plan_gpu_operator.not_ready(ready, daemonsets[1:]) == []
    driver = {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "driver-x"}}
    driver["spec"] = {"driverType": "gpu", "default": False, "image": "driver"}
    driver["status"] = play.nvidia_driver_status(driver, "notReady")
    assert validate(driver) == "crd"
    assert _plan_gpu_operator.not_ready(ready, [], [driver]) == ["NVIDIADriver/driver-x: state notReady"]


def test_drift_names_a_value_the_chart_did_not_render():
    expect = {"driver.enabled": True, "driver.kernelModuleType": "open", "gds.enabled": True}
    policy = {"spec": {"driver": {"enabled": True, "kernelModuleType": "auto"}, "gds": {"enabled": True}}}
    assert _plan_gpu_operator.spec_drift(policy, expect) == [
        'spec.driver.kernelModuleType: planned "open", the chart rendered "auto"'
    ]
    assert _plan_gpu_operator.spec_drift(None, expect)[0].startswith("ClusterPolicy/cluster-policy does not exist")
