"""NCCL across nodes in Pods (plugins/module_utils/proof/jobs.py): the Job set planned from the
lab's cluster plan, its objects against the upstream Kubernetes schemas (kubernetes-validate,
strict), the Pods' script run with stand-ins for sshd, ssh and mpirun, what the cluster reports
back turned into checks, and the figures (the launcher's log, or the lab simulator on each node)
gated with the source of each figure named."""

from __future__ import annotations

import base64
import copy
import os
import stat
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from kubernetes_support import validate_core
from validate_support import REPO, load_file

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_specs
from ansible_collections.gpufabric.rollout.plugins.filter.validate import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_access as _k8s_access
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import nccltests as _nccltests
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import job_results as _job_results
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import jobs as _validate_jobs

GROUP = "h200-connectx-7-8r"
HOSTS = {"gpu-node-01": "gpu-node-01", "gpu-node-02": "gpu-node-02"}
OPTIONS = {
    "image": "ghcr.io/coreweave/nccl-tests:12.9.1-devel-ubuntu22.04-nccl2.28.3-1-8b67957",
    "binary": "/opt/nccl_tests/build/all_reduce_perf",
    "min_bytes": "1M",
    "max_bytes": "8G",
    "iters": 20,
    "timeout": 900,
    "ssh_port": 2222,
    "keep_jobs": False,
    "namespace": "gpufabric-validation",
}
FILTERS = FilterModule().filters()


PLAN_FIXTURES = load_file("nccl_jobs_plan_fixtures", REPO / "tests/unit/plan/conftest.py")


def cluster_plan(**variables):
    """The lab's cluster plan for its two nodes, as the plan play computes it."""
    specs = load_specs(str(REPO))
    intent = dict(PLAN_FIXTURES.lab_intent(), **variables)
    records = {}
    for index, name in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        values, problems = PLAN_FIXTURES.check(specs, "node", dict(intent, gpufabric_k8s_node_name=name))
        assert problems == []
        facts = PLAN_FIXTURES.node_facts(index)
        records[name] = _node_records.node_record(_plan_node.plan_node(values, facts), facts["topology"])
    values, problems = PLAN_FIXTURES.check(specs, "cluster", intent)
    assert problems == []
    return _plan_cluster.plan(values, records)


@pytest.fixture(scope="module")
def plan():
    return cluster_plan()


@pytest.fixture(scope="module")
def job(plan):
    jobs = _validate_jobs.job_set(plan["network"], HOSTS, OPTIONS)
    assert jobs["skipped"] == []
    assert [j["group"] for j in jobs["jobs"]] == [GROUP]
    return jobs["jobs"][0]


def test_one_indexed_job_per_node_group_one_pod_per_node(plan, job):
    service, spec = job["objects"][0], job["objects"][1]
    assert (service["kind"], spec["kind"]) == ("Service", "Job")
    assert job["name"] == f"gpufabric-nccl-{GROUP}" and job["namespace"] == "gpufabric-validation"
    assert service["metadata"]["namespace"] == spec["metadata"]["namespace"] == "gpufabric-validation"
    assert _validate_jobs.secret(job, "", "")["metadata"]["namespace"] == "gpufabric-validation"
    body = spec["spec"]
    assert (body["completions"], body["parallelism"], body["completionMode"]) == (2, 2, "Indexed")
    assert body["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert body["backoffLimit"] == 0 and body["activeDeadlineSeconds"] == 900
    pod = body["template"]["spec"]
    assert pod["subdomain"] == service["metadata"]["name"] == job["name"]
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["gpu-node-01", "gpu-node-02"]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti == {
        "labelSelector": {"matchLabels": {"batch.kubernetes.io/job-name": job["name"]}},
        "topologyKey": "kubernetes.io/hostname",
    }


def test_pods_ask_for_every_gpu_and_rail_and_take_the_plans_nccl_environment(plan, job):
    network = plan["network"]
    pod = job["objects"][1]["spec"]["template"]
    container = pod["spec"]["containers"][0]
    rails = network["rails"]
    want = {"nvidia.com/gpu": "8", **{r["resource"]: "1" for r in rails}}
    assert container["resources"] == {"limits": want, "requests": want}
    assert len(rails) == 8 and set(want) >= {f"rdma/rail{i}" for i in range(8)}
    assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        f"default/rail{i}" for i in range(8)
    )
    # the NCCL environment inline, the ConfigMap's keys and values: nothing read from the NADs' namespace
    configmap = next(g["nccl_configmap"] for g in network["node_groups"] if g["name"] == GROUP)
    assert "envFrom" not in container
    planned = {o["metadata"]["name"]: o for o in network["objects"]["rdma_networks"] if o["kind"] == "ConfigMap"}
    assert {e["name"]: e["value"] for e in container["env"]} == planned[configmap]["data"] == network["nccl"][GROUP]
    assert [e["name"] for e in container["env"]] == sorted(network["nccl"][GROUP])
    assert all(set(e) == {"name", "value"} for e in container["env"]), "values only, no valueFrom"
    assert planned[configmap]["data"]["NCCL_IB_TC"] == "106" and job["env"] == network["nccl"][GROUP]
    assert container["image"] == OPTIONS["image"]
    assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    items = [{"key": "id_ed25519", "path": "id_ed25519"}, {"key": "authorized_keys", "path": "authorized_keys"}]
    ssh = {"name": "ssh", "secret": {"secretName": job["secret"], "defaultMode": 0o400, "items": items}}
    assert ssh in pod["spec"]["volumes"]
    assert not [v for v in pod["spec"]["volumes"] if "configMap" in v], "no ConfigMap of another namespace"
    assert job["gid_script"] is None and "find-gid-index.sh" not in _validate_jobs.secret(job, "", "")["data"]


def test_the_jobs_run_in_the_validation_namespace_and_attach_the_nads_of_theirs(plan):
    network = copy.deepcopy(plan["network"])
    network["config"]["nad_namespace"] = "ml-rails"
    job = _validate_jobs.job_for_group(
        network, GROUP, ["gpu-node-01", "gpu-node-02"], dict(OPTIONS, namespace="nccl-checks")
    )
    assert job["namespace"] == "nccl-checks"
    assert {o["metadata"]["namespace"] for o in job["objects"]} == {"nccl-checks"}
    assert _validate_jobs.secret(job, "", "")["metadata"]["namespace"] == "nccl-checks"
    assert [(r["kind"], r["namespace"]) for r in FILTERS["validate_nccl_cleanup"]([job])] == [
        ("Service", "nccl-checks"),
        ("Job", "nccl-checks"),
        ("Secret", "nccl-checks"),
    ]
    networks = job["objects"][1]["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
    assert networks == ",".join(f"ml-rails/rail{i}" for i in range(8))
    for bad in (None, "", "Default", "a_b", "x" * 64):
        with pytest.raises(_validate_jobs.JobPlanError, match=r"validate_namespace: .* is not a namespace"):
            _validate_jobs.job_for_group(network, GROUP, ["gpu-node-01", "gpu-node-02"], dict(OPTIONS, namespace=bad))


def test_per_group_nads_are_the_groups_own(plan):
    network = copy.deepcopy(plan["network"])
    network["rails"][0]["nad_by_group"] = {GROUP: "rail0-" + GROUP}
    job = _validate_jobs.job_for_group(network, GROUP, ["gpu-node-01", "gpu-node-02"], OPTIONS)
    networks = job["objects"][1]["spec"]["template"]["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"]
    assert networks.split(",")[:2] == [f"default/rail0-{GROUP}", "default/rail1"]


def test_objects_pass_the_upstream_schemas(job):
    secret = _validate_jobs.secret(job, *_validate_jobs.ssh_keypair())
    for obj in [*job["objects"], secret]:
        validate_core(obj)
    broken = copy.deepcopy(job["objects"][1])
    broken["spec"]["completionMode"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_core(broken)


def test_the_ssh_key_pair_and_secret(job):
    private, public = _validate_jobs.ssh_keypair()
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----") and public.startswith("ssh-ed25519 ")
    assert _validate_jobs.ssh_keypair()[0] != private, "every run gets its own key"
    secret = _validate_jobs.secret(job, private, public)
    assert secret["metadata"]["name"] == job["secret"]
    assert base64.b64decode(secret["data"]["authorized_keys"]).decode() == public
    assert base64.b64decode(secret["data"]["id_ed25519"]).decode() == private


def test_access_rules_name_what_the_role_does(job):
    rules = _k8s_access.apply_rules([*job["objects"], _validate_jobs.secret(job, "", "")])
    assert [(r["api_group"], r["resources"], r["namespace"]) for r in rules] == [
        ("", ["services"], "gpufabric-validation"),
        ("batch", ["jobs"], "gpufabric-validation"),
        ("", ["secrets"], "gpufabric-validation"),
    ]


def test_a_group_with_one_node_in_the_run_is_skipped_with_the_reason(plan):
    jobs = _validate_jobs.job_set(plan["network"], {"gpu-node-02": "gpu-node-02"}, OPTIONS)
    assert jobs["jobs"] == []
    assert jobs["skipped"] == [f"node group {GROUP}: 1 of its nodes in this run; NCCL across nodes needs two or more"]


def test_old_nccl_mounts_the_gid_script_from_the_jobs_own_secret_and_runs_it():
    plan = cluster_plan(gpufabric_nccl_version="2.18.3")
    job = _validate_jobs.job_set(plan["network"], HOSTS, OPTIONS)["jobs"][0]
    pod = job["objects"][1]["spec"]["template"]["spec"]
    script = next(
        o["data"]["find-gid-index.sh"]
        for o in plan["network"]["objects"]["rdma_networks"]
        if o["metadata"]["name"] == "nccl-gid-index"
    )
    # a copy in the Job's Secret (owned by the Job, deleted with it), not the NADs' namespace's ConfigMap
    items = [{"key": "find-gid-index.sh", "path": "find-gid-index.sh"}]
    gid = {"name": "gid", "secret": {"secretName": job["secret"], "defaultMode": 0o400, "items": items}}
    assert gid in pod["volumes"] and not [v for v in pod["volumes"] if "configMap" in v]
    assert {"name": "gid", "mountPath": "/opt/gpufabric", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["GPUFABRIC_NCCL_GID_SCRIPT"] == "/opt/gpufabric/find-gid-index.sh"
    secret = _validate_jobs.secret(job, "k", "p")
    assert base64.b64decode(secret["data"]["find-gid-index.sh"]).decode() == script
    assert secret["metadata"]["namespace"] == job["namespace"] == "gpufabric-validation"
    validate_core(secret)
    validate_core(job["objects"][1])
    assert "sh /opt/gpufabric/find-gid-index.sh net1 /etc/nccl.conf" in pod["containers"][0]["command"][2]
    network = copy.deepcopy(plan["network"])
    for obj in network["objects"]["rdma_networks"]:
        if obj["metadata"]["name"] == "nccl-gid-index":
            obj["data"] = {}
    with pytest.raises(_validate_jobs.JobPlanError, match="needs the GID-index script"):
        _validate_jobs.job_for_group(network, GROUP, ["gpu-node-01", "gpu-node-02"], OPTIONS)


# ------------------------------------------------------------------------------------ the Pods' script
def _stub(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def run_script(job, tmp_path, index):
    """The container's script with its absolute paths moved into tmp_path and stand-ins for the
    tools it calls; returns what mpirun (or sleep) was called with."""
    script = job["objects"][1]["spec"]["template"]["spec"]["containers"][0]["command"][2]
    home, keys, bindir = tmp_path / "root", tmp_path / "keys", tmp_path / "bin"
    for d in (keys, bindir):
        d.mkdir()
    (keys / "id_ed25519").write_text("private\n")
    (keys / "authorized_keys").write_text("public\n")
    script = script.replace("/root/", f"{home}/").replace(_validate_jobs.SSH_DIR, str(keys))
    script = script.replace("/run/sshd", str(tmp_path / "run-sshd")).replace("/usr/sbin/sshd", str(bindir / "sshd"))
    calls = tmp_path / "calls"
    for tool in ("sshd", "ssh-keygen", "getent", "ssh", "mpirun", "sleep"):
        _stub(bindir, tool, f'echo "{tool} $*" >> {calls}\n')
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", JOB_COMPLETION_INDEX=str(index))
    res = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, check=False, timeout=30)
    assert res.returncode == 0, res.stderr
    assert (home / ".ssh/id_ed25519").read_text() == "private\n"
    assert oct((home / ".ssh/id_ed25519").stat().st_mode & 0o777) == "0o600"
    assert "Port 2222" in (home / ".ssh/config").read_text()
    return calls.read_text().splitlines()


def test_the_launcher_waits_for_every_pod_then_runs_mpirun_over_them(job, tmp_path):
    calls = run_script(job, tmp_path, 0)
    name = job["name"]
    assert calls[:2] == ["ssh-keygen -A", "sshd -p 2222"]
    assert [c for c in calls if c.startswith("ssh ")] == [
        f"ssh -o ConnectTimeout=5 {name}-0.{name} true",
        f"ssh -o ConnectTimeout=5 {name}-1.{name} true",
    ]
    mpirun = calls[-1].split()
    assert mpirun[:6] == ["mpirun", "--allow-run-as-root", "--bind-to", "none", "-np", "16"]
    assert mpirun[mpirun.index("-H") + 1] == f"{name}-0.{name}:8,{name}-1.{name}:8"
    exported = {mpirun[i + 1] for i, a in enumerate(mpirun) if a == "-x"}
    assert exported == set(job["env"]) | {"LD_LIBRARY_PATH", "PATH"}
    tail = mpirun[mpirun.index(OPTIONS["binary"]) :]
    assert tail == [OPTIONS["binary"], *job["args"]]
    assert job["args"] == ["-b", "1M", "-e", "8G", "-f", "2", "-g", "1", "-n", "20", "-c", "1"]


def test_the_other_pods_only_serve_ssh(job, tmp_path):
    calls = run_script(job, tmp_path, 1)
    assert calls == ["ssh-keygen -A", "sshd -p 2222", "sleep infinity"]


# ------------------------------------------------------------------------------------ what comes back
def pod(name, node, index):
    return {
        "metadata": {"name": name, "labels": {"batch.kubernetes.io/job-completion-index": str(index)}},
        "spec": {"nodeName": node},
        "status": {"phase": "Succeeded"},
    }


COMPLETE = {
    "status": {"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}
}


def test_job_checks_pass_for_a_complete_job_on_its_nodes(job):
    pods = [pod("a", "gpu-node-02", 1), pod("b", "gpu-node-01", 0)]
    checks = _job_results.job_checks(job, COMPLETE, pods)
    assert [(c["name"], c["passed"]) for c in checks] == [("Job completed", True), ("one Pod on each node", True)]
    assert all(c["category"] == "nccl" and c["node"] == "gpu-node-01,gpu-node-02" for c in checks)


def test_job_checks_name_a_failed_job_and_an_unscheduled_pod(job):
    failed = {"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}}
    pending = {
        "metadata": {"name": "c", "labels": {}},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "message": "0/2 nodes are available: 2 Insufficient rdma/rail3.",
                }
            ]
        },
    }
    checks = _job_results.job_checks(job, failed, [pod("b", "gpu-node-01", 0), pending])
    assert [(c["measured"], c["passed"]) for c in checks] == [
        ("Failed: DeadlineExceeded", False),
        ("gpu-node-01,unscheduled", False),
    ]
    assert "c: 0/2 nodes are available: 2 Insufficient rdma/rail3." in checks[1]["detail"]
    running = _job_results.job_checks(job, {"status": {}}, [])
    assert running[0]["measured"] == "not finished within validate_nccl_timeout"
    assert running[1]["measured"] == "no Pod"


def _a_real_log():
    for path in sorted((REPO / "tests/unit/validate/fixtures/nccltests").iterdir()):
        if path.suffix in (".txt", ".log"):
            text = path.read_text()
            try:
                _nccltests.parse(text)
            except _nccltests.NcclTestsError:
                continue
            return text
    pytest.fail("no parseable nccl-tests fixture")


def test_pod_logs_become_runs_naming_the_launcher_pod(job):
    log = _a_real_log()
    pods = {job["name"]: [pod("l", "gpu-node-01", 0), pod("w", "gpu-node-02", 1)]}
    out = _job_results.collect([job], {job["name"]: COMPLETE}, pods, {job["name"]: {"log": log}}, {}, "pod_logs")
    assert [(r["name"], r["nodes"], r["output"]) for r in out["runs"]] == [
        (job["name"], ["gpu-node-01", "gpu-node-02"], log)
    ]
    assert (
        out["runs"][0]["source"]
        == f"log of launcher Pod gpufabric-validation/l on gpu-node-01, Job gpufabric-validation/{job['name']}"
    )
    assert all(c["passed"] for c in out["checks"])
    unread = _job_results.collect(
        [job], {job["name"]: COMPLETE}, pods, {job["name"]: {"failed": True, "msg": "Forbidden"}}, {}, "pod_logs"
    )
    assert unread["runs"] == []
    assert [(c["name"], c["passed"], c["detail"]) for c in unread["checks"]][-1] == (
        "launcher log read",
        False,
        f"Job gpufabric-validation/{job['name']}: Forbidden",
    )


# ------------------------------------------------------------------------------------ the lab path
SIM = REPO / "lab/simulators/all_reduce_perf"


def simulate(job, sysroot):
    env = dict(os.environ, GPUFABRIC_LAB_SYSROOT=str(sysroot), **_validate_jobs.lab_environment(job))
    res = subprocess.run([sys.executable, str(SIM), *job["args"]], env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_lab_path_gates_the_simulator_on_every_node_and_names_the_source(job, lab_nodes, tmp_path):
    """The healthy pair passes; a NIC trained down to x8 on node 2 fails the run seen from node 2,
    named by node and Job, while the Job itself completed on both nodes."""
    import shutil

    from validate_support import degrade, facts

    nodes = {}
    for name, root in lab_nodes.items():
        nodes[name] = tmp_path / name
        shutil.copytree(root, nodes[name], symlinks=True)
    degrade(nodes["gpu-node-02"], "mlx5_3")
    lab = [{"item": [job, host], "rc": 0, "stdout": simulate(job, nodes[host]), "stderr": ""} for host in job["hosts"]]
    states = [{"item": job, "resources": [COMPLETE]}]
    pods = [{"item": job, "resources": [pod("l", "gpu-node-01", 0), pod("w", "gpu-node-02", 1)]}]
    out = FILTERS["validate_nccl_collect"]([job], states, pods, [], lab, "lab_simulator")
    assert [r["name"] for r in out["runs"]] == [f"{job['name']} from gpu-node-01", f"{job['name']} from gpu-node-02"]
    source = out["runs"][1]["source"]
    assert source.startswith("lab: the all_reduce_perf simulator on gpu-node-02 with the Job's arguments")
    assert "no container runs in the lab" in source and "16 ranks" in source
    report = load_file("nccl_jobs_report", REPO / "plugins/modules/validate_report.py")
    params = {"topology": {n: facts(r) for n, r in nodes.items()}, "rdma": [], "gds": [], "probe": []}
    params.update(nccl=out["runs"], checks=out["checks"], host_links=False, gates={})
    checks, series, _g = report.evaluate(params)
    busbw = {c["subject"]: c for c in checks if c["name"] == "all-reduce bus bandwidth"}
    assert busbw[f"{job['name']} from gpu-node-01"]["passed"]
    degraded = busbw[f"{job['name']} from gpu-node-02"]
    assert not degraded["passed"] and degraded["threshold"] == pytest.approx(288.0)
    assert degraded["detail"].endswith(source)
    assert {c["name"]: c["passed"] for c in checks if c["subject"] == job["name"]} == {
        "Job completed": True,
        "one Pod on each node": True,
    }
    assert len(series["nccl"]) == 2


# --- issue 37, finding 11: nothing the validation creates outlives it ------------------------------


def _applied(job):
    """The Job as the API server returns it from the apply (it carries the UID)."""
    applied = copy.deepcopy(job["objects"][1])
    applied["metadata"]["uid"] = "0b9f1c1e-5d2a-4c53-9f57-3e6c1f6b2a10"
    return applied


def test_the_job_starts_suspended_and_owns_its_secret_and_service(job):
    assert job["objects"][1]["spec"]["suspend"] is True, "no Pod may start before its Secret and Service exist"
    applied = _applied(job)
    secret = FILTERS["validate_nccl_owned"](_validate_jobs.secret(job, "k", "p"), applied)
    service = FILTERS["validate_nccl_owned"](job["objects"][0], applied)
    for obj in (secret, service):
        assert obj["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": job["name"],
                "uid": applied["metadata"]["uid"],
                "controller": True,
            }
        ]
        validate_core(obj)
    assert "ownerReferences" not in job["objects"][0]["metadata"], "the planned object is not modified"
    resume = FILTERS["validate_nccl_resume"](job)
    assert resume == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job["name"], "namespace": job["namespace"]},
        "spec": {"suspend": False},
    }


def test_an_owner_without_uid_or_in_another_namespace_is_refused(job):
    no_uid = copy.deepcopy(job["objects"][1])
    with pytest.raises(Exception, match="returned no uid"):
        FILTERS["validate_nccl_owned"](job["objects"][0], no_uid)
    # check mode: a dry-run apply may give no UID; the object goes without the reference
    assert "ownerReferences" not in FILTERS["validate_nccl_owned"](job["objects"][0], no_uid, True)["metadata"]
    elsewhere = _applied(job)
    elsewhere["metadata"]["namespace"] = "kube-system"
    with pytest.raises(Exception, match="same namespace"):
        FILTERS["validate_nccl_owned"](job["objects"][0], elsewhere)


def _nccl_block():
    import yaml

    tasks = yaml.safe_load((REPO / "roles/validate/tasks/nccl.yml").read_text())
    return next(t for t in tasks if "block" in t)


def test_the_role_deletes_what_it_made_even_when_a_task_fails():
    block = _nccl_block()
    always = block.get("always") or []
    deletes = [t for t in always if (t.get("kubernetes.core.k8s") or {}).get("state") == "absent"]
    assert deletes, "the cleanup is not in the block's always: section"
    assert "validate_nccl_cleanup" in deletes[0]["loop"]
    assert not [
        t
        for t in block["block"]
        if (t.get("kubernetes.core.k8s") or {}).get("state") == "absent" and "this run" in t["name"]
    ], "this run's cleanup must not run only on success"


def test_the_role_applies_the_secret_and_service_owned_by_the_applied_job():
    tasks = _nccl_block()["block"]
    names = [t["name"] for t in tasks]
    applied = {t["name"]: t for t in tasks if (t.get("kubernetes.core.k8s") or {}).get("apply")}
    secret = next(t for n, t in applied.items() if "Secret" in n)
    service = next(t for n, t in applied.items() if "Service" in n)
    jobs = next(t for n, t in applied.items() if "Jobs" in n)
    for task in (secret, service):
        assert "validate_nccl_owned(" + "__validate_nccl_applied_jobs" in task["kubernetes.core.k8s"]["definition"]
        assert names.index(jobs["name"]) < names.index(task["name"])
    resume = next(
        t for t in tasks if "validate_nccl_resume" in str((t.get("kubernetes.core.k8s") or {}).get("definition"))
    )
    assert names.index(resume["name"]) > max(names.index(secret["name"]), names.index(service["name"]))
