"""The check-mode comparison used by the lab scenarios (tests/integration/compare_changes.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "integration" / "compare_changes.py"
spec = importlib.util.spec_from_file_location("compare_changes", SCRIPT)
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def _log(tmp_path, records):
    path = tmp_path / "changes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def _r(check, task, changed, host="n1", role="roce"):
    return {"check": check, "host": host, "task": task, "role": role, "changed": changed}


def test_equal_predictions_pass(tmp_path, capsys):
    log = _log(tmp_path, [_r(True, "Apply", True), _r(True, "Read", False), _r(False, "Apply", True)])
    assert compare.main([log]) == 0
    assert "predicted 1 changed task results; the real run changed 1" in capsys.readouterr().out


def test_a_change_check_mode_missed_fails_and_is_named(tmp_path, capsys):
    log = _log(tmp_path, [_r(True, "Apply", True), _r(False, "Apply", True), _r(False, "Install", True, host="n2")])
    assert compare.main([log]) == 1
    assert "changed but check mode did not say so: n2: roce : Install" in capsys.readouterr().out


def test_a_prediction_that_did_not_happen_fails(tmp_path, capsys):
    log = _log(tmp_path, [_r(True, "Apply", True), _r(False, "Apply", False)])
    assert compare.main([log]) == 1
    assert "predicted but did not change: n1: roce : Apply" in capsys.readouterr().out


def test_ignored_tasks_and_a_missing_run(tmp_path):
    log = _log(tmp_path, [_r(True, "Apply", True), _r(False, "Apply", True), _r(False, "Report", True)])
    assert compare.main([log, "--ignore", "^roce : Report$"]) == 0
    assert compare.main([_log(tmp_path, [_r(False, "Apply", True)])]) == 2
