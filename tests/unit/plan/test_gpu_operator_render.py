"""Render mode of the gpu_operator role, run with ansible-playbook on the controller: it writes the
planned values and objects, a second run changes nothing, and --check predicts exactly what the
next run changes (including removing the files of objects the plan no longer has)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any, Dict

import pytest
import yaml
from conftest import REPO
from signed_charts import HELM, kustomize_build, signed_repository
from test_gpu_operator_plan import CHART, NO_DRIVER, OPERATOR, V100, plan_all

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "gpu_operator_render.yml"
pytestmark = pytest.mark.slow


def play(tmp_path: Path, plan: Dict[str, Any], variables: Dict[str, Any], check: bool = False):
    """ansible-playbook rendering `plan` with the role variables `variables`: (rc, output, changed tasks; -1
    when the output has no recap)."""
    extra = tmp_path / "vars.json"
    extra.write_text(
        json.dumps(
            dict(
                variables,
                gpufabric_plan=plan,
                gpufabric_k8s_render_dir=str(tmp_path / "render"),
                ansible_python_interpreter=str(Path(os.sys.executable)),
            )
        )
    )
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update(
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        TMPDIR=str(tmp_path),
        HELM_CACHE_HOME=str(tmp_path / "helm" / "cache"),
        HELM_CONFIG_HOME=str(tmp_path / "helm" / "config"),
        HELM_DATA_HOME=str(tmp_path / "helm" / "data"),
    )
    argv = ["ansible-playbook", "-i", "localhost,", str(PLAYBOOK), "-e", f"@{extra}"] + (["--check"] if check else [])
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    recap = re.search(r"localhost\s+:\s+ok=\d+\s+changed=(\d+)", proc.stdout)
    return proc.returncode, proc.stdout[-5000:] + proc.stderr[-2000:], int(recap.group(1)) if recap else -1


def run(tmp_path: Path, plan: Dict[str, Any], check: bool = False, chart_path: str = "") -> int:
    """Run the role in render mode with this plan (and the chart source it was planned for);
    returns the number of changed tasks."""
    rc, out, changed = play(tmp_path, plan, {"gpu_operator_chart_path": chart_path}, check)
    assert rc == 0, out
    assert changed >= 0, out
    return changed


def files(tmp_path: Path) -> Dict[str, str]:
    root = tmp_path / "render" / "gpu_operator"
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def test_render_mode_writes_the_plan_once_and_check_mode_is_exact(specs, tmp_path):
    crd_plan, _plans = plan_all(
        specs,
        OPERATOR,
        NO_DRIVER,
        {"gpu_operator_driver_crd": True, "gpufabric_k8s_mode": "render"},
        node2_vars={"gpufabric_gds_enabled": False},
        node2_gpudirect={"gpus": V100},
    )
    section = crd_plan["gpu_operator"]
    local = str(CHART)  # the lab's chart source, which the plan read
    assert run(tmp_path, crd_plan, check=True, chart_path=local) > 0
    assert not (tmp_path / "render").exists(), "--check wrote nothing"
    first = run(tmp_path, crd_plan, chart_path=local)
    written = files(tmp_path)
    assert set(written) == {
        "kustomization.yaml",
        "values.yaml",
        "node-labels.yaml",
        "nvidiadriver-driver-580-95-05-open-gds.yaml",
        "nvidiadriver-driver-580-95-05-proprietary-rdma.yaml",
    }
    assert yaml.safe_load(written["values.yaml"]) == section["chart_values"]
    for driver in section["nvidia_drivers"]:
        assert yaml.safe_load(written[f"nvidiadriver-{driver['metadata']['name']}.yaml"]) == driver
    kustomization = yaml.safe_load(written["kustomization.yaml"])
    assert sorted(kustomization["resources"]) == sorted(n for n in written if n.startswith("nvidiadriver-"))
    assert "helmCharts" not in kustomization, "a local chart is installed with helm, as the file says"
    labels = {
        d["metadata"]["name"]: d["metadata"]["labels"] for d in yaml.safe_load_all(written["node-labels.yaml"]) if d
    }
    assert labels == section["node_labels"]
    assert first > 0
    assert run(tmp_path, crd_plan, chart_path=local) == 0, "a second run changes nothing"
    assert run(tmp_path, crd_plan, check=True, chart_path=local) == 0

    # The host takes the driver back: the NVIDIADrivers and node labels leave the rendered set.
    host_plan = render_plan(specs)
    predicted = run(tmp_path, host_plan, check=True)
    assert files(tmp_path) == written, "--check changed no file"
    assert run(tmp_path, host_plan) == predicted > 0
    after = files(tmp_path)
    assert set(after) == {"kustomization.yaml", "values.yaml"}
    assert yaml.safe_load(after["values.yaml"])["driver"]["enabled"] is False
    chart = yaml.safe_load(after["kustomization.yaml"])["helmCharts"][0]
    assert (chart["name"], chart["version"], chart["repo"]) == (
        "gpu-operator",
        "v26.7.0",
        "https://helm.ngc.nvidia.com/nvidia",
    )


# ---------------------------------------------------------------------------------------------------------
# A chart verified against gpu_operator_chart_keyring is shipped in the render directory. Before, render
# mode named the chart's repository in the kustomization and `kustomize build --enable-helm` downloaded it
# unverified, keyring or not: whoever controlled the repository chose what the GitOps pipeline deployed.
# The repository here serves the lab's stand-in chart signed with a key made for the test
# (lab/charts/signed_repo.py); after the render it serves an attacker's chart under the same name.

ARCHIVE = "gpu-operator-v26.7.0.tgz"


@pytest.fixture(scope="module")
def signed_chart_repo(tmp_path_factory):
    """The stand-in gpu-operator chart, signed (helm package --sign), served on 127.0.0.1."""
    with signed_repository(tmp_path_factory.mktemp("signed-repo"), [CHART]) as repo:
        yield repo


def render_plan(specs) -> Dict[str, Any]:
    """The lab plan in render mode, with the chart from a repository (no chart_path)."""
    plan, _plans = plan_all(specs, cluster_vars={"gpufabric_k8s_mode": "render", "gpu_operator_chart_path": ""})
    return plan


def keyring_vars(repo: Dict[str, Any], keyring: Path) -> Dict[str, Any]:
    """The role's chart variables: the chart from `repo`, verified against `keyring`."""
    return {
        "gpu_operator_chart_repo_url": repo["url"],
        "gpu_operator_chart_keyring": str(keyring),
        "gpu_operator_helm_binary": str(HELM),
    }


def test_render_mode_ships_the_chart_verified_against_the_keyring(specs, tmp_path, signed_chart_repo):
    plan = render_plan(specs)
    chart_vars = keyring_vars(signed_chart_repo, signed_chart_repo["keyring"])
    rc, out, predicted = play(tmp_path, plan, chart_vars, check=True)
    assert rc == 0 and predicted > 0, out
    assert not (tmp_path / "render").exists(), "--check pulled and verified the chart, and wrote nothing"

    rc, out, changed = play(tmp_path, plan, chart_vars)
    assert rc == 0 and changed == predicted, out
    folder = tmp_path / "render" / "gpu_operator"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    (chart,) = kustomization["helmCharts"]
    assert "repo" not in chart, "kustomize must not fetch the chart: it builds from the verified copy"
    assert (chart["name"], chart["version"], chart["valuesFile"]) == ("gpu-operator", "v26.7.0", "values.yaml")
    assert "helmGlobals" not in kustomization, "the default chart home: charts/"
    served = signed_chart_repo["served"] / ARCHIVE
    charts = folder / "charts"
    assert (charts / ARCHIVE).read_bytes() == served.read_bytes(), "the archive that verified"
    assert (charts / f"{ARCHIVE}.prov").read_bytes() == (signed_chart_repo["served"] / f"{ARCHIVE}.prov").read_bytes()
    digest = hashlib.sha256(served.read_bytes()).hexdigest()
    assert (charts / f"{ARCHIVE}.sha256").read_text() == f"{digest}  {ARCHIVE}\n"
    with tarfile.open(served) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    unpacked = {str(p.relative_to(charts)): p.read_bytes() for p in (charts / "gpu-operator").rglob("*") if p.is_file()}
    assert unpacked == members, "charts/gpu-operator is the verified archive, unpacked"
    assert "gpu_operator_chart_keyring" in (folder / "kustomization.yaml").read_text()
    assert play(tmp_path, plan, chart_vars)[2] == 0, "a second run changes nothing"

    # The repository now serves another chart under the signed name: kustomize never asks it.
    evil = tmp_path / "evil"
    shutil.copytree(CHART, evil / "gpu-operator")
    (evil / "gpu-operator" / "templates" / "evil.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: evil, namespace: default}\n"
    )
    subprocess.run([str(HELM), "package", str(evil / "gpu-operator"), "-d", str(evil)], check=True, capture_output=True)
    original = served.read_bytes()
    try:
        served.write_bytes((evil / ARCHIVE).read_bytes())
        build = kustomize_build(folder, tmp_path / "kustomize")
    finally:
        served.write_bytes(original)
    assert build.returncode == 0, build.stderr
    kinds = {(o["kind"], o["metadata"]["name"]) for o in yaml.safe_load_all(build.stdout) if o}
    assert ("ConfigMap", "evil") not in kinds
    assert any(kind == "ClusterPolicy" for kind, _name in kinds), kinds
    assert not (charts / "gpu-operator-v26.7.0").exists(), "kustomize downloaded nothing into the chart home"


@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_a_chart_that_does_not_verify_fails_the_render_naming_the_keyring(specs, tmp_path, signed_chart_repo, check):
    plan = render_plan(specs)
    chart_vars = keyring_vars(signed_chart_repo, signed_chart_repo["attacker"])

    rc, out, _changed = play(tmp_path, plan, chart_vars, check=check)

    assert rc != 0, out
    assert "gpu_operator_chart_keyring: the chart gpu-operator v26.7.0" in out and "does not verify" in out, out
    assert not (tmp_path / "render").exists(), "nothing rendered"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("gpufabric-chart.")], "no chart left behind"


def test_without_a_keyring_the_kustomization_still_names_the_repository(specs, tmp_path, signed_chart_repo):
    plan = render_plan(specs)
    rc, out, _changed = play(tmp_path, plan, {"gpu_operator_chart_repo_url": signed_chart_repo["url"]})
    assert rc == 0, out
    folder = tmp_path / "render" / "gpu_operator"
    text = (folder / "kustomization.yaml").read_text()
    assert yaml.safe_load(text)["helmCharts"][0]["repo"] == signed_chart_repo["url"]
    assert "verified" not in text and not (folder / "charts").exists()


def test_dra_mode_renders_the_gpu_cluster_values_for_an_offline_helm_template(specs, tmp_path):
    """gpufabric_k8s_device_allocation: dra: values.yaml asks for the GPUCluster, and the kustomization's
    helmCharts entry tells kustomize's offline `helm template` that DeviceClasses are served (the chart
    refuses a GPUCluster otherwise); a second run changes nothing."""
    plan, _plans = plan_all(
        specs,
        cluster_vars={
            "gpufabric_k8s_mode": "render",
            "gpu_operator_chart_path": "",
            "gpufabric_k8s_device_allocation": "dra",
            "gpu_operator_components": {"device_plugin": False},
        },
    )
    rc, out, changed = play(tmp_path, plan, {})
    assert rc == 0 and changed > 0, out
    written = files(tmp_path)
    values = yaml.safe_load(written["values.yaml"])
    assert values["gpuCluster"] == {"deployCR": True} and values["clusterPolicy"] == {"deployCR": False}
    kustomization = written["kustomization.yaml"]
    assert yaml.safe_load(kustomization)["helmCharts"][0]["apiVersions"] == ["resource.k8s.io/v1/DeviceClass"]
    assert "the chart renders the GPUCluster from values.yaml" in kustomization
    assert run(tmp_path, plan) == 0
