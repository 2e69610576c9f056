"""Whether a server-side apply would change nothing (plugins/module_utils/apply/k8s_applied.py), so that
k8s_apply sends no PATCH on a no-op rerun: only when every field has its value and the field manager owns
exactly the applied fields; anything else (a value, a field added or dropped, a list element, another
manager's ownership, no managed fields) is sent to the API server.

The live objects are as the lab's API server returned them after gpufabric.rollout applied the planned
ones (fixtures/apiserver/ssa-applied-*.json: the object read back with its managedFields, and the object
applied)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_apply_outcome import FakeCluster, no_sleep_call

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_applied
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_apply_outcome as outcome

FIXTURES = Path(__file__).parent / "fixtures" / "apiserver"
MANAGER = "gpufabric-rollout"
CASES = sorted(p.name for p in FIXTURES.glob("ssa-applied-*.json"))


def case(name):
    data = json.loads((FIXTURES / name).read_text())
    return data["applied"], data["live"]


@pytest.mark.parametrize("name", CASES)
def test_the_object_as_applied_is_unchanged(name):
    applied, live = case(name)
    assert k8s_applied.unchanged(applied, live, MANAGER)


@pytest.mark.parametrize("name", CASES)
def test_another_manager_or_none_is_a_change(name):
    applied, live = case(name)
    assert not k8s_applied.unchanged(applied, live, "someone-else")
    bare = copy.deepcopy(live)
    bare["metadata"].pop("managedFields")
    assert not k8s_applied.unchanged(applied, bare, MANAGER)
    assert not k8s_applied.unchanged(applied, None, MANAGER)


def _leaves(obj, path=()):
    """Every scalar leaf of an object's spec/data/labels (where a value can change)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _leaves(value, (*path, index))
    else:
        yield path


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _drop(obj, path):
    for key in path[:-1]:
        obj = obj[key]
    del obj[path[-1]]


def _changeable(applied):
    return [
        p
        for p in _leaves(applied)
        if p[0] not in ("apiVersion", "kind") and p[:2] not in (("metadata", "name"), ("metadata", "namespace"))
    ]


@pytest.mark.parametrize("name", CASES)
def test_any_value_changed_is_a_change(name):
    applied, live = case(name)
    paths = _changeable(applied)
    assert paths
    for path in paths:
        changed = copy.deepcopy(applied)
        old = changed
        for key in path:
            old = old[key]
        _set(
            changed, path, f"{old}-changed" if isinstance(old, str) else ("x" if not isinstance(old, bool) else not old)
        )
        assert not k8s_applied.unchanged(changed, live, MANAGER), path


@pytest.mark.parametrize("name", CASES)
def test_a_field_dropped_or_added_is_a_change(name):
    applied, live = case(name)
    for path in _changeable(applied):
        dropped = copy.deepcopy(applied)
        _drop(dropped, path)
        assert not k8s_applied.unchanged(dropped, live, MANAGER), path
    added = copy.deepcopy(applied)
    added["metadata"].setdefault("labels", {})["gpufabric.io/new"] = "x"
    assert not k8s_applied.unchanged(added, live, MANAGER)
    live_edited = copy.deepcopy(live)  # a field the manager does not own, with the planned value
    live_edited["metadata"].setdefault("annotations", {})["example.com/note"] = "x"
    with_note = copy.deepcopy(applied)
    with_note["metadata"].setdefault("annotations", {})["example.com/note"] = "x"
    assert not k8s_applied.unchanged(with_note, live_edited, MANAGER)


def test_keyed_and_set_lists_follow_the_field_set():
    live = {
        "metadata": {
            "managedFields": [
                {
                    "manager": MANAGER,
                    "operation": "Apply",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:spec": {
                            "f:containers": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:image": {}}},
                            "f:finalizers": {'v:"x"': {}},
                            "f:args": {},
                        }
                    },
                }
            ]
        },
        "spec": {
            "containers": [
                {"name": "a", "image": "i:1", "imagePullPolicy": "IfNotPresent"},
                {"name": "b", "image": "o"},
            ],
            "finalizers": ["x", "y"],
            "args": [{"a": 1}],
        },
    }
    want = {"spec": {"containers": [{"name": "a", "image": "i:1"}], "finalizers": ["x"], "args": [{"a": 1}]}}
    assert k8s_applied.unchanged(want, live, MANAGER)
    for changed in (
        {"containers": [{"name": "a", "image": "i:2"}]},
        {"containers": [{"name": "a", "image": "i:1"}, {"name": "c", "image": "i"}]},
        {"containers": [{"name": "c", "image": "i:1"}]},
        {"finalizers": ["x", "z"]},
        {"finalizers": []},
        {"args": [{"a": 1}, {"a": 2}]},
        {"args": [{"a": 2}]},
    ):
        assert not k8s_applied.unchanged({"spec": dict(want["spec"], **changed)}, live, MANAGER), changed


@pytest.mark.parametrize("name", CASES)
def test_a_no_op_rerun_sends_no_patch_and_a_change_is_applied(name):
    """k8s_apply reads each object first: as the API server has it after the first apply, it is not applied
    again (the old code sent a PATCH for every object on every run)."""
    applied, live = case(name)
    cluster = FakeCluster()
    cluster.resources.get = lambda api_version, kind: type("R", (), {"namespaced": True, "kind": kind})()
    cluster.get = lambda resource, name, namespace: cluster.requests.append(("GET", name)) or copy.deepcopy(live)
    results = outcome.apply_all(cluster, [applied], MANAGER, "fail", False, 30, call=no_sleep_call)
    assert [r["changed"] for r in results] == [False] and not results[0]["error"]
    assert [r[0] for r in cluster.requests] == ["GET"]
    changed = copy.deepcopy(applied)
    changed["metadata"].setdefault("labels", {})["gpufabric.io/new"] = "x"
    cluster.requests.clear()
    outcome.apply_all(cluster, [changed], MANAGER, "fail", False, 30, call=no_sleep_call)
    assert [r[0] for r in cluster.requests] == ["GET", "PATCH"]
