"""The device-allocation migration of playbooks/upgrade.yml on the session's lab control plane: two
GPU Nodes, each running a Pod that holds nvidia.com/gpu, move from the device plugins to dra in
upgrade.yml's own plays, node group by node group.

upgrade.yml's first play's host task (the rolling play's group, in the plan's order), its rolling play
(keywords, window block and rescue) and its last play run as they are, with the host layers left
out of the window (they need lab nodes; the window's Kubernetes steps are what this proves): cordon
and drain (node_maintenance), the label switch and the wait for the node's ResourceSlices
(tasks/allocation_switch.yml), uncordon. The plan is the migration's pure core run on the cluster's
Nodes, with the two nodes put in two node groups whose order is the reverse of their names. The
operator stand-in (lab/cluster/play_operator.py) publishes a driver's slices on the Nodes whose label
places it there; two DeviceClasses stand for the drivers being deployed.

Proven: the batches run group by group (gpu-node-02's group first); while a node's window runs, the
other node is neither cordoned nor switched; each node is drained (its GPU Pod evicted) before its
labels switch; both end labelled dra, uncordoned, with their GPU driver slices; the last play names
the nodes moved."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from controlplane_support import wait_until
from role_runner import ansible_playbook

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import allocation_migration as _migration

REPO = Path(__file__).resolve().parents[2]
NODES = ["gpu-node-01", "gpu-node-02"]
GROUPS = {"gpu-node-02": "a-first-group", "gpu-node-01": "b-second-group"}
OWN = "gpufabric.io/device-allocation"
PODS_NS = "default"
WINDOW_KEYS = ("cordoned-by", "maintenance", "failed")  # node_maintenance's annotations


def upgrade_plays():
    plays = yaml.safe_load((REPO / "playbooks" / "upgrade.yml").read_text())
    by_name = {p["name"]: p for p in plays}
    first = by_name["Upgrade - plan the batches and check the version skew (nothing changes)"]
    add_host = next(t for t in first["tasks"] if t["name"] == "Put the nodes to upgrade in the rolling play's group")
    batch = by_name["Upgrade - one batch of GPU nodes at a time"]
    window = next(t for t in batch["tasks"] if "block" in t)
    keep = {
        "Cordon and drain the node",
        "Move the node to the planned device allocation and wait until it publishes its devices",
        "Uncordon the node",
        "Record the node as upgraded",
    }
    steps = [t for t in window["block"] if t["name"] in keep]
    assert [t["name"] for t in steps] == [
        "Cordon and drain the node",
        "Move the node to the planned device allocation and wait until it publishes its devices",
        "Uncordon the node",
        "Record the node as upgraded",
    ], "upgrade.yml's window lost a step or changed their order"
    return first, add_host, batch, window, steps, by_name["Upgrade - what happened"]


def recorder(log: Path):
    """After the drain: where every Node stands (cordoned, mode label) and whether this node's GPU Pod is gone."""
    return {
        "name": "Test: note where the Nodes stand once this node is drained",
        "ansible.builtin.shell": "echo '{{ __seen | to_json }}' >> " + str(log),
        "vars": {
            "__seen": {
                "host": "{{ inventory_hostname }}",
                "batch": "{{ ansible_play_batch }}",
                "reason": "{{ (query('kubernetes.core.k8s', kind='Node', resource_name=inventory_hostname,"
                " kubeconfig=gpufabric_kubeconfig) | first).metadata.annotations"
                "['rollout.gpufabric.io/maintenance'] }}",
                "cordoned": "{{ query('kubernetes.core.k8s', kind='Node', kubeconfig=gpufabric_kubeconfig)"
                " | selectattr('spec.unschedulable', 'defined') | selectattr('spec.unschedulable')"
                " | map(attribute='metadata.name') | list }}",
                "dra": "{{ query('kubernetes.core.k8s', kind='Node', kubeconfig=gpufabric_kubeconfig,"
                " label_selector='" + OWN + "=dra') | map(attribute='metadata.name') | list }}",
                # this node's GPU Pods still on it (the evicted Pod's replacement waits, unbound, while it is cordoned)
                "gpu_pod": "{{ query('kubernetes.core.k8s', kind='Pod', namespace='" + PODS_NS + "',"
                " label_selector='app=gpu-' ~ inventory_hostname,"
                " field_selector='spec.nodeName=' ~ inventory_hostname, kubeconfig=gpufabric_kubeconfig) | length }}",
            }
        },
        "delegate_to": "localhost",
        "changed_when": False,
    }


def gpu_workload(node):
    """A ReplicaSet of one Pod that holds a GPU of ``node`` (the drain evicts only Pods with a controller)."""
    labels = {"app": f"gpu-{node}"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": f"gpu-{node}", "namespace": PODS_NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    # kwok's node taint only: the cordon's taint keeps the replacement off the drained node
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists"}],
                    "terminationGracePeriodSeconds": 1,
                    "containers": [
                        {
                            "name": "w",
                            "image": "registry.invalid/worker:1",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}},
                        }
                    ],
                },
            },
        },
    }


def running_on(core, node):
    pods = core.list_namespaced_pod(PODS_NS, label_selector=f"app=gpu-{node}").items
    return [p for p in pods if p.spec.node_name == node and p.status.phase == "Running"]


def device_class(name, driver):
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def node_state(api):
    from kubernetes import client

    core = client.CoreV1Api(api)
    return {n.metadata.name: n for n in core.list_node().items if n.metadata.name in NODES}


def test_the_nodes_move_to_dra_group_by_group_each_drained_first(cluster, tmp_path):
    api = cluster.api()
    classes = [device_class("test-migrate-gpu", "gpu.nvidia.com"), device_class("test-migrate-nic", "dra.net")]
    cluster.apply(classes + [gpu_workload(n) for n in NODES])
    try:
        from kubernetes import client

        core = client.CoreV1Api(api)
        wait_until(lambda: all(running_on(core, n) for n in NODES), "the GPU Pods run", timeout=120)
        nodes = [api.sanitize_for_serialization(n) for n in node_state(api).values()]
        moves = _migration.plan("dra", "gpufabric.io", NODES, {}, nodes, GROUPS, rails={n: True for n in NODES})
        assert sorted(moves) == NODES and all(m["switch"] for m in moves.values())
        batches = _migration.group_batches(GROUPS, NODES, 1)
        assert batches == [["gpu-node-02"], ["gpu-node-01"]]
        plan = {
            "pending": sorted(NODES),
            "nodes": {h: {"changes": [_migration.change_text(m)]} for h, m in moves.items()},
            "host_order": [h for b in batches for h in b],
            "batches": batches,
            "serial": [1, 1],
            "settings": {
                "gpufabric_upgrade_max_fail_percentage": 0,
                "gpufabric_upgrade_drain_timeout": 60,
                "gpufabric_upgrade_drain_retry_delay": 1,
                "gpufabric_upgrade_drain_grace_period": 1,
                "gpufabric_upgrade_allocation_timeout": 60,
            },
            "migration": {"target": "dra", "read": True, "nodes": moves, "cluster": True},
        }
        log = tmp_path / "seen.log"
        _first, add_host, batch, window, steps, final = upgrade_plays()
        setup = {
            "name": "Test: the plan as the plan role leaves it",
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {
                    "name": "Test: the upgrade plan",
                    "ansible.builtin.set_fact": {"gpufabric_upgrade_plan": plan, "cacheable": True},
                },
                add_host,
            ],
        }
        window["block"] = [*steps[:1], recorder(log), *steps[1:]]
        (tmp_path / "play.yml").write_text(yaml.safe_dump([setup, batch, final], sort_keys=False))
        (tmp_path / "tasks").symlink_to(REPO / "playbooks" / "tasks")  # upgrade.yml's task files, as beside it
        node_vars = {
            h: {
                "ansible_connection": "local",
                "gpufabric_node_plan": {"k8s_node_name": h, "upgrade": {"layers": [], "changes": [m["from"]]}},
            }
            for h, m in moves.items()
        }
        inventory = {
            "all": {
                "hosts": {
                    "localhost": {"ansible_connection": "local", "gpufabric_intent": {"gpufabric_k8s_mode": "apply"}},
                    **node_vars,
                },
                # the collection's least-privilege identity (docs/rbac/gpufabric-rollout.yaml)
                "vars": {"gpufabric_kubeconfig": str(cluster.kubeconfig), "ansible_python_interpreter": sys.executable},
            }
        }
        (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
        done = ansible_playbook(
            tmp_path,
            "-i",
            str(tmp_path / "inventory.yml"),
            str(tmp_path / "play.yml"),
            env={"ANSIBLE_COLLECTIONS_PATH": str(REPO / ".collections")},
            timeout=400,
        )
        said = " ".join(done.stdout.split())
        assert done.returncode == 0, said[-4000:]
        seen = [json.loads(line) for line in log.read_text().splitlines()]
        # Group by group: gpu-node-02's group first, one node per batch.
        assert [(s["host"], s["batch"]) for s in seen] == [
            ("gpu-node-02", ["gpu-node-02"]),
            ("gpu-node-01", ["gpu-node-01"]),
        ]
        # In gpu-node-02's window: it alone is cordoned, drained, and nothing is switched yet.
        assert seen[0]["cordoned"] == ["gpu-node-02"] and seen[0]["dra"] == [] and seen[0]["gpu_pod"] == 0
        # The cordon says why: the move, with the node's group.
        assert seen[0]["reason"] == "upgrade: device allocation device_plugin -> dra (node group a-first-group)"
        # In gpu-node-01's window: gpu-node-02 is done (uncordoned, dra); gpu-node-01 drained, not switched yet.
        assert seen[1]["cordoned"] == ["gpu-node-01"] and seen[1]["dra"] == ["gpu-node-02"] and seen[1]["gpu_pod"] == 0
        after = node_state(api)
        for name, node in after.items():
            assert node.metadata.labels[_migration.OPERATOR_LABEL] == "dra", name
            assert node.metadata.labels[OWN] == "dra", name
            assert not node.spec.unschedulable, name
        slices = api.sanitize_for_serialization(client.ResourceV1Api(api).list_resource_slice())["items"]
        published = {(s["spec"]["nodeName"], s["spec"]["driver"]) for s in slices}
        assert {(n, d) for n in NODES for d in ("gpu.nvidia.com", "dra.net")} <= published
        assert "device allocation dra: moved: gpu-node-01, gpu-node-02; not moved: none" in said, said[-3000:]
        assert "gpu-node-01: upgraded" in said and "gpu-node-02: upgraded" in said
        # The workloads came back once their node was uncordoned (the lab keeps nvidia.com/gpu advertised).
        wait_until(lambda: all(running_on(core, n) for n in NODES), "the GPU Pods run again", timeout=120)
    finally:
        # Leave the session cluster as the other tests expect it: no labels of the move, no classes, no Pods.
        # The ReplicaSets with their Pods (foreground: the GPUs they hold are free when this returns; deleting
        # the Pods alone would let the ReplicaSets start new ones, which kept a GPU of each node).
        cluster.kubectl(
            "delete",
            "replicaset",
            "-n",
            PODS_NS,
            *[f"gpu-{n}" for n in NODES],
            "--ignore-not-found",
            "--cascade=foreground",
            "--timeout=120s",
        )
        cluster.kubectl("delete", "deviceclass", "test-migrate-gpu", "test-migrate-nic", "--ignore-not-found")
        for name in NODES:
            cluster.kubectl("label", "node", name, f"{_migration.OPERATOR_LABEL}-", f"{OWN}-", check=False)
            cluster.kubectl("uncordon", name, check=False)
            cluster.kubectl("annotate", "node", name, *[f"rollout.gpufabric.io/{k}-" for k in WINDOW_KEYS], check=False)


@pytest.fixture(autouse=True)
def _collection_on_path():
    sys.path.insert(0, str(REPO / ".collections"))
    yield
