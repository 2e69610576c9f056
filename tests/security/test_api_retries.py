"""API faults (plugins/module_utils/apply/k8s_retry.py): 429, 5xx, 409 and a lost connection are retried
with backoff within a bounded total, then fail naming the object; anything else fails at once. The
access check (plugins/modules/k8s_access.py) and the publish path (k8s_apply, its prune included) go
through it, and the roles' kubernetes.core tasks on the drain path retry the same answers
(k8s_transient) a bounded number of times."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry as _k8s_retry

REPO = Path(__file__).resolve().parents[2]


class ApiError(Exception):
    def __init__(self, status, text="", headers=None):
        super().__init__(f"({status})\nReason: {text}")
        self.status = status
        self.headers = headers or {}


class Clock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def flaky(answers):
    """A call that raises the given errors in turn, then returns "ok"."""
    answers = list(answers)

    def call():
        if answers:
            raise answers.pop(0)
        return "ok"

    return call


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 409])
def test_transient_answers_are_retried_with_backoff(status):
    clock = Clock()
    assert (
        _k8s_retry.call(
            flaky([ApiError(status)] * 3), "Node gpu-node-01", 60, sleep=clock.sleep, clock=lambda: clock.now
        )
        == "ok"
    )
    assert clock.sleeps == [0.5, 1.0, 2.0]


def test_retry_after_is_honoured_and_a_lost_connection_is_retried():
    clock = Clock()
    errors = [ApiError(429, "Too Many Requests", {"Retry-After": "4"}), ConnectionError("Connection refused")]
    assert _k8s_retry.call(flaky(errors), "x", 60, sleep=clock.sleep, clock=lambda: clock.now) == "ok"
    assert clock.sleeps == [4.0, 1.0]


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_answers_fail_at_once(status):
    clock = Clock()
    with pytest.raises(ApiError):
        _k8s_retry.call(flaky([ApiError(status)]), "x", 60, sleep=clock.sleep, clock=lambda: clock.now)
    assert clock.sleeps == []


def test_the_total_is_bounded_and_the_failure_names_the_object():
    clock = Clock()
    with pytest.raises(_k8s_retry.RetryError) as failed:
        _k8s_retry.call(
            flaky([ApiError(503, "etcd leader changed")] * 100),
            "NicClusterPolicy nic-cluster-policy",
            30,
            sleep=clock.sleep,
            clock=lambda: clock.now,
        )
    assert clock.now <= 30
    assert str(failed.value).startswith("NicClusterPolicy nic-cluster-policy: the API server kept refusing")
    assert "HTTP 503" in str(failed.value) and "etcd leader changed" in str(failed.value)


def test_the_access_check_retries_its_reviews():
    from ansible_collections.gpufabric.rollout.plugins.modules import k8s_access

    class Api:
        def __init__(self):
            self.calls = 0

        def request(self, method, path, body=None, content_type=None):
            self.calls += 1
            if self.calls < 3:
                raise ApiError(500, "Internal Server Error")
            return {"status": {"allowed": True}}

    class Client:
        client = Api()

    checks = [{"group": "", "resource": "nodes", "verb": "patch"}]
    assert k8s_access.denied(Client(), checks) == []
    assert Client.client.calls == 3


@pytest.mark.parametrize(
    "result, retry",
    [
        ({"failed": True, "status": 429, "msg": "Too Many Requests"}, True),
        ({"failed": True, "status": 409, "msg": "Conflict"}, True),
        ({"failed": True, "msg": "Failed to patch object: (503)\nReason: Service Unavailable"}, True),
        ({"failed": True, "msg": "Max retries exceeded with url: /api/v1/nodes (Connection refused)"}, True),
        ({"failed": True, "status": 422, "msg": "Unprocessable Entity"}, False),
        ({"failed": True, "msg": "Failed to patch object: (403)\nReason: Forbidden"}, False),
        ({"changed": False}, False),
        # A module that raised (kubernetes.core on an API error of its discovery): ansible-core 2.19+
        # give `until` no message, older cores the traceback in module_stderr.
        ({"failed": True, "exception": "(traceback unavailable)"}, True),
        ({"failed": True, "msg": "MODULE FAILURE", "module_stderr": "ServiceException: (503)\nReason: x"}, True),
        ({"failed": True, "msg": "MODULE FAILURE", "module_stderr": "ApiException: (403)\nReason: Forbidden"}, False),
        ({"failed": True, "exception": "Traceback", "msg": "Failed to apply object: (422)\nReason: Invalid"}, False),
    ],
)
def test_a_failed_kubernetes_core_result_is_read_the_same_way(result, retry):
    assert _k8s_retry.transient(result) is retry


def api_tasks(path):
    def walk(tasks):
        for task in tasks or []:
            if any(k in task for k in ("kubernetes.core.k8s", "kubernetes.core.k8s_info")):
                yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))

    return list(walk(yaml.safe_load(path.read_text())))


@pytest.mark.parametrize(
    "path",
    [
        "roles/node_maintenance/tasks/main.yml",
        "roles/node_maintenance/tasks/hold.yml",
        "roles/node_maintenance/tasks/uncordon.yml",
        "roles/node_maintenance/tasks/resolve.yml",
    ],
)
def test_the_publish_and_drain_paths_retry_transient_answers_a_bounded_number_of_times(path):
    unretried = []
    for task in api_tasks(REPO / path):
        until = str(task.get("until") or "")
        if "k8s_transient" not in until or not 0 < int(task.get("retries", 0)) * int(task.get("delay", 0)) <= 60:
            unretried.append(task["name"])
    assert unretried == [], f"{path}: kubernetes.core tasks without a bounded retry of transient answers"
    assert api_tasks(REPO / path)


def test_the_publish_path_applies_and_prunes_in_the_module_that_retries():
    """k8s_publish applies and prunes through gpufabric.rollout.k8s_apply, whose every request (the prune's
    listings and deletes included) goes through k8s_retry.call (tests/unit/cluster/test_k8s_prune.py); no
    kubernetes.core task of its own is left to retry."""
    path = REPO / "roles/k8s_publish/tasks/apply.yml"
    assert api_tasks(path) == [], "a kubernetes.core task on the publish path"
    publish = [t for t in yaml.safe_load(path.read_text()) if "gpufabric.rollout.k8s_apply" in t]
    assert len(publish) == 1
    args = publish[0]["gpufabric.rollout.k8s_apply"]
    assert "k8s_publish_prune_kinds" in args["prune_kinds"] and "k8s_publish_instance" in args["instance"]
    assert "k8s_publish_prune | bool" in args["prune_kinds"], "k8s_publish_prune: false prunes nothing"


@pytest.mark.parametrize(
    "path",
    [
        "roles/gpu_operator/tasks/apply.yml",
        "roles/storage_csi/tasks/apply.yml",
        "roles/network_operator/tasks/apply.yml",
        "roles/rdma_networks/tasks/apply.yml",
    ],
)
def test_nodes_are_labelled_by_the_module_that_retries_and_fails_on_a_missing_node(path):
    """kubernetes.core's state: patched only warns when the Node does not exist, and retries nothing:
    every role labels through gpufabric.rollout.node_labels, which retries transient answers and
    fails naming a missing Node (tests/unit/cluster/test_node_labels.py)."""
    tasks = yaml.safe_load((REPO / path).read_text())

    def walk(items):
        for task in items or []:
            yield task
            for key in ("block", "rescue", "always"):
                yield from walk(task.get(key))

    labelling = [t for t in walk(tasks) if "gpufabric.rollout.node_labels" in t]
    definitions = [(t.get("kubernetes.core.k8s") or {}).get("definition") for t in walk(tasks)]
    patched_nodes = [d for d in definitions if isinstance(d, dict) and d.get("kind") == "Node"]
    assert labelling and not patched_nodes, path
