"""validate's NCCL Job set on the real control plane: applied as the collection's least-privilege
identity (the shipped RBAC), validated by the API server, scheduled by the real scheduler one Pod
per GPU node with every GPU and rail resource the operator stand-in advertises, completed (kwok
plays the kubelets: no container runs), read back into the report's checks, deleted. The Jobs run in
validate_namespace (gpufabric-validation, made by the shipped RBAC), apart from the NADs' namespace,
where the identity may create no Job."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from controlplane_support import NODES, checked_plan, wait_until
from kubernetes import client
from role_runner import REPO, ansible_playbook

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import job_results as _job_results
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

NS = "gpufabric-validation"  # validate_namespace's default: the shipped RBAC makes it and binds the Role there
NAD_NS = "default"  # the plan's nad_namespace, where the NADs and NCCL ConfigMaps are
OPTIONS = {
    "image": "ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957",
    "binary": "/opt/nccl_tests/build/all_reduce_perf",
    "min_bytes": "1M",
    "max_bytes": "8G",
    "iters": 20,
    "timeout": 600,
    "ssh_port": 2222,
    "keep_jobs": False,
    "namespace": NS,
}


@pytest.fixture(scope="module")
def network(cluster, crds, topology):
    """The rails applied (policies, pools, NADs, NCCL ConfigMaps in the default namespace) and their
    RDMA resources advertised; GPUs other tests hold are given back."""
    plan = checked_plan(topology, NAD_NS)  # the namespace docs/rbac binds the NCCL ConfigMaps' grant in
    cluster.apply(plan["objects"]["network_operator"] + plan["objects"]["rdma_networks"])
    core = client.CoreV1Api(cluster.api())
    wanted = {r["resource"] for r in plan["rails"]}
    wait_until(
        lambda: all(wanted <= set(core.read_node(n).status.allocatable) for n in NODES),
        "the RDMA resources advertised on both nodes",
    )
    for pod in core.list_pod_for_all_namespaces().items:
        limits = (pod.spec.containers[0].resources.limits or {}) if pod.spec.containers else {}
        if "nvidia.com/gpu" in limits:
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
    wait_until(
        lambda: (
            not [
                p
                for p in core.list_pod_for_all_namespaces().items
                if p.spec.containers and "nvidia.com/gpu" in (p.spec.containers[0].resources.limits or {})
            ]
        ),
        "the GPUs of earlier tests' Pods given back",
    )
    return plan


def _get(cluster, *args):
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def test_the_job_set_runs_as_the_collections_identity_one_pod_per_gpu_node(cluster, network):
    jobs = _validate_jobs.job_set(network, {n: n for n in NODES}, OPTIONS)
    assert jobs["skipped"] == [] and len(jobs["jobs"]) == 1
    job = jobs["jobs"][0]
    service, planned_job = job["objects"]
    assert job["namespace"] == NS and planned_job["metadata"]["namespace"] == NS
    # As the role does: the Job suspended first, its Secret and Service owned by it, then resumed.
    cluster.apply([planned_job], kubeconfig=cluster.kubeconfig)
    applied = _get(cluster, "-n", NS, "job", job["name"])
    assert applied["spec"]["suspend"] is True
    assert not _get(cluster, "-n", NS, "pods", "-l", f"batch.kubernetes.io/job-name={job['name']}")["items"]
    secret = _validate_jobs.secret(job, *_validate_jobs.ssh_keypair())
    cluster.apply(
        [_validate_jobs.owned_by(secret, applied), _validate_jobs.owned_by(service, applied)],
        kubeconfig=cluster.kubeconfig,
    )
    cluster.kubectl(
        "-n",
        NS,
        "patch",
        "job",
        job["name"],
        "--type=merge",
        "-p",
        json.dumps({"spec": _validate_jobs.resume(job)["spec"]}),
        kubeconfig=cluster.kubeconfig,
    )

    def finished():
        state = _get(cluster, "-n", NS, "job", job["name"])
        done = [c for c in state.get("status", {}).get("conditions", []) if c["type"] == "Complete"]
        return state if done and done[0]["status"] == "True" else None

    state = wait_until(finished, f"Job {job['name']} Complete", timeout=120)
    pods = _get(cluster, "-n", NS, "pods", "-l", f"batch.kubernetes.io/job-name={job['name']}")["items"]
    checks = _job_results.job_checks(job, state, pods)
    assert [(c["name"], c["measured"], c["passed"]) for c in checks] == [
        ("Job completed", "Complete", True),
        ("one Pod on each node", "gpu-node-01,gpu-node-02", True),
    ]
    launcher = _job_results.launcher_pod(pods)
    assert launcher is not None and launcher["spec"]["hostname"] == f"{job['name']}-0"
    assert launcher["spec"]["subdomain"] == job["name"]
    limits = launcher["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == "8" and {f"rdma/rail{i}" for i in range(8)} <= set(limits)
    # The NADs of their namespace by <namespace>/<name>, and the NCCL environment inline in the Job
    # as the API server stored it (what the NCCL ConfigMap of the NADs' namespace holds, read from
    # nothing there; the Job controller adds JOB_COMPLETION_INDEX to the Pods, not to the Job)
    networks = launcher["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"].split(",")
    assert networks and all(n.startswith(f"{NAD_NS}/") for n in networks)
    container = state["spec"]["template"]["spec"]["containers"][0]
    configmap = next(g["nccl_configmap"] for g in network["node_groups"] if g["name"] == job["group"])
    stored = _get(cluster, "-n", NAD_NS, "configmap", configmap)["data"]
    # (the API server leaves out an empty value, which the ConfigMap keeps as "")
    assert "envFrom" not in container and {e["name"]: e.get("value", "") for e in container["env"]} == stored
    assert not [e for e in container["env"] if "valueFrom" in e]
    # The API server filled in what the Job controller needs, and kept the success policy.
    assert state["spec"]["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert state["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]

    # Deleting the Job alone (what its ttlSecondsAfterFinished does after an interrupted run) takes
    # the Secret with the SSH key and the Service with it: the garbage collector follows the owners.
    cluster.kubectl(
        "-n", NS, "delete", "job", job["name"], "--cascade=background", "--wait=true", kubeconfig=cluster.kubeconfig
    )

    def owned_left():
        left = []
        for kind, name in (("service", job["name"]), ("secret", job["secret"])):
            res = cluster.kubectl("-n", NS, "get", kind, name, "--ignore-not-found", "-o", "name", check=False)
            left += [line for line in res.stdout.split() if line]
        return not left

    wait_until(owned_left, "the Job's Secret and Service garbage-collected with it", timeout=120)
    wait_until(
        lambda: not _get(cluster, "-n", NS, "pods", "-l", f"batch.kubernetes.io/job-name={job['name']}")["items"],
        "the Job's Pods gone with it",
    )


def test_the_identity_may_not_create_the_job_in_the_nad_namespace(cluster, network):
    """As the shipped identity, the planned Job in the NADs' namespace (default, where workloads run)
    is forbidden: neither its Role nor the admission policy allows it there."""
    job = _validate_jobs.job_set(network, {n: n for n in NODES}, OPTIONS)["jobs"][0]
    elsewhere = json.loads(json.dumps(job["objects"][1]))
    elsewhere["metadata"]["namespace"] = NAD_NS
    kubectl = [str(cluster.bin / "kubectl"), "--kubeconfig", str(cluster.kubeconfig)]
    for obj in (elsewhere, job["objects"][1]):
        res = subprocess.run(
            [*kubectl, "create", "--dry-run=server", "-f", "-"],
            input=json.dumps(obj),
            capture_output=True,
            text=True,
            check=False,
        )
        if obj is elsewhere:
            assert res.returncode != 0 and "forbidden" in res.stderr.lower(), res.stderr
            assert f'cannot create resource "jobs" in API group "batch" in the namespace "{NAD_NS}"' in res.stderr
        else:
            assert res.returncode == 0, res.stderr  # the same Job in validate_namespace is admitted
    for resource in ("jobs.batch", "secrets", "services"):
        done = cluster.kubectl(
            "auth", "can-i", "create", resource, "-n", NAD_NS, kubeconfig=cluster.kubeconfig, check=False
        )
        assert done.stdout.strip() == "no", resource


def test_the_api_server_refuses_a_success_policy_beyond_the_completions(cluster, network):
    job = _validate_jobs.job_set(network, {n: n for n in NODES}, OPTIONS)["jobs"][0]
    broken = json.loads(json.dumps(job["objects"][1]))
    broken["spec"]["successPolicy"] = {"rules": [{"succeededIndexes": "7"}]}  # index 7 of a 2-Pod Job
    kubectl = [str(cluster.bin / "kubectl"), "--kubeconfig", str(cluster.kubeconfig)]
    res = subprocess.run(
        [*kubectl, "apply", "--server-side", "--dry-run=server", "-f", "-"],
        input=json.dumps(broken),
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode != 0
    assert "successPolicy" in res.stderr and "succeededIndexes" in res.stderr


NCCL_PLAY = """
- name: validate's NCCL Jobs, as playbooks/validate.yml runs them
  hosts: all
  gather_facts: false
  tasks:
    - name: Run the NCCL Jobs
      ansible.builtin.include_role:
        name: gpufabric.rollout.validate
        tasks_from: nccl.yml
    - name: Keep what the role made of them
      ansible.builtin.copy:
        content: "{{ {'result': __validate_nccl_result, 'notes': __validate_nccl_notes} | to_json }}"
        dest: "{{ result_path }}"
        mode: "0600"
      run_once: true
      delegate_to: localhost
"""


def run_nccl_play(tmp_path, variables):
    """validate's tasks/nccl.yml (NCCL_PLAY) with ``variables``, both lab nodes as local hosts whose node
    plan names their Node; the finished ansible-playbook process."""
    (tmp_path / "vars.json").write_text(json.dumps(variables))
    (tmp_path / "play.yml").write_text(NCCL_PLAY)
    hosts = [f'{n} ansible_connection=local gpufabric_node_plan=\'{{"k8s_node_name": "{n}"}}\'' for n in NODES]
    (tmp_path / "hosts").write_text("\n".join(hosts) + "\n")
    return ansible_playbook(
        tmp_path,
        "-i",
        str(tmp_path / "hosts"),
        "-e",
        f"ansible_python_interpreter={sys.executable}",
        "-e",
        "@" + str(tmp_path / "vars.json"),
        str(tmp_path / "play.yml"),
        env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")},
        cwd=tmp_path,
        timeout=600,
    )


def test_the_role_runs_the_jobs_in_the_validation_namespace_and_leaves_nothing(cluster, network, tmp_path):
    """roles/validate/tasks/nccl.yml as the shipped identity: its access check passes with the
    shipped RBAC, the namespace (made by the RBAC) is found and left as it is, the Jobs complete in
    it, and the cleanup leaves no Job, Service or Secret there or in the NADs' namespace."""
    before = _get(cluster, "namespace", NS)
    variables = {
        "gpufabric_kubeconfig": str(cluster.kubeconfig),
        "gpufabric_plan": {"network": network, "k8s_mode": "apply"},
        "validate_nccl_timeout": 120,
        "result_path": str(tmp_path / "result.json"),
    }
    done = run_nccl_play(tmp_path, variables)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    result = json.loads((tmp_path / "result.json").read_text())
    checks = {(c["name"], c["passed"]) for c in result["result"]["checks"]}
    assert {("Job completed", True), ("one Pod on each node", True)} <= checks, result
    # kwok runs no container: the launcher's log cannot be read, which the report names
    assert [c["detail"] for c in result["result"]["checks"] if c["name"] == "launcher log read"], result
    assert "Find whether the Jobs' namespace exists" in done.stdout
    after = _get(cluster, "namespace", NS)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert after["metadata"].get("labels") == before["metadata"].get("labels")  # never labelled
    for namespace in (NS, NAD_NS):
        for kind in ("jobs", "services", "secrets"):
            left = _get(cluster, "-n", namespace, kind, "-l", "app.kubernetes.io/part-of=gpufabric-rollout")["items"]
            assert [i["metadata"]["name"] for i in left if "gpufabric-nccl" in i["metadata"]["name"]] == [], (
                namespace,
                kind,
            )
