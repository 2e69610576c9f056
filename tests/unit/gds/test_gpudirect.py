"""GPUDirect RDMA decision and the gpudirect_facts module's gathering."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError

FIXTURES = Path(__file__).parent / "fixtures" / "gpudirect"
CASES = yaml.safe_load((FIXTURES / "cases.yml").read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_decision(name):
    case = CASES[name]
    result = _gpudirect.decide(case["facts"], case["method"])
    want = case["want"]
    assert result["method"] == want["method"]
    checks = {
        "dmabuf_ok": result["dmabuf"]["ok"],
        "peermem_ok": result["peermem"]["ok"],
        "nvidia_fs_ok": result["gds"]["nvidia_fs_ok"],
        "p2pdma_ok": result["gds"]["p2pdma_ok"],
        "archs": result["gpu_archs"],
        "cuda": result["cuda_version"],
    }
    for key, value in checks.items():
        if key in want:
            assert value == want[key], key
    if "dmabuf_blocker" in want:
        assert any(want["dmabuf_blocker"] in b for b in result["dmabuf"]["blockers"])
    if "peermem_blocker" in want:
        assert any(want["peermem_blocker"] in b for b in result["peermem"]["blockers"])
    if "error" in want:
        assert want["error"] in result["error"]
    else:
        assert result["error"] is None
    # A chosen method never has blockers.
    if result["method"]:
        assert result[result["method"]]["ok"]


def test_unknown_method_refused():
    with pytest.raises(ValueError, match="method must be one of auto, dmabuf, peermem"):
        _gpudirect.decide({}, "gdrcopy")


@pytest.mark.parametrize(
    ("fixture", "flavour", "version"),
    [
        ("h200-proc-driver-nvidia-version.txt", "open", "580.159.04"),
        ("proprietary-proc-version.txt", "proprietary", "535.183.01"),
    ],
)
def test_proc_version(fixture, flavour, version):
    assert _gpudirect.parse_proc_version((FIXTURES / fixture).read_text()) == {"flavour": flavour, "version": version}


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        ("modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument", "built_before_mofed"),
        ("modprobe: FATAL: Module nvidia-peermem not found in directory /lib/modules/6.8.0", "module_missing"),
        ("", None),
    ],
)
def test_classify_modprobe_error(stderr, kind):
    assert _gpudirect.classify_modprobe_error(stderr) == kind


class FakeRunner(Runner):
    """Answers the commands gpudirect_facts runs, from a table; records the calls."""

    def __init__(self, table):
        self.table = table
        self.calls = []
        super().__init__(run=self._answer, which=self._which)

    def _which(self, name):
        return f"/usr/bin/{name}" if any(k[0] == name for k in self.table) else None

    def _answer(self, argv):
        key = (Path(argv[0]).name, *argv[1:])
        self.calls.append(key)
        return self.table.get(key, (1, "", "not found"))


def _sysroot(tmp_path, proc_version, modules=(), osrelease="6.8.0-40-generic\n"):
    (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
    (tmp_path / "proc/driver/nvidia/version").write_text(proc_version)
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text(osrelease)
    (tmp_path / "proc/modules").write_text("".join(f"{m} 16384 0 - Live 0x0\n" for m in modules))
    for m in modules:
        (tmp_path / "sys/module" / m).mkdir(parents=True)
    return str(tmp_path)


SMI_HEADER = "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n"


def test_gather_on_h200_sysroot_picks_dmabuf(tmp_path):
    sysroot = _sysroot(
        tmp_path,
        (FIXTURES / "h200-proc-driver-nvidia-version.txt").read_text(),
        modules=("nvidia", "nvidia_uvm", "ib_core", "mlx5_core"),
    )
    runner = FakeRunner(
        {
            ("nvidia-smi",): (0, SMI_HEADER, ""),
            ("nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"): (0, "NVIDIA H200, 9.0\n", ""),
            ("modinfo", "-n", "nvidia-peermem"): (0, "/lib/modules/6.8.0/kernel/nvidia-peermem.ko\n", ""),
        }
    )
    facts = gpudirect_read.gather(
        {"sysroot": sysroot, "method": "auto", "gpus": [], "cuda_version": "", "mofed": False}, runner, Sysroot(sysroot)
    )
    assert facts["driver_flavour"] == "open" and facts["driver_version"] == "580.159.04"
    assert facts["cuda_version"] == "13.0" and facts["cuda_version_source"] == "nvidia-smi"
    assert facts["gpus"] == [{"model": "NVIDIA H200", "compute_cap": "9.0"}]
    assert facts["peermem_available"] is True and facts["peermem_loaded"] is False
    assert facts["decision"]["method"] == "dmabuf"


def test_gather_uses_topology_gpus_and_driver_branch_without_smi(tmp_path):
    sysroot = _sysroot(
        tmp_path,
        (FIXTURES / "proprietary-proc-version.txt").read_text(),
        modules=("nvidia", "nvidia_peermem"),
        osrelease="5.15.0-91-generic\n",
    )
    runner = FakeRunner({("ofed_info", "-s"): (0, "MLNX_OFED_LINUX-24.10-1.1.4.0:\n", "")})
    facts = gpudirect_read.gather(
        {
            "sysroot": sysroot,
            "method": "auto",
            "cuda_version": "",
            "mofed": None,
            "gpus": [{"model": "A100", "bdf": "0000:18:00.0"}],
        },
        runner,
        Sysroot(sysroot),
    )
    assert facts["cuda_version"] == "12.2" and facts["cuda_version_source"] == "driver branch"
    assert facts["mofed"] is True and facts["mofed_version"] == "MLNX_OFED_LINUX-24.10-1.1.4.0"
    assert facts["peermem_loaded"] is True
    assert facts["decision"]["method"] == "peermem"
    assert not any(call[0] == "nvidia-smi" for call in runner.calls)


def test_gather_names_the_nvidia_smi_query_and_line_it_cannot_read(tmp_path):
    sysroot = _sysroot(tmp_path, (FIXTURES / "h200-proc-driver-nvidia-version.txt").read_text())
    runner = FakeRunner(
        {
            ("nvidia-smi",): (0, SMI_HEADER, ""),
            ("nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"): (
                0,
                "NVIDIA H200, 9.0\nH200; 9\n",
                "",
            ),
        }
    )
    params = {"sysroot": sysroot, "method": "auto", "gpus": [], "cuda_version": "", "mofed": False}
    with pytest.raises(ParseError) as exc:
        gpudirect_read.gather(params, runner, Sysroot(sysroot))
    assert str(exc.value) == (
        "nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader: expected 'name, compute capability' "
        "(line 2: 'H200; 9')"
    )


def test_gather_finds_the_mofed_source_tree_below_the_host_root(tmp_path):
    """Without ofed_info, MOFED is detected from usr/src/ofa_kernel/default below the given root."""
    sysroot = _sysroot(tmp_path / "hw", (FIXTURES / "proprietary-proc-version.txt").read_text(), modules=("nvidia",))
    host = tmp_path / "host"
    params = {"sysroot": sysroot, "method": "auto", "gpus": [{"model": "A100"}], "cuda_version": "12.2", "mofed": None}
    assert gpudirect_read.gather(params, FakeRunner({}), Sysroot(str(host)))["mofed"] is False
    (host / "usr/src/ofa_kernel/default").mkdir(parents=True)
    assert gpudirect_read.gather(params, FakeRunner({}), Sysroot(str(host)))["mofed"] is True
