"""gpufabric_k8s_device_allocation: dra in the GPU Operator part of the plan: the chart deploys the
GPUCluster (the GPU DRA driver at the pinned tag, from the mirror when one is set) instead of the
ClusterPolicy; the lab's stand-in chart renders it, the upstream CRD accepts it (LAB_CRDS_DIR) and
it has every planned field; the chart's own refusals are met; readiness names the GPUCluster."""

from __future__ import annotations

import json
import subprocess
from typing import List

import pytest
from test_gpu_operator_plan import CHART, HELM, NO_DRIVER, OPERATOR, helm_template, kind, needs_crds, plan_all
from validate import validate

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_operator as _plan_gpu_operator

DRA = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
MIRROR = "registry.example.com:5000/mirror"


@needs_crds
@pytest.mark.parametrize(
    "node_vars, gpudirect, cluster_vars",
    [
        ({}, {}, {}),
        (OPERATOR, NO_DRIVER, {"gpu_operator_driver_crd": True}),
        ({}, {}, {"gpu_operator_image_registry": MIRROR, "gpu_operator_image_pull_secrets": ["ngc"]}),
    ],
    ids=["host-driver", "operator-nvidiadrivers", "mirror"],
)
def test_dra_deploys_the_gpu_cluster_instead_of_the_cluster_policy(node_vars, gpudirect, cluster_vars, specs, tmp_path):
    cluster, _plans = plan_all(specs, node_vars, gpudirect, dict(DRA, **cluster_vars))
    section = cluster["gpu_operator"]
    values = section["chart_values"]
    assert values["clusterPolicy"] == {"deployCR": False} and values["gpuCluster"] == {"deployCR": True}
    assert values["devicePlugin"]["enabled"] is False
    assert section["cluster_policy"] is None
    gpu_cluster = section["gpu_cluster"]
    assert (gpu_cluster["kind"], gpu_cluster["api_version"], gpu_cluster["name"]) == (
        "GPUCluster",
        "nvidia.com/v1alpha1",
        "gpu-cluster",
    )
    objects = helm_template(values, tmp_path)
    assert kind(objects, "ClusterPolicy") == []
    rendered = kind(objects, "GPUCluster")
    assert len(rendered) == 1 and validate(rendered[0]) == "crd"
    assert _plan_gpu_operator.spec_drift(rendered[0], gpu_cluster["expect"], "GPUCluster/gpu-cluster") == []
    assert rendered[0]["spec"]["draDriver"]["version"] == "v0.5.0"
    assert section["crds"][:4] == _plan_gpu_operator.DRA_CRDS
    for driver in section["nvidia_drivers"]:
        assert validate(driver) == "crd"


def test_the_mirror_and_the_pinned_tag_reach_the_dra_driver(specs):
    cluster_vars = dict(
        DRA,
        gpu_operator_image_registry=MIRROR,
        gpu_operator_image_pull_secrets=["ngc"],
        gpu_operator_dra_driver_version="v0.6.1",
    )
    cluster, _plans = plan_all(specs, cluster_vars=cluster_vars)
    section = cluster["gpu_operator"]
    assert section["chart_values"]["draDriver"] == {
        "repository": f"{MIRROR}/nvidia",
        "version": "v0.6.1",
        "imagePullSecrets": ["ngc"],
    }
    assert section["gpu_cluster"]["expect"]["draDriver.repository"] == f"{MIRROR}/nvidia"
    assert "GPUCluster/gpu-cluster (GPU DRA driver v0.6.1, device plugin off)" in cluster["summary"]
    # The lab defaults ask for operands a GPUCluster has none of: the summary names them.
    assert (
        "not deployed in dra mode (the GPUCluster has no such operand): gpu_operator_components toolkit"
        in (cluster["summary"])
    )


def test_device_plugin_mode_plans_no_gpu_cluster(specs):
    section = plan_all(specs)[0]["gpu_operator"]
    assert "gpu_cluster" not in section and "gpuCluster" not in section["chart_values"]
    assert section["cluster_policy"]["name"] == "cluster-policy"


def test_an_operator_driver_without_nvidiadrivers_is_refused_in_dra_mode(specs):
    with pytest.raises(Exception) as refused:
        plan_all(specs, OPERATOR, NO_DRIVER, DRA)
    assert "gpufabric_k8s_device_allocation: dra deploys the GPU Operator's GPUCluster" in str(refused.value)
    assert "set gpu_operator_driver_crd: true" in str(refused.value)


def test_the_stand_in_chart_refuses_both_custom_resources(tmp_path):
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"gpuCluster": {"deployCR": True}}))
    proc = subprocess.run(
        [str(HELM), "template", "gpu-operator", str(CHART), "-f", str(values)],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(tmp_path / "cache")},
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0
    assert "clusterPolicy.deployCR and gpuCluster.deployCR cannot both be true" in proc.stderr


def test_readiness_and_drift_name_the_gpu_cluster():
    name = "GPUCluster/gpu-cluster"
    live = {"spec": {"draDriver": {"version": "v0.4.0"}}, "status": {"state": "notReady", "conditions": []}}
    lines: List[str] = _plan_gpu_operator.not_ready(live, [], [], name)
    assert lines == ["GPUCluster/gpu-cluster state notReady"]
    drift = _plan_gpu_operator.spec_drift(live, {"draDriver.version": "v0.5.0"}, name)
    assert drift == ['spec.draDriver.version: planned "v0.5.0", the chart rendered "v0.4.0"']
    assert _plan_gpu_operator.spec_drift(None, {}, name) == [f"{name} does not exist: the chart did not deploy it"]
    assert _plan_gpu_operator.not_ready(dict(live, status={"state": "ready"}), [], [], name) == []
