"""gpudirect_rdma: DMA-BUF where the open driver allows it (with DOCA-OFED and without), nvidia-peermem
loaded and persisted with the proprietary driver and DOCA-OFED (the VM), the memlock limit for root and the
container runtime (the lab's stand-in containerd, restarted into it) only;
after the reboot nvidia-peermem is back (the lab replays /etc/modules-load.d as systemd would)."""

from __future__ import annotations

import pytest
from conftest import read_text, sys_path

PEERMEM_CONF = "/etc/modules-load.d/nvidia-peermem.conf"


@pytest.mark.parametrize("name", ["mofed", "inbox"])
def test_the_open_driver_nodes_use_dma_buf_and_load_no_peermem(name, request):
    host = request.getfixturevalue(name)
    assert "Open Kernel Module" in read_text(host, sys_path("proc/driver/nvidia/version"))
    assert not host.file(sys_path("sys/module/nvidia_peermem")).exists
    assert not host.file(PEERMEM_CONF).exists


def test_the_proprietary_driver_node_loads_and_persists_nvidia_peermem(pcie):
    version = read_text(pcie, sys_path("proc/driver/nvidia/version"))
    assert "535.183.01" in version and "Open Kernel Module" not in version, version
    assert pcie.file(sys_path("sys/module/nvidia_peermem")).is_directory
    assert "nvidia-peermem" in read_text(pcie, PEERMEM_CONF).splitlines()


def test_memlock_is_for_root_and_the_container_runtime_only(node):
    _name, host = node
    unit_limit = host.check_output("systemctl show --property=LimitMEMLOCK --value containerd.service")
    assert unit_limit.isdigit() and int(unit_limit) < 8 * 1024 * 1024, unit_limit  # the scenario's limit
    kib = str(int(unit_limit) // 1024)
    limits = " ".join(read_text(host, "/etc/security/limits.d/90-gpufabric-rdma.conf").split())
    assert f"root soft memlock {kib}" in limits and f"root hard memlock {kib}" in limits, limits
    assert "* soft memlock" not in limits and "* hard memlock" not in limits, limits
    # Not every unit: no manager-wide default of ours.
    assert not host.file("/etc/systemd/system.conf.d/90-gpufabric-memlock.conf").exists
    # The running runtime was restarted into its unit's limit (systemd's default is 8 MiB).
    pid = host.check_output("systemctl show --property=MainPID --value containerd.service")
    row = [line for line in read_text(host, f"/proc/{pid}/limits").splitlines() if line.startswith("Max locked memory")]
    assert row and row[0].split()[3:5] == [unit_limit, unit_limit], row
