"""The modules run on the oldest node Python the collection supports (NODE_PYTHON): a real module
run through Ansible's module transport, under that interpreter, returns what it returns under the
controller's. ansible-test's compile and import checks on that Python run in the support matrix
(tests/matrix/run.sh); this runs a module for real."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ANSIBLE = Path(sys.executable).parent / "ansible"
# The oldest Python on the nodes (tests/matrix/node-python.txt says why).
NODE_PYTHON = next(
    line.strip()
    for line in (REPO / "tests" / "matrix" / "node-python.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)


def node_python() -> str:
    """An interpreter of NODE_PYTHON: on PATH, else installed by pyenv."""
    pyenv = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{NODE_PYTHON}.*/bin/python{NODE_PYTHON}")))
    found = [shutil.which(f"python{NODE_PYTHON}"), *pyenv]
    for candidate in filter(None, found):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(int(x) for x in NODE_PYTHON.split("."))):
            return candidate
    if os.environ.get("CI") == "true":
        pytest.fail(f"no Python {NODE_PYTHON} on this CI machine (PATH or pyenv): the oldest node Python is untested")
    pytest.skip(f"no Python {NODE_PYTHON} here (PATH or pyenv); CI runs this with CI=true")


def run_module(interpreter: str, sysroot: str, tmp_path: Path) -> dict:
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "remote"),
    )
    out = subprocess.run(
        [
            str(ANSIBLE),
            "localhost",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={interpreter}",
            "-m",
            "gpufabric.rollout.topology_facts",
            "-a",
            json.dumps({"sysroot": sysroot}),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert not result.get("failed"), result
    return result


@pytest.mark.slow
def test_topology_facts_runs_the_same_on_the_oldest_node_python(sysroot, tmp_path):
    interpreter = node_python()
    root = sysroot("dgx-h200-8x8")
    old = run_module(interpreter, root, tmp_path)
    new = run_module(sys.executable, root, tmp_path)
    topology = old["ansible_facts"]["gpufabric_topology"]
    assert len(topology["gpus"]) == 8 and topology["nics"], topology.keys()
    assert topology == new["ansible_facts"]["gpufabric_topology"]
