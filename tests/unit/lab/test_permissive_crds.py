"""lab/crds: the permissive stand-in CRDs the lab installs when the upstream ones are not given.

They must cover every CRD the cluster roles apply or wait for (the plan's CRD names), name each
kind exactly as its upstream CRD does (group, names, scope, version, status subresource: the roles
and the lab's operator stand-in address the objects by these), keep every field (no schema), say
that they are stand-ins, and be the files the roles load (<plural>.<group>.yaml). lab_crds_dir
takes LAB_CRDS_DIR when set and refuses one that holds no CRD; unset, it writes the stand-ins and
says so.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import yaml
from upstream_crds import require

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import network_objects, storage_csi

REPO = Path(__file__).resolve().parents[3]
_SPEC = importlib.util.spec_from_file_location("permissive", REPO / "lab" / "crds" / "permissive.py")
permissive = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(permissive)

# The GPU Operator plan's CRDs (plan.gpu_operator: ClusterPolicy always, NVIDIADriver on the CRD path).
GPU_OPERATOR_CRDS = {"clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"}


def written(tmp_path: Path) -> dict:
    return {p.name[: -len(".yaml")]: yaml.safe_load(p.read_text()) for p in permissive.write(tmp_path / "crds")}


def test_every_crd_the_plans_name_has_a_stand_in(tmp_path):
    names = set(written(tmp_path))
    # CSIScaleOperator's CRD is the storage backend's own (the lab's storage scenario installs it)
    wanted = set(network_objects.CRD_NAMES.values()) | GPU_OPERATOR_CRDS
    assert wanted <= names, sorted(wanted - names)
    assert not set(storage_csi.CRD_NAMES.values()) & names


def test_a_stand_in_keeps_every_field_and_says_what_it_is(tmp_path):
    crds = written(tmp_path)
    for name, crd in crds.items():
        assert crd["apiVersion"] == "apiextensions.k8s.io/v1" and crd["kind"] == "CustomResourceDefinition"
        assert crd["metadata"]["name"] == name == f"{crd['spec']['names']['plural']}.{crd['spec']['group']}"
        assert "permissive" in crd["metadata"]["annotations"][permissive.STAND_IN]
        (version,) = crd["spec"]["versions"]
        assert version["served"] and version["storage"]
        assert version["schema"]["openAPIV3Schema"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert crds["nicclusterpolicies.mellanox.com"]["spec"]["versions"][0]["subresources"] == {"status": {}}
    assert "subresources" not in crds["network-attachment-definitions.k8s.cni.cncf.io"]["spec"]["versions"][0]


def test_a_second_write_leaves_the_files_alone(tmp_path):
    first = permissive.write(tmp_path / "crds")
    stamps = {p: p.stat().st_mtime_ns for p in first}
    permissive.write(tmp_path / "crds")
    assert {p: p.stat().st_mtime_ns for p in first} == stamps


def test_each_stand_in_names_its_kind_as_the_upstream_crd_does(tmp_path):
    upstream_crds = require("comparing the stand-ins with the upstream CRDs")
    for name, crd in written(tmp_path).items():
        upstream = yaml.safe_load((upstream_crds / f"{name}.yaml").read_text())
        for key in ("group", "scope"):
            assert crd["spec"][key] == upstream["spec"][key], (name, key)
        for key in ("kind", "plural", "singular", "listKind"):
            # listKind defaults to <kind>List where a CRD leaves it out (the NAD CRD does)
            theirs_name = upstream["spec"]["names"].get(key, upstream["spec"]["names"]["kind"] + "List")
            assert crd["spec"]["names"][key] == theirs_name, (name, key)
        (ours,) = crd["spec"]["versions"]
        theirs = [v for v in upstream["spec"]["versions"] if v.get("storage")]
        assert [ours["name"]] == [v["name"] for v in theirs], name
        assert ("status" in (ours.get("subresources") or {})) == ("status" in (theirs[0].get("subresources") or {})), (
            name
        )


def crds_dir(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """lab_crds_dir of lab/common.sh in a copy of lab/ (its state is written there)."""
    checkout = tmp_path / "checkout"
    if not checkout.exists():
        (checkout / "lab").mkdir(parents=True)
        for name in ("common.sh", "crds"):
            src = REPO / "lab" / name
            dst = checkout / "lab" / name
            if src.is_dir():
                dst.mkdir()
                for f in src.iterdir():
                    dst.joinpath(f.name).write_bytes(f.read_bytes())
            else:
                dst.write_bytes(src.read_bytes())
    run_env = {k: v for k, v in os.environ.items() if k != "LAB_CRDS_DIR"}
    run_env.update(env, LAB_VENV=str(Path(sys.executable).parents[1]))
    return subprocess.run(
        ["bash", "-c", "source lab/common.sh && lab_crds_dir"],
        cwd=checkout,
        env=run_env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_lab_crds_dir_writes_the_stand_ins_when_no_upstream_crds_are_named(tmp_path):
    done = crds_dir(tmp_path)
    assert done.returncode == 0, done.stderr
    out = Path(done.stdout.strip())
    assert out == tmp_path / "checkout" / ".lab" / "crds-permissive"
    assert (out / "nicclusterpolicies.mellanox.com.yaml").is_file()
    assert "LAB_CRDS_DIR is not set" in done.stderr and "permissive" in done.stderr


def test_lab_crds_dir_takes_lab_crds_dir_and_refuses_an_empty_one(tmp_path):
    given = tmp_path / "upstream"
    given.mkdir()
    empty = crds_dir(tmp_path, LAB_CRDS_DIR=str(given))
    assert empty.returncode != 0
    assert f"LAB_CRDS_DIR={given} holds no CRD files" in empty.stderr
    (given / "ippools.nv-ipam.nvidia.com.yaml").write_text("---\n")
    done = crds_dir(tmp_path, LAB_CRDS_DIR=str(given))
    assert done.returncode == 0 and done.stdout.strip() == str(given)
    assert "permissive" not in done.stderr
