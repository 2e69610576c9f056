"""The Network Operator objects the planner writes, per supported release, against that release's CRDs
(fixtures/crds, byte for byte from Mellanox/network-operator), and the refusals where a release
cannot take what the plan would write."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import jsonschema
import pytest
import yaml
from intent_support import cluster_plan
from validate import pruned_fields

from ansible_collections.gpufabric.rollout.plugins.module_utils.intent.cluster import ClusterPlanError
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import DEFAULT_COMPONENTS
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import network_operator as _release

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CRDS = HERE / "fixtures" / "crds"
CASES = yaml.safe_load((HERE / "cases" / "plans.yml").read_text())
RELEASES = sorted((p.name.split("-")[-1] for p in CRDS.glob("network-operator-*")), key=_release.release)
PLANNED_KINDS = ("NicClusterPolicy", "NicNodePolicy", "IPPool", "CIDRPool")


def schemas(version):
    out = {}
    for path in sorted((CRDS / f"network-operator-{version}").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for served in crd["spec"]["versions"]:
            key = ("{}/{}".format(crd["spec"]["group"], served["name"]), crd["spec"]["names"]["kind"])
            out[key] = served["schema"]["openAPIV3Schema"]
    return out


def check(obj, version):
    """Validate one object against the release's CRD; also no field the API server would prune."""
    schema = schemas(version).get((obj["apiVersion"], obj["kind"]))
    assert schema is not None, f"Network Operator {version} has no CRD for {obj['apiVersion']} {obj['kind']}"
    jsonschema.Draft7Validator(schema).validate(obj)
    assert pruned_fields(obj, schema) == [], obj["metadata"]["name"]


def planned(plan):
    objs = plan["objects"]["network_operator"] + plan["objects"]["rdma_networks"]
    return [o for o in objs if o["kind"] in PLANNED_KINDS]


def _plan(case, dgx, mixed, version, components=None):
    return cluster_plan(
        case["intent"],
        dgx if case["cluster"] == "dgx" else mixed,
        case.get("cidrs"),
        case.get("fabric"),
        case.get("nccl_version", "2.27.3"),
        components,
        version,
    )


def test_fixtures_are_the_range_ends_byte_for_byte():
    # one folder for the oldest and one for the newest supported release
    assert [_release.release(v)[:2] for v in RELEASES] == [_release.OLDEST, _release.NEWEST]
    readme = (CRDS / "README.md").read_text()
    files = sorted(CRDS.glob("network-operator-*/*.yaml"))
    assert len(files) == 7
    for path in files:
        data = path.read_bytes()
        blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # git hash-object
        row = f"`{path.parent.name}/{path.name}`"
        assert re.search(re.escape(row) + r" \|[^\n]*\| " + blob + r" \|", readme), f"{row}: blob {blob} not listed"


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_objects_validate_against_the_release_crds(case, dgx, mixed, version):
    needs_node_policy = "NicNodePolicy" in case["expect"]["policies"]
    if needs_node_policy and not _release.features(version)["nic_node_policy"]:
        with pytest.raises(ClusterPlanError) as refused:
            _plan(case, dgx, mixed, version)
        text = str(refused.value)
        assert f"network_operator_chart_version: {version} has no NicNodePolicy" in text
        assert "pin 26.4.0 or later" in text
        return
    objs = planned(_plan(case, dgx, mixed, version))
    assert [o["kind"] for o in objs if o["kind"].startswith("Nic")] == case["expect"]["policies"]
    for obj in objs:
        check(obj, version)


def test_default_release_is_the_newest_and_its_tags(dgx):
    case = CASES[0]
    newest = RELEASES[-1]
    assert _plan(case, dgx, None, None) == _plan(case, dgx, None, newest)
    ncp = _plan(case, dgx, None, None)["objects"]["network_operator"][0]
    assert ncp["spec"]["secondaryNetwork"]["multus"] == {
        "image": "multus-cni",
        "repository": "nvcr.io/nvidia/mellanox",
        "version": f"network-operator-v{newest}",
    }


def test_role_defaults_name_the_newest_release():
    defaults = yaml.safe_load((REPO / "roles/network_operator/defaults/main.yml").read_text())
    specs = yaml.safe_load((REPO / "roles/network_operator/meta/argument_specs.yml").read_text())
    options = specs["argument_specs"]["main"]["options"]
    chart = yaml.safe_load((REPO / "lab/charts/network-operator/Chart.yaml").read_text())
    newest = RELEASES[-1]
    assert defaults["network_operator_chart_version"] == options["network_operator_chart_version"]["default"] == newest
    assert chart["version"] == newest and chart["appVersion"] == f"v{newest}"
    assert defaults["network_operator_images"] == options["network_operator_images"]["default"] == DEFAULT_COMPONENTS


@pytest.mark.parametrize("version", RELEASES)
def test_an_image_without_version(dgx, version):
    """Before 26.4.0 the ImageSpec requires repository and version: refused there, valid after."""
    case = CASES[0]
    components = {"multus": {"image": "multus-cni", "version": ""}}
    if _release.features(version)["image_spec_needs_all"]:
        with pytest.raises(ClusterPlanError, match=rf"network_operator_images\.multus: version is empty.*{version}"):
            _plan(case, dgx, None, version, components)
        return
    ncp = _plan(case, dgx, None, version, components)["objects"]["network_operator"][0]
    assert "version" not in ncp["spec"]["secondaryNetwork"]["multus"]
    check(ncp, version)
    # the same object is what the oldest release's CRD rejects: the schemas do tell the releases apart
    with pytest.raises(jsonschema.ValidationError, match="'version' is a required property"):
        check(ncp, RELEASES[0])


def test_a_node_policy_is_unknown_to_the_oldest_release(mixed):
    case = next(c for c in CASES if "NicNodePolicy" in c["expect"]["policies"])
    node_policy = next(o for o in planned(_plan(case, None, mixed, RELEASES[-1])) if o["kind"] == "NicNodePolicy")
    with pytest.raises(AssertionError, match=re.escape("has no CRD for mellanox.com/v1alpha1 NicNodePolicy")):
        check(node_policy, RELEASES[0])


@pytest.mark.parametrize(
    "version, refused",
    [
        ("25.10.0", False),
        ("v25.10.1", False),
        ("26.1.2", False),
        ("26.4.0-rc.1", False),
        ("26.4.1", False),
        ("25.7.0", True),
        ("26.7.0", True),
        ("26.10.0", True),
    ],
)
def test_supported_range(version, refused):
    problem = _release.range_problem("network_operator_chart_version", version)
    assert (problem is not None) == refused
    if refused:
        assert problem.startswith(f"network_operator_chart_version: {version} is outside")
        assert "(25.10.0 to 26.4.x)" in problem
