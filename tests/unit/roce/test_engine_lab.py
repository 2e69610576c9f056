"""The apply engine against the lab simulators on a real lab hardware tree, both backends.

Builds the dgx-h200-8x8 snapshot (lab/snapshots/build.py), adds the driver flavour's sysfs
(lab/hardware/nic_driver_sysfs.py), and runs read -> diff -> apply -> read back
through lab/simulators/{mlnx_qos,dcb,setpci,ethtool} as subprocesses, exactly as on a lab node.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from intent_support import roce_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import pcie_acs as _pcie_acs
from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import qos as _qos_parsers
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import ACS_REDIRECT_MASK
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import host as _host

pytestmark = pytest.mark.slow  # runs the simulators as subprocesses on a full snapshot tree

REPO = Path(__file__).resolve().parents[3]
SIMS = REPO / "lab" / "simulators"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SNAPSHOTS = _load("snapshots_build", REPO / "lab" / "snapshots" / "build.py")


def lab_topology(sysroot):
    """Contract-shaped NIC facts read from the tree (the part of topology_facts the plan uses)."""
    nics = []
    net = Path(sysroot, "sys/class/net")
    for i, name in enumerate(sorted(os.listdir(net), key=lambda n: os.path.realpath(net / n))):
        dev = net / name / "device"
        rdma = sorted(os.listdir(dev / "infiniband"))[0]
        nics.append(
            {
                "bdf": os.path.basename(os.path.realpath(dev)),
                "function": "pf",
                "netdevs": [name],
                "rdma_device": rdma,
                "ports": [{"port": 1, "netdev": name}],
                "role": "compute" if i < 8 else "storage",
                "rail": i if i < 8 else None,
            }
        )
    return {"nics": nics, "virtualized": False}


@pytest.fixture(scope="session")
def pristine(tmp_path_factory):
    """One snapshot per driver flavour for the session; each test gets a copy."""
    base = tmp_path_factory.mktemp("roce-pristine")
    trees = {}
    for flavour in ("mofed", "inbox"):
        trees[flavour] = str(base / flavour)
        SNAPSHOTS.materialize("dgx-h200-8x8@1", trees[flavour])
        subprocess.run(
            [sys.executable, str(REPO / "lab/hardware/nic_driver_sysfs.py"), flavour, trees[flavour]],
            check=True,
        )
    return trees


def make_lab(flavour, tmp_path, pristine):
    sysroot = str(tmp_path / "sysroot")
    shutil.copytree(pristine[flavour], sysroot, symlinks=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tools = ["dcb", "rdma", "setpci", "ethtool"] + (["mlnx_qos"] if flavour == "mofed" else [])
    for tool in tools:
        os.symlink(SIMS / tool, bindir / tool)
    runner = _host.Runner.local(
        path=f"{bindir}:{os.path.dirname(sys.executable)}", env={"GPUFABRIC_LAB_SYSROOT": sysroot}
    )
    io = _host.Host(_host.Sysroot(sysroot), runner)
    return flavour, io, lab_topology(sysroot)


@pytest.fixture(params=["mofed", "inbox"])
def lab(request, tmp_path, pristine):
    return make_lab(request.param, tmp_path, pristine)


@pytest.fixture
def mofed_lab(tmp_path, pristine):
    return make_lab("mofed", tmp_path, pristine)


def test_apply_is_honest_in_check_mode_then_idempotent(lab):
    flavour, io, topology = lab
    plan = roce_plan(topology, sysroot=io.sysroot.root)
    assert len(plan["interfaces"]) == 8
    ifaces = plan["interfaces"][:2]  # two rails keep the subprocess count (and the test time) down
    check = _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=True)
    assert check["backend"] == ("mlnx_qos" if flavour == "mofed" else "dcb")
    assert check["changed"] is True
    expected = {"dscp2prio", "global_pause", "pfc", "roce_mode", "roce_tos", "trust"}
    if flavour == "mofed":
        expected |= {"ecn", "traffic_class"}
    assert set(check["interfaces"][0]["changed_keys"]) == expected
    assert check["interfaces"][0]["actions"] == []

    first = _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=False)
    assert first["changed"] is True
    after = first["interfaces"][0]["after"]
    assert after["trust"] == "dscp" and after["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert after["dscp2prio"] == {"26": [3], "48": [6]}
    assert after["roce_tos"] == 106 and after["roce_mode"] == "RoCE v2"
    if flavour == "mofed":
        assert after["ecn"] == {"roce_np/3": 1, "roce_rp/3": 1} and after["traffic_class"] == 106
    else:
        assert "ecn" not in after and after["cnp_dscp"] == 48
        assert any("ROCE_CC_PRIO_MASK" in w for w in first["warnings"])
    assert first["interfaces"][0]["roce_active_mtu"] == 4096
    assert after["global_pause"] == {"rx": False, "tx": False}
    pause = _qos_parsers.parse_ethtool_pause(io.runner.check(["ethtool", "-a", first["interfaces"][0]["netdev"]]))
    assert pause == {"autoneg": False, "rx": False, "tx": False}

    second = _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=False)
    assert second["changed"] is False
    assert all(i["changed_keys"] == [] for i in second["interfaces"])


def test_check_mode_changes_nothing(lab):
    _flavour, io, topology = lab
    plan = roce_plan(topology, sysroot=io.sysroot.root)
    for _attempt in range(2):
        result = _qos_engine.run_plan_interfaces(plan["interfaces"][:1], "auto", io, check_mode=True)
        assert result["changed"] is True


def test_other_tool_reads_what_one_wrote(lab):
    flavour, io, topology = lab
    plan = roce_plan(topology, sysroot=io.sysroot.root)
    _qos_engine.run_plan_interfaces(plan["interfaces"][:1], "auto", io, check_mode=False)
    nd = plan["interfaces"][0]["netdev"]
    pfc = _qos_parsers.parse_dcb_pfc(io.runner.check(["dcb", "pfc", "show", "dev", nd]))
    assert pfc["pfc"] == [0, 0, 0, 1, 0, 0, 0, 0]
    app = _qos_parsers.parse_dcb_app(io.runner.check(["dcb", "-N", "app", "show", "dev", nd]))
    assert app["dscp2prio"][26] == [3] and app["trust"] == "dscp"
    if flavour == "mofed":
        assert Path(io.sysroot.path(f"sys/class/net/{nd}/qos/trust")).read_text().strip() == "dscp"


def test_drift_is_detected_and_repaired(lab):
    _flavour, io, topology = lab
    plan = roce_plan(topology, sysroot=io.sysroot.root)
    ifaces = plan["interfaces"][:2]
    _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=False)
    nd = ifaces[1]["netdev"]
    io.runner.check(["dcb", "pfc", "set", "dev", nd, "prio-pfc", "all:off", "4:on"])
    result = _qos_engine.run_plan_interfaces(ifaces, "auto", io, check_mode=False)
    assert result["changed"] is True
    lines = _qos_engine.drift_lines(result)
    assert lines == [f"drift {nd} pfc: [0, 0, 0, 0, 1, 0, 0, 0] -> [0, 0, 0, 1, 0, 0, 0, 0]"]


def test_optional_ets_buffers_cable_len_default_prio(lab):
    _flavour, io, topology = lab
    opts = {
        "ets": {
            "prio_tc": [0, 0, 0, 1, 0, 0, 2, 0],
            "tsa": ["ets", "ets"] + ["strict"] * 6,
            "tc_bw": [40, 60, 0, 0, 0, 0, 0, 0],
        },
        "buffer_size": [130944, 130944, 0, 0, 0, 0, 0, 0],
        "prio2buffer": [0, 0, 0, 1, 0, 0, 0, 0],
        "cable_len": 30,
        "default_priority": 0,
    }
    plan = roce_plan(topology, sysroot=io.sysroot.root, **opts)
    first = _qos_engine.run_plan_interfaces(plan["interfaces"][:1], "auto", io, check_mode=False)
    keys = set(first["interfaces"][0]["changed_keys"])
    assert {"ets", "buffer_size", "prio2buffer", "cable_len", "default_prio"} <= keys
    after = first["interfaces"][0]["after"]
    assert after["cable_len"] == 30 and after["ets"]["tc_bw"] == [40, 60, 0, 0, 0, 0, 0, 0]
    assert _qos_engine.run_plan_interfaces(plan["interfaces"][:1], "auto", io, check_mode=False)["changed"] is False


def test_pfc_change_keeps_cable_len(lab):
    """mlnx_qos sends PFC and cable length together; the engine must pass both."""
    _flavour, io, topology = lab
    plan = roce_plan(topology, sysroot=io.sysroot.root, cable_len=25)
    _qos_engine.run_plan_interfaces(plan["interfaces"][:1], "auto", io, check_mode=False)
    plan2 = roce_plan(topology, {"pfc": False}, sysroot=io.sysroot.root)
    _qos_engine.run_plan_interfaces(plan2["interfaces"][:1], "auto", io, check_mode=False)
    pfc = _qos_parsers.parse_dcb_pfc(io.runner.check(["dcb", "pfc", "show", "dev", plan["interfaces"][0]["netdev"]]))
    assert pfc["pfc"] == [0] * 8 and pfc["delay"] == 25


def test_acs_redirect_cleared_on_upstream_bridges(mofed_lab):
    _flavour, io, topology = mofed_lab
    endpoints = [n["bdf"] for n in topology["nics"] if n["role"] == "compute"][:2]
    bridges = _pcie_acs.upstream_bridges(io.sysroot, endpoints)
    assert bridges
    first = _pcie_acs.run_acs(bridges, ACS_REDIRECT_MASK, io.runner, check_mode=False)
    assert first["changed"] is True
    touched = [b for b in first["bridges"] if b.get("before") and b["before"] != b["after"]]
    assert touched and all(b["before"] == "001d" and b["after"] == "0011" for b in touched)
    assert not any(b.get("redirect") for b in first["bridges"])
    assert _pcie_acs.run_acs(bridges, ACS_REDIRECT_MASK, io.runner, check_mode=False)["changed"] is False


def _hide_acs(sysroot, bdf):
    """Give the bridge's ACS extended capability another ID, as on a bridge that has none."""
    path = Path(sysroot, "sys/bus/pci/devices", bdf, "config")
    cfg = bytearray(path.read_bytes())
    pos = 0x100
    while pos:
        header = int.from_bytes(cfg[pos : pos + 4], "little")
        if header & 0xFFFF == 0x0D:
            cfg[pos : pos + 2] = (0x0B).to_bytes(2, "little")
            path.write_bytes(bytes(cfg))
            return
        pos = (header >> 20) & 0xFFC
    raise AssertionError(f"{bdf} has no ACS capability to hide")


def test_acs_batched_over_the_setpci_simulator_skips_a_bridge_without_acs(mofed_lab):
    """One setpci call reads every bridge up to the next one without ACS (the simulator stops there,
    as setpci does): that bridge is reported as skipped, the bridges after it are still read and
    cleared, and the writes and their read-back are one call each."""
    _flavour, io, topology = mofed_lab
    endpoints = [n["bdf"] for n in topology["nics"] if n["role"] == "compute"]
    bridges = _pcie_acs.upstream_bridges(io.sysroot, endpoints)
    first = {b["bdf"]: b for b in _pcie_acs.run_acs(bridges, ACS_REDIRECT_MASK, io.runner, check_mode=True)["bridges"]}
    with_acs = [bdf for bdf in bridges if not first[bdf].get("skipped")]
    hidden = with_acs[0]
    _hide_acs(io.sysroot.root, hidden)
    calls = []
    runner = _host.Runner(run=lambda argv: calls.append(argv) or io.runner.run(argv), which=io.runner.which)
    out = {b["bdf"]: b for b in _pcie_acs.run_acs(bridges, ACS_REDIRECT_MASK, runner, check_mode=False)["bridges"]}
    assert "Extended capability 000d not found" in out[hidden]["skipped"]
    skipped = [bdf for bdf in bridges if out[bdf].get("skipped")]
    cleared = [bdf for bdf in bridges if bdf not in skipped]
    assert cleared and bridges.index(cleared[-1]) > bridges.index(hidden)
    assert all(not out[bdf]["redirect"] for bdf in cleared)
    assert any(out[bdf]["before"] != out[bdf]["after"] for bdf in cleared)
    reads = len(skipped) + (0 if bridges[-1] in skipped else 1)
    assert len(calls) == reads + 2, calls  # + one write, one read-back of the written bridges
    calls.clear()
    assert _pcie_acs.run_acs(bridges, ACS_REDIRECT_MASK, runner, check_mode=False)["changed"] is False
    assert len(calls) == reads


def test_backend_choice_follows_installed_tools(lab):
    flavour, io, _topology = lab
    if flavour == "mofed":
        assert _qos_engine.choose_backend("auto", io) == "mlnx_qos"
        assert _qos_engine.choose_backend("dcb", io) == "dcb"
    else:
        assert _qos_engine.choose_backend("auto", io) == "dcb"
        with pytest.raises(_qos_engine.QosError, match="mlnx_qos requested"):
            _qos_engine.choose_backend("mlnx_qos", io)


def install_engine(lib):
    """Lay the engine out as roles/roce/tasks/persist.yml does, from the list in roles/roce/vars."""
    role_vars = yaml.safe_load((REPO / "roles/roce/vars/main.yml").read_text())
    rel = Path("ansible_collections/gpufabric/rollout/plugins/module_utils")
    package = lib / rel
    package.mkdir(parents=True)
    for level in (rel, *rel.parents[:-1]):  # parents end with "."
        (lib / level / "__init__.py").write_text("")
    for name in role_vars["__roce_engine_files"]:
        (package / name).parent.mkdir(exist_ok=True)
        (package / name).parent.joinpath("__init__.py").touch()
        shutil.copy(REPO / "plugins/module_utils" / name, package / name)


def test_boot_script_reapplies_the_plan_and_logs_drift(mofed_lab, tmp_path):
    """roles/roce/files/roce_apply.py (what gpufabric-roce.service runs) on a plan file."""
    _flavour, io, topology = mofed_lab
    plan = roce_plan(dict(topology, rails=[]), sysroot=io.sysroot.root, disable_acs_redirect=True)
    plan["interfaces"] = plan["interfaces"][:2]
    plan["acs"]["endpoints"] = [n["bdf"] for n in topology["nics"]][:1]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    lib = tmp_path / "lib"
    install_engine(lib)
    env = dict(
        os.environ,
        GPUFABRIC_ROCE_LIB=str(lib),
        GPUFABRIC_ROCE_PATH=f"{tmp_path / 'bin'}:{os.path.dirname(sys.executable)}",
        GPUFABRIC_LAB_SYSROOT=io.sysroot.root,
    )
    script = str(REPO / "roles/roce/files/roce_apply.py")

    def boot(*args):
        return subprocess.run(
            [sys.executable, script, *args, str(plan_file)], capture_output=True, text=True, env=env, check=False
        )

    dry = boot("--check")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "2 interfaces via mlnx_qos, 2 would be re-applied" in dry.stdout
    first = boot()
    assert first.returncode == 0, first.stdout + first.stderr
    drift = [line for line in first.stdout.splitlines() if line.startswith("drift ")]
    assert any(line.startswith(f"drift {plan['interfaces'][0]['netdev']} trust: 'pcp' -> 'dscp'") for line in drift)
    assert any(line.startswith("drift acs ") and line.endswith("001d -> 0011") for line in drift)
    assert "2 interfaces via mlnx_qos, 2 re-applied" in first.stdout
    again = boot()
    assert again.returncode == 0 and "drift" not in again.stdout
    assert "0 re-applied" in again.stdout
