"""The gpu_operator role moves an installed GPU Operator release to a new chart version in place, against
the lab's control plane, with the lab's stand-in chart (lab/charts/gpu-operator, v26.7.0) and a copy of
it carrying the next version (v26.7.1: Chart.yaml version and appVersion), from each chart source:
- `path`: a local chart directory (gpu_operator_chart_path, the air-gapped way), the version moved with
  gpu_operator_chart_version;
- `repo`: a chart repository (gpu_operator_chart_repo_url, chart name and gpu_operator_chart_version, as
  a real inventory names NGC), served by the test on 127.0.0.1 from the two charts packaged by Helm.
The plan is the operator-managed driver with one NVIDIADriver per driver group, so the release's
ClusterPolicy and the role's own NVIDIADriver both live through the upgrade.

Readiness is reached as in the lab: the control plane's operator stand-in (lab/cluster/play_operator.py,
started by lab/kube.sh with the mode file saying `ready`) writes the ClusterPolicy's and NVIDIADrivers'
status, and the role's wait (tasks/wait_ready.yml) polls it for real; nothing is switched off.

Every run is as the collection's least-privilege identity (docs/rbac/gpufabric-rollout.yaml): what it
grants must be enough to upgrade the release.

- install at v26.7.0;
- --check with the v26.7.1 chart: the Helm task says changed, the release stays at v26.7.0 at its revision;
- the real run changes exactly what check mode predicted: the release is at v26.7.1, one revision on, with
  the planned values; the ClusterPolicy, the operator's Deployment and the NVIDIADriver keep their uid;
- a second run changes nothing, and --check predicts nothing;
- render mode with the new chart names v26.7.1 and writes the planned values.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from controlplane_support import REPO, assert_check_predicted, crds_dir
from role_runner import run_role_playbook

HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "lab" / "charts" / "gpu-operator"
OLD, NEW = "v26.7.0", "v26.7.1"
RELEASE, NAMESPACE = "gpu-operator", "gpu-operator"  # the namespace the shipped RBAC's Helm Role is in
# The release is installed through k8s_publish helm_release.yml (the one Helm entry point).
HELM_TASK = "gpufabric.rollout.k8s_publish : Install or upgrade the Helm release gpu-operator"
pytestmark = pytest.mark.slow


def _plan_conftest():
    """tests/unit/plan/conftest.py (the lab intent, the node facts and the checker), loaded by path."""
    path = REPO / "tests" / "unit" / "plan" / "conftest.py"
    spec = importlib.util.spec_from_file_location("plan_conftest_for_gpu_operator_upgrade", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLAN = _plan_conftest()


def gpu_operator_plan(source: Dict[str, str], version: str, mode: str) -> Dict[str, Any]:
    """The cluster plan of the two lab nodes (the cluster fixture's Node names), the driver installed by
    the operator through NVIDIADrivers, the chart from `source` (role variables) pinned at `version`:
    checked as the plan play checks it (which reads a local chart's Chart.yaml and refuses another
    version)."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records

    specs = PLAN.load_specs(str(REPO))
    records = {}
    for index in (1, 2):
        host = f"gpu-node-0{index}"
        variables = PLAN.lab_intent()
        variables.update(
            gpufabric_k8s_node_name=host,
            gpufabric_gpu_driver={"managed_by": "operator", "version": "580.95.05"},
        )
        values, problems = PLAN.check(specs, "node", variables)
        assert problems == []
        facts = PLAN.node_facts(index)
        facts["gpudirect"].update(driver_version=None, driver_flavour=None, driver_loaded=False, cuda_version=None)
        records[host] = _node_records.node_record(_plan_node.plan_node(values, facts), facts["topology"])
    variables = PLAN.lab_intent()
    variables.update(
        source,
        gpu_operator_chart_version=version,
        gpu_operator_driver_crd=True,
        gpufabric_k8s_mode=mode,
    )
    values, problems = PLAN.check(specs, "cluster", variables)
    assert problems == []
    return _plan_cluster.plan(values, records)  # raises PlanError on a refused plan


def run_role(
    tmp: Path, cluster, source: Dict[str, str], version: str, mode: str, *extra: str, log: Optional[Path] = None
) -> Dict[str, Any]:
    """gpu_operator as the collection's identity; rc, output, changed count and the variables."""
    variables = {
        "gpufabric_plan": gpu_operator_plan(source, version, mode),
        "gpufabric_kubeconfig": str(cluster.kubeconfig),
        "gpufabric_k8s_render_dir": str(tmp / "render"),
        **source,
        "gpu_operator_chart_version": version,
        "gpu_operator_helm_binary": str(HELM),
        "gpu_operator_crds_dir": str(crds_dir()),
        "gpu_operator_wait_timeout": 60,
        "gpu_operator_wait_delay": 1,
    }
    result = run_role_playbook(tmp, "gpufabric.rollout.gpu_operator", variables, *extra, log=log)
    return dict(result, variables=variables)


def changed_tasks(log: Path, check: bool) -> List[str]:
    """The tasks the gpufabric_changes callback recorded as changed in the check (or real) runs of `log`."""
    out = []
    for line in log.read_text().splitlines():
        record = json.loads(line)
        if record["check"] == check and record["changed"]:
            out.append(record["task"])  # the callback's task name: "<role FQCN> : <task>"
    return out


def new_chart(root: Path) -> Path:
    """A copy of the stand-in chart at the next patch version (Chart.yaml version and appVersion)."""
    chart = root / NEW / "gpu-operator"
    shutil.copytree(CHART, chart)
    text = (chart / "Chart.yaml").read_text()
    text, count = re.subn(rf"^(version|appVersion): {re.escape(OLD)}$", rf"\1: {NEW}", text, flags=re.M)
    assert count == 2, f"{CHART}/Chart.yaml does not name {OLD} as version and appVersion"
    (chart / "Chart.yaml").write_text(text)
    return chart


@pytest.fixture(scope="module")
def charts(tmp_path_factory) -> Dict[str, Path]:
    """The stand-in chart at each version: OLD is the lab's, NEW its copy."""
    if not HELM.exists():
        pytest.fail(f"no {HELM}: run 'make tools' (or 'make controlplane-test', which does)")
    return {OLD: CHART, NEW: new_chart(tmp_path_factory.mktemp("charts"))}


@pytest.fixture(scope="module")
def repository(charts, tmp_path_factory) -> str:
    """A chart repository on 127.0.0.1 holding both versions (helm package + helm repo index), as a
    mirror of NGC's would: its URL."""
    root = tmp_path_factory.mktemp("repository")
    env = dict(os.environ, HELM_CACHE_HOME=str(root / ".cache"), HELM_CONFIG_HOME=str(root / ".config"))
    for chart in charts.values():
        packaged = subprocess.run(
            [str(HELM), "package", str(chart), "-d", str(root / "charts")],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert packaged.returncode == 0, packaged.stderr
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root / "charts"))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]  # keep the test's output quiet
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    indexed = subprocess.run(
        [str(HELM), "repo", "index", str(root / "charts"), "--url", url],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert indexed.returncode == 0, indexed.stderr
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()
    server.server_close()


def chart_source(kind: str, version: str, charts: Dict[str, Path], repository: Optional[str]) -> Dict[str, str]:
    """The role variables that name the chart of `version` from a source of `kind`."""
    if kind == "path":
        return {"gpu_operator_chart_path": str(charts[version])}
    return {"gpu_operator_chart_path": "", "gpu_operator_chart_repo_url": str(repository)}


@pytest.fixture(params=["path", "repo"])
def source(request, charts):
    """(kind, {version: role variables naming the chart}) of each chart source."""
    url = request.getfixturevalue("repository") if request.param == "repo" else None
    return request.param, {v: chart_source(request.param, v, charts, url) for v in (OLD, NEW)}


@pytest.fixture(scope="module")
def helm(cluster, charts, tmp_path_factory):
    """helm as the administrator, for reading the release back and removing it after each test."""
    home = tmp_path_factory.mktemp("helm-admin")
    env = dict(
        os.environ,
        KUBECONFIG=str(cluster.admin),
        HELM_CACHE_HOME=str(home / "cache"),
        HELM_CONFIG_HOME=str(home / "config"),
        HELM_DATA_HOME=str(home / "data"),
    )

    def run(*args: str, check: bool = True) -> str:
        res = subprocess.run([str(HELM), *args], env=env, capture_output=True, text=True, check=False, timeout=120)
        if check and res.returncode != 0:
            pytest.fail(f"helm {' '.join(args)} failed: {res.stderr.strip()}")
        return res.stdout

    return run


@pytest.fixture()
def no_release(cluster, helm):
    """No GPU Operator release before the test; none after it (nor the role's NVIDIADrivers)."""
    existing = json.loads(helm("list", "-A", "-o", "json"))
    assert existing == [], f"the test installs the GPU Operator release itself; found {existing}"
    yield
    helm("uninstall", RELEASE, "-n", NAMESPACE, check=False)
    cluster.kubectl("delete", "nvidiadrivers.nvidia.com", "-l", "gpufabric.io/component=gpu_operator", check=False)


def release(helm) -> Dict[str, Any]:
    """The release as `helm list` shows it (chart name-version, app version, revision, status)."""
    listed = [r for r in json.loads(helm("list", "-n", NAMESPACE, "-o", "json")) if r["name"] == RELEASE]
    assert len(listed) == 1, listed
    return listed[0]


def identity(cluster, kind: str, name: str, namespace: str = "") -> Dict[str, Any]:
    """uid, generation and the Helm chart label of one object."""
    args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
    meta = json.loads(cluster.kubectl(*args).stdout)["metadata"]
    return {
        "uid": meta["uid"],
        "generation": meta.get("generation"),
        "chart": (meta.get("labels") or {}).get("helm.sh/chart"),
    }


def test_the_release_is_upgraded_in_place_and_check_mode_predicts_it(cluster, helm, source, no_release, tmp_path):
    _kind, chart = source

    # Installed at v26.7.0, ready (the stand-in reports it, the role waits for it).
    first = run_role(tmp_path / "install", cluster, chart[OLD], OLD, "apply")
    assert first["rc"] == 0 and first["changed"] > 0, first["out"]
    before = release(helm)
    assert (before["chart"], before["app_version"], before["status"]) == (f"gpu-operator-{OLD}", OLD, "deployed")
    policy = identity(cluster, "clusterpolicies.nvidia.com", "cluster-policy")
    assert policy["chart"] == f"gpu-operator-{OLD}"
    deployment = identity(cluster, "deployment", "gpu-operator", NAMESPACE)
    drivers = first["variables"]["gpufabric_plan"]["gpu_operator"]["nvidia_drivers"]
    assert [d["metadata"]["name"] for d in drivers] == ["driver-580-95-05-open-gds"]
    driver = identity(cluster, "nvidiadrivers.nvidia.com", drivers[0]["metadata"]["name"])

    # --check with the v26.7.1 chart: the Helm task would upgrade; nothing in the cluster moved.
    log = tmp_path / "changes.jsonl"
    check = run_role(tmp_path / "check", cluster, chart[NEW], NEW, "apply", "--check", log=log)
    assert check["rc"] == 0, check["out"]
    assert changed_tasks(log, check=True) == [HELM_TASK], check["out"]
    assert release(helm) == before, "check mode did not upgrade the release"
    assert identity(cluster, "clusterpolicies.nvidia.com", "cluster-policy") == policy

    # The real run changes exactly what check mode said: the release at v26.7.1, one revision on, with
    # the planned values; the ClusterPolicy updated, not deleted and created again.
    upgrade = run_role(tmp_path / "upgrade", cluster, chart[NEW], NEW, "apply", log=log)
    assert upgrade["rc"] == 0 and upgrade["changed"] > 0, upgrade["out"]
    assert_check_predicted(log)
    after = release(helm)
    assert (after["chart"], after["app_version"], after["status"]) == (f"gpu-operator-{NEW}", NEW, "deployed")
    assert int(after["revision"]) == int(before["revision"]) + 1
    planned = upgrade["variables"]["gpufabric_plan"]["gpu_operator"]["chart_values"]
    assert json.loads(helm("get", "values", RELEASE, "-n", NAMESPACE, "-o", "json")) == planned
    assert planned == first["variables"]["gpufabric_plan"]["gpu_operator"]["chart_values"], (
        "a patch version plans the same values"
    )
    upgraded = identity(cluster, "clusterpolicies.nvidia.com", "cluster-policy")
    assert upgraded["uid"] == policy["uid"]
    assert upgraded["chart"] == f"gpu-operator-{NEW}"
    assert upgraded["generation"] > policy["generation"], "the chart's new spec.daemonsets.labels were applied"
    moved = identity(cluster, "deployment", "gpu-operator", NAMESPACE)
    assert (moved["uid"], moved["chart"]) == (deployment["uid"], f"gpu-operator-{NEW}")
    image = cluster.kubectl(
        "get", "deployment", "gpu-operator", "-n", NAMESPACE, "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    ).stdout
    assert image == f"nvcr.io/nvidia/gpu-operator:{NEW}", "the operator image follows the chart's appVersion"
    assert identity(cluster, "nvidiadrivers.nvidia.com", drivers[0]["metadata"]["name"]) == driver
    state = cluster.kubectl("get", "clusterpolicies.nvidia.com", "cluster-policy", "-o", "jsonpath={.status.state}")
    assert state.stdout == "ready"

    # Again: nothing to change, and check mode says so.
    again = run_role(tmp_path / "again", cluster, chart[NEW], NEW, "apply")
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]
    quiet = run_role(tmp_path / "quiet", cluster, chart[NEW], NEW, "apply", "--check")
    assert quiet["rc"] == 0 and quiet["changed"] == 0, quiet["out"]
    assert release(helm) == after


def test_render_mode_names_the_new_chart_version(cluster, source, tmp_path):
    """What render mode writes for the chart: the values planned for that version and, from a repository,
    the kustomization's helmCharts entry at that version; from a local chart (kustomize cannot fetch it),
    the kustomization's instruction naming the chart and its version."""
    kind, chart = source
    written = run_role(tmp_path / "render", cluster, chart[NEW], NEW, "render")
    assert written["rc"] == 0 and written["changed"] > 0, written["out"]
    folder = tmp_path / "render" / "render" / "gpu_operator"
    section = written["variables"]["gpufabric_plan"]["gpu_operator"]
    assert yaml.safe_load((folder / "values.yaml").read_text()) == section["chart_values"]
    text = (folder / "kustomization.yaml").read_text()
    kustomization = yaml.safe_load(text)
    if kind == "repo":
        entry = kustomization["helmCharts"]
        assert [(e["name"], e["version"], e["repo"], e["valuesFile"]) for e in entry] == [
            ("gpu-operator", NEW, chart[NEW]["gpu_operator_chart_repo_url"], "values.yaml")
        ]
    else:
        assert "helmCharts" not in kustomization
        assert f"(gpu-operator, {NEW})" in text, text
    assert OLD not in text, text
    again = run_role(tmp_path / "render", cluster, chart[NEW], NEW, "render")
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]


def test_a_new_chart_under_the_old_pinned_version_is_refused_by_the_plan(charts):
    """The values are planned for gpu_operator_chart_version: moving only the chart path is refused."""
    from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError

    with pytest.raises(PlanError) as refused:
        gpu_operator_plan({"gpu_operator_chart_path": str(charts[NEW])}, OLD, "apply")
    assert f"holds chart gpu-operator {NEW}, but gpu_operator_chart_version is {OLD}" in str(refused.value)
