"""rdma_networks in `dra` mode (gpufabric_k8s_device_allocation) on the session's control plane, run by
ansible-playbook as the collection's least-privilege identity (docs/rbac/gpufabric-rollout.yaml, which
the lab's start applies): the first run creates the DeviceClasses and the node group's
ResourceClaimTemplates (the real API server validates them) with the rails' objects, and a run back
in `device_plugin` mode prunes them by their labels and applies the rails' NADs and pools, which dra
mode does not plan."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

import pytest
from controlplane_support import checked_plan
from role_runner import run_role_playbook

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_publish as _k8s_publish
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra

# The shipped RBAC binds the NCCL ConfigMaps and claim templates in `default` only. Every object this
# test makes carries its own instance label, so the other tests' objects on the session's cluster are
# neither listed nor pruned by its runs; it leaves none of its own behind (the last run of each test
# is in device_plugin mode, which prunes the DRA objects).
NS = "default"
INSTANCE = "dra-apply-test"


@pytest.fixture(scope="module")
def plans(topology) -> Dict[str, Dict[str, Any]]:
    """gpufabric_plan for each mode, as the plan play hands it to the role (every object owned), for
    the session cluster's two nodes (the lab's DGX H200 snapshots)."""
    network = checked_plan(topology, NS)
    network["objects"] = {part: _k8s_publish.own(o, part, INSTANCE) for part, o in network["objects"].items()}
    section = dra.plan(network["node_groups"], topology, NS, network["config"]["label_prefix"] + "/node-group")
    section["objects"] = _k8s_publish.own(section["objects"], "rdma_networks", INSTANCE)
    base = {"instance": INSTANCE, "k8s_mode": "apply", "field_conflicts": "fail"}
    return {
        # as plan/cluster.py hands it over in dra mode: no rail NADs or pools (dra.net moves the NIC)
        "dra": dict(base, network=dra.without_rail_attachments(network), dra=section),
        "device_plugin": dict(base, network=network, dra=None),
    }


def run(cluster, tmp, plan: Dict[str, Any], *extra: str) -> Dict[str, Any]:
    variables = {"gpufabric_plan": plan, "gpufabric_kubeconfig": str(cluster.kubeconfig)}
    return run_role_playbook(tmp, "gpufabric.rollout.rdma_networks", variables, *extra)


def listed(cluster, resource: str, namespace: Optional[str] = None) -> Dict[str, Dict[str, Any]]:
    """{name: object} of `resource` carrying this test's instance label, read as the administrator."""
    args = ["get", resource, "-l", f"{_k8s_publish.INSTANCE_KEY}={INSTANCE}", "-o", "json"]
    args += ["-n", namespace] if namespace else []
    return {o["metadata"]["name"]: o for o in json.loads(cluster.kubectl(*args).stdout)["items"]}


def planned(plan: Dict[str, Any], kind: str) -> List[str]:
    return sorted(o["metadata"]["name"] for o in plan["dra"]["objects"] if o["kind"] == kind)


def test_dra_objects_applied_idempotent_checked_and_pruned(cluster, plans, tmp_path):
    classes, templates = planned(plans["dra"], "DeviceClass"), planned(plans["dra"], "ResourceClaimTemplate")
    assert classes == ["gpufabric-gpu", "gpufabric-rail-nic"] and len(templates) == 4, (classes, templates)

    first = run(cluster, tmp_path / "first", plans["dra"])
    assert first["rc"] == 0, first["out"]
    live_classes = listed(cluster, "deviceclasses.resource.k8s.io")
    live_templates = listed(cluster, "resourceclaimtemplates.resource.k8s.io", NS)
    assert sorted(live_classes) == classes and sorted(live_templates) == templates
    for obj in plans["dra"]["dra"]["objects"]:
        live = (live_classes if obj["kind"] == "DeviceClass" else live_templates)[obj["metadata"]["name"]]
        # as planned: the API server only adds the templates' empty spec.metadata
        want, have = obj["spec"], dict(live["spec"])
        if obj["kind"] == "ResourceClaimTemplate" and have.get("metadata") == {}:
            del have["metadata"]
        assert have == want, obj["metadata"]["name"]
        assert live["metadata"]["labels"][_k8s_publish.COMPONENT_KEY] == "rdma_networks"
    configmaps = listed(cluster, "configmaps", NS)
    assert sorted(configmaps) == ["nccl-env-h200-connectx-7-8r"], sorted(configmaps)
    assert listed(cluster, "network-attachment-definitions.k8s.cni.cncf.io", NS) == {}

    # A second run and a check run in dra mode change nothing: lab/check.sh proves that for the whole
    # site.yml on the lab (step 3b), as the same identity.

    back = run(cluster, tmp_path / "back", plans["device_plugin"])
    assert back["rc"] == 0 and back["changed"] > 0, back["out"]
    assert listed(cluster, "deviceclasses.resource.k8s.io") == {}
    assert listed(cluster, "resourceclaimtemplates.resource.k8s.io", NS) == {}
    # the rails' NADs and pools come (back) with the device plugins
    nads = listed(cluster, "network-attachment-definitions.k8s.cni.cncf.io", NS)
    assert len(nads) == 8 and sorted(listed(cluster, "configmaps", NS)) == sorted(configmaps), sorted(nads)
    again = run(cluster, tmp_path / "again", plans["device_plugin"])
    assert again["rc"] == 0 and again["changed"] == 0, again["out"]


def test_a_node_group_that_left_the_plan_takes_its_templates_and_foreign_classes_stay(cluster, plans, tmp_path):
    """A template the plan no longer has is pruned; a DeviceClass without the collection's labels (a
    driver's own) is neither pruned nor changeable by the identity (gpufabric-rollout-owned policy)."""
    foreign = {"apiVersion": dra.API_VERSION, "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"}}
    foreign["spec"] = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.nvidia.com"'}}]}
    cluster.apply([foreign])
    try:
        _pruned_and_foreign_kept(cluster, plans, tmp_path)
    finally:  # the session's cluster goes on without it
        cluster.kubectl("delete", "deviceclass.resource.k8s.io", "gpu.nvidia.com", "--ignore-not-found")


def _pruned_and_foreign_kept(cluster, plans, tmp_path) -> None:
    plan = plans["dra"]
    assert run(cluster, tmp_path / "all", plan)["rc"] == 0
    fewer = json.loads(json.dumps(plan))
    gone = planned(plan, "ResourceClaimTemplate")[0]
    fewer["dra"]["objects"] = [o for o in fewer["dra"]["objects"] if o["metadata"]["name"] != gone]
    done = run(cluster, tmp_path / "fewer", fewer)
    assert done["rc"] == 0 and done["changed"] > 0, done["out"]
    left = listed(cluster, "resourceclaimtemplates.resource.k8s.io", NS)
    assert gone not in left and len(left) == 3, sorted(left)
    names = json.loads(cluster.kubectl("get", "deviceclasses.resource.k8s.io", "-o", "json").stdout)["items"]
    assert "gpu.nvidia.com" in {o["metadata"]["name"] for o in names}
    refused = cluster.kubectl(
        "label", "deviceclass.resource.k8s.io", "gpu.nvidia.com", "x=y", kubeconfig=cluster.kubeconfig, check=False
    )
    assert refused.returncode != 0 and "carry the collection's labels" in refused.stderr, refused.stderr
    back = run(cluster, tmp_path / "back", plans["device_plugin"])
    assert back["rc"] == 0, back["out"]


def test_render_mode_writes_dra_objects_the_api_server_accepts(cluster, plans, tmp_path):
    """render mode (GitOps): the role writes the DeviceClasses and claim templates with the rails'
    objects and a kustomization; kubectl's kustomize builds that directory and the API server accepts
    every object in it (a server-side dry run as the administrator, as a GitOps controller applies)."""
    render = tmp_path / "render"
    variables = {"gpufabric_plan": dict(plans["dra"], k8s_mode="render"), "gpufabric_k8s_render_dir": str(render)}
    done = run_role_playbook(tmp_path / "run", "gpufabric.rollout.rdma_networks", variables)
    assert done["rc"] == 0, done["out"]
    files = sorted(p.name for p in (render / "rdma_networks").glob("*.yaml"))
    for name in planned(plans["dra"], "DeviceClass"):
        assert f"deviceclass-{name}.yaml" in files, files
    for name in planned(plans["dra"], "ResourceClaimTemplate"):
        assert f"resourceclaimtemplate-{NS}-{name}.yaml" in files, files
    applied = cluster.kubectl(
        "apply",
        "-k",
        str(render / "rdma_networks"),
        "--server-side",
        "--dry-run=server",
        "--field-manager=render-test",
        "-o",
        "name",
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    names = set(applied.stdout.split())
    for obj in plans["dra"]["dra"]["objects"]:
        group = "resource.k8s.io"
        assert f"{obj['kind'].lower()}.{group}/{obj['metadata']['name']}" in names, (obj["metadata"], names)
    # nothing was created: a dry run
    assert listed(cluster, "deviceclasses.resource.k8s.io") == {}
