"""The one rule for "NVIDIA driver present / loaded / version known" (_gpudirect.driver_state), on
each partial state of a node as gpudirect_facts reads it, and the same words in both driver modes
of the plan (_plan_gpu_driver.plan_driver). The sysfs/procfs layout is the kernel's: a loaded
module has /sys/module/<name> and a line in /proc/modules; the NVIDIA kernel module creates
/proc/driver/nvidia/version and /sys/module/nvidia/version (NVIDIA/open-gpu-kernel-modules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect_read
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import gpu_driver as _plan_gpu_driver
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Runner, Sysroot

H200_VERSION = (Path(__file__).parent / "fixtures" / "gpudirect" / "h200-proc-driver-nvidia-version.txt").read_text()
OPEN_LOADED = "driver open 580.159.04 loaded"
GARBLED = "NVRM x\n"
KO = "/lib/modules/6.8.0-40-generic/updates/dkms/nvidia.ko.zst"


def _node(tmp_path, loaded, version_file, sys_version=None):
    """A sysroot: the module loaded or not; /proc/driver/nvidia/version as given (None: missing)."""
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("6.8.0-40-generic\n")
    (tmp_path / "proc/modules").write_text("nvidia 16384 0 - Live 0x0\n" if loaded else "")
    (tmp_path / "sys/module").mkdir(parents=True)
    if loaded:
        (tmp_path / "sys/module/nvidia").mkdir()
        if sys_version:
            (tmp_path / "sys/module/nvidia/version").write_text(sys_version + "\n")
    if version_file is not None:
        (tmp_path / "proc/driver/nvidia").mkdir(parents=True)
        (tmp_path / "proc/driver/nvidia/version").write_text(version_file)
    return str(tmp_path)


def _facts(tmp_path, module_file, **node):
    sysroot = _node(tmp_path, **node)
    table = {("modinfo", "-n", "nvidia"): (0, KO + "\n", "")} if module_file else {("modinfo", "-F", "x"): (1, "", "")}
    runner = Runner(
        run=lambda argv: table.get((Path(argv[0]).name, *argv[1:]), (1, "", "modinfo: ERROR")),
        which=lambda name: f"/usr/bin/{name}" if name == "modinfo" else None,
    )
    params = {"sysroot": sysroot, "method": "auto", "gpus": [], "cuda_version": "", "mofed": False}
    return gpudirect_read.gather(params, runner, Sysroot(sysroot))


# (module file installed, module loaded, /proc version file, /sys/module version) -> present, loaded, version, words
STATES = [
    ("absent", False, False, None, None, False, False, None, "no NVIDIA driver is loaded (no nvidia kernel module"),
    ("installed-not-loaded", True, False, None, None, True, False, None, f"installed ({KO}) but not loaded"),
    ("loaded-version-file", True, True, H200_VERSION, None, True, True, "580.159.04", OPEN_LOADED),
    ("loaded-no-version-file", True, True, None, None, True, True, None, "/proc/driver/nvidia/version is missing"),
    ("loaded-sys-version-only", True, True, None, "580.159.04", True, True, "580.159.04", "driver 580.159.04 loaded"),
    ("loaded-version-unparsable", True, True, GARBLED, None, True, True, None, "names no version: 'NVRM x'"),
    ("loaded-no-module-file", False, True, H200_VERSION, None, True, True, "580.159.04", OPEN_LOADED),
]


@pytest.mark.parametrize(
    "module_file, loaded, version_file, sys_version, present, is_loaded, version, words",
    [s[1:] for s in STATES],
    ids=[s[0] for s in STATES],
)
def test_each_partial_state(
    tmp_path, module_file, loaded, version_file, sys_version, present, is_loaded, version, words
):
    facts = _facts(tmp_path, module_file, loaded=loaded, version_file=version_file, sys_version=sys_version)
    state = _gpudirect.driver_state(facts)
    assert (state["present"], state["loaded"], state["version"]) == (present, is_loaded, version)
    assert words in state["text"]
    # Both modes name the state in the same words; each refuses what it cannot work with.
    problems = {}
    for mode in ("host", "operator"):
        found = []
        intent = {"gpufabric_gpu_driver": {"managed_by": mode, "version": "580.159.04"}}
        _plan_gpu_driver.plan_driver(intent, facts, None, found, ansible={"os_family": "Debian"})
        problems[mode] = [p for p in found if "managed_by" in p]
    host_refused = version is None
    assert bool(problems["host"]) is host_refused
    assert bool(problems["operator"]) is present
    for mode in ("host", "operator"):
        for line in problems[mode]:
            assert state["text"] in line, (mode, line)


def test_module_present_version_file_missing_reads_the_same_in_both_modes(tmp_path):
    """The node of the report: nvidia loaded, /proc/driver/nvidia/version missing. The host mode
    said no driver was loaded, the operator mode that one was."""
    facts = _facts(tmp_path, True, loaded=True, version_file=None)
    lines = []
    for mode in ("host", "operator"):
        found = []
        _plan_gpu_driver.plan_driver({"gpufabric_gpu_driver": {"managed_by": mode}}, facts, None, found)
        lines += [p for p in found if p.startswith("gpufabric_gpu_driver.managed_by")]
    assert len(lines) == 2
    assert all("the nvidia kernel module is loaded, but its driver version is unknown" in line for line in lines)
    assert not any("no NVIDIA driver is loaded" in line for line in lines)
