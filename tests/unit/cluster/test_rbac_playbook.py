"""playbooks/rbac.yml run as a user runs it against an inventory (the example one, with its own
namespaces): it writes the RBAC of that plan (mode 0644) without contacting a node or a cluster,
writes nothing in check mode, changes nothing on a second run, and refuses a bad subject or output
naming the variable."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
import yaml
from role_runner import REPO, ansible_playbook

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import rbac as _rbac

IMAGE = yaml.safe_load((REPO / "roles" / "validate" / "defaults" / "main.yml").read_text())["validate_nccl_image"]
STORAGE = {
    "gpufabric_storage": [
        {
            "name": "datasets",
            "backend": "nfs",
            "servers": ["192.0.2.10"],
            "export": "/export/datasets",
            "mount_point": "/mnt/datasets",
            "pods": "static_pv",
            "k8s": {"namespace": "ml-data", "capacity": "10Ti"},
        },
        {
            "name": "home",
            "backend": "nfs",
            "servers": ["192.0.2.11"],
            "export": "/export/home",
            "mount_point": "/mnt/home",
            "pods": "storageclass",
            "k8s": {"secret_namespace": "nfs-secrets"},
        },
    ]
}


@pytest.fixture(scope="module")
def inventory(tmp_path_factory) -> Path:
    """inventory/example with the NADs in ml-rails, the network operator in netop, and two NFS filesystems
    whose claims and Secrets live in ml-data and nfs-secrets. Its GPU nodes (192.0.2.x) are unreachable."""
    inv = tmp_path_factory.mktemp("inv") / "inventory"
    shutil.copytree(REPO / "inventory" / "example", inv)
    (inv / "group_vars" / "all" / "namespaces.yml").write_text(
        yaml.safe_dump({"gpufabric_rails": {"nad_namespace": "ml-rails"}, "network_operator_namespace": "netop"})
    )
    (inv / "group_vars" / "gpu_nodes" / "storage.yml").write_text(yaml.safe_dump(STORAGE))
    return inv


def rbac(tmp: Path, inventory: Path, *extra: str):
    return ansible_playbook(
        tmp, "-i", str(inventory), str(REPO / "playbooks" / "rbac.yml"), *extra, cwd=tmp, env={"PWD": str(tmp)}
    )


def test_writes_the_plans_rbac_once_and_check_mode_writes_nothing(tmp_path, inventory):
    out = tmp_path / "gpufabric-rollout-rbac.yaml"
    checked = rbac(tmp_path, inventory, "--check")
    assert checked.returncode == 0, checked.stdout[-4000:]
    assert "would be written to" in checked.stdout and not out.exists()

    first = rbac(tmp_path, inventory)
    assert first.returncode == 0, first.stdout[-4000:]
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert "unreachable=0" in first.stdout and "gpu-a01" in first.stdout
    written = yaml.safe_load(out.read_text())
    assert written == _rbac.manifest(
        {
            "subject": {"kind": "User", "name": "gpufabric-rollout"},
            "operator_namespaces": {"network_operator": "netop", "gpu_operator": "gpu-operator"},
            "nad_namespaces": ["ml-rails"],
            "validate_namespaces": ["gpufabric-validation"],
            "secret_namespaces": ["csi-driver-nfs", "nfs-secrets"],
            "claim_namespaces": ["default", "ml-data"],
            "job_image": IMAGE,
        }
    )
    assert out.read_text().startswith("# Least-privilege RBAC of gpufabric.rollout for User gpufabric-rollout")

    again = rbac(tmp_path, inventory)
    assert again.returncode == 0 and "unchanged in" in again.stdout, again.stdout[-4000:]
    assert "localhost                  : ok=" in again.stdout and "changed=0" in again.stdout.split("localhost")[-1]


def test_a_service_account_subject_is_bound_and_matched(tmp_path, inventory):
    out = tmp_path / "sa.yaml"
    run = rbac(
        tmp_path,
        inventory,
        "-e",
        f"rbac_output={out}",
        "-e",
        "rbac_subject_kind=ServiceAccount",
        "-e",
        "rbac_subject_name=gpufabric-ci",
        "-e",
        "rbac_subject_namespace=ops",
        "-e",
        "validate_namespace=nccl-ci",
    )
    assert run.returncode == 0, run.stdout[-4000:]
    items = yaml.safe_load(out.read_text())["items"]
    # validate_namespace: the NCCL Jobs' Role is bound there, and the Jobs admitted there only
    validate = [(i["kind"], i["metadata"].get("namespace")) for i in items if "validate" in i["metadata"]["name"]]
    assert validate == [("Role", "nccl-ci"), ("RoleBinding", "nccl-ci")]
    jobs = next(i for i in items if i["metadata"]["name"] == "gpufabric-rollout-jobs")
    assert jobs["spec"]["validations"][0]["expression"] == "request.namespace in ['nccl-ci']"
    sa = {"kind": "ServiceAccount", "name": "gpufabric-ci", "namespace": "ops"}
    assert all(i["subjects"] == [sa] for i in items if i["kind"].endswith("Binding") and "subjects" in i)
    assert all(
        i["spec"]["matchConditions"][0]["expression"]
        == "request.userInfo.username == 'system:serviceaccount:ops:gpufabric-ci'"
        for i in items
        if i["kind"] == "ValidatingAdmissionPolicy"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-e", "rbac_subject_kind=Robot"], "rbac_subject_kind: 'Robot' is not one of User, Group, ServiceAccount"),
        (["-e", "rbac_subject_kind=ServiceAccount"], "rbac_subject_namespace: None is not a namespace"),
        (["-e", "rbac_output=out/"], 'rbac_output: "out/" is not a file to write the RBAC manifest to'),
        (["-e", "validate_namespace=NCCL_CI"], "'NCCL_CI' is not a namespace (a DNS label) (validate_namespace)"),
    ],
)
def test_bad_variables_are_refused_naming_them(tmp_path, inventory, extra, message):
    run = rbac(tmp_path, inventory, *extra)
    assert run.returncode != 0
    assert message in " ".join((run.stdout + run.stderr).split()), run.stdout[-4000:]
    assert not list(tmp_path.glob("*.yaml"))
