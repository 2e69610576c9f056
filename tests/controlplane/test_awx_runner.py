"""The cluster stage run as AWX runs it: ansible-runner jobs, sliced with --limit, against a real
control plane.

Two GPU nodes that need no container: inventory hosts on the local connection whose hardware is a
materialised lab snapshot (dgx-h200-8x8@1 and @2, the NVIDIA driver "loaded" into it by the lab's
modprobe shim), registered as Nodes of a private control plane from the same snapshots
(lab/cluster/nodes.py). Every job goes through ansible-runner as AWX hands it over (awx_jobs.py:
private data dir with project/, inventory/hosts as AWX's inventory script, env/extravars,
env/envvars, env/cmdline, the jsonfile fact cache), one after the other:

1. the cluster stage limited to gpu-node-2 and localhost while gpu-node-1 was never discovered:
   refused before anything is applied, naming gpu-node-1;
2. the cluster stage limited to gpu-node-1,localhost, then to gpu-node-2,localhost (the two slices
   of a run sliced with --limit): the first applies every object, the second changes none; the
   second is also the job whose events and artifacts (the report) are checked as AWX reads them;
3. the plan stage unsliced, as the workflow's next node (the previous job's artifacts as extra
   vars): its plan holds exactly the objects the slices applied, and they are in the API.

The slices share plan_dir: each stores the discovery of its nodes there and plans the others from
it. Under AWX that directory must be on storage every job mounts; the default (beside the
inventory) is inside each job's private data dir, gone with the job (job 3 keeps the default and
shows where it lands). The fact cache cannot stand in for it: a slice's fact cache holds only its
own hosts, and the plan reads no facts of other jobs. The jobs here carry a working fact cache from
one job to the next, so a plan cached by an earlier job would be found: the plan must run anyway.

AWX's own job slicing gives each slice an inventory of its own hosts only
(Inventory.get_script_data): the last test shows that such a slice plans the cluster from its own
nodes, which is why docs/awx.md says not to slice the cluster stage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from awx_jobs import Awx, Inventory, Job
from controlplane_support import REPO, Cluster, crds_dir, private_cluster

NODES = {"gpu-node-1": "dgx-h200-8x8@1", "gpu-node-2": "dgx-h200-8x8@2"}  # inventory host = Node name
SLICES = ("gpu-node-1", "gpu-node-2")
DRIVER = "open 580.95.05"  # what the lab's nodes have (inventory/lab group_vars/gpu_nodes)
CLUSTER_STAGE = "playbooks/cluster.yml"
PLAN_STAGE = "playbooks/plan.yml"
NODE_PLAN_TASK = "Compute this node's plan and keep it with its checked variables and report section"
CLUSTER_PLAN_TASK = "Compute the cluster plan and write it for review"
NODES_FOUND_TASK = "Find every GPU node's Node in the cluster before anything changes"
MISNAMED = "gpu-node-2.cluster.example"
# What the cluster stage applies, read back as the cluster's administrator.
KINDS = (
    "nicclusterpolicies.mellanox.com",
    "ippools.nv-ipam.nvidia.com",
    "network-attachment-definitions.k8s.cni.cncf.io",
    "clusterpolicies.nvidia.com",
    "configmaps",
    "secrets",
    "deployments.apps",
)
NAMESPACES = ("nvidia-network-operator", "gpu-operator", "gpu-workloads")


@dataclass
class Lab:
    cluster: Cluster
    awx: Awx
    sysroots: Dict[str, Path]
    plan_dir: Path  # on "persistent storage": every job of the test sees it

    def inventory(self, plan_dir: Optional[Path] = None) -> Inventory:
        """The inventory as AWX holds it after importing the project's inventory source."""
        python = sys.executable
        variables: Dict[str, Any] = {
            "gpufabric_fabric": {
                "transport": "roce",
                "lossless_priority": 3,
                "data_dscp": 26,
                "cnp_dscp": 48,
                "cnp_priority": 6,
                "roce_tos": 106,
                "mtu": 9000,
                "ecn": True,
                "pfc": True,
                "rdma_netns_mode": "shared",
            },
            "gpufabric_nccl_version": "2.27.3",
            "gpufabric_k8s_mode": "apply",
            "gpufabric_rails": {
                "supernet": "10.200.0.0/16",
                "rail_prefix": 20,
                "block_size": 32,
                "nad_namespace": "gpu-workloads",
            },
            "gpufabric_cluster_cidrs": {"pod": "10.244.0.0/16", "service": "10.96.0.0/12"},
            # The host layer is not under test: no DOCA-OFED repository or GDS packages to plan.
            "gpufabric_doca_ofed_enabled": False,
            "gpufabric_gds_enabled": False,
            # The "nodes" run on this controller, whose PID 1 need not be systemd.
            "plan_require_systemd": False,
            "network_operator_chart_path": str(REPO / "lab" / "charts" / "network-operator"),
            "network_operator_helm_binary": str(REPO / ".tools" / "bin" / "helm"),
            "network_operator_crds_dir": str(crds_dir()),
            "network_operator_wait_timeout": 60,
            "network_operator_wait_delay": 1,
            "gpu_operator_chart_path": str(REPO / "lab" / "charts" / "gpu-operator"),
            "gpu_operator_helm_binary": str(REPO / ".tools" / "bin" / "helm"),
            "gpu_operator_crds_dir": str(crds_dir()),
            "gpu_operator_wait_timeout": 60,
            "gpu_operator_wait_delay": 1,
        }
        if plan_dir is not None:
            variables["plan_dir"] = str(plan_dir)
        hosts: Dict[str, Dict[str, Any]] = {
            name: {"gpufabric_sysroot": str(root)} for name, root in self.sysroots.items()
        }
        hosts["localhost"] = {"ansible_connection": "local", "ansible_python_interpreter": python}
        groups = {
            "gpu_nodes": {
                "hosts": sorted(self.sysroots),
                "vars": {"ansible_connection": "local", "ansible_python_interpreter": python},
            }
        }
        return Inventory(variables, hosts, groups)

    def objects(self) -> Dict[str, Dict[str, Any]]:
        """Every object the cluster stage manages: what identifies a change of each."""
        out: Dict[str, Dict[str, Any]] = {}
        res = self.cluster.kubectl("get", ",".join(KINDS), "-A", "-o", "json")
        for item in json.loads(res.stdout)["items"]:
            meta = item["metadata"]
            if meta.get("namespace", "") not in ("", *NAMESPACES) or meta["name"] == "kube-root-ca.crt":
                continue
            key = f"{item['kind']}/{meta.get('namespace', '')}/{meta['name']}"
            # generation moves with the spec only (the operator stand-in writes status); objects
            # without one (ConfigMaps, Secrets) change resourceVersion on any write.
            out[key] = {
                "version": meta.get("generation", meta["resourceVersion"]),
                "spec": item.get("spec", item.get("data")),
                "labels": meta.get("labels") or {},
            }
        nodes = json.loads(self.cluster.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        for node in nodes:  # kwok renews node status all the time: the labels are what the stage sets
            out[f"Node//{node['metadata']['name']}"] = {"labels": node["metadata"].get("labels") or {}}
        return out


def _load_nvidia_driver(sysroot: Path, lab_root: Path) -> None:
    """What lab/prepare.yml does on a lab node: declare the driver and let the modprobe shim load it
    into the hardware tree (GPUFABRIC_LAB_ROOT moves the shim's /etc to a directory of the test)."""
    (lab_root / "etc" / "gpufabric-lab").mkdir(parents=True, exist_ok=True)
    (lab_root / "etc" / "gpufabric-lab" / "nvidia-driver").write_text(DRIVER + "\n")
    (lab_root / "etc" / "gpufabric-lab" / "sysroot").write_text(str(sysroot) + "\n")
    subprocess.run(
        [sys.executable, str(REPO / "lab" / "simulators" / "modprobe"), "nvidia"],
        env={"GPUFABRIC_LAB_ROOT": str(lab_root), "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory, crds) -> Lab:
    if not (REPO / ".tools" / "bin" / "helm").exists():
        pytest.fail("Helm is missing from .tools/bin (make tools, or make controlplane-test, installs it)")
    root = tmp_path_factory.mktemp("awx")
    (root / "kube").mkdir()
    with private_cluster(root / "kube", root / "sysroots", NODES) as cluster:
        sysroots = {name: cluster.sysroots / snapshot for name, snapshot in NODES.items()}
        for name, sysroot in sysroots.items():
            _load_nvidia_driver(sysroot, root / "lab-root" / name)
        awx = Awx(
            root=root / "jobs",
            project=REPO,
            collections=REPO / ".collections",
            # The gpufabric kubeconfig credential (playbooks/awx.yml): a file, an env var, an extra var.
            env={"K8S_AUTH_KUBECONFIG": str(cluster.kubeconfig)},
            credential_extravars={"gpufabric_kubeconfig": str(cluster.kubeconfig)},
        )
        yield Lab(cluster, awx, sysroots, root / "persistent" / "plan")


@pytest.fixture(scope="module")
def history(lab) -> Dict[str, Any]:
    """The jobs, in order, with what they left behind (the tests below read it)."""
    inventory = lab.inventory(lab.plan_dir)
    h: Dict[str, Any] = {"slices": [], "after_slice": []}
    h["undiscovered"] = lab.awx.run(CLUSTER_STAGE, inventory, limit="gpu-node-2,localhost")
    h["stored_after_undiscovered"] = sorted(p.name for p in (lab.plan_dir / "discovery").glob("*.json"))
    h["after_undiscovered"] = lab.objects()
    for node in SLICES:
        h["slices"].append(lab.awx.run(CLUSTER_STAGE, inventory, limit=f"{node},localhost"))
        h["after_slice"].append(lab.objects())
    h["sliced_plan"] = json.loads((lab.plan_dir / "plan.json").read_text())
    # The next workflow node; it keeps the default plan_dir (it needs no stored record).
    h["unsliced"] = lab.awx.run(PLAN_STAGE, lab.inventory(None), artifacts_from=[h["slices"][-1]])
    # AWX's own slicing: slice 2 of 2 is an inventory of gpu-node-2 alone (localhost, first by
    # name in slice 1, is the implicit one here).
    h["awx_slice"] = lab.awx.run(PLAN_STAGE, inventory, slice_number=2, slice_count=2)
    # gpu-node-2 under a Node name the cluster does not have (an FQDN where the Node is the short name).
    misnamed = lab.inventory(None)
    misnamed.hosts["gpu-node-2"]["gpufabric_k8s_node_name"] = MISNAMED
    h["before_misnamed"] = lab.objects()
    h["misnamed"] = lab.awx.run(PLAN_STAGE, misnamed)
    h["after_misnamed"] = lab.objects()
    return h


def _ok(job: Job) -> None:
    assert job.status == "successful" and job.rc == 0, (
        f"job {job.id} {job.status}: {job.failures()}\n{job.stdout[-4000:]}"
    )


def _summary(job: Job) -> str:
    return job.events_of("runner_on_ok", "Show the plan")[0]["event_data"]["res"]["msg"]


def _contains(actual: Any, wanted: Any) -> bool:
    """`wanted` is in `actual` (the API server adds defaults and metadata)."""
    if isinstance(wanted, dict):
        return isinstance(actual, dict) and all(k in actual and _contains(actual[k], v) for k, v in wanted.items())
    return actual == wanted


def _changes(before: Dict[str, Any], after: Dict[str, Any]) -> List[str]:
    out = []
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out.append(f"{key}: {before.get(key)!r} -> {after.get(key)!r}"[:400])
    return out


def _refused(job: Job) -> str:
    """The one failure of a job that must stop at a single task: 'host: task: message'."""
    assert job.status == "failed"
    failures = job.failures()
    assert len(failures) == 1, failures
    return failures[0]


def test_a_slice_whose_other_nodes_were_never_discovered_is_refused_naming_them(lab, history):
    job = history["undiscovered"]
    failure = _refused(job)
    assert failure.startswith(f"localhost: {CLUSTER_PLAN_TASK}: The cluster plan is refused")
    assert "but gpu-node-1 ran neither in this run nor before" in failure
    assert f"no stored discovery in {lab.plan_dir / 'discovery'}" in failure
    # It stopped in the plan: no cluster role ran, nothing was applied.
    roles = {(e.get("event_data") or {}).get("role") for e in job.events}
    assert not roles & {"network_operator", "gpu_operator", "rdma_networks", "sriov_networks"}, roles
    assert not [k for k in history["after_undiscovered"] if not k.startswith("Node//")]
    assert not any(k.startswith("gpufabric.io/") for k in history["after_undiscovered"]["Node//gpu-node-2"]["labels"])
    # The node it did read is stored for the next runs.
    assert history["stored_after_undiscovered"] == ["gpu-node-2.json"]


def test_each_slice_plans_its_node_and_the_other_from_its_stored_discovery(history):
    for node, job, other in zip(SLICES, history["slices"], reversed(SLICES)):
        _ok(job)
        assert job.hosts_where("runner_on_ok", NODE_PLAN_TASK) == [node]
        assert job.hosts_where("runner_on_ok", CLUSTER_PLAN_TASK) == ["localhost"]
        summary = _summary(job)
        assert "gpufabric.rollout plan: 2 GPU node(s)" in summary
        lines = {line.split(":")[0].strip(): line for line in summary.splitlines() if line.startswith("  gpu-node-")}
        assert "[stored " not in lines[node]  # read in this run
        assert "[stored " in lines[other]  # from plan_dir/discovery


def test_the_first_slice_applies_everything_and_the_second_changes_nothing(history):
    first, second = history["after_slice"]
    managed = {k for k in first if not k.startswith("Node//")}
    assert "NicClusterPolicy//nic-cluster-policy" in managed
    assert "ClusterPolicy//cluster-policy" in managed
    assert len([k for k in managed if k.startswith("IPPool/nvidia-network-operator/")]) == 8
    assert len([k for k in managed if k.startswith("NetworkAttachmentDefinition/gpu-workloads/")]) == 8
    assert "ConfigMap/gpu-workloads/nccl-env-h200-connectx-7-8r" in managed
    assert {k for k in managed if k.startswith("Secret/") and ".helm.release." in k} == {
        "Secret/nvidia-network-operator/sh.helm.release.v1.network-operator.v1",
        "Secret/gpu-operator/sh.helm.release.v1.gpu-operator.v1",
    }
    for node in SLICES:  # both nodes labelled by the first slice, which read only gpu-node-1
        assert first[f"Node//{node}"]["labels"].get("gpufabric.io/node-group") == "h200-connectx-7-8r"
    # Same objects, same generations / resourceVersions, same Helm revisions: nothing was written.
    assert second == first, _changes(first, second)
    stats = history["slices"][1].events[-1]["event_data"]
    assert not stats["changed"], stats["changed"]


def test_the_unsliced_plan_holds_exactly_what_the_slices_applied(history):
    job = history["unsliced"]
    _ok(job)
    assert job.hosts_where("runner_on_ok", NODE_PLAN_TASK) == list(SLICES)
    # The default plan_dir is beside the inventory: under AWX, inside the job's private data dir.
    unsliced = json.loads((job.private_data_dir / "inventory" / ".gpufabric" / "plan.json").read_text())
    assert {n["source"] for n in unsliced["nodes"].values()} == {"this run"}
    for part in ("fabric", "network", "network_operator", "gpu_operator"):
        assert unsliced[part] == history["sliced_plan"][part], part
    applied = history["after_slice"][-1]
    for objects in unsliced["network"]["objects"].values():
        for obj in objects:
            key = f"{obj['kind']}/{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"
            assert key in applied, key
            assert _contains(applied[key]["spec"], obj.get("spec", obj.get("data"))), key
    for node, labels in unsliced["network"]["node_labels"].items():
        assert _contains(applied[f"Node//{node}"]["labels"], labels), node


def test_the_runner_job_events_show_the_plan_and_the_cluster_stage(history):
    job = history["slices"][1]
    kinds = [e["event"] for e in job.events]
    assert kinds[0] == "playbook_on_start" and kinds[-1] == "playbook_on_stats"
    assert not job.events_of("runner_on_failed") and not job.events_of("runner_on_unreachable")
    plays = [e["event_data"]["play"] for e in job.events_of("playbook_on_play_start")]
    assert plays == [
        "Plan - check the cluster layer's variables",
        "Plan - read every GPU node and check its variables (nothing changes)",
        "Plan - the cluster, the plan file and its summary",
        "Configure the cluster side of the fabric",
        "Write the rollout report",
    ]
    roles = {(e.get("event_data") or {}).get("role") for e in job.events_of("runner_on_ok")}
    assert {"plan", "network_operator", "gpu_operator", "rdma_networks", "sriov_networks"} <= roles
    stats = job.events[-1]["event_data"]
    assert set(stats["ok"]) == {"localhost", "gpu-node-2"} and not stats["failures"] and not stats["dark"]


def test_the_report_is_the_jobs_artifact(history):
    job = history["slices"][1]
    assert set(job.artifacts) == {"gpufabric_report"}
    report = job.artifacts["gpufabric_report"]
    assert report.startswith("gpufabric.rollout report")
    assert "== node gpu-node-2 ==" in report and "--- plan ---" in report
    assert "== cluster ==" in report and "nic-cluster-policy" in report
    # What the report play wrote beside the job's inventory (gone with the job under AWX), never into
    # the project (the collection's own folder when it is installed).
    assert (job.private_data_dir / "inventory" / "rollout-report.txt").read_text().strip() == report.strip()
    assert not (job.private_data_dir / "project" / "rollout-report.txt").exists()


def test_the_next_workflow_node_gets_the_report_and_its_plan_accepts_it(history):
    job = history["unsliced"]
    extravars = yaml.safe_load((job.private_data_dir / "env" / "extravars").read_text())
    assert extravars["gpufabric_report"] == history["slices"][1].artifacts["gpufabric_report"]
    _ok(job)  # the plan's check of every gpufabric_* variable did not refuse it


def test_a_warm_fact_cache_neither_skips_the_plan_nor_keeps_it(history):
    for job in [*history["slices"], history["unsliced"]]:
        seeded = {p.name for p in job.fact_cache.iterdir()}
        assert any(name.endswith("gpu-node-2") for name in seeded), seeded  # an earlier job cached it
        assert job.hosts_where("runner_on_ok", CLUSTER_PLAN_TASK) == ["localhost"]
    for path in history["unsliced"].fact_cache.iterdir():
        text = path.read_text()
        for name in ("gpufabric_intent", "gpufabric_node_plan", "gpufabric_plan"):
            assert name not in text, f"{name} reached the fact cache ({path.name})"


def test_an_awx_slice_plans_the_cluster_from_its_own_nodes_only(lab, history):
    """What the advice of docs/awx.md rests on: AWX gives a slice an inventory of its hosts only, so its
    plan covers them alone although plan_dir holds the other node's record."""
    job = history["awx_slice"]
    _ok(job)
    assert (lab.plan_dir / "discovery" / "gpu-node-1.json").exists()
    assert job.hosts_where("runner_on_ok", NODE_PLAN_TASK) == ["gpu-node-2"]
    summary = _summary(job)
    assert "gpufabric.rollout plan: 1 GPU node(s)" in summary
    assert "gpu-node-1" not in summary


def test_a_gpu_node_whose_node_the_cluster_lacks_is_refused_by_the_plan_naming_it(history):
    """Issue 36 point 2: the plan reads the cluster once in apply mode and refuses, before the host
    layer, a GPU node whose Node is not there under the name the cluster roles would use."""
    failure = _refused(history["misnamed"])
    assert failure.startswith(f"localhost: {NODES_FOUND_TASK}: labels: the planned Nodes {MISNAMED} do not exist")
    assert "gpufabric_k8s_node_name" in failure
    assert "gpu-node-1" not in failure.split("do not exist")[0]  # the Node that is there is not named
    # One list, no write: the Nodes' labels are as they were.
    assert _changes(history["before_misnamed"], history["after_misnamed"]) == []
    # With the right names the same task passes and lists both Nodes (the unsliced plan above).
    found = history["unsliced"].events_of("runner_on_ok", NODES_FOUND_TASK)
    assert [e["event_data"]["res"]["missing"] for e in found] == [[]]
    assert found[0]["event_data"]["res"]["patched"] == 0 and found[0]["event_data"]["res"]["changed"] is False
