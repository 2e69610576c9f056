"""Server-side apply object by object (plugins/module_utils/apply/k8s_apply_outcome.py, the k8s_apply module's
core): a field another manager holds is named with its manager and never retried or forced unless asked; a
transient answer is retried per request within the bound; one refused object does not stop the others; the
failure names each object; a no-op apply is no change."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_apply_outcome as outcome
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry

# The error kubernetes.core recorded for a conflicting apply (its msg embeds the API server's Status).
CONFLICT = json.loads(
    (Path(__file__).parent / "fixtures" / "apiserver" / "ssa-conflict-kubectl-patch.json").read_text()
)
CONFLICT_BODY = CONFLICT["msg"][CONFLICT["msg"].index("{") :]


class ApiError(Exception):
    def __init__(self, status, body=""):
        super().__init__(f"({status})\nReason: {body[:60]}")
        self.status = status
        self.body = body
        self.headers = {}


def cm(name, x="planned"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"x": x}}


class FakeCluster:
    """A DynamicClient stand-in: objects by name; `faults[name]` a list of errors its applies raise in turn;
    `held[name]` a field manager holding .data.x with another value (a forced apply takes it)."""

    def __init__(self):
        self.objects, self.faults, self.held, self.requests = {}, {}, {}, []
        self.resources = SimpleNamespace(get=lambda api_version, kind: SimpleNamespace(namespaced=True, kind=kind))

    def get(self, resource, name, namespace):
        self.requests.append(("GET", name))
        if name not in self.objects:
            raise ApiError(404, "not found")
        return dict(self.objects[name], metadata=dict(self.objects[name]["metadata"], resourceVersion="7"))

    def server_side_apply(self, resource, body, force_conflicts, field_manager, namespace, name, dry_run=None):
        self.requests.append(("PATCH", name, force_conflicts, dry_run))
        if self.faults.get(name):
            raise self.faults[name].pop(0)
        if name in self.held and not force_conflicts:
            raise ApiError(409, CONFLICT_BODY)
        applied = json.loads(json.dumps(body))
        if not dry_run:
            self.objects[name] = applied
            self.held.pop(name, None)
        return dict(applied, metadata=dict(applied["metadata"], resourceVersion="8", managedFields=[{}]))


def no_sleep_call(func, what, max_total=60.0, **_kw):
    clock = {"now": 0.0}
    return k8s_retry.call(
        func, what, max_total, sleep=lambda s: clock.update(now=clock["now"] + s), clock=lambda: clock["now"]
    )


def apply(cluster, objects, mode="fail", dry_run=False, timeout=30):
    return outcome.apply_all(cluster, objects, "gpufabric-rollout", mode, dry_run, timeout, call=no_sleep_call)


def test_the_api_servers_conflict_answer_names_the_field_and_its_manager():
    assert outcome.held_fields(CONFLICT) == [{"field": ".data.x", "manager": "kubectl-patch"}]
    assert outcome.held_fields(ApiError(409, CONFLICT_BODY)) == [{"field": ".data.x", "manager": "kubectl-patch"}]
    assert (
        outcome.held_fields(ApiError(409, '{"kind":"Status","code":409,"message":"the object has been modified"}'))
        == []
    )


def test_new_objects_are_created_and_a_rerun_changes_nothing():
    cluster = FakeCluster()
    first = apply(cluster, [cm("a"), cm("b")])
    assert [(r["ref"], r["changed"], r["error"]) for r in first] == [
        ("ConfigMap/ns/a", True, None),
        ("ConfigMap/ns/b", True, None),
    ]
    again = apply(cluster, [cm("a"), cm("b")])
    assert [r["changed"] for r in again] == [False, False]
    assert outcome.failure_message(again, "nccl_config") == ""


def test_a_transient_answer_is_retried_for_that_object_only_and_converges():
    cluster = FakeCluster()
    cluster.faults["b"] = [ApiError(429), ApiError(503), ApiError(409, '{"message":"the object has been modified"}')]
    results = apply(cluster, [cm("a"), cm("b"), cm("c")])
    assert all(r["changed"] and not r["error"] for r in results)
    assert [req[1] for req in cluster.requests if req[0] == "PATCH"] == ["a", "b", "b", "b", "b", "c"]


def test_an_object_that_keeps_failing_is_named_after_the_bound_and_the_others_are_applied():
    cluster = FakeCluster()
    cluster.faults["b"] = [ApiError(503, "etcdserver: leader changed")] * 1000
    results = apply(cluster, [cm("a"), cm("b"), cm("c")], timeout=20)
    assert [r["ref"] for r in results if r["error"]] == ["ConfigMap/ns/b"]
    assert set(cluster.objects) == {"a", "c"}
    message = outcome.failure_message(results, "nccl_config")
    assert message.startswith("The API server did not take 1 object(s) of nccl_config: ConfigMap/ns/b: ")
    assert "kept refusing" in message and "leader changed" in message


def test_a_conflict_is_never_retried_or_forced_in_fail_mode_and_names_the_manager():
    cluster = FakeCluster()
    apply(cluster, [cm("a"), cm("b")])
    cluster.objects["a"]["data"]["x"] = "edited"
    cluster.held["a"] = "kubectl-patch"
    results = apply(cluster, [cm("a"), cm("b", "planned-2")])
    assert results[0]["conflict"] == [{"field": ".data.x", "manager": "kubectl-patch"}]
    assert cluster.objects["a"]["data"]["x"] == "edited" and cluster.objects["b"]["data"]["x"] == "planned-2"
    assert [req for req in cluster.requests if req[0] == "PATCH" and req[1] == "a"][-1][2] is False
    assert len([req for req in cluster.requests[-4:] if req[:2] == ("PATCH", "a")]) == 1, "a conflict was retried"
    message = outcome.failure_message(results, "rdma_networks")
    assert 'ConfigMap/ns/a: .data.x is held by field manager "kubectl-patch"' in message
    assert "gpufabric_field_conflicts: take" in message


def test_take_mode_applies_over_the_conflict_and_says_whose_field_it_took():
    cluster = FakeCluster()
    apply(cluster, [cm("a")])
    cluster.objects["a"]["data"]["x"] = "edited"
    cluster.held["a"] = "kubectl-patch"
    results = apply(cluster, [cm("a")], mode="take")
    assert results[0]["changed"] and not results[0]["error"] and not results[0]["conflict"]
    assert cluster.objects["a"]["data"]["x"] == "planned"
    assert outcome.taken_message(results) == ['ConfigMap/ns/a: took .data.x from field manager "kubectl-patch"']
    assert outcome.failure_message(results, "x") == ""


def test_check_mode_is_a_dry_run_that_reports_without_writing():
    cluster = FakeCluster()
    results = apply(cluster, [cm("a")], dry_run=True)
    assert results[0]["changed"] and cluster.objects == {}
    assert cluster.requests[-1] == ("PATCH", "a", False, "All")


@pytest.mark.parametrize(
    "objects, match",
    [
        ([{"kind": "ConfigMap", "metadata": {"name": "a"}}], "no apiVersion or kind"),
        ([{"apiVersion": "v1", "kind": "ConfigMap"}], "no metadata.name"),
    ],
)
def test_malformed_objects_are_refused_before_any_request(objects, match):
    cluster = FakeCluster()
    with pytest.raises(outcome.ApplyError, match=match):
        apply(cluster, objects)
    assert cluster.requests == []
    with pytest.raises(outcome.ApplyError, match="gpufabric_field_conflicts"):
        apply(cluster, [cm("a")], mode="tkae")


def test_a_conflict_is_not_retried_by_the_request_retry_nor_by_a_task_until():
    assert not k8s_retry.retryable(ApiError(409, CONFLICT_BODY))
    assert k8s_retry.retryable(ApiError(409, '{"message":"the object has been modified"}'))
    assert not k8s_retry.transient(dict(CONFLICT, failed=True))
    assert k8s_retry.transient({"failed": True, "msg": "(503) Service Unavailable"})
