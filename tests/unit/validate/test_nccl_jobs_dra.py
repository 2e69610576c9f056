"""validate's NCCL Jobs with gpufabric_k8s_device_allocation: dra (plugins/module_utils/proof/jobs.py):
each Pod claims its node group's full-node ResourceClaimTemplate (a copy in the Jobs' namespace,
owned by the Job) instead of the GPU and rail resources and the rails' NADs, which dra mode does not
plan; the GID-index step reads the first rail's interface under the name dra.net keeps; the role
applies, checks access for and deletes the copy. The real API server and scheduler with these
Jobs: tests/controlplane/test_validate_jobs_dra.py."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest
import yaml
from kubernetes_support import LAB, NEWEST, validate_core
from test_nccl_jobs import FILTERS, GROUP, HOSTS, OPTIONS, _applied, cluster_plan
from validate_support import REPO

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

DRA = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
NODES = sorted(HOSTS)


@pytest.fixture(scope="module")
def plan():
    return cluster_plan(**DRA)


@pytest.fixture(scope="module")
def job(plan):
    jobs = _validate_jobs.job_set(plan["network"], HOSTS, OPTIONS, plan["dra"])
    assert jobs["skipped"] == [] and [j["group"] for j in jobs["jobs"]] == [GROUP]
    return jobs["jobs"][0]


def _planned_full(plan):
    group = next(g for g in plan["dra"]["groups"] if g["name"] == GROUP)
    full = next(t for t in group["templates"] if t["sets"] == 8)
    return next(o for o in plan["dra"]["objects"] if o["metadata"]["name"] == full["name"])


def test_pods_claim_the_groups_full_node_template_and_ask_for_no_device_plugin_resource(plan, job):
    service, spec, template = job["objects"]
    assert [o["kind"] for o in job["objects"]] == ["Service", "Job", "ResourceClaimTemplate"]
    pod = spec["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert pod["spec"]["resourceClaims"] == [{"name": "sets", "resourceClaimTemplateName": job["name"]}]
    assert container["resources"] == {"claims": [{"name": "sets"}]}, "no nvidia.com/gpu, no rdma/railN"
    assert "annotations" not in pod["metadata"], "no NAD attachment: dra mode plans no rail NADs"
    # the copy: the planned full-node template's spec (8 sets, each GPU with a NIC of its PCIe root)
    planned = _planned_full(plan)
    assert planned["metadata"]["name"] == f"{GROUP}-full" and planned["metadata"]["namespace"] == "default"
    assert template["spec"] == planned["spec"]
    assert template["spec"] is not planned["spec"], "a copy: the plan's object is not shared"
    assert template["metadata"] == {
        "name": job["name"],
        "namespace": "gpufabric-validation",
        "labels": spec["metadata"]["labels"],
    }
    requests = template["spec"]["spec"]["devices"]["requests"]
    assert [r["name"] for r in requests][:4] == ["gpu-0", "nic-0", "gpu-1", "nic-1"] and len(requests) == 16
    # the NCCL environment inline, as with the device plugins: the plan's ConfigMap for the group
    assert {e["name"]: e["value"] for e in container["env"]} == plan["network"]["nccl"][GROUP]
    assert service["metadata"]["name"] == job["name"]


def test_the_objects_pass_the_upstream_schemas(job):
    service, spec, template = job["objects"]
    for obj in (service, spec, _validate_jobs.secret(job, *_validate_jobs.ssh_keypair())):
        validate_core(obj)
    for release in (LAB, NEWEST):  # resource.k8s.io/v1 is Kubernetes 1.34 and later (docs/dra.md)
        kubernetes_validate.validate(template, release, strict=True)
    broken = copy.deepcopy(template)
    broken["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = "eight"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, LAB, strict=True)


def test_the_device_plugin_job_is_unchanged_without_the_dra_section():
    plan = cluster_plan()
    assert plan["dra"] is None
    before = _validate_jobs.job_set(plan["network"], HOSTS, OPTIONS)
    assert _validate_jobs.job_set(plan["network"], HOSTS, OPTIONS, None) == before
    job = before["jobs"][0]
    assert [o["kind"] for o in job["objects"]] == ["Service", "Job"]
    assert "resourceClaims" not in job["objects"][1]["spec"]["template"]["spec"]


def test_old_nccl_finds_the_gid_on_the_first_rail_under_its_host_name(plan):
    """dra.net keeps the interface's host name in the Pod (no interface.name in the templates); Multus's
    net1 does not exist there."""
    old = cluster_plan(gpufabric_nccl_version="2.18.3", **DRA)
    job = _validate_jobs.job_set(old["network"], HOSTS, OPTIONS, old["dra"])["jobs"][0]
    script = job["objects"][1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    first = old["dra"]["groups"][0]["rails"][0]
    assert first == {"rail": 0, "rdma_device": "mlx5_0", "netdev": "enp24s0np0"}
    assert "sh /opt/gpufabric/find-gid-index.sh enp24s0np0 /etc/nccl.conf" in script
    assert " net1 " not in script
    assert job["gid_script"] and "find-gid-index.sh" in _validate_jobs.secret(job, "", "")["data"]


def test_the_role_deletes_and_checks_access_for_the_copy(job):
    assert [(r["kind"], r["name"], r["namespace"]) for r in FILTERS["validate_nccl_cleanup"]([job])] == [
        ("Service", job["name"], "gpufabric-validation"),
        ("Job", job["name"], "gpufabric-validation"),
        ("ResourceClaimTemplate", job["name"], "gpufabric-validation"),
        ("Secret", job["secret"], "gpufabric-validation"),
    ]
    rules = _k8s_access.apply_rules([*job["objects"], _validate_jobs.secret(job, "", "")])
    assert ("resource.k8s.io", ["resourceclaimtemplates"], "gpufabric-validation") in [
        (r["api_group"], r["resources"], r["namespace"]) for r in rules
    ]
    variables = yaml.safe_load((REPO / "roles/validate/vars/main.yml").read_text())
    assert variables["__validate_access"]["claim_cleanup"] == [
        {"api_group": "resource.k8s.io", "resources": ["resourceclaimtemplates"], "verbs": ["delete"]}
    ]


def test_the_copy_is_owned_by_the_applied_job(job):
    applied = _applied(job)
    owned = FILTERS["validate_nccl_owned"](job["objects"][2], applied)
    assert owned["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job["name"],
            "uid": applied["metadata"]["uid"],
            "controller": True,
        }
    ]
    kubernetes_validate.validate(owned, LAB, strict=True)


def test_a_group_without_its_templates_in_the_dra_section_is_refused(plan):
    dra = copy.deepcopy(plan["dra"])
    dra["groups"] = []
    with pytest.raises(_validate_jobs.JobPlanError, match=f"node group '{GROUP}' has no claim template"):
        _validate_jobs.job_for_group(plan["network"], GROUP, NODES, OPTIONS, None, dra)
    dra = copy.deepcopy(plan["dra"])
    dra["objects"] = [o for o in dra["objects"] if not o["metadata"]["name"].endswith("-full")]
    with pytest.raises(_validate_jobs.JobPlanError, match=f"claim template {GROUP}-full is not in the cluster plan"):
        _validate_jobs.job_for_group(plan["network"], GROUP, NODES, OPTIONS, None, dra)


def _nccl_tasks():
    return yaml.safe_load((REPO / "roles/validate/tasks/nccl.yml").read_text())


def test_the_role_plans_the_jobs_in_dra_mode_and_applies_the_copy_before_the_job_resumes():
    tasks = _nccl_tasks()
    planned = next(t for t in tasks if "gpufabric.rollout.validate_plan" in t)
    assert planned["gpufabric.rollout.validate_plan"]["dra"] == "{{ gpufabric_plan.dra | default(none) }}"
    assert not [w for w in planned["when"] if "dra" in w], "dra mode runs the Jobs"
    assert "dra" not in str(next(t for t in tasks if "__validate_nccl_notes" in str(t.get("ansible.builtin.set_fact"))))
    block = next(t for t in tasks if "block" in t)["block"]
    names = [t["name"] for t in block]
    claim = next(
        t for t in block if "ResourceClaimTemplate" in str((t.get("kubernetes.core.k8s") or {}).get("definition"))
    )
    assert "validate_nccl_owned(__validate_nccl_applied_jobs" in claim["kubernetes.core.k8s"]["definition"]
    jobs = next(t for t in block if t["name"] == "Apply the Jobs, suspended")
    resume = next(
        t for t in block if "validate_nccl_resume" in str((t.get("kubernetes.core.k8s") or {}).get("definition"))
    )
    assert names.index(jobs["name"]) < names.index(claim["name"]) < names.index(resume["name"])
