"""What the converge (playbooks/hosts.yml) left on the two lab nodes, read from the nodes: the
DOCA-OFED and NVIDIA driver packages at their pinned versions and held, their signed sources and
pins, the DKMS builds for the running kernel, the loaded stacks and nvidia-peermem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Over the nodes' sshd as the lab user with sudo, as Ansible reaches them (.lab/ssh/config, written by
# lab/nodes.sh, multiplexes one connection per node).
PROJECT = Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", Path(__file__).resolve().parents[3]))
SSH_CONFIG = PROJECT / ".lab" / "ssh" / "config"
testinfra_hosts = [f"ssh://{node}?ssh_config={SSH_CONFIG}&sudo=true" for node in ("upgrade-node1", "upgrade-node2")]

SYSROOT = "/var/lib/gpufabric-lab/sysroot"
DOCA = "2.9.1-0.1.4"
KOFED = "24.10.OFED.24.10.1.1.4.1-1"
RELEASE = "24.10-1.1.4"
DRIVER = "580.95.05"
DOCA_URL = "file:///var/lib/gpufabric-lab/repo/doca/latest-2.9-LTS/debian12/x86_64/"
CUDA_URL = "file:///var/lib/gpufabric-lab/repo/cuda/debian12/x86_64/"


def selections(host, *names):
    out = host.check_output("dpkg-query -W -f='${Package} ${Version} ${Status}\\n'" + " %s" * len(names), *names)
    return out.splitlines()


@pytest.mark.parametrize(
    "package, version",
    [
        ("doca-ofed", DOCA),
        ("mlnx-ofed-kernel-dkms", KOFED),
        ("mlnx-nfsrdma-dkms", KOFED),
        ("mlnx-nvme-dkms", KOFED),
        ("nvidia-kernel-open-dkms", f"{DRIVER}-1"),
        ("nvidia-driver-cuda", f"{DRIVER}-1"),
    ],
)
def test_packages_are_installed_at_the_pin_and_held(host, package, version):
    assert selections(host, package) == [f"{package} {version} hold ok installed"]


def test_build_prerequisites_are_installed(host):
    lines = selections(host, "dkms", f"linux-headers-{host.check_output('uname -r')}")
    assert all(line.endswith(" install ok installed") for line in lines) and len(lines) == 2


def test_the_doca_source_is_signed_and_the_profile_pinned(host):
    source = host.file("/etc/apt/sources.list.d/doca.list").content_string
    assert f"deb [signed-by=/etc/apt/keyrings/doca.asc] {DOCA_URL} ./" in source
    pin = host.file("/etc/apt/preferences.d/doca-ofed.pref").content_string
    assert f"Package: doca-ofed\nPin: version {DOCA}\nPin-Priority: 1001" in pin
    assert f"Package: mlnx-nvme-dkms\nPin: version {KOFED}" in pin
    assert "BEGIN PGP PUBLIC KEY BLOCK" in host.file("/etc/apt/keyrings/doca.asc").content_string


def test_the_driver_source_is_signed_and_the_packages_pinned(host):
    source = host.file("/etc/apt/sources.list.d/gpufabric-nvidia-driver.list").content_string
    assert f"deb [signed-by=/etc/apt/keyrings/gpufabric-nvidia-driver.asc] {CUDA_URL} /" in source
    pin = host.file("/etc/apt/preferences.d/gpufabric-nvidia-driver.pref").content_string
    for package in ("nvidia-kernel-open-dkms", "nvidia-driver-cuda"):
        assert f"Package: {package}\nPin: version {DRIVER}-*\nPin-Priority: 1001" in pin


def test_apt_sees_both_releases_and_keeps_the_pinned_one(host):
    policy = host.check_output("apt-cache policy doca-ofed nvidia-kernel-open-dkms")
    assert f"Installed: {DOCA}" in policy and f"Candidate: {DOCA}" in policy
    assert "2.9.2-0.1.8" in policy
    assert f"Installed: {DRIVER}-1" in policy and f"Candidate: {DRIVER}-1" in policy
    assert "580.105.08-1" in policy


def test_the_stack_is_built_for_the_running_kernel_and_loaded(host):
    kernel = host.check_output("uname -r")
    assert host.check_output("ofed_info -s") == f"OFED-internal-{RELEASE}:"
    dkms = host.check_output("dkms status").splitlines()
    for module in ("mlnx-ofed-kernel", "mlnx-nfsrdma", "mlnx-nvme"):
        assert f"{module}/24.10.OFED.24.10.1.1.4.1, {kernel}, x86_64: installed" in dkms
    assert f"nvidia/{DRIVER}, {kernel}, x86_64: installed" in dkms
    assert host.file(f"{SYSROOT}/sys/module/mlx5_core/version").content_string.strip() == RELEASE
    assert host.file(f"{SYSROOT}/sys/module/mlx_compat").is_directory
    assert host.service("openibd").is_enabled


def test_the_driver_and_nvidia_peermem_are_loaded_and_persisted(host):
    version = host.file(f"{SYSROOT}/proc/driver/nvidia/version").content_string
    assert f"Open Kernel Module for x86_64  {DRIVER}" in version
    assert host.file(f"{SYSROOT}/sys/module/nvidia_peermem").is_directory
    assert "nvidia-peermem" in host.file("/etc/modules-load.d/nvidia-peermem.conf").content_string
