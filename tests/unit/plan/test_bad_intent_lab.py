"""lab/bad_intent.py, which runs chosen cases of the bad-input suite through site.yml on the lab: its
cases exist, cover every group of variables, and keep their refusal once written as extra variables
(which replace a variable whole, so a case's mapping must be merged over the lab's value first)."""

from __future__ import annotations

import importlib.util

import pytest
from conftest import REPO, check, lab_intent

spec = importlib.util.spec_from_file_location("lab_bad_intent", REPO / "lab" / "bad_intent.py")
LAB = importlib.util.module_from_spec(spec)
spec.loader.exec_module(LAB)
SUITE = {case["id"]: case for case in LAB.yaml.safe_load(LAB.SUITE.read_text())}


def test_every_lab_case_is_in_the_suite_and_needs_no_changed_facts():
    assert len(LAB.CASES) == len(set(LAB.CASES))
    missing = [c for c in LAB.CASES if c not in SUITE]
    assert missing == []
    assert [c for c in LAB.CASES if not LAB.runnable(SUITE[c])] == []


def test_the_lab_cases_cover_both_scopes_typos_and_every_group_prefix():
    scopes = {SUITE[c]["scope"] for c in LAB.CASES}
    assert scopes == {"node", "cluster"}
    assert any("typo" in c for c in LAB.CASES)
    prefixes = {c.split("-")[0] for c in LAB.CASES}
    assert {"fabric", "roce", "doca", "rdma", "nccl", "rails", "k8s", "gpu", "validate", "storage"} <= prefixes


def test_a_mapping_is_merged_over_the_lab_value():
    lab = LAB.lab_vars()
    out = LAB.extra_vars(SUITE["fabric-typo-key"], lab)
    assert out["gpufabric_fabric"]["lossles_priority"] == 4
    assert {k: v for k, v in out["gpufabric_fabric"].items() if k != "lossles_priority"} == lab["gpufabric_fabric"]


def test_unset_removes_the_key_from_the_lab_value():
    case = {"id": "x", "scope": "node", "unset": ["gpufabric_fabric.mtu"], "expect": []}
    out = LAB.extra_vars(case, {"gpufabric_fabric": {"mtu": 9000, "ecn": True}})
    assert out == {"gpufabric_fabric": {"ecn": True}}


@pytest.mark.parametrize("case_id", LAB.CASES)
def test_each_lab_case_is_still_refused_as_extra_variables(specs, case_id):
    case = SUITE[case_id]
    variables = dict(lab_intent(), **LAB.extra_vars(case, LAB.lab_vars()))
    problems = check(specs, case["scope"], variables)[1]
    assert any(all(want in line for want in case["expect"]) for line in problems), problems


def test_a_recap_with_a_change_is_reported_per_host():
    log = "PLAY RECAP\nnode-a : ok=3 changed=0 unreachable=0 failed=1\nnode-b : ok=4 changed=2 unreachable=0 failed=0\n"
    assert LAB.changed_hosts(log) == ["node-b : ok=4 changed=2 unreachable=0 failed=0"]
