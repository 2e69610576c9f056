"""lab/nodes.sh down: a node that podman fails to remove on the first try (it lost the race between
the node's own stop and the SIGKILL after the timeout) is removed by a second rm; a second failure
still fails the command.

The scripts run from a copy of lab/ in a temporary checkout (their state, .lab/, is written there,
not in this checkout's, and they lock their own file), with a stand-in `podman` first on the PATH
that logs each call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

PODMAN = """#!/bin/bash
# rm fails the first FAILS times, as podman does when a container's stop races its SIGKILL.
echo "$*" >> "$CALLS"
if [[ "$1" == rm ]]; then
    n=$(grep -c '^rm ' "$CALLS")
    if (( n <= FAILS )); then
        echo "Error: cannot remove container 1483 as it could not be stopped: container state improper: stopped" >&2
        exit 2
    fi
fi
exit 0
"""


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "lab").mkdir()
    for name in ("nodes.sh", "common.sh"):
        shutil.copy2(REPO / "lab" / name, tmp_path / "lab" / name)
    (tmp_path / "bin").mkdir()
    podman = tmp_path / "bin" / "podman"
    podman.write_text(PODMAN)
    podman.chmod(0o755)
    return tmp_path


def down(checkout, fails):
    calls = checkout / "calls"
    env = dict(
        os.environ,
        PATH=f"{checkout / 'bin'}:{os.environ['PATH']}",
        HOME=str(checkout),
        CALLS=str(calls),
        LAB_NODES_LOCK=str(checkout / "nodes.lock"),  # not the machine's lock, which a running lab holds
        FAILS=str(fails),
    )
    proc = subprocess.run(
        ["bash", str(checkout / "lab" / "nodes.sh"), "down", "node-a", "node-b"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    rms = [line for line in calls.read_text().splitlines() if line.startswith("rm ")]
    return proc, rms


def test_a_node_left_stopped_by_the_race_is_removed_by_a_second_rm(checkout):
    proc, rms = down(checkout, fails=1)
    assert proc.returncode == 0, proc.stderr
    assert rms == ["rm -f -t 2 node-a node-b", "rm -f -t 2 --ignore node-a node-b"]
    assert "removing what is left once more" in proc.stderr
    assert "removed node-a node-b" in proc.stderr


def test_one_rm_when_it_works_and_a_failing_second_rm_fails_down(checkout):
    proc, rms = down(checkout, fails=0)
    assert proc.returncode == 0 and rms == ["rm -f -t 2 node-a node-b"], proc.stderr
    (checkout / "calls").unlink()
    proc, rms = down(checkout, fails=2)
    assert proc.returncode != 0 and len(rms) == 2
    assert "removed" not in proc.stderr
