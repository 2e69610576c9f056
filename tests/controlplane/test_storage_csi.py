"""The storage_csi role against the lab's control plane, with the drivers installed by the role: the lab's
stand-in charts (lab/charts/csi-driver-nfs, lustre-csi-driver, csi-wekafsplugin) and kept manifests
(lab/charts/storage-manifests), the plan of the lab's storage intent (molecule/storage).

- as the least-privilege identity, installing drivers is refused by the access check before any change,
  naming what the drivers' Helm releases and manifests need;
- as the administrator, every object (the drivers' CSIDrivers and workloads, the StorageClasses, static
  volumes, claims, the NFS mount-options Secret, the CSIScaleOperator validated against its CRD) is
  accepted, and a second run changes nothing;
- render mode writes the same objects the API server holds, and the Helm values the releases got.
- pruning, as the least-privilege identity: a replan without two filesystems deletes exactly their objects,
  but not while a Pod still mounts one of their claims.
"""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from controlplane_support import REPO, assert_check_predicted, wait_until
from role_runner import run_role_playbook

HELM = REPO / ".tools" / "bin" / "helm"
CHARTS = REPO / "lab" / "charts"
SCALE_CRD = REPO / "tests" / "unit" / "storage" / "fixtures" / "crds" / "csiscaleoperators.csi.ibm.com.yaml"


def _storage_support():
    path = REPO / "tests" / "unit" / "storage" / "storage_support.py"
    spec = importlib.util.spec_from_file_location("storage_support_for_controlplane", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def storage_plan() -> Dict[str, Any]:
    """The cluster's storage plan with every driver from the lab's stand-ins, images through a mirror."""
    support = _storage_support()
    specs = support.PLAN.load_specs(str(REPO))
    drivers = {
        "nfs": {"chart_path": str(CHARTS / "csi-driver-nfs")},
        "lustre": {"chart_path": str(CHARTS / "lustre-csi-driver")},
        "weka": {"chart_path": str(CHARTS / "csi-wekafsplugin")},
        "gpfs": {"manifest": str(CHARTS / "storage-manifests" / "ibm-spectrum-scale-csi-operator")},
        "nvmeof": {
            "manifest": str(CHARTS / "storage-manifests" / "csi-driver-nvmf"),
            "image": "reg.lab/nvmfplugin:1.0",
        },
    }
    plan = support.cluster_plan(
        lambda scope, variables: support.PLAN.check(specs, scope, variables),
        {"storage_csi_drivers": drivers, "storage_csi_image_registry": "mirror.lab/csi", "gpufabric_k8s_mode": "apply"},
    )
    return plan


def run_role(
    tmp: Path,
    plan: Dict[str, Any],
    kubeconfig: Path,
    mode: str,
    render_dir: Path,
    *extra: str,
    log: Optional[Path] = None,
) -> Dict[str, Any]:
    """storage_csi with `extra` arguments, task results logged to `log`; returns rc, output and the changed
    count of localhost."""
    plan = dict(plan, k8s_mode=mode)
    variables = {
        "gpufabric_plan": plan,
        "gpufabric_kubeconfig": str(kubeconfig),
        "gpufabric_k8s_render_dir": str(render_dir),
        "storage_csi_helm_binary": str(HELM),
        "storage_csi_wait_timeout": 60,
    }
    return run_role_playbook(tmp, "gpufabric.rollout.storage_csi", variables, *extra, log=log)


def live(cluster, obj: Dict[str, Any]) -> Dict[str, Any]:
    meta = obj["metadata"]
    group = obj["apiVersion"].rpartition("/")[0]
    args = ["get", f"{obj['kind']}.{group}" if group else obj["kind"], meta["name"]]
    if meta.get("namespace"):
        args += ["-n", meta["namespace"]]
    res = cluster.kubectl(*args, "-o", "json", check=False)
    assert res.returncode == 0, f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}: {res.stderr.strip()}"
    return json.loads(res.stdout)


def missing_from(want: Any, have: Any, path: str = "") -> List[str]:
    """Where `want` is not in `have` (mappings: every key of want; lists: item by item)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [f"{path}: {have!r} is not a mapping"]
        return [p for key, value in want.items() for p in missing_from(value, have.get(key), f"{path}.{key}")]
    if isinstance(want, list):
        if not isinstance(have, list) or len(want) != len(have):
            return [f"{path}: {have!r} != {want!r}"]
        return [p for i, (w, h) in enumerate(zip(want, have)) for p in missing_from(w, h, f"{path}[{i}]")]
    return [] if str(want) == str(have) else [f"{path}: {have!r} != {want!r}"]


@pytest.mark.slow
def test_storage_csi_installs_the_drivers_and_applies_what_render_mode_writes(cluster, storage_plan, tmp_path):
    if not HELM.exists():
        pytest.fail(f"no {HELM}: run 'make tools' (or 'make controlplane-test', which does)")
    render = tmp_path / "render"

    # The least-privilege identity may not install drivers: refused before any change, naming what.
    refused = run_role(tmp_path / "least", storage_plan, cluster.kubeconfig, "apply", render)
    assert refused["rc"] != 0
    for needed in (
        "create secrets (in namespace lustre-csi-system)",
        "create deployments.apps (in namespace ibm-spectrum-scale-csi-driver)",
        "create daemonsets.apps (in namespace kube-system)",
        "create csidrivers.storage.k8s.io (cluster-wide)",
    ):
        assert needed in refused["out"], refused["out"]
    assert "storage_csi needs these" in refused["out"]
    assert cluster.kubectl("get", "storageclass", "-o", "name").stdout.strip() == "", "nothing was applied"

    # The administrator: the CSIScaleOperator CRD (what the real operator installer carries), then the role,
    # in check mode first: it must predict exactly the tasks the real run changes.
    cluster.kubectl("apply", "--server-side", "-f", str(SCALE_CRD))
    log = tmp_path / "changes.jsonl"
    check = run_role(tmp_path / "check", storage_plan, cluster.admin, "apply", render, "--check", log=log)
    assert check["rc"] == 0 and check["changed"] > 0, check["out"]
    assert cluster.kubectl("get", "storageclass", "-o", "name").stdout.strip() == "", "check mode applied nothing"
    first = run_role(tmp_path / "apply1", storage_plan, cluster.admin, "apply", render, log=log)
    assert first["rc"] == 0 and first["changed"] > 0, first["out"]
    assert_check_predicted(log)
    again = run_role(tmp_path / "apply2", storage_plan, cluster.admin, "apply", render)
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]

    written = run_role(tmp_path / "render", storage_plan, cluster.admin, "render", render)
    assert written["rc"] == 0, written["out"]
    folder = render / "storage_csi"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    rendered = [yaml.safe_load((folder / name).read_text()) for name in kustomization["resources"]]
    kinds = sorted({o["kind"] for o in rendered})
    assert kinds == [
        "CSIDriver",
        "CSIScaleOperator",
        "DaemonSet",
        "Deployment",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Secret",
        "ServiceAccount",
        "StorageClass",
    ]
    problems = []
    for obj in rendered:
        have = live(cluster, obj)
        want = dict(obj)
        if obj["kind"] == "Secret":  # the API server keeps stringData as data
            want["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in want.pop("stringData").items()}
        problems += [f"{obj['kind']}/{obj['metadata']['name']}{p}" for p in missing_from(want, have)]
    assert problems == []

    # Each chart-installed driver: its CSIDriver, and the values Helm gave it are the rendered values file.
    for backend, driver, chart in (
        ("nfs", "nfs.csi.k8s.io", "csi-driver-nfs"),
        ("lustre", "lustre-csi.hpe.com", "lustre-csi-driver"),
        ("weka", "csi.weka.io", "csi-wekafsplugin"),
    ):
        install = storage_plan["storage"]["drivers"][backend]
        cluster.kubectl("get", "csidriver", driver)
        record = json.loads(
            cluster.kubectl(
                "get", "configmap", f"{install['release_name']}-values", "-n", install["namespace"], "-o", "json"
            ).stdout
        )
        values = json.loads(record["data"]["values.json"])
        rendered_values = yaml.safe_load((folder / f"values-{backend}.yaml").read_text())
        assert missing_from(rendered_values, values) == [], (chart, values)
    assert storage_plan["storage"]["drivers"]["nfs"]["values"]["image"]["baseRepo"] == "mirror.lab/csi"

    # The static volumes are bound to their claims by the controller manager.
    for obj in rendered:
        if obj["kind"] == "PersistentVolumeClaim":
            wait_until(
                lambda o=obj: live(cluster, o)["status"].get("phase") == "Bound", f"claim {obj['metadata']['name']}"
            )


def _names(cluster, kind: str) -> List[str]:
    """The names (namespace/name for namespaced kinds) of what storage_csi made, found by its owner labels."""
    out = cluster.kubectl(
        "get", kind, "-A", "-l", "gpufabric.io/component=storage_csi", "-o", "json", check=True
    ).stdout
    items = json.loads(out)["items"]
    return sorted("/".join(filter(None, [i["metadata"].get("namespace"), i["metadata"]["name"]])) for i in items)


@pytest.mark.slow
def test_storage_csi_prunes_what_left_the_plan_but_never_a_claim_in_use(cluster, tmp_path):
    """As the least-privilege identity, drivers installed by an administrator: a replan without the NFS
    (datasets) and Lustre (scratch) filesystems deletes exactly their StorageClass, mount-options Secret,
    static volume and claim (check mode predicting it exactly, a second run changing nothing) -- but not
    while a Pod still uses the claim: that run stops before any change, naming the claim and the Pod."""
    support = _storage_support()
    specs = support.PLAN.load_specs(str(REPO))

    def check(scope, variables):
        return support.PLAN.check(specs, scope, variables)

    base = {"storage_csi_install_drivers": False, "gpufabric_k8s_mode": "apply"}
    full = support.cluster_plan(check, base)
    kept = [fs for fs in support.lab_variables()["gpufabric_storage"] if fs["name"] not in ("datasets", "scratch")]
    smaller = support.cluster_plan(check, base, node_changes={"gpufabric_storage": kept})
    render = tmp_path / "render"
    cluster.kubectl("apply", "--server-side", "-f", str(SCALE_CRD))

    first = run_role(tmp_path / "full", full, cluster.kubeconfig, "apply", render)
    assert first["rc"] == 0, first["out"]
    kinds = ("storageclasses", "persistentvolumes", "persistentvolumeclaims", "secrets", "csiscaleoperators")
    before = {kind: _names(cluster, kind) for kind in kinds}
    assert "gpufabric-scratch" in before["persistentvolumes"] and "gpufabric-datasets" in before["storageclasses"]

    # A Pod on one of the GPU nodes (kwok plays its kubelet) that mounts the Lustre claim.
    pod = tmp_path / "pod.json"
    pod.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "trainer", "namespace": "default"},
                "spec": {
                    "nodeName": "gpu-node-01",
                    "containers": [{"name": "c", "image": "busybox"}],
                    "volumes": [{"name": "scratch", "persistentVolumeClaim": {"claimName": "gpufabric-scratch"}}],
                },
            }
        )
    )
    cluster.kubectl("apply", "-f", str(pod))
    refused = run_role(tmp_path / "busy", smaller, cluster.kubeconfig, "apply", render)
    assert refused["rc"] != 0
    assert "default/gpufabric-scratch (Pod default/trainer)" in refused["out"], refused["out"]
    assert {kind: _names(cluster, kind) for kind in kinds} == before, "nothing was deleted"
    cluster.kubectl("delete", "pod", "trainer", "-n", "default", "--grace-period=0", "--force")

    # Check mode names exactly what the real run changes, the deletions among them; the objects are gone.
    log = tmp_path / "changes.jsonl"
    predicted = run_role(tmp_path / "check", smaller, cluster.kubeconfig, "apply", render, "--check", log=log)
    assert predicted["rc"] == 0, predicted["out"]
    assert {kind: _names(cluster, kind) for kind in kinds} == before, "check mode deleted nothing"
    pruned = run_role(tmp_path / "prune", smaller, cluster.kubeconfig, "apply", render, log=log)
    assert pruned["rc"] == 0 and pruned["changed"] > 0, pruned["out"]
    assert_check_predicted(log)
    gone = {
        "storageclasses": ["gpufabric-datasets"],
        "persistentvolumes": ["gpufabric-scratch"],
        "persistentvolumeclaims": ["default/gpufabric-scratch"],
        "secrets": ["csi-driver-nfs/gpufabric-datasets-mount-options"],
        "csiscaleoperators": [],
    }
    want = {kind: sorted(set(names) - set(gone[kind])) for kind, names in before.items()}
    wait_until(lambda: {kind: _names(cluster, kind) for kind in kinds} == want, "the pruned objects gone", timeout=90)
    again = run_role(tmp_path / "again", smaller, cluster.kubeconfig, "apply", render)
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]

    # The full plan brings them back, the volume bound to its claim again.
    back = run_role(tmp_path / "back", full, cluster.kubeconfig, "apply", render)
    assert back["rc"] == 0, back["out"]
    assert {kind: _names(cluster, kind) for kind in kinds} == before
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "gpufabric-scratch"}}
    claim["metadata"]["namespace"] = "default"
    wait_until(lambda: live(cluster, claim)["status"].get("phase") == "Bound", "claim gpufabric-scratch bound again")
