"""lab/run_lanes.py: lanes side by side, a status line while they run, and a failure summary that
names the lane, what failed in its log and where the log is."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("run_lanes", REPO / "lab" / "run_lanes.py")
run_lanes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_lanes)


def test_a_failed_lane_ends_the_output_with_what_failed_and_its_log(tmp_path):
    lines = []
    failing = "echo collecting; echo 'FAILED tests/unit/x.py::test_y - assert 1 == 2'; echo 'last words'; exit 3"
    rc = run_lanes.run(
        {"quick": "echo fine", "slow": "sleep 1.5; echo slow done", "units": failing},
        "t",
        0.4,
        lines.append,
        logs=tmp_path,
    )
    assert rc == 1
    text = "\n".join(lines)
    # A status line came while "slow" still ran, naming each lane's state.
    assert any(line.startswith("[t] ") and "slow running" in line for line in lines)
    assert "quick passed" in text and "slow passed" in text
    tail = lines[lines.index("== units failed (exit 3) after 0 s: " + failing) :]
    assert "     FAILED tests/unit/x.py::test_y - assert 1 == 2" in tail
    assert "     last words" in tail
    assert f"   full log: {tmp_path / 'units.log'}" in tail
    assert lines[-1].startswith("[t] FAILED: units ")
    assert (tmp_path / "slow.log").read_text() == "slow done\n"


def test_every_lane_passing_says_so_with_their_times(tmp_path):
    lines = []
    assert run_lanes.run({"a": "true", "b": "true"}, "t", 30, lines.append, logs=tmp_path) == 0
    assert lines[-1].startswith("[t] passed: ") and "a (0 s)" in lines[-1] and "b (0 s)" in lines[-1]


@pytest.mark.parametrize("bad", ["nolane", "Upper=true", "a=", "a=true a=true"])
def test_a_malformed_lane_is_refused(bad):
    with pytest.raises(SystemExit):
        run_lanes.parse(bad.split(" "))


def test_heartbeat_speaks_up_during_silence_and_keeps_stdout_and_status(tmp_path):
    import os
    import subprocess

    out = subprocess.run(
        [str(REPO / "lab" / "heartbeat.sh"), "hb", "bash", "-c", "echo result; echo start >&2; sleep 4; exit 7"],
        capture_output=True,
        text=True,
        env=dict(os.environ, HEARTBEAT_EVERY="2"),
        check=False,
    )
    assert out.returncode == 7
    assert out.stdout == "result\n"
    assert out.stderr.startswith("start\n")
    assert "[hb] ... still running after" in out.stderr
