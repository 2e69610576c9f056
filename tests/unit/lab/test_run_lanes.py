"""lab/run_lanes.py: lanes side by side, a status line while they run, and a failure summary that
names the lane, what failed in its log and where the log is."""

from __future__ import annotations

import importlib.util
import os
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


def test_the_cpus_busy_share_is_read_from_proc_stat_without_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 0 100 0 0 0 0 0 0\ncpu0 50 0 0 50 0 0 0 0 0 0\n")
    lines = []
    # the lane moves the counters on: 150 ticks user, 50 system, 100 idle, 100 iowait since the start
    lane = f"printf 'cpu  250 0 50 200 100 0 0 0 0 0\\n' > {stat}"
    assert run_lanes.run({"a": lane}, "t", 30, lines.append, logs=tmp_path, stat=stat) == 0
    assert lines[-1].endswith(f"; the {os.cpu_count()} CPUs: 50 % busy, 25 % iowait"), lines[-1]


def test_an_unreadable_or_unchanged_proc_stat_says_it_does_not_know(tmp_path):
    assert run_lanes.cpu_times(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert run_lanes.cpu_times(tmp_path / "odd") is None
    assert run_lanes.busy(None, (1, 0, 2)) == "? busy" and run_lanes.busy((1, 0, 2), (1, 0, 2)) == "? busy"
    busy_ticks, iowait_ticks, total_ticks = run_lanes.cpu_times()  # this machine's (Linux)
    assert 0 < busy_ticks < total_ticks and 0 <= iowait_ticks < total_ticks
