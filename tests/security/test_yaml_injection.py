"""Finding 8: storage_csi's kustomization.yaml was text built by interpolation, and the plan checked chart
versions with re.match anchored at the start only. A chart version such as
'4.13.4"\\n    valuesInline: ...' passed the check and wrote keys of its own into the helmCharts entry
(valuesInline overrides the values file: any image, hostPath or privilege the chart templates). Now every
version check is a fullmatch and the kustomization is data written by a YAML emitter."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from role_runner import run_role_playbook
from storage_support import CSI_VARS, PLAN, REPO, cluster_plan, lab_variables

INJECTED = '4.13.4"\n    valuesInline:\n      controller: {runOnControlPlane: true}\n    x: "'


@pytest.fixture(scope="module")
def specs():
    return PLAN.load_specs(str(REPO))


@pytest.fixture()
def check(specs):
    return lambda scope, variables: PLAN.check(specs, scope, variables)


@pytest.mark.parametrize(
    "version, pinned",
    [
        (INJECTED, "4.13.4"),
        ("4.13.4\n", "v4.13.4"),
        ("4.13.4 extra", "4.13.4"),
        ("1.0.0-rc.1\nvaluesInline: {}", "1.0.0-rc.1+b.5"),
    ],
)
def test_the_plan_refuses_a_storage_chart_version_with_more_than_a_version(check, version, pinned):
    drivers = copy.deepcopy(CSI_VARS["storage_csi_drivers"])
    drivers["nfs"] = {"chart_version": version}
    _plan, problems = check("cluster", lab_variables(storage_csi_drivers=drivers))
    assert any(p.startswith("storage_csi_drivers.nfs.chart_version:") for p in problems), problems
    drivers["nfs"] = {"chart_version": pinned}  # the version alone (SemVer 2.0.0, "v" allowed) passes
    assert check("cluster", lab_variables(storage_csi_drivers=drivers))[1] == []


@pytest.mark.parametrize("role", ["network_operator", "gpu_operator"])
def test_the_plan_refuses_an_operator_chart_version_with_a_newline(check, role):
    _plan, problems = check("cluster", lab_variables(**{f"{role}_chart_version": "v26.4.1\nvaluesInline: {}"}))
    assert any(p.startswith(f"{role}_chart_version:") for p in problems), problems


@pytest.mark.slow
def test_the_kustomization_is_emitted_not_interpolated(tmp_path, check):
    """Even a plan whose check was bypassed (a hand-edited stored plan) cannot add keys to the kustomization."""
    plan = cluster_plan(check, {**CSI_VARS, "gpufabric_k8s_mode": "render"})
    drivers = plan["storage"]["drivers"]
    assert drivers["nfs"]["kind"] == "helm" and not drivers["nfs"].get("chart_path")
    drivers["nfs"]["chart_version"] = INJECTED
    for driver in drivers.values():  # the kept manifests (files on the controller) are not this test's
        if driver.get("kind") != "helm":
            driver["install"] = False
    # render mode ships a local chart (chart_path) in the render directory: one that exists here
    local = tmp_path / "charts-kept" / "lustre-csi-driver"
    local.mkdir(parents=True)
    (local / "Chart.yaml").write_text("apiVersion: v2\nname: lustre-csi-driver\nversion: 0.1.0\n")
    drivers["lustre"]["chart_path"] = str(local)
    out = tmp_path / "rendered"
    ran = run_role_playbook(
        tmp_path,
        "gpufabric.rollout.storage_csi",
        {"gpufabric_plan": json.loads(json.dumps(plan)), "gpufabric_k8s_render_dir": str(out)},
    )
    assert ran["rc"] == 0, ran["out"]
    text = (out / "storage_csi" / "kustomization.yaml").read_text()
    kustomization = yaml.safe_load(text)
    chart = next(c for c in kustomization["helmCharts"] if c["releaseName"] == drivers["nfs"]["release_name"])
    assert "valuesInline" not in chart and "x" not in chart, "the chart version added keys"
    assert chart["version"] == INJECTED
    assert set(chart) == {"name", "repo", "version", "releaseName", "namespace", "includeCRDs", "valuesFile"}
    assert text.startswith("#"), "the ansible_managed header"
