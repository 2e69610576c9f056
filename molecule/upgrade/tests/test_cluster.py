"""What the converge did in the scenario's lab cluster, and that check mode predicted it: the
first DOCA-OFED load drained both lab nodes within the trainers' budget through the eviction API
(the DaemonSet's agents stayed), then gave them back, with no maintenance annotation left."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client, config

REPO = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
SCENARIO = Path(os.environ["MOLECULE_SCENARIO_DIRECTORY"])
STATE = REPO / ".lab" / "upgrade"
NODES = ("upgrade-node1", "upgrade-node2")
# Check mode cannot predict these, and says so; each follows a change check mode can only simulate.
UNPREDICTABLE = [
    # The DOCA and driver repositories are new on the node: check mode cannot refresh apt's cache, so
    # the installs cannot be simulated (the roles say so), nor the holds of what they install.
    r"(doca_ofed|gpu_driver) : (Install the (DOCA-OFED profile|driver packages)|Hold the )",
    # After a simulated DOCA-OFED install there is no stack on disk to enable or load.
    r"doca_ofed : (Enable openibd at boot|Reload the RDMA driver stack)",
    # k8s_drain has no check mode (the evictions are skipped), and the uncordon follows a cordon
    # that check mode only dry-ran (no annotation to find).
    r"node_maintenance : (Evict the Node's Pods|Uncordon the Node)",
    # modprobe is a command, which check mode skips.
    r"gpudirect_rdma : Load nvidia-peermem$",
    # The roce role reads its settings back in check mode before they are applied (so a check run
    # reports them as to change), and cannot look a unit up that check mode did not install.
    r"roce : (Read the QoS settings back|Read the RDMA netns mode back|Enable the boot service)$",
]


@pytest.fixture(scope="module")
def core():
    return client.CoreV1Api(config.new_client_from_config(str(STATE / "kube" / "admin.kubeconfig")))


def requests():
    out = subprocess.run(
        [sys.executable, str(SCENARIO / "files" / "audit.py"), str(STATE / "kube" / "logs" / "audit.log")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def test_the_nodes_are_given_back_without_maintenance_annotations(core):
    for name in NODES:
        node = core.read_node(name)
        assert not node.spec.unschedulable, name
        assert not [k for k in (node.metadata.annotations or {}) if k.startswith("rollout.gpufabric.io/")], name


def test_the_drains_evicted_the_trainers_and_left_the_agents(core):
    before = json.loads((STATE / "pods-before.json").read_text())
    deadline = time.monotonic() + 60
    while True:
        pods = core.list_namespaced_pod("ml").items
        trainers = sorted(
            p.spec.node_name for p in pods if p.metadata.labels.get("app") == "trainer" and p.status.phase == "Running"
        )
        if trainers == ["upgrade-node1", "upgrade-node2", "upgrade-spare"] or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert trainers == ["upgrade-node1", "upgrade-node2", "upgrade-spare"], (
        "a drained node did not get its trainer back"
    )
    uids = {p.metadata.uid for p in pods}
    for name in NODES:
        assert before[name]["trainer"]["uid"] not in uids, f"{name}'s trainer was not evicted"
        assert before[name]["rdma-agent"]["uid"] in uids, f"{name}'s agent was evicted"


def test_the_evictions_went_through_the_eviction_api_as_the_collections_identity():
    before = json.loads((STATE / "pods-before.json").read_text())
    evictions = [r for r in requests() if r["subresource"] == "eviction" and r["verb"] == "create"]
    for name in NODES:
        trainer = before[name]["trainer"]["name"]
        codes = [r["code"] for r in evictions if r["name"] == trainer]
        # Retried while the budget refused (429), until the eviction went through once.
        assert codes and codes[-1] == 201 and set(codes[:-1]) <= {429}, codes
        assert not [r for r in evictions if r["name"] == before[name]["rdma-agent"]["name"]]


def test_check_mode_predicted_the_converge():
    command = [
        sys.executable,
        str(REPO / "tests" / "integration" / "compare_changes.py"),
        os.environ["GPUFABRIC_CHANGES_LOG"],
    ]
    for pattern in UNPREDICTABLE:
        command += ["--ignore", pattern]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
