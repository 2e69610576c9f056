"""The topology_facts module: arguments, sysroot errors (never a traceback), nvidia-smi sources."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.modules import topology_facts


def run(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        topology_facts.main()
    out = json.loads(capsys.readouterr().out)
    return exc.value.code, out


class FakeRunner:
    calls: list = []
    binary = "/usr/bin/nvidia-smi"
    output = ""

    def __init__(self, module):
        pass

    @classmethod
    def for_module(cls, module):
        return cls(module)

    def which(self, name):
        return self.binary

    def run(self, argv):
        FakeRunner.calls.append(argv)
        return 0, FakeRunner.output, ""


@pytest.fixture
def fake_runner(monkeypatch):
    FakeRunner.calls = []
    monkeypatch.setattr(topology_facts, "Runner", FakeRunner)
    return FakeRunner


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: str(tmp / "missing"), "does not exist"),
        (lambda tmp: str(_file(tmp)), "is not a directory"),
        (str, "is not a sysfs root"),
        (lambda tmp: str(_half(tmp)), "is not a sysfs root"),
    ],
    ids=["missing", "a-file", "empty-dir", "proc-only"],
)
def test_bad_sysroot_fails_cleanly(tmp_path, capsys, make, message):
    code, out = run({"sysroot": make(tmp_path)}, capsys)
    assert code == 1
    assert out["failed"] is True
    assert message in out["msg"]
    assert "Traceback" not in json.dumps(out)
    assert "ansible_facts" not in out


def _file(tmp):
    p = tmp / "file"
    p.write_text("x")
    return p


def _half(tmp):
    (tmp / "proc").mkdir()
    (tmp / "sys" / "class").mkdir(parents=True)
    return tmp


def test_unreadable_sysroot_fails_cleanly(tmp_path, capsys, monkeypatch, sysroot):
    """os.access is faked: these tests run as root, which reads everything."""
    root = sysroot("vm-2gpu@1")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, m: False if str(p).rstrip("/") == root else real_access(p, m))
    code, out = run({"sysroot": root}, capsys)
    assert code == 1
    assert out["msg"] == f"sysroot {root} is not readable"


def test_snapshot_file_is_used(capsys, sysroot, fake_runner):
    code, out = run({"sysroot": sysroot("dgx-h200-8x8@1")}, capsys)
    assert code == 0
    assert out["changed"] is False
    assert out["nvidia_smi_source"] == "file"
    assert fake_runner.calls == []
    topo = out["ansible_facts"]["gpufabric_topology"]
    assert topo["paths"]["nvlink"]["GPU0"]["GPU7"] == 18
    assert len(topo["rails"]) == 8
    assert "nccl_topo_xml" not in out  # discovery reports hardware; the NCCL topology file is planned
    assert "Rails:" in out["report"]


@pytest.mark.parametrize(
    ("mode", "want_source", "want_calls"),
    [("never", "none", 0), ("command", "command", 1), ("file", "none", 0), ("auto", "none", 0)],
)
def test_nvidia_smi_modes_without_a_snapshot_file(
    capsys, sysroot, tmp_path, fake_runner, mode, want_source, want_calls
):
    root = tmp_path / "root"
    shutil.copytree(sysroot("pcie-l40s-4x2@1"), root, symlinks=True)
    text = (root / "nvidia-smi-topo-m.txt").read_text()
    (root / "nvidia-smi-topo-m.txt").unlink()
    fake_runner.output = text
    code, out = run({"sysroot": str(root), "nvidia_smi": mode}, capsys)
    assert code == 0
    assert out["nvidia_smi_source"] == want_source
    assert len(fake_runner.calls) == want_calls
    if want_calls:
        assert fake_runner.calls[0] == ["/usr/bin/nvidia-smi", "topo", "-m"]
        assert out["ansible_facts"]["gpufabric_topology"]["paths"]["nvidia_smi"]["GPU0"]["GPU1"] == "NODE"
    else:
        assert out["ansible_facts"]["gpufabric_topology"]["paths"]["nvidia_smi"] is None


def test_storage_nics_option(capsys, sysroot, fake_runner):
    code, out = run({"sysroot": sysroot("roce-vlan-gid@1"), "storage_nics": ["enp194s0np0"]}, capsys)
    assert code == 0
    topo = out["ansible_facts"]["gpufabric_topology"]
    roles = {n["rdma_device"]: (n["role"], n["rail"]) for n in topo["nics"]}
    assert roles == {"mlx5_0": ("compute", 0), "mlx5_1": ("storage", None)}
    assert [r["nic"] for r in topo["rails"]] == ["mlx5_0", "mlx5_0"]


def test_bad_choice_is_refused(capsys, sysroot):
    code, out = run({"sysroot": sysroot("vm-2gpu@1"), "nvidia_smi": "sometimes"}, capsys)
    assert code == 1
    assert "nvidia_smi" in out["msg"]
    assert "auto, file, command, never" in out["msg"]


def test_unreadable_matrix_file_fails_naming_file_and_line(capsys, sysroot, tmp_path, fake_runner):
    root = tmp_path / "root"
    shutil.copytree(sysroot("pcie-l40s-4x2@1"), root, symlinks=True)
    (root / "nvidia-smi-topo-m.txt").write_text("\nNo devices were found\n")
    code, out = run({"sysroot": str(root)}, capsys)
    assert code == 1
    assert out["msg"] == (
        f"{root}/nvidia-smi-topo-m.txt (GPU/NIC matrix of this host): no nvidia-smi topo -m header "
        "(a line starting with a tab and naming GPU0) (line 2: 'No devices were found')"
    )
    assert "Traceback" not in json.dumps(out) and "ansible_facts" not in out


def test_truncated_gid_file_is_no_ipv4_gid(capsys, sysroot, tmp_path, fake_runner):
    """A GID file cut short (a capture taken while the address changed) is not an IPv4 GID."""
    root = tmp_path / "root"
    shutil.copytree(sysroot("roce-vlan-gid@1"), root, symlinks=True)
    before = run({"sysroot": str(root)}, capsys)[1]["ansible_facts"]["gpufabric_topology"]
    port = before["nics"][0]["ports"][0]
    chosen = port["roce_v2_ipv4"]["gid_index"]
    gid_file = root / f"sys/class/infiniband/{before['nics'][0]['rdma_device']}/ports/1/gids/{chosen}"
    gid_file.write_text(gid_file.read_text().strip()[:-4] + "\n")
    code, out = run({"sysroot": str(root)}, capsys)
    assert code == 0
    after = out["ansible_facts"]["gpufabric_topology"]["nics"][0]["ports"][0]
    assert after["roce_v2_ipv4"] is None or after["roce_v2_ipv4"]["gid_index"] > chosen
    assert next(e for e in after["gids"] if e["index"] == chosen)["ipv4"] is None
