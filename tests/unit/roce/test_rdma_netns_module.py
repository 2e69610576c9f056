"""rdma_netns run as Ansible runs a module, against the lab's rdma simulator (lab/simulators/rdma) on a
temporary hardware tree: both modes, check mode, the ib_core option for the next boot, idempotence.
The lab scenario (molecule/host_layer) runs one fabric, in shared mode; the exclusive mode (what
SR-IOV with rdma-cni needs) is proven here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "plugins" / "modules" / "rdma_netns.py"
PARAM = "sys/module/ib_core/parameters/netns_mode"


@pytest.fixture
def lab(tmp_path):
    """A hardware tree whose ib_core was loaded in shared mode, and a PATH whose rdma is the simulator."""
    sysroot = tmp_path / "sysroot"
    (sysroot / PARAM).parent.mkdir(parents=True)
    (sysroot / PARAM).write_text("Y\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "rdma").symlink_to(REPO / "lab" / "simulators" / "rdma")
    env = dict(
        os.environ,
        GPUFABRIC_LAB_SYSROOT=str(sysroot),
        PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
        PYTHONPATH=os.pathsep.join([str(REPO / ".collections"), *sys.path]),
    )
    return tmp_path, sysroot, env


def run_module(lab, mode, check=False):
    tmp_path, _sysroot, env = lab
    payload = {"mode": mode, "modprobe_conf": str(tmp_path / "modprobe.d" / "gpufabric-ib_core.conf")}
    if check:
        payload["_ansible_check_mode"] = True
    argfile = tmp_path / "args.json"
    argfile.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": payload}))
    proc = subprocess.run(
        [sys.executable, str(MODULE), str(argfile)], capture_output=True, text=True, env=env, check=False
    )
    return json.loads(proc.stdout)


def rdma_show(lab):
    _tmp, _sysroot, env = lab
    return subprocess.run(["rdma", "system", "show"], capture_output=True, text=True, env=env, check=True).stdout


@pytest.mark.parametrize(("mode", "value", "param"), [("exclusive", "0", "N"), ("shared", "1", "Y")])
def test_the_mode_is_set_now_and_for_the_next_boot(lab, mode, value, param):
    tmp_path, sysroot, _env = lab
    conf = tmp_path / "modprobe.d" / "gpufabric-ib_core.conf"
    checked = run_module(lab, mode, check=True)
    assert checked["changed"] is True, "the option file does not exist yet"
    assert checked["runtime_after"] == mode
    assert not conf.exists(), "check mode wrote the option file"
    assert (sysroot / PARAM).read_text().strip() == "Y", "check mode changed the runtime mode"

    done = run_module(lab, mode)
    assert done["changed"] is True
    assert done["runtime_before"] == "shared" and done["runtime_after"] == mode
    assert f"netns {mode} " in rdma_show(lab)
    assert (sysroot / PARAM).read_text().strip() == param
    assert f"options ib_core netns_mode={value}\n" in conf.read_text()
    assert oct(conf.stat().st_mode & 0o777) == "0o644"

    again = run_module(lab, mode)
    assert again["changed"] is False, again
    assert run_module(lab, mode, check=True)["changed"] is False


def test_a_mode_changed_behind_its_back_is_set_again(lab):
    _tmp, sysroot, _env = lab
    run_module(lab, "exclusive")
    (sysroot / PARAM).write_text("Y\n")  # e.g. ib_core reloaded without the option
    result = run_module(lab, "exclusive")
    assert result["changed"] is True
    assert result["runtime_before"] == "shared" and result["runtime_after"] == "exclusive"
    assert "netns exclusive " in rdma_show(lab)
