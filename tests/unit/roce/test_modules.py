"""roce_qos, pcie_acs and rdma_netns as modules: malformed tool output fails with one message
naming the tool call, the device and the offending line (never a traceback); pcie_acs and
rdma_netns on small fixture trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

from module_support import fake_runner, run_module

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.modules import pcie_acs, rdma_netns, roce_qos

FIXTURES = Path(__file__).parent / "fixtures"
ND = "ens1f0np0"
IFACE = {"netdev": ND, "pfc": [0, 0, 0, 1, 0, 0, 0, 0], "mtu": 9000, "dscp2prio": {"26": 3}}


def _no_traceback(out):
    assert out["failed"] is True
    assert "Traceback" not in json.dumps(out)


def test_roce_qos_names_tool_netdev_and_line_of_bad_mlnx_qos_output(tmp_path, monkeypatch, capsys):
    text = (FIXTURES / "mlnx_qos/fw_ets_two_pfc_buffers.txt").read_text().replace("tc: 3 ", "tc: 9 ")
    runner = fake_runner({("mlnx_qos", "-i", ND, "-a"): text})
    args = {"interfaces": [IFACE], "sysroot": str(tmp_path)}
    code, out = run_module(roce_qos, args, monkeypatch, capsys, runner)
    assert code == 1
    _no_traceback(out)
    lineno = text.splitlines().index("tc: 9 ratelimit: 25.0 Gbps, tsa: ets, bw: 70%") + 1
    assert out["msg"] == (
        f"mlnx_qos -i {ND} -a: TC: 9 is out of range 0..7 "
        f"(line {lineno}: 'tc: 9 ratelimit: 25.0 Gbps, tsa: ets, bw: 70%')"
    )


def test_roce_qos_names_tool_netdev_and_line_of_bad_dcb_output(tmp_path, monkeypatch, capsys):
    runner = fake_runner(
        {
            ("dcb", "-N", "app", "show", "dev", ND): (FIXTURES / "dcb/app_roce.txt").read_text(),
            (
                "dcb",
                "pfc",
                "show",
                "dev",
                ND,
            ): "pfc-cap 8 macsec-bypass off delay 7\nprio-pfc 0:off 1:off 2:off 3:maybe\n",
        }
    )
    args = {"interfaces": [IFACE], "sysroot": str(tmp_path), "backend": "dcb"}
    code, out = run_module(roce_qos, args, monkeypatch, capsys, runner)
    assert code == 1
    _no_traceback(out)
    assert out["msg"] == (
        f"dcb pfc show dev {ND}: prio-pfc: expected on/off, got 'maybe' (line 2: 'prio-pfc 0:off 1:off 2:off 3:maybe')"
    )


def _pci_tree(root):
    """An endpoint 0000:17:00.0 below root port 0000:15:01.0 and switch port 0000:16:00.0."""
    dev = root / "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0"
    dev.mkdir(parents=True)
    (root / "sys/bus/pci/devices").mkdir(parents=True)
    (root / "sys/bus/pci/devices/0000:17:00.0").symlink_to(
        "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0"
    )
    return str(root)


ACS = "ECAP_ACS+0x6.w"


BOTH = ("setpci", "-s", "0000:15:01.0", ACS, "-s", "0000:16:00.0", ACS)


def test_pcie_acs_reads_the_bridges_above_an_endpoint_in_check_mode(tmp_path, monkeypatch, capsys):
    calls = []
    runner = fake_runner({BOTH: "001d\n0011\n"}, calls)
    args = {"endpoints": ["0000:17:00.0"], "sysroot": _pci_tree(tmp_path), "_ansible_check_mode": True}
    code, out = run_module(pcie_acs, args, monkeypatch, capsys, runner)
    assert code == 0, out
    assert out["changed"] is True
    assert out["bridges"] == [
        {"bdf": "0000:15:01.0", "before": "001d", "after": "0011", "redirect": False},
        {"bdf": "0000:16:00.0", "before": "0011", "after": "0011", "redirect": False},
    ]
    assert calls == [BOTH]  # one read of both bridges, nothing written in check mode


def test_pcie_acs_names_setpci_call_and_line_of_bad_output(tmp_path, monkeypatch, capsys):
    runner = fake_runner({BOTH: "001d\nzz\n"})
    args = {"endpoints": ["0000:17:00.0"], "sysroot": _pci_tree(tmp_path), "_ansible_check_mode": True}
    code, out = run_module(pcie_acs, args, monkeypatch, capsys, runner)
    assert code == 1
    _no_traceback(out)
    assert out["msg"] == f"{' '.join(BOTH)}: setpci printed no 16-bit value (line 2: 'zz')"


CONF = "/etc/modprobe.d/gpufabric-ib_core.conf"


class RdmaTool:
    """``rdma system show`` / ``rdma system set netns MODE`` with the mode kept here."""

    def __init__(self, mode):
        self.mode = mode
        self.sets = []

    def runner(self):
        def run(argv):
            if argv[1:] == ["system", "show"]:
                return 0, f"netns {self.mode} copy-on-fork on\n", ""
            if argv[1:4] == ["system", "set", "netns"]:
                self.sets.append(argv[4])
                self.mode = argv[4]
                return 0, "", ""
            return 1, "", "unexpected"

        return Runner(run=run, which=lambda name: f"/usr/sbin/{name}" if name == "rdma" else None)


def _netns(tmp_path, tool, mode, check_mode=False):
    params = {"mode": mode, "persist": True, "modprobe_conf": CONF}
    return rdma_netns.run(params, tool.runner(), Sysroot(str(tmp_path)), check_mode, os.replace)


def test_rdma_netns_check_mode_changes_nothing(tmp_path):
    tool = RdmaTool("shared")
    result = _netns(tmp_path, tool, "exclusive", check_mode=True)
    assert (result["changed"], result["runtime_before"], result["runtime_after"]) == (True, "shared", "exclusive")
    assert tool.sets == [] and not (tmp_path / CONF.lstrip("/")).exists()


def test_rdma_netns_sets_the_mode_and_persists_it_then_changes_nothing(tmp_path):
    tool = RdmaTool("shared")
    first = _netns(tmp_path, tool, "exclusive")
    assert (first["changed"], first["runtime_after"], tool.sets) == (True, "exclusive", ["exclusive"])
    conf = tmp_path / CONF.lstrip("/")
    assert "options ib_core netns_mode=0\n" in conf.read_text()
    assert oct(conf.stat().st_mode & 0o777) == "0o644"
    again = _netns(tmp_path, tool, "exclusive")
    assert again["changed"] is False and tool.sets == ["exclusive"]
    assert "error" not in again


def test_rdma_netns_names_the_tool_and_line_of_bad_output(tmp_path, monkeypatch, capsys):
    runner = fake_runner({("rdma", "system", "show"): "netns maybe copy-on-fork on\n"})
    args = {"mode": "shared", "modprobe_conf": str(tmp_path / "etc/modprobe.d/ib.conf")}
    code, out = run_module(rdma_netns, args, monkeypatch, capsys, runner)
    assert code == 1
    _no_traceback(out)
    assert out["msg"] == (
        "rdma system show: no netns mode (shared or exclusive) in the output (line 1: 'netns maybe copy-on-fork on')"
    )
    assert not (tmp_path / "etc").exists()


def test_rdma_netns_without_iproute2_says_so(tmp_path, monkeypatch, capsys):
    args = {"mode": "shared", "modprobe_conf": str(tmp_path / "ib.conf")}
    code, out = run_module(rdma_netns, args, monkeypatch, capsys, fake_runner({}))
    assert code == 1
    assert out["msg"] == "rdma (iproute2) is not installed"


def _module_utils_imports(path):
    """module_utils files a Python file imports, as paths under module_utils
    (``from ...module_utils.stage import name`` / ``from ...module_utils.stage.name import x``)."""
    import ast

    prefix = "ansible_collections.gpufabric.rollout.plugins.module_utils"
    found = set()
    for node in ast.walk(ast.parse(Path(path).read_text())):
        if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(prefix + "."):
            continue
        parts = node.module[len(prefix) + 1 :].split(".")
        if len(parts) == 1:
            found.update(f"{parts[0]}/{alias.name}.py" for alias in node.names)
        else:
            found.add("/".join(parts) + ".py")
    return found


def test_boot_engine_file_list_is_the_import_closure_of_the_boot_script():
    """roles/roce/vars __roce_engine_files holds every module_utils file roce_apply.py needs, no more."""
    import yaml

    repo = Path(__file__).resolve().parents[3]
    listed = set(yaml.safe_load((repo / "roles/roce/vars/main.yml").read_text())["__roce_engine_files"])
    needed, todo = set(), _module_utils_imports(repo / "roles/roce/files/roce_apply.py")
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo |= _module_utils_imports(repo / "plugins/module_utils" / name)
    assert listed == needed
