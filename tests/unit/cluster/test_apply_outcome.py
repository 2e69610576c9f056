"""What a server-side apply left behind, object by object (plugins/module_utils/apply/k8s_apply_outcome.py):
a field another manager holds is named with its manager and is never retried; transient answers are; the
failure message names each object; `take` lets conflicts through to be applied with force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_apply_outcome as outcome
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import k8s_retry

CONFLICT = json.loads(
    (Path(__file__).parent / "fixtures" / "apiserver" / "ssa-conflict-kubectl-patch.json").read_text()
)


def cm(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"x": name}}


def applied(*answers, listed=True):
    """What a looped kubernetes.core.k8s apply registers: one loop item with the list, or one per object."""
    objects = [cm(f"rail-{i}") for i in range(len(answers))]
    if listed:
        result = {"changed": False, "result": {"results": list(answers)}, "item": objects}
        return {"results": [result]}
    return {"results": [dict(answer, item=obj) for obj, answer in zip(objects, answers)]}


OK = {"changed": True, "method": "apply", "result": {}}


def refused(error):
    return {"changed": False, "result": {}, "error": error}


def test_the_api_servers_conflict_answer_names_the_field_and_its_manager():
    assert outcome.held_fields(CONFLICT) == [{"field": ".data.x", "manager": "kubectl-patch"}]


def test_several_fields_of_several_managers_are_each_named():
    body = {
        "kind": "Status",
        "code": 409,
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-edit" using v1',
                    "field": ".spec.a",
                },
                {"reason": "FieldManagerConflict", "message": 'conflict with "helm" using v1', "field": ".spec.b"},
            ]
        },
    }
    error = {"msg": "Failed to apply object: b'" + json.dumps(body) + "\\n'"}
    assert outcome.held_fields(error) == [
        {"field": ".spec.a", "manager": "kubectl-edit"},
        {"field": ".spec.b", "manager": "helm"},
    ]


def test_a_plain_409_or_another_refusal_is_no_conflict():
    assert outcome.held_fields({"msg": "(409) Operation cannot be fulfilled: the object has been modified"}) == []
    assert outcome.held_fields({"msg": 'Failed to apply object: {"kind":"Status","code":422,"message":"bad"}'}) == []


@pytest.mark.parametrize("listed", [True, False])
def test_conflicts_are_listed_per_object_with_the_definition_to_apply_again(listed):
    got = outcome.conflicts(applied(OK, refused(CONFLICT), OK, listed=listed))
    assert [(c["ref"], c["held"]) for c in got] == [
        ("ConfigMap/ns/rail-1", [{"field": ".data.x", "manager": "kubectl-patch"}])
    ]
    assert got[0]["definition"] == cm("rail-1")
    assert got[0]["text"] == '.data.x (held by field manager "kubectl-patch")'


def test_fail_mode_names_each_conflict_and_each_other_refusal_take_mode_only_the_others():
    registered = applied(OK, refused(CONFLICT), refused({"msg": "Failed to apply object: (422) spec.x: Invalid"}))
    lines = outcome.failures(registered, "fail")
    assert lines == [
        'ConfigMap/ns/rail-1: .data.x is held by field manager "kubectl-patch"',
        "ConfigMap/ns/rail-2: Failed to apply object: (422) spec.x: Invalid",
    ]
    assert "gpufabric_field_conflicts: take" in outcome.failure_message(lines, "rdma_networks", "fail")
    assert outcome.failures(registered, "take") == [
        "ConfigMap/ns/rail-2: Failed to apply object: (422) spec.x: Invalid"
    ]
    assert outcome.failures(applied(OK, OK), "fail") == []
    assert outcome.failures({"skipped": True}, "fail") == []


def test_an_unknown_mode_is_refused_naming_the_variable():
    with pytest.raises(outcome.OutcomeError, match="gpufabric_field_conflicts: 'tkae' is not one of fail, take"):
        outcome.failures(applied(OK), "tkae")


def test_a_conflict_is_never_retried_a_transient_answer_of_one_object_is():
    item = applied(OK, refused(CONFLICT))["results"][0]
    assert not outcome.transient(item)
    busy = refused({"msg": "Failed to apply object: (429) Too Many Requests", "reason": "Too Many Requests"})
    assert outcome.transient(applied(OK, busy)["results"][0])
    assert not outcome.transient(applied(OK, OK)["results"][0])
    # A whole task that failed with the conflict (no continue_on_error) is not retried either.
    assert not k8s_retry.transient(dict(CONFLICT, failed=True))
    assert k8s_retry.transient({"failed": True, "msg": "(503) Service Unavailable"})
