"""Measurement reuse: the fingerprints, the decision and the record the report module keeps."""

from __future__ import annotations

import copy
import json
import types

import pytest
from module_support import run_module
from validate_support import REPO, degrade, facts, load_file

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import reuse as _validate_reuse

PERFTEST = REPO / "tests/unit/validate/fixtures/perftest/write_bw_all_gbits_client.txt"
NOW = 1_800_000_000.0
INTENT = {"roce_mtu": 9000, "nccl_config_ib_tc": 106, "validate_rdma_fraction": 0.9}
CHECKS = [
    {"id": "host-a-mtu", "measured": 9000, "passed": True},
    {"id": "host-a-trust", "measured": "dscp", "passed": True},
]


@pytest.fixture(scope="module")
def topo(lab_nodes):
    return facts(lab_nodes["gpu-node-01"])


def fp(intent=None, topology=None, checks=None):
    return _validate_reuse.node_fingerprint(
        INTENT if intent is None else intent, topology or {"gpus": [], "nics": []}, CHECKS if checks is None else checks
    )


def record_text(nodes, options="opts", ok=True, at=NOW - 3600, runs=None):
    runs = runs if runs is not None else {"rdma": [{"node": "a", "peer": "b", "output": "x"}]}
    return _validate_reuse.record(nodes, options, runs, ok, at)


def decide(text, nodes, options="opts", hours=24, readback=True, readback_ok=True):
    return _validate_reuse.decide(text, nodes, options, hours, readback, readback_ok, now=NOW)


def test_the_fingerprint_follows_the_variables_the_readback_and_a_down_trained_link(lab_nodes):
    node = lab_nodes["gpu-node-01"]
    topology = facts(node)
    base = fp(topology=topology)
    assert fp(topology=copy.deepcopy(topology)) == base
    assert fp(topology=topology, checks=list(reversed(CHECKS))) == base, "the order of the checks does not matter"
    assert fp(intent=dict(INTENT, nccl_config_ib_tc=104), topology=topology) != base
    # The gates apply to reused runs; the measurement options have a fingerprint of their own.
    assert fp(intent=dict(INTENT, validate_rdma_fraction=0.5, validate_reuse_hours=1), topology=topology) == base
    assert fp(topology=topology, checks=[dict(CHECKS[0], measured=1500), CHECKS[1]]) != base
    assert fp(topology=topology, checks=[dict(CHECKS[0], passed=False), CHECKS[1]]) != base
    degrade(node, "mlx5_3", 8)
    try:
        assert fp(topology=facts(node)) != base, "a NIC trained down to x8 must be measured again"
    finally:
        degrade(node, "mlx5_3", 16)
    assert fp(topology=facts(node)) == base


def test_a_gpu_link_that_idles_at_a_lower_speed_keeps_the_fingerprint(topo):
    idle = copy.deepcopy(topo)
    assert idle["gpus"], "the lab snapshot has GPUs"
    for gpu in idle["gpus"]:
        gpu["pcie"]["current_speed"], gpu["pcie"]["current_speed_gts"] = "2.5 GT/s PCIe", 2.5
    assert fp(topology=idle) == fp(topology=topo)
    narrow = copy.deepcopy(topo)
    narrow["gpus"][0]["pcie"]["current_width"] = 8
    assert fp(topology=narrow) != fp(topology=topo)


def test_an_unchanged_run_reuses_the_records_runs():
    nodes = {"a": fp(), "b": fp(intent={})}
    out = decide(record_text(nodes), nodes)
    assert out["reuse"] is True
    assert out["runs"]["rdma"] == [{"node": "a", "peer": "b", "output": "x"}]
    assert out["runs"]["nccl"] == [] and out["runs"]["gds"] == [] and out["runs"]["probe"] == []
    assert out["measured"] == "2027-01-15 07:00 UTC"
    assert "nothing changed" in out["reason"]


@pytest.mark.parametrize(
    ("case", "change", "reason"),
    [
        ("hours 0", {"hours": 0}, "validate_reuse_hours is 0"),
        ("no read-back", {"readback": False}, "validate_readback is off"),
        ("read-back fails", {"readback_ok": False}, "a read-back check fails now"),
        ("options", {"options": "other"}, "measurement options"),
        ("too old", {"hours": 0.5}, "1.0 h old"),
    ],
)
def test_a_run_measures_again_and_says_why(case, change, reason):
    nodes = {"a": fp()}
    args = {"options": "opts", "hours": 24, "readback": True, "readback_ok": True}
    args.update(change)
    out = decide(record_text(nodes), nodes, **args)
    assert out["reuse"] is False, case
    assert reason in out["reason"], (case, out["reason"])
    assert out["runs"] == {"rdma": [], "nccl": [], "gds": [], "probe": []}


def test_a_changed_node_is_named():
    nodes = {"a": fp(), "b": fp()}
    now = dict(nodes, b=fp(intent={}))
    out = decide(record_text(nodes), now)
    assert (out["reuse"], out["reason"]) == (False, "variables, hardware or read-back changed on b")


def test_other_nodes_are_named_both_ways():
    out = decide(record_text({"a": "1", "b": "2"}), {"a": "1", "c": "3"})
    assert out["reuse"] is False
    assert out["reason"] == "the nodes differ from the last measurement's (new: c; not in this run: b)"


def test_a_failed_or_future_measurement_is_not_reused():
    nodes = {"a": fp()}
    assert "did not pass every check" in decide(record_text(nodes, ok=False), nodes)["reason"]
    assert "dated in the future" in decide(record_text(nodes, at=NOW + 60), nodes)["reason"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "no earlier measurement on record"),
        ("{not json", "cannot be read (not JSON"),
        (json.dumps({"format": 99}), "not a measurement record of format 1"),
        (json.dumps({"format": 1, "nodes": {}, "runs": {}}), "measured_at missing"),
        (json.dumps({"format": 1, "nodes": {}, "runs": {"rdma": "x"}, "measured_at": 1}), "runs are not lists"),
    ],
)
def test_no_or_an_unreadable_record_measures(text, reason):
    out = decide(text, {"a": "1"})
    assert out["reuse"] is False
    assert reason in out["reason"]


def module_args(tmp_path, topology, **extra):
    args = {
        "topology": {"a": topology, "b": topology},
        "rdma": [{"node": "a", "peer": "b", "device": "mlx5_0", "memory": "host", "output": PERFTEST.read_text()}],
        "host_links": False,
        "gates": {"rdma_fraction": 0.2},  # the fixture ran at 92 Gb/s on a 400 Gb/s port
        "text_path": str(tmp_path / "validation.txt"),
        "record_path": str(tmp_path / "record.json"),
        "record": {"nodes": {"a": "fa", "b": "fb"}, "options": "opts"},
    }
    args.update(extra)
    return args


def test_the_report_module_keeps_a_record_a_later_run_reuses(tmp_path, monkeypatch, capsys, topo):
    module = load_file("validate_report_reuse", REPO / "plugins/modules/validate_report.py")
    why = {"reused": False, "reason": "no earlier measurement on record"}
    rc, out = run_module(module, module_args(tmp_path, topo, measurement=why), monkeypatch, capsys)
    assert rc == 0 and out["record_written"] is True, out
    assert "Figures measured now (no earlier measurement on record)." in out["text"]
    text = (tmp_path / "record.json").read_text()
    later = _validate_reuse.decide(text, {"a": "fa", "b": "fb"}, "opts", 24, True, True)
    assert later["reuse"] is True, later["reason"]
    assert [r["output"] for r in later["runs"]["rdma"]] == [PERFTEST.read_text()]

    # The reused runs go through the gates again; the record is left as it was.
    reused = {"reused": True, "measured": later["measured"], "reason": later["reason"]}
    args = module_args(tmp_path, topo, rdma=later["runs"]["rdma"], measurement=reused)
    rc, again = run_module(module, args, monkeypatch, capsys)
    assert rc == 0 and again["record_written"] is False
    assert (tmp_path / "record.json").read_text() == text
    assert [c["measured"] for c in again["checks"]] == [c["measured"] for c in out["checks"]]
    assert again["measurement"].startswith(f"Figures reused from the measurement of {later['measured']}: nothing")
    assert again["measurement"] in (tmp_path / "validation.txt").read_text()


def test_a_check_mode_report_writes_no_record(tmp_path, monkeypatch, capsys, topo):
    module = load_file("validate_report_reuse_check", REPO / "plugins/modules/validate_report.py")
    rc, out = run_module(module, dict(module_args(tmp_path, topo), _ansible_check_mode=True), monkeypatch, capsys)
    assert rc == 0 and out["record_written"] is False
    assert not (tmp_path / "record.json").exists()


def test_the_report_draws_its_figures_once_for_the_same_checks(tmp_path, monkeypatch, capsys, topo):
    module = load_file("validate_report_figures", REPO / "plugins/modules/validate_report.py")
    # One clock for both runs: the report's minute must not tick over between them.
    monkeypatch.setattr(module, "time", types.SimpleNamespace(time=lambda: NOW))
    cache = tmp_path / "figures.json"
    args = module_args(tmp_path, topo, html_path=str(tmp_path / "report.html"), figures_cache=str(cache))
    rc, out = run_module(module, args, monkeypatch, capsys)
    assert rc == 0, out
    html = (tmp_path / "report.html").read_text()
    kept = json.loads(cache.read_text())
    assert [f["title"] for f in kept["figures"]] == ["RDMA bandwidth per rail and node pair"]

    # The same checks again: the figures come from the cache, matplotlib is not asked.
    def no_plots(*_args, **_kwargs):
        raise AssertionError("the figures were drawn again")

    monkeypatch.setattr(module._plots, "plots", no_plots)
    rc, out = run_module(module, args, monkeypatch, capsys)
    assert rc == 0, out
    assert (tmp_path / "report.html").read_text() == html

    # A run whose other checks differ (a first run has the NCCL Job's checks, a rerun that reuses
    # the measurement has not): the figures are the same, so they come from the cache.
    fake = type("Module", (), {"params": {"figures_cache": str(cache)}, "check_mode": False})()
    job = {
        "id": "nccl-job",
        "category": "nccl",
        "node": "gpu-node-01,gpu-node-02",
        "subject": "rail-job",
        "name": "Job completed",
        "measured": "Complete",
        "passed": True,
    }
    assert module.figures(fake, out["checks"] + [job], {"nccl": [], "allreduce": []}) == kept["figures"]

    # Other figures (a measured value that differs): drawn again, not taken from the cache.
    changed = [dict(c, measured=1.0) for c in out["checks"]]
    with pytest.raises(AssertionError, match="drawn again"):
        module.figures(fake, changed, {"nccl": [], "allreduce": []})


def test_an_unreadable_figures_cache_is_drawn_again_and_check_mode_keeps_none(tmp_path, monkeypatch, capsys, topo):
    module = load_file("validate_report_figures_bad", REPO / "plugins/modules/validate_report.py")
    cache = tmp_path / "figures.json"
    cache.write_text("{not json")
    args = module_args(tmp_path, topo, html_path=str(tmp_path / "report.html"), figures_cache=str(cache))
    rc, out = run_module(module, dict(args, _ansible_check_mode=True), monkeypatch, capsys)
    assert rc == 0, out
    assert cache.read_text() == "{not json", "check mode writes no cache"
    rc, out = run_module(module, args, monkeypatch, capsys)
    assert rc == 0, out
    assert json.loads(cache.read_text())["figures"]


def test_a_figures_cache_whose_png_is_not_a_png_is_drawn_again(tmp_path, monkeypatch, capsys, topo):
    """Issue 37 point 7: a cache with the right key but a ``png`` that is markup is not trusted."""
    module = load_file("validate_report_figures_tampered", REPO / "plugins/modules/validate_report.py")
    cache = tmp_path / "figures.json"
    args = module_args(tmp_path, topo, html_path=str(tmp_path / "report.html"), figures_cache=str(cache))
    rc, out = run_module(module, args, monkeypatch, capsys)
    assert rc == 0, out
    kept = json.loads(cache.read_text())
    kept["figures"][0]["png"] = 'x"><script>alert(1)</script>'
    cache.write_text(json.dumps(kept))
    rc, out = run_module(module, args, monkeypatch, capsys)
    assert rc == 0, out
    assert "<script>" not in (tmp_path / "report.html").read_text()
    assert "<script>" not in cache.read_text(), "the figures are drawn again and kept"
