"""Lab simulators: the modprobe shim and gdscheck, run as processes on a temporary lab root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import gpudirect as _gpudirect
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import gdscheck as _gdscheck
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Sysroot

REPO = Path(__file__).resolve().parents[3]
MODPROBE = REPO / "lab" / "simulators" / "modprobe"
GDSCHECK = REPO / "lab" / "simulators" / "gdscheck"
SHIPPED = Path(__file__).parent / "fixtures" / "cufile" / "h200-gds-1.15.1.6-cuda13.0.json"


@pytest.fixture
def lab(tmp_path):
    (tmp_path / "etc/gpufabric-lab").mkdir(parents=True)
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    sysroot = tmp_path / "sysroot"
    gpu = sysroot / "sys/bus/pci/devices/0000:18:00.0"
    gpu.mkdir(parents=True)
    (gpu / "vendor").write_text("0x10de\n")
    (gpu / "class").write_text("0x030200\n")
    (gpu / "device").write_text("0x2335\n")
    (sysroot / "sys/kernel/iommu_groups").mkdir(parents=True)
    (tmp_path / "etc/gpufabric-lab/sysroot").write_text(f"{sysroot}\n")
    return tmp_path


def run(tool, lab, *args):
    env = dict(os.environ, GPUFABRIC_LAB_ROOT=str(lab))
    return subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True, env=env, check=False)


def declare(lab, driver="open 580.95.05", mofed=True, fault=False, nvidia_fs=True):
    (lab / "etc/gpufabric-lab/nvidia-driver").write_text(driver + "\n")
    if mofed:
        (lab / "usr/bin").mkdir(parents=True, exist_ok=True)
        (lab / "usr/bin/ofed_info").write_text("#!/bin/sh\n")
    if fault:
        (lab / "etc/gpufabric-lab/peermem-built-before-mofed").write_text("x\n")
    if nvidia_fs:
        (lab / "usr/src/nvidia-fs-2.26.6").mkdir(parents=True, exist_ok=True)


def test_peermem_loads_with_driver_and_reads_back_through_gpudirect_facts(lab):
    declare(lab)
    result = run(MODPROBE, lab, "nvidia-peermem")
    assert result.returncode == 0, result.stderr
    host = _gpudirect.read_host(Sysroot(str(lab / "sysroot")))
    assert host["peermem_loaded"] and host["driver_flavour"] == "open" and host["driver_version"] == "580.95.05"
    params = lab / "sysroot/sys/module/nvidia_peermem/parameters"
    assert (params / "peerdirect_support").read_text() == "0\n"
    modules = (lab / "sysroot/proc/modules").read_text()
    assert "nvidia 16384 1 nvidia_peermem," in modules
    # nvidia is in use: removing it fails like the real modprobe.
    assert run(MODPROBE, lab, "-r", "nvidia").returncode == 1
    assert run(MODPROBE, lab, "-r", "nvidia_peermem").returncode == 0
    assert not _gpudirect.read_host(Sysroot(str(lab / "sysroot")))["peermem_loaded"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fault": True}, "could not insert 'nvidia_peermem': Invalid argument"),
        ({"mofed": False}, "could not insert 'nvidia_peermem': Invalid argument"),
        ({"driver": ""}, "not found in directory /lib/modules/"),
    ],
)
def test_peermem_failures_match_the_real_messages(lab, kwargs, message):
    declare(lab, **kwargs)
    result = run(MODPROBE, lab, "nvidia-peermem")
    assert result.returncode == 1
    assert message in result.stderr
    assert _gpudirect.classify_modprobe_error(result.stderr) in ("built_before_mofed", "module_missing")
    assert not (lab / "sysroot/sys/module/nvidia_peermem").exists()


def test_boot_replay_loads_modules_load_d(lab):
    declare(lab)
    assert run(MODPROBE, lab, "nvidia_fs").returncode == 0
    unit = lab / "etc/systemd/system/gpufabric-lab-modules-load.service"
    assert "--gpufabric-lab-replay" in unit.read_text()
    assert (lab / "etc/systemd/system/sysinit.target.wants/gpufabric-lab-modules-load.service").is_symlink()
    (lab / "etc/modules-load.d").mkdir(parents=True)
    (lab / "etc/modules-load.d/nvidia-fs.conf").write_text("# managed\nnvidia-fs\n")
    # A reboot: the lab restores the pristine tree, then the unit replays modules-load.d.
    for sub in ("sys/module", "proc"):
        subprocess.run(["rm", "-rf", str(lab / "sysroot" / sub)], check=True)
    assert run(MODPROBE, lab, "--gpufabric-lab-replay").returncode == 0
    host = _gpudirect.read_host(Sysroot(str(lab / "sysroot")))
    assert host["nvidia_fs_loaded"] and host["driver_loaded"] and host["nvidia_fs_version"] == "version: 2.26"


def test_gdscheck_report_parses_and_follows_the_state(lab):
    declare(lab)
    (lab / "usr/lib/gpufabric-lab").mkdir(parents=True)
    (lab / "usr/lib/gpufabric-lab/gds-release").write_text("1.15.1.6 2.12\n")
    cufile = lab / "etc/cufile.json"
    cufile.write_bytes(SHIPPED.read_bytes())
    assert run(MODPROBE, lab, "nvidia").returncode == 0
    before = _gdscheck.parse(run(GDSCHECK, lab, "-p").stdout)
    assert before["nvidia_fs_loaded"] is False and before["verification"] == "succeeded"
    assert before["compat_mode"] is True and before["open_driver"] is True
    assert [g["name"] for g in before["gpus"]] == ["NVIDIA H200"]
    assert run(MODPROBE, lab, "nvidia-fs").returncode == 0
    after = _gdscheck.parse(run(GDSCHECK, lab, "-p").stdout)
    assert after["nvidia_fs_loaded"] is True and after["nvidia_fs_version"] == "2.26" and after["drivers"]["NVMe"]
    # IOMMU on: the platform check fails.
    (lab / "sysroot/sys/kernel/iommu_groups/0").mkdir()
    failed = run(GDSCHECK, lab, "-p")
    assert failed.returncode == 1 and _gdscheck.parse(failed.stdout)["verification"] == "failed"


def test_gdscheck_without_libcufile(lab):
    result = run(GDSCHECK, lab, "-p")
    assert result.returncode == 127 and "libcufile.so.0" in result.stderr
