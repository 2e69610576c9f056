"""The storage_csi role in render mode, run by ansible-playbook on this machine with the plan of the lab intent:
it writes the planned objects, the Helm values, the driver manifests with their images set as planned, the node
labels and a kustomization that lists them all; a second run changes nothing; a filesystem dropped from the
plan takes its files with it."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from role_runner import run_role_playbook
from signed_charts import HELM, signed_repository
from storage_support import CRDS, CSI_VARS, REPO, cluster_plan

RENDER = {"storage_csi_image_registry": "mirror.lab/csi", "gpufabric_k8s_mode": "render"}


def manifests(tmp_path):
    """Small stand-ins for the manifests a user keeps: the Scale operator (its CRD, upstream, and a Deployment
    with the operator's image and CSI_*_IMAGE variables) and the NVMe-oF node DaemonSet."""
    scale = tmp_path / "ibm-spectrum-scale-csi-operator.yaml"
    operator = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ibm-spectrum-scale-csi-operator", "namespace": "ibm-spectrum-scale-csi-driver"},
        "spec": {
            "selector": {"matchLabels": {"app": "op"}},
            "template": {
                "metadata": {"labels": {"app": "op"}},
                "spec": {
                    "containers": [
                        {
                            "name": "operator",
                            "image": "quay.io/ibm-spectrum-scale/ibm-spectrum-scale-csi-operator@sha256:bd58",
                            "env": [
                                {
                                    "name": "CSI_ATTACHER_IMAGE",
                                    "value": "registry.k8s.io/sig-storage/csi-attacher@sha256:5a",
                                }
                            ],
                        }
                    ]
                },
            },
        },
    }
    crd = (CRDS / "csiscaleoperators.csi.ibm.com.yaml").read_text()
    scale.write_text(crd + "---\n" + yaml.safe_dump(operator))
    nvmf = tmp_path / "csi-driver-nvmf"
    nvmf.mkdir()
    (nvmf / "csi-nvmf-node.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "csi-nvmf-node", "namespace": "kube-system"},
                "spec": {
                    "selector": {"matchLabels": {"app": "n"}},
                    "template": {
                        "metadata": {"labels": {"app": "n"}},
                        "spec": {"containers": [{"name": "csi-nvmf-plugin", "image": "nvmfplugin:latest"}]},
                    },
                },
            }
        )
    )
    (nvmf / "csi-nvmf-driver.yaml").write_text(
        "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: csi.nvmf.com\n"
        "spec:\n  attachRequired: true\n  podInfoOnMount: true\n"
    )
    return scale, nvmf


def kept_manifest_drivers(tmp_path):
    """The lab intent's storage_csi_drivers (a copy), the Scale and NVMe-oF drivers from the manifests of
    ``manifests``."""
    scale, nvmf = manifests(tmp_path)
    drivers = json.loads(json.dumps(CSI_VARS["storage_csi_drivers"]))
    drivers["gpfs"]["manifest"] = str(scale)
    drivers["nvmeof"]["manifest"] = str(nvmf)
    return drivers


def local_chart(tmp_path):
    """A small chart directory standing in for a Lustre CSI driver chart a user keeps on the controller."""
    chart = tmp_path / "vendor" / "lustre-csi-driver"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: lustre-csi-driver\nversion: 0.1.0\n")
    (chart / "templates" / "sa.yaml").write_text("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: x\n")
    return chart


def play(tmp_path, plan, render_dir):
    """The storage_csi role rendering `plan` into `render_dir`; the number of changed tasks."""
    ran = run_role_playbook(
        tmp_path, "gpufabric.rollout.storage_csi", {"gpufabric_plan": plan, "gpufabric_k8s_render_dir": str(render_dir)}
    )
    assert ran["rc"] == 0 and ran["changed"] >= 0, ran["out"]
    return ran["changed"]


@pytest.mark.slow
def test_render_mode_writes_the_planned_objects(tmp_path, check):
    drivers = kept_manifest_drivers(tmp_path)
    # the Lustre driver's chart is a local directory on the controller (chart_path), named with a trailing /
    chart = local_chart(tmp_path)
    drivers["lustre"]["chart_path"] = str(chart) + "/"
    plan = cluster_plan(
        check,
        {
            "storage_csi_drivers": drivers,
            "storage_csi_image_registry": "mirror.lab/csi",
            "gpufabric_k8s_mode": "render",
        },
    )
    out = tmp_path / "rendered"
    assert play(tmp_path, plan, out) > 0
    folder = out / "storage_csi"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    rendered = [yaml.safe_load((folder / name).read_text()) for name in kustomization["resources"]]
    planned = [o for part in plan["storage"]["objects"].values() for o in part]
    assert [o for o in rendered if o in planned] == planned, "every planned object is rendered as planned"
    kinds = sorted(o["kind"] for o in rendered if o not in planned)
    assert kinds == ["CSIDriver", "CustomResourceDefinition", "DaemonSet", "Deployment"], "the kept manifests"
    daemonset = next(o for o in rendered if o["kind"] == "DaemonSet")
    assert daemonset["spec"]["template"]["spec"]["containers"][0]["image"] == "mirror.lab/csi/nvmfplugin:1.0"
    deployment = next(o for o in rendered if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].startswith("mirror.lab/csi/ibm-spectrum-scale/ibm-spectrum-scale-csi-operator@")
    assert container["env"][0]["value"] == "mirror.lab/csi/sig-storage/csi-attacher@sha256:5a"
    charts = {c["releaseName"]: c for c in kustomization["helmCharts"]}
    assert (
        charts["csi-driver-nfs"]["repo"]
        == "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
    )
    assert charts["csi-driver-nfs"]["version"] == "4.13.4"
    # The local chart is shipped under the one chart home, charts/NAME, and its entry names neither a chart
    # home of its own (kustomize v5 refuses the field) nor a repository, so kustomize reads that copy.
    assert charts["lustre-csi-driver"]["name"] == "lustre-csi-driver"
    assert not {"chartHome", "repo"} & set(charts["lustre-csi-driver"])
    shipped = folder / "charts" / "lustre-csi-driver"
    assert sorted(str(f.relative_to(shipped)) for f in shipped.rglob("*") if f.is_file()) == [
        "Chart.yaml",
        "templates/sa.yaml",
    ]
    assert (shipped / "Chart.yaml").read_text() == (chart / "Chart.yaml").read_text()
    assert yaml.safe_load((folder / "values-weka.yaml").read_text())["images"]["csidriver"] == (
        "mirror.lab/csi/weka.io/csi-wekafs"
    )
    labels = list(yaml.safe_load_all((folder / "node-labels.yaml").read_text()))
    assert [n["metadata"]["name"] for n in labels if n] == ["gpu-node-01", "gpu-node-02"]
    # rendering the same plan again changes nothing
    assert play(tmp_path, plan, out) == 0
    # a plan without the NFS filesystem drops its StorageClass, Secret and values
    intent = [
        fs
        for fs in yaml.safe_load((REPO / "molecule/storage/group_vars/gpu_nodes/storage.yml").read_text())[
            "gpufabric_storage"
        ]
        if fs["backend"] not in ("nfs", "beegfs")
    ]
    smaller = cluster_plan(
        check,
        {
            "storage_csi_drivers": drivers,
            "storage_csi_image_registry": "mirror.lab/csi",
            "gpufabric_k8s_mode": "render",
        },
        node_changes={"gpufabric_storage": intent},
    )
    assert play(tmp_path, smaller, out) > 0
    names = sorted(p.name for p in folder.iterdir())
    assert not [n for n in names if "datasets" in n] and "values-nfs.yaml" not in names


@pytest.mark.slow
def test_render_mode_refuses_a_chart_path_that_holds_no_chart_naming_it(tmp_path, check):
    drivers = kept_manifest_drivers(tmp_path)
    drivers["lustre"]["chart_path"] = str(tmp_path / "no-such-chart")
    plan = cluster_plan(check, {"storage_csi_drivers": drivers, "gpufabric_k8s_mode": "render"})
    out = tmp_path / "rendered"
    ran = run_role_playbook(
        tmp_path, "gpufabric.rollout.storage_csi", {"gpufabric_plan": plan, "gpufabric_k8s_render_dir": str(out)}
    )
    assert ran["rc"] != 0
    assert "storage_csi_drivers.lustre.chart_path" in ran["out"] and "no Chart.yaml" in ran["out"], ran["out"]
    assert not (out / "storage_csi").exists(), "nothing is rendered"


@pytest.fixture(scope="module")
def signed_nfs_repo(tmp_path_factory):
    """The lab's stand-in csi-driver-nfs chart, signed (helm package --sign), served on 127.0.0.1."""
    with signed_repository(
        tmp_path_factory.mktemp("signed-repo"), [REPO / "lab" / "charts" / "csi-driver-nfs"]
    ) as repo:
        yield repo


def verified_nfs_plan(check, tmp_path, repo, keyring):
    """The lab plan with the NFS driver's chart from `repo`, verified against `keyring`."""
    drivers = kept_manifest_drivers(tmp_path)
    drivers["nfs"] = {"chart_repo_url": repo["url"], "chart_keyring": str(keyring)}
    drivers["lustre"]["chart_path"] = str(local_chart(tmp_path))
    return cluster_plan(check, {"storage_csi_drivers": drivers, "gpufabric_k8s_mode": "render"})


@pytest.mark.slow
def test_render_mode_ships_a_driver_chart_verified_against_its_keyring(tmp_path, check, signed_nfs_repo):
    """Before, the kustomization named the NFS chart's repository and kustomize downloaded it unverified."""
    plan = verified_nfs_plan(check, tmp_path, signed_nfs_repo, signed_nfs_repo["keyring"])
    out = tmp_path / "rendered"
    variables = {"gpufabric_plan": plan, "gpufabric_k8s_render_dir": str(out), "storage_csi_helm_binary": str(HELM)}
    ran = run_role_playbook(tmp_path / "check", "gpufabric.rollout.storage_csi", variables, "--check")
    assert ran["rc"] == 0 and ran["changed"] > 0, ran["out"]
    assert not out.exists(), "--check verified the chart and wrote nothing"

    assert play(tmp_path, plan, out) > 0
    folder = out / "storage_csi"
    text = (folder / "kustomization.yaml").read_text()
    charts = {c["name"]: c for c in yaml.safe_load(text)["helmCharts"]}
    assert "repo" not in charts["csi-driver-nfs"] and charts["csi-driver-nfs"]["version"] == "4.13.4"
    assert charts["csi-wekafsplugin"]["repo"], "a chart without a keyring still names its repository"
    archive = "csi-driver-nfs-4.13.4.tgz"
    served = (signed_nfs_repo["served"] / archive).read_bytes()
    assert (folder / "charts" / archive).read_bytes() == served
    assert (folder / "charts" / f"{archive}.sha256").read_text() == f"{hashlib.sha256(served).hexdigest()}  {archive}\n"
    assert (folder / "charts" / "csi-driver-nfs" / "Chart.yaml").is_file()
    assert "chart_keyring was verified" in text
    assert play(tmp_path, plan, out) == 0, "a second run changes nothing"


@pytest.mark.slow
def test_a_driver_chart_that_does_not_verify_fails_the_render_naming_its_keyring(tmp_path, check, signed_nfs_repo):
    plan = verified_nfs_plan(check, tmp_path, signed_nfs_repo, signed_nfs_repo["attacker"])
    out = tmp_path / "rendered"
    variables = {"gpufabric_plan": plan, "gpufabric_k8s_render_dir": str(out), "storage_csi_helm_binary": str(HELM)}

    ran = run_role_playbook(tmp_path, "gpufabric.rollout.storage_csi", variables)

    assert ran["rc"] != 0
    assert "storage_csi_drivers.nfs.chart_keyring: the chart csi-driver-nfs 4.13.4" in ran["out"], ran["out"]
    assert not out.exists(), "nothing rendered"
