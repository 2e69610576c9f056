"""The storage_csi role against the lab's control plane, with the drivers installed by the role: the lab's
stand-in charts (lab/charts/csi-driver-nfs, lustre-csi-driver, csi-wekafsplugin) and kept manifests
(lab/charts/storage-manifests), the plan of the lab's storage intent (molecule/storage).

- as the least-privilege identity, installing drivers is refused by the access check before any change,
  naming what the drivers' Helm releases and manifests need;
- as the administrator, every object (the drivers' CSIDrivers and workloads, the StorageClasses, static
  volumes, claims, the NFS mount-options Secret, the CSIScaleOperator validated against its CRD) is
  accepted, and a second run changes nothing;
- render mode writes the same objects the API server holds, and the Helm values the releases got.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml
from controlplane_support import REPO, wait_until

HELM = REPO / ".tools" / "bin" / "helm"
CHARTS = REPO / "lab" / "charts"
SCALE_CRD = REPO / "tests" / "unit" / "storage" / "fixtures" / "crds" / "csiscaleoperators.csi.ibm.com.yaml"
PLAYBOOK = """
- name: Run storage_csi
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: [vars.json]
  roles:
    - role: gpufabric.rollout.storage_csi
"""


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
    """ansible-playbook with storage_csi (`extra` arguments, task results logged to `log`); returns rc, output and
    the changed count of localhost."""
    tmp.mkdir(parents=True, exist_ok=True)
    plan = dict(plan, k8s_mode=mode)
    variables = {
        "gpufabric_plan": plan,
        "gpufabric_kubeconfig": str(kubeconfig),
        "gpufabric_k8s_render_dir": str(render_dir),
        "storage_csi_helm_binary": str(HELM),
        "storage_csi_wait_timeout": 60,
    }
    (tmp / "vars.json").write_text(json.dumps(variables, default=str))
    (tmp / "play.yml").write_text(PLAYBOOK)
    (tmp / "ansible-tmp").mkdir(exist_ok=True)
    env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(REPO / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        TMPDIR=str(tmp / "ansible-tmp"),  # kubernetes.core caches API discovery there: one per run
        HELM_CACHE_HOME=str(tmp / "helm" / "cache"),
        HELM_CONFIG_HOME=str(tmp / "helm" / "config"),
        HELM_DATA_HOME=str(tmp / "helm" / "data"),
    )
    if log:
        env.update(
            ANSIBLE_CALLBACK_PLUGINS=str(REPO / "tests" / "callbacks"),
            ANSIBLE_CALLBACKS_ENABLED="gpufabric_changes",
            GPUFABRIC_CHANGES_LOG=str(log),
        )
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "ansible-playbook"),
            "-i",
            "localhost,",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            str(tmp / "play.yml"),
            *extra,
        ],
        cwd=str(tmp),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    recap = [line for line in done.stdout.splitlines() if line.startswith("localhost")]
    changed = int(recap[-1].split("changed=")[1].split()[0]) if recap else -1
    return {"rc": done.returncode, "out": done.stdout[-6000:] + done.stderr[-2000:], "changed": changed}


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
    compared = subprocess.run(
        [sys.executable, str(REPO / "tests" / "integration" / "compare_changes.py"), str(log)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
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
