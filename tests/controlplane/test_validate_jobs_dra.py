"""validate's NCCL Jobs in dra mode on the lab control plane: roles/validate/tasks/nccl.yml run as the
collection's least-privilege identity (the shipped RBAC) with the dra section of the plan. The real
API server accepts the Job, its owned copy of the node group's full-node ResourceClaimTemplate,
Secret and Service; the real kube-scheduler allocates each Pod's claim from the operator stand-in's
ResourceSlices (lab/cluster/play_operator.py); each allocation, read back from the claim while the
Pod runs, gives every GPU of the node with a rail NIC the plan's pairs allow for it; the Job
completes (kwok plays the kubelets) and the role's cleanup leaves nothing."""

from __future__ import annotations

import json
import re
import threading

import pytest
from controlplane_support import NODES, wait_until
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from test_validate_jobs import run_nccl_play

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra as _dra

NS = "gpufabric-validation"  # validate_namespace's default (the shipped RBAC makes it)
NAD_NS = "gpu-workloads"  # the session plan's nad_namespace: the node groups' templates live there
LABEL = "gpufabric.io/node-group"
PAIR = re.compile(r"^(?P<gpu>\S+) -> (?P<nics>.+?) \(PCIe root ")


@pytest.fixture(scope="module")
def dra_plan(cluster, plan, topology):
    """The cluster plan as dra mode makes it (no rail NADs or pools) with its dra section applied,
    both drivers' slices published on both nodes, and every device other tests' Pods and claims hold
    given back."""
    section = _dra.plan(plan["node_groups"], topology, NAD_NS, LABEL)
    cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAD_NS}}])
    cluster.apply(section["objects"])
    resource, core = client.ResourceV1Api(cluster.api()), client.CoreV1Api(cluster.api())

    def published():
        have = {(s.spec.node_name, s.spec.driver) for s in resource.list_resource_slice().items}
        return have >= {(n, d) for n in NODES for d in (_dra.GPU_DRIVER, _dra.NIC_DRIVER)}

    wait_until(published, "the GPU and NIC drivers' ResourceSlices on both nodes")
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.spec.resource_claims:
            core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
    for claim in resource.list_resource_claim_for_all_namespaces().items:
        try:
            resource.delete_namespaced_resource_claim(claim.metadata.name, claim.metadata.namespace)
        except ApiException as exc:  # a Pod's own claim goes with the Pod, maybe first
            if exc.status != 404:
                raise
    wait_until(
        lambda: (
            not [c for c in resource.list_resource_claim_for_all_namespaces().items if c.status and c.status.allocation]
        ),
        "the devices of earlier tests' claims given back",
    )
    return {"network": _dra.without_rail_attachments(plan), "dra": section}


def _allowed(section, group):
    """{GPU name: the rail NICs (RDMA devices) the plan's pairs allow it}."""
    out = {}
    for line in next(g for g in section["groups"] if g["name"] == group)["pairs"]:
        match = PAIR.match(line)
        assert match, line
        out[match["gpu"]] = set(match["nics"].split(" or "))
    return out


def _names(topology, node):
    """The drivers' device names on `node` -> the GPU's name or the NIC's RDMA device, from discovery."""
    facts = topology[node]
    out = {f"gpu-{g['index']}": g["name"] for g in facts["gpus"]}
    out.update({"pci-" + re.sub(r"[:.]", "-", n["bdf"]): n["rdma_device"] for n in facts["nics"]})
    return out


class ClaimWatch(threading.Thread):
    """Reads the claims of the Jobs' namespace while the role runs: kwok ends a Job's Pod 6 s after it
    runs, and the claim of a finished Pod is released."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.api = client.ResourceV1Api(cluster.api())
        self.seen = {}
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            while not self.stop.is_set():
                for claim in self.api.list_namespaced_resource_claim(NS).items:
                    owners = [o.name for o in claim.metadata.owner_references or [] if o.kind == "Pod"]
                    if claim.status and claim.status.allocation and owners:
                        results = claim.status.allocation.devices.results
                        self.seen[owners[0]] = {
                            "pools": {r.pool for r in results},
                            "devices": {r.request: (r.driver, r.device) for r in results},
                        }
                self.stop.wait(0.2)
        except Exception as exc:  # reported by the test, which fails on it
            self.error = exc


def test_the_role_runs_the_dra_jobs_and_the_scheduler_allocates_the_planned_pairs(
    cluster, dra_plan, topology, tmp_path
):
    network, section = dra_plan["network"], dra_plan["dra"]
    assert not [o for objs in network["objects"].values() for o in objs if o["kind"] == "NetworkAttachmentDefinition"]
    group = section["groups"][0]["name"]
    variables = {
        "gpufabric_kubeconfig": str(cluster.kubeconfig),
        "gpufabric_plan": {"network": network, "dra": section, "k8s_mode": "apply"},
        "validate_nccl_timeout": 120,
        "result_path": str(tmp_path / "result.json"),
    }
    watch = ClaimWatch(cluster)
    watch.start()
    try:
        done = run_nccl_play(tmp_path, variables)
    finally:
        watch.stop.set()
        watch.join(10)
    assert watch.error is None, watch.error
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "Apply the claim templates, owned by their Job" in done.stdout
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["notes"] == [], "dra mode runs the Jobs: no reason for not running them"
    checks = {(c["name"], c["passed"]) for c in result["result"]["checks"]}
    assert {("Job completed", True), ("one Pod on each node", True)} <= checks, result

    # One claim per Pod, each on its Pod's node: every GPU of the node and a rail NIC the plan's
    # pairs allow for it (a NIC of its PCIe root), no device twice, every rail NIC, no storage NIC.
    allowed = _allowed(section, group)
    assert len(watch.seen) == 2, watch.seen
    nodes = set()
    for pod, claim in sorted(watch.seen.items()):
        assert len(claim["pools"]) == 1, (pod, claim)
        (node,) = claim["pools"]
        nodes.add(node)
        names = _names(topology, node)
        sets = [(claim["devices"][f"gpu-{k}"], claim["devices"][f"nic-{k}"]) for k in range(8)]
        assert len(claim["devices"]) == 16
        for gpu, nic in sets:
            assert (gpu[0], nic[0]) == (_dra.GPU_DRIVER, _dra.NIC_DRIVER)
            assert names[nic[1]] in allowed[names[gpu[1]]], f"{pod}: {names[gpu[1]]} got {names[nic[1]]}"
        assert sorted(names[g[1]] for g, _n in sets) == sorted(allowed)
        rails = {r["rdma_device"] for r in next(g for g in section["groups"] if g["name"] == group)["rails"]}
        assert {names[n[1]] for _g, n in sets} == rails, "every rail NIC once, never a storage NIC"
    assert nodes == set(NODES), "one Pod, and one claim, on each node"

    # The role's cleanup: nothing of this run left in the Jobs' namespace, the node group's own
    # templates in the NADs' namespace untouched.
    resource = client.ResourceV1Api(cluster.api())
    wait_until(
        lambda: not resource.list_namespaced_resource_claim_template(NS).items,
        "the Jobs' claim templates deleted",
    )
    for kind in ("jobs", "services", "secrets"):
        left = json.loads(
            cluster.kubectl(
                "-n", NS, "get", kind, "-l", "app.kubernetes.io/part-of=gpufabric-rollout", "-o", "json"
            ).stdout
        )["items"]
        assert [i["metadata"]["name"] for i in left if "gpufabric-nccl" in i["metadata"]["name"]] == [], kind
    kept = {t.metadata.name for t in resource.list_namespaced_resource_claim_template(NAD_NS).items}
    assert f"{group}-full" in kept


def test_the_identity_may_make_claim_templates_for_the_jobs_in_their_namespace_only(cluster, dra_plan):
    for namespace, allowed in ((NS, "yes"), ("kube-system", "no")):
        for verb in ("create", "delete"):
            res = cluster.kubectl(
                "auth", "can-i", verb, "resourceclaimtemplates.resource.k8s.io", "-n", namespace,
                kubeconfig=cluster.kubeconfig, check=False,
            )  # fmt: skip
            assert res.stdout.strip() == allowed, (verb, namespace)
