"""What blocks a drain (_drain.py, filter drain_blockers): the Pods left on the node and what holds them.

The Pod and PodDisruptionBudget shapes are those the API server returns (k8s.io/api core/v1 Pod,
policy/v1 PodDisruptionBudget), as kubernetes.core.k8s_info lists them."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.filter.upgrade import drain_blockers
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import drain as _drain

NODE = "gpu-node-01"


def pod(name, labels=None, owner="ReplicaSet", node=NODE, phase="Running", ns="ml", **extra):
    meta = {"name": name, "namespace": ns, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "x", "controller": True}]
    meta.update(extra.pop("meta", {}))
    out = {"metadata": meta, "spec": {"nodeName": node}, "status": {"phase": phase}}
    out["spec"].update(extra)
    return out


def pdb(name, selector, allowed=0, healthy=2, desired=2, ns="ml"):
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": selector},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": healthy, "desiredHealthy": desired},
    }


@pytest.mark.parametrize(
    "selector, labels, matches",
    [
        ({}, {"app": "db"}, True),
        (None, {}, True),
        ({"matchLabels": {"app": "db"}}, {"app": "db", "tier": "x"}, True),
        ({"matchLabels": {"app": "db"}}, {"app": "web"}, False),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db", "cache"]}]}, {"app": "cache"}, True),
        ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}, {}, False),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, {}, True),
        ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}, {"app": "db"}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}, {"gpu": ""}, True),
        ({"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}, {"gpu": ""}, False),
        ({"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]}, {"gpu": "2"}, False),
    ],
)
def test_label_selectors(selector, labels, matches):
    assert _drain.selector_matches(selector, labels) is matches


def test_a_budget_that_allows_no_disruption_is_named_with_its_counts():
    lines = _drain.blockers(
        [pod("db-0", {"app": "db"}, owner="StatefulSet")], [pdb("db", {"matchLabels": {"app": "db"}})], NODE
    )
    assert lines == ["ml/db-0 (Running): PodDisruptionBudget ml/db allows 0 disruption(s) (healthy 2 of 2 wanted)"]


def test_a_pod_whose_budget_allows_its_eviction_is_not_evicted_yet():
    # k8s_drain evicts one Pod after another and stops at the first refused eviction: a Pod after
    # it whose budget allows a disruption is still there, but not because of its budget.
    pods = [pod("db-0", {"app": "db"}, owner="StatefulSet"), pod("trainer-1", {"app": "trainer"})]
    budgets = [
        pdb("db", {"matchLabels": {"app": "db"}}),
        pdb("trainer", {"matchLabels": {"app": "trainer"}}, allowed=2, healthy=3, desired=1),
    ]
    assert _drain.blockers(pods, budgets, NODE) == [
        "ml/db-0 (Running): PodDisruptionBudget ml/db allows 0 disruption(s) (healthy 2 of 2 wanted)",
        "ml/trainer-1 (Running): PodDisruptionBudget ml/trainer allows 2 disruption(s) (healthy 3 of 1 wanted); "
        "not evicted yet",
    ]


def test_what_a_drain_does_not_wait_for_is_left_out():
    pods = [
        pod("agent-x", owner="DaemonSet"),
        pod("done", phase="Succeeded"),
        pod("elsewhere", node="gpu-node-02"),
        pod("static", owner=None, meta={"annotations": {"kubernetes.io/config.mirror": "abc"}}),
    ]
    assert _drain.blockers(pods, [pdb("all", {})], NODE) == []


def test_budgets_of_other_namespaces_do_not_cover_a_pod():
    lines = _drain.blockers([pod("t-1", {"app": "t"})], [pdb("t", {}, ns="other")], NODE)
    assert lines == ["ml/t-1 (Running): not evicted yet"]


def test_terminating_bare_and_emptydir_pods_say_why():
    pods = [
        pod("slow", meta={"deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30}),
        pod("bare", owner=None),
        pod("scratch", volumes=[{"name": "tmp", "emptyDir": {}}]),
    ]
    lines = _drain.blockers(pods, [], NODE)
    assert lines == [
        "ml/bare (Running): no controller: the drain deletes such a Pod only with force",
        "ml/scratch (Running): emptyDir data: the drain deletes it only with delete_emptydir_data",
        "ml/slow (Running): terminating (grace period 30s)",
    ]
    assert _drain.blockers(pods[1:], [], NODE, force=True, delete_emptydir_data=True) == [
        "ml/bare (Running): not evicted yet",
        "ml/scratch (Running): not evicted yet",
    ]


def test_the_filter_sums_up_and_cuts_long_lists():
    pods = [pod(f"w-{i:02d}", {"app": "w"}) for i in range(12)]
    result = drain_blockers(pods, [pdb("w", {"matchLabels": {"app": "w"}}, allowed=0, healthy=12, desired=12)], NODE)
    assert result["count"] == 12
    assert len(result["lines"]) == 11 and result["lines"][-1] == "... and 2 more Pod(s)"
    assert result["text"].startswith("ml/w-00 (Running): PodDisruptionBudget ml/w allows 0")
    assert drain_blockers([], [], NODE) == {"count": 0, "lines": [], "text": "no Pod left to evict"}
