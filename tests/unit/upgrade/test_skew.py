"""The version-skew rules (roles/plan/files/version_skew.yml) and their application (_skew.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import skew as _skew

REPO = Path(__file__).resolve().parents[3]
RULES_FILE = REPO / "roles" / "plan" / "files" / "version_skew.yml"


@pytest.fixture(scope="module")
def raw():
    return yaml.safe_load(RULES_FILE.read_text())


@pytest.fixture(scope="module")
def rules(raw):
    return _skew.load(raw)


def record(version, managed_by="host"):
    return {"gpu": {"driver": {"version": version, "managed_by": managed_by}}}


def test_the_shipped_rules_load_and_name_their_sources(rules):
    assert "life-cycle-policy.rst" in rules["gpu_operator"]["source"]
    assert "life-cycle-management.rst" in rules["network_operator"]["source"]
    order = _skew.layer_order(rules)
    assert [i["layer"] for i in order["host"]][:3] == ["doca_ofed", "gpu_driver", "nvidia_peermem"]
    assert [i["layer"] for i in order["cluster"]] == ["network_operator", "gpu_operator"]
    assert all(i["why"] for part in order.values() for i in part)


def test_the_roles_defaults_are_in_the_tables(rules):
    """The charts the collection pins by default are releases the rules know (else nothing is checked)."""
    gpu = yaml.safe_load((REPO / "roles" / "gpu_operator" / "defaults" / "main.yml").read_text())
    net = yaml.safe_load((REPO / "roles" / "network_operator" / "defaults" / "main.yml").read_text())
    assert _skew.major(gpu["gpu_operator_chart_version"]) in rules["gpu_operator"]["driver_branches"]
    assert _skew.major(net["network_operator_chart_version"]) in rules["network_operator"]["majors"]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["order"]["host"].reverse(), "order.host must list"),
        (lambda d: d["order"]["cluster"][0].update(why=""), "has no reason"),
        (lambda d: d["gpu_operator"].update(source=""), "gpu_operator needs a source"),
        (lambda d: d["network_operator"]["majors"].reverse(), "not in release order"),
        (lambda d: d["gpu_operator"]["majors"].append("v27"), "must list YY.MM"),
        (lambda d: d["gpu_operator"]["driver_branches"].update({"99.1": [580]}), "unknown major or empty list"),
        (lambda d: d["gpu_operator"]["driver_branches"].update({"26.7": ["580"]}), "branches are integers"),
        (
            lambda d: d["gpu_operator"]["network_operators_validated"].update({"26.7": ["19.1"]}),
            "are not network_operator.majors",
        ),
    ],
)
def test_malformed_rules_are_refused(raw, change, message):
    data = copy.deepcopy(raw)
    change(data)
    with pytest.raises(_skew.SkewError, match=message):
        _skew.load(data)


@pytest.mark.parametrize(
    "text, major", [("v26.7.0", "26.7"), ("25.10.1", "25.10"), ("v24.9.2-rc.1", "24.9"), ("latest", None), ("", None)]
)
def test_major(text, major):
    assert _skew.major(text) == major


@pytest.mark.parametrize("text, branch", [("580.95.05", 580), ("610.57.04", 610), ("58.1", None), (None, None)])
def test_branch(text, branch):
    assert _skew.branch(text) == branch


@pytest.mark.parametrize(
    "component, current, target, refused, noted",
    [
        ("gpu_operator", "v26.3.2", "v26.3.3", False, False),  # within a major
        ("gpu_operator", "v26.3.2", "v26.7.0", False, False),  # to the next one
        ("gpu_operator", "v25.3.4", "v26.7.0", True, False),  # skips 25.10 and 26.3
        ("gpu_operator", "v26.7.0", "v25.10.1", False, True),  # downgrade: not documented, noted
        ("gpu_operator", "v23.9.0", "v99.1.0", False, True),  # unknown release: not judged
        ("network_operator", "25.7.0", "25.10.0", False, False),
        ("network_operator", "25.4.0", "26.1.0", True, False),
        ("network_operator", None, "25.10.0", False, False),  # not installed yet: an install, no path
        ("network_operator", "26.1.2", "26.4.1", False, False),
        ("network_operator", "25.10.0", "26.4.1", True, False),  # skips 26.1
    ],
)
def test_upgrade_paths(rules, component, current, target, refused, noted):
    problems, notes = _skew.upgrade_path(component, f"{component}_chart_version", current, target, rules)
    assert bool(problems) == refused
    assert bool(notes) == noted
    if refused:
        assert f"{component}_chart_version: {target}" in problems[0]
        assert "first" in problems[0]


def test_a_skipped_major_names_the_release_to_go_to_first(rules):
    problems = _skew.upgrade_path("gpu_operator", "gpu_operator_chart_version", "v25.3.4", "v26.7.0", rules)[0]
    assert "skips 25.10, 26.3" in problems[0]
    assert "upgrade to a 25.10.x release first" in problems[0]


def test_an_operator_driver_outside_the_matrix_is_refused(rules):
    values = {"gpu_operator_chart_version": "v26.7.0", "network_operator_chart_version": "25.10.0"}
    records = {
        "n1": record("575.57.08", "operator"),
        "n2": record("575.57.08", "operator"),
        "n3": record("580.95.05", "operator"),
    }
    problems, notes = _skew.target_set(values, records, rules)
    assert len(problems) == 1
    assert "575.57.08 (branch 575) on n1, n2" in problems[0]
    assert "610, 595, 580, 535" in problems[0]
    assert notes == []


def test_a_host_driver_outside_the_matrix_only_warns(rules):
    values = {"gpu_operator_chart_version": "v26.7.0"}
    problems, notes = _skew.target_set(values, {"n1": record("575.57.08", "host")}, rules)
    assert problems == []
    assert "not validated" in notes[0]


def test_the_operators_not_validated_together_warn(rules):
    values = {"gpu_operator_chart_version": "v25.10.1", "network_operator_chart_version": "26.1.0"}
    problems, notes = _skew.target_set(values, {"n1": record("580.95.05")}, rules)
    assert problems == []
    assert notes and "network_operator_chart_version: 26.1.0" in notes[0] and "(25.7)" in notes[0]


def test_unknown_gpu_operator_release_is_said_to_be_unchecked(rules):
    problems, notes = _skew.target_set(
        {"gpu_operator_chart_version": "v27.1.0"}, {"n1": record("100.1.1", "operator")}, rules
    )
    assert problems == []
    assert "not in the skew table" in notes[0]


def test_charts_the_collection_does_not_install_are_not_judged(rules):
    values = {"gpu_operator_chart_version": "v26.7.0", "gpu_operator_install_chart": False}
    assert _skew.target_set(values, {"n1": record("575.57.08", "operator")}, rules) == ([], [])


def test_the_lab_targets_fit(rules):
    values = {"gpu_operator_chart_version": "v26.7.0", "network_operator_chart_version": "25.10.0"}
    assert _skew.target_set(values, {"n1": record("580.95.05"), "n2": record("580.105.08")}, rules) == ([], [])


def test_the_default_network_operator_is_not_yet_validated_by_the_gpu_operator(rules):
    """The GPU Operator v26.7 documentation validates GPUDirect RDMA with Network Operator 26.1, 25.10 and
    25.7; the default 26.4.1 is newer than that list, which the plan says (a note, not a refusal)."""
    values = {"gpu_operator_chart_version": "v26.7.0", "network_operator_chart_version": "26.4.1"}
    problems, notes = _skew.target_set(values, {"n1": record("580.95.05")}, rules)
    assert problems == []
    assert len(notes) == 1
    assert "network_operator_chart_version: 26.4.1" in notes[0] and "(26.1, 25.10, 25.7)" in notes[0]
