"""A QoS apply that fails on the second NIC (its ``mlnx_qos --pfc`` exits non-zero) after the first
NIC was fully changed: the engine and the roce_qos module report, per interface, what was applied
before the failure, and changed=true (they reported changed=False, interfaces=[]).

The NICs are the lab's dgx-h200-8x8 tree with the lab's mlnx_qos simulator (test_engine_lab.py),
in front of which a wrapper fails ``--pfc`` for one netdev, as a firmware that refuses the PFC
command would."""

from __future__ import annotations

import json
import sys

import pytest
import test_engine_lab
from intent_support import roce_plan
from module_support import run_module
from test_engine_lab import SIMS, make_lab

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import host as _host
from ansible_collections.gpufabric.rollout.plugins.modules import roce_qos

pristine = test_engine_lab.pristine  # the session fixture, shared with the engine tests

pytestmark = pytest.mark.slow  # runs the simulators as subprocesses on a full snapshot tree

WRAPPER = """#!{python}
import os, sys
args = sys.argv[1:]
if "--pfc" in args and args[args.index("-i") + 1] == {netdev!r}:
    sys.stderr.write("Netlink error: Operation not supported (set PFC)\\n")
    sys.exit(1)
os.execv({sim!r}, [{sim!r}] + args)
"""


@pytest.fixture
def failing_second_nic(tmp_path, pristine):
    _flavour, io, topology = make_lab("mofed", tmp_path, pristine)
    ifaces = roce_plan(topology, sysroot=io.sysroot.root)["interfaces"][:3]
    tool = tmp_path / "bin" / "mlnx_qos"
    tool.unlink()
    tool.write_text(WRAPPER.format(python=sys.executable, netdev=ifaces[1]["netdev"], sim=str(SIMS / "mlnx_qos")))
    tool.chmod(0o755)
    return io, ifaces


def test_the_engine_reports_what_it_applied_before_the_failure(failing_second_nic):
    io, ifaces = failing_second_nic
    with pytest.raises(_qos_engine.PartialApply) as failed:
        _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=False)
    result = failed.value.result
    assert result["changed"] is True
    first, second = result["interfaces"]  # the third NIC is not touched
    assert not first.get("failed") and first["after"]["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0] and first["actions"]
    assert second["failed"] is True and second["netdev"] == ifaces[1]["netdev"]
    # trust and the DSCP map went in before the PFC call failed; the NIC says so
    assert [a.split()[3] for a in second["actions"]] == ["--trust", "--dscp2prio"]
    assert second["after"]["trust"] == "dscp" and second["after"]["pfc"] != [0, 0, 0, 1, 0, 0, 0, 0]
    assert "Operation not supported" in second["error"]
    message = str(failed.value)
    assert message.startswith(f"{ifaces[1]['netdev']}: applying the QoS plan failed after 2 of its step(s)")
    assert f"Fully applied before it: {ifaces[0]['netdev']}." in message


def test_the_module_fails_with_changed_and_the_interfaces(failing_second_nic, monkeypatch, capsys):
    io, ifaces = failing_second_nic
    args = {"interfaces": ifaces, "sysroot": io.sysroot.root, "backend": "auto"}
    monkeypatch.setattr(_host.Runner, "for_module", classmethod(lambda cls, _module: io.runner))
    code, out = run_module(roce_qos, args, monkeypatch, capsys)
    assert code == 1 and out["failed"] is True
    assert out["changed"] is True and out["failed_netdev"] == ifaces[1]["netdev"]
    assert [i["netdev"] for i in out["interfaces"]] == [ifaces[0]["netdev"], ifaces[1]["netdev"]]
    assert "Traceback" not in json.dumps(out)
