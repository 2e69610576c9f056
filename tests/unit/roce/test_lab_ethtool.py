"""lab/simulators/ethtool: pause parameters kept in the hardware tree, ethtool's output layout
(as parsed by the roce_qos module), and refusals."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import qos as _qos_parsers

ETHTOOL = Path(__file__).resolve().parents[3] / "lab/simulators/ethtool"


@pytest.fixture
def sysroot(tmp_path):
    (tmp_path / "sys/class/net/enp24s0np0").mkdir(parents=True)
    return tmp_path


def ethtool(sysroot, *args):
    env = dict(os.environ, GPUFABRIC_LAB_SYSROOT=str(sysroot))
    return subprocess.run([sys.executable, str(ETHTOOL), *args], capture_output=True, text=True, env=env, check=False)


def test_power_on_pause_is_on_and_layout_matches_ethtool(sysroot):
    res = ethtool(sysroot, "-a", "enp24s0np0")
    assert res.returncode == 0
    assert res.stdout.splitlines()[:4] == [
        "Pause parameters for enp24s0np0:",
        "Autonegotiate:\toff",
        "RX:\t\ton",
        "TX:\t\ton",
    ]
    assert _qos_parsers.parse_ethtool_pause(res.stdout) == {"autoneg": False, "rx": True, "tx": True}


def test_set_then_read_back(sysroot):
    assert ethtool(sysroot, "-A", "enp24s0np0", "autoneg", "off", "rx", "off", "tx", "off").returncode == 0
    res = ethtool(sysroot, "--show-pause", "enp24s0np0")
    assert _qos_parsers.parse_ethtool_pause(res.stdout) == {"autoneg": False, "rx": False, "tx": False}
    assert (sysroot / "sys/class/net/enp24s0np0/lab_pause.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-a", "eth9"], "No such device"),
        (["-A", "enp24s0np0", "rx"], "bad command line"),
        (["-A", "enp24s0np0", "rx", "maybe"], "bad command line"),
        (["-A", "enp24s0np0", "speed", "off"], "bad command line"),
        (["-i", "enp24s0np0"], "only -a/--show-pause and -A/--pause"),
    ],
)
def test_refusals(sysroot, args, message):
    res = ethtool(sysroot, *args)
    assert res.returncode != 0
    assert message in res.stderr
    assert not (sysroot / "sys/class/net/enp24s0np0/lab_pause.json").exists()
