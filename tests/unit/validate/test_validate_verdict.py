"""What the report claims (plugins/module_utils/proof/verdict.py): the gates that did not run and
why, the verdict's three states and the console's lines."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import gates as _gates
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof import verdict as _verdict

HOSTS = ["gpu-node-01", "gpu-node-02"]
FULL = {"hosts": HOSTS, "gds_filesystems": 1}


def ratio(node, measured, category="rdma"):
    return _gates._ratio_check(category, node, "mlx5_0", "rail 0 host memory", measured, 400.0, 0.9, "Gb/s")


def missing(**state):
    return [(m["category"], m["node"], m["reason"], m["required"]) for m in _verdict.not_run(dict(FULL, **state))]


def test_a_run_where_everything_ran_misses_nothing():
    assert missing() == []


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({"readback": False}, [("host", "all nodes", "switched off (validate_readback: false)", True)]),
        (
            {"cabling": False},
            [("cabling", "all nodes", "no leaves in gpufabric_switches: nothing to check against", False)],
        ),
        (
            {"switches": "no_source"},
            [
                (
                    "switches",
                    "cluster",
                    "no source for the leaves' running QoS (gpufabric_switch_export_dir, or gpufabric_switch_api_user "
                    "and gpufabric_switch_api_password); playbooks/fabric_check.yml checks it alone",
                    False,
                )
            ],
        ),
        ({"probe": False}, [("gpu", "all nodes", "switched off (validate_probe: false)", True)]),
        (
            {"probe_skipped": {"gpu-node-02": "no CUDA device is visible to PyTorch", "gpu-node-01": ""}},
            [("gpu", "gpu-node-02", "the probe could not run: no CUDA device is visible to PyTorch", True)],
        ),
        ({"rdma": False}, [("rdma", "all nodes", "switched off (validate_rdma: false)", True)]),
        ({"hosts": ["gpu-node-01"]}, [("rdma", "all nodes", "one node: perftest needs a peer", False)]),
        (
            {"gds_filesystems": 0},
            [("gds", "all nodes", "no GDS filesystem is set (validate_gds_filesystems)", False)],
        ),
        ({"check_mode": True}, [("gds", "all nodes", "check mode: gdsio writes files, so it does not run", True)]),
        ({"nccl": False}, [("nccl", "cluster", "switched off (validate_nccl: false)", True)]),
        (
            {"nccl_notes": ["gpufabric_k8s_mode is render: the NCCL Jobs need the cluster"]},
            [("nccl", "cluster", "gpufabric_k8s_mode is render: the NCCL Jobs need the cluster", True)],
        ),
    ],
)
def test_each_gate_that_did_not_run_is_named_with_its_reason(state, expected):
    assert missing(**state) == expected


def test_a_reused_measurement_is_not_a_gate_that_did_not_run():
    assert missing(reused=True, probe_skipped={"gpu-node-01": "no torch"}, nccl_notes=["render"]) == []
    assert missing(reused=True, readback=False)[0][0] == "host"


def test_the_verdict_says_ready_only_when_every_needed_gate_ran_and_passed():
    ok = [ratio("gpu-node-01", 390.0), ratio("gpu-node-02", 391.0)]
    ready = _verdict.verdict(ok, [])
    assert ready == {"state": "ready", "text": "READY FOR TRAINING: every gate passed (2 checks)."}
    optional = _verdict.not_run(dict(FULL, gds_filesystems=0))
    assert _verdict.verdict(ok, optional)["text"].endswith("; not part of this cluster: GPUDirect Storage (gdsio).")
    render = _verdict.not_run(dict(FULL, nccl_notes=["gpufabric_k8s_mode is render"]))
    unproven = _verdict.verdict(ok, render)
    assert unproven["state"] == "unproven" and "ready for training" not in unproven["text"].lower()
    assert unproven["text"] == (
        "NOT PROVEN: the 2 checks that ran passed, but 1 gate(s) that readiness needs did not run: "
        "NCCL all-reduce across nodes (cluster)."
    )
    assert _verdict.verdict([], [])["state"] == "unproven", "no check at all proves nothing"
    assert _verdict.verdict(ok, [], prediction=True)["state"] == "unproven"
    failed = _verdict.verdict([*ok, ratio("gpu-node-02", 231.0)], render)
    assert failed["text"] == "FAILED: 1 of 3 checks failed, and 1 gate(s) did not run; the cluster is not proven ready."


def test_rows_count_checks_and_gates_not_run_by_layer_and_node_in_the_layers_order():
    checks = [ratio("gpu-node-02", 231.0), ratio("gpu-node-01", 390.0), ratio("gpu-node-01", 45.0, "gds")]
    rows = _verdict.rows(checks, _verdict.not_run(dict(FULL, nccl=False)))
    assert [(r["category"], r["node"], r["checks"], r["passed"], r["failed"], r["not_run"]) for r in rows] == [
        ("rdma", "gpu-node-01", 1, 1, 0, 0),
        ("rdma", "gpu-node-02", 1, 0, 1, 0),
        ("nccl", "cluster", 0, 0, 0, 1),
        ("gds", "gpu-node-01", 1, 0, 1, 0),
    ]


def test_the_console_has_a_line_per_layer_and_node_every_failure_and_passes_only_when_verbose():
    checks = [ratio("gpu-node-01", 390.0), ratio("gpu-node-02", 231.0)]
    gone = _verdict.not_run(dict(FULL, probe=False))
    lines = _verdict.console(checks, gone, _gates.describe, ["/r/validation.html"])
    assert lines == [
        "FAILED: 1 of 2 checks failed, and 1 gate(s) did not run; the cluster is not proven ready.",
        "  rdma gpu-node-01: 1 checks, 1 passed, 0 failed",
        "  rdma gpu-node-02: 1 checks, 0 passed, 1 failed",
        "  gpu all nodes: 0 checks, 0 passed, 0 failed, 1 not run",
        _gates.describe(checks[1]),
        "NOT RUN gpu all nodes: GPU probe: switched off (validate_probe: false)",
        "Report: /r/validation.html",
    ]
    verbose = _verdict.console(checks, gone, _gates.describe, [], verbose=True)
    assert verbose[-1] == _gates.describe(checks[0]) and verbose[-1].startswith("PASS ")


def test_a_not_run_record_without_a_reason_or_of_an_unknown_layer_is_refused():
    with pytest.raises(ValueError, match="must be a mapping with category, node and reason"):
        _verdict.check_not_run([{"category": "nccl", "node": "cluster"}])
    with pytest.raises(
        ValueError, match="unknown category 'storage'; allowed: host, cabling, switches, rdma, nccl, gds, gpu"
    ):
        _verdict.check_not_run([{"category": "storage", "node": "n", "reason": "r"}])
