"""doca_ofed where it is planned (the DOCA-OFED node, already running 2.9.1): the repository, the pin
and the holds are the role's, nothing was reloaded, the stack runs (and comes back at boot through
openibd). Where it is not planned (gpufabric_doca_ofed_enabled: false) the role leaves no trace."""

from __future__ import annotations

from conftest import read_text, sys_path

REPO = "file:///var/lib/gpufabric-lab/repo/doca/2.9.1/debian12/x86_64"
HELD = ["doca-ofed", "mlnx-ofed-kernel-dkms", "mlnx-ofed-kernel-utils", "ofed-scripts"]


def test_the_doca_repository_pin_and_holds(mofed):
    source = read_text(mofed, "/etc/apt/sources.list.d/doca.list")
    assert REPO in source and "signed-by=/etc/apt/keyrings/doca.asc" in source, source
    assert mofed.file("/etc/apt/keyrings/doca.asc").exists
    pin = read_text(mofed, "/etc/apt/preferences.d/doca-ofed.pref")
    assert "2.9.1-0.1.4" in pin, pin
    held = mofed.check_output("apt-mark showhold").split()
    assert set(HELD) <= set(held), held


def test_doca_ofed_2_9_1_is_loaded_and_starts_at_boot(mofed):
    assert mofed.check_output("ofed_info -s") == "OFED-internal-24.10-1.1.4:"
    assert mofed.file(sys_path("sys/module/mlx_compat")).is_directory
    assert read_text(mofed, sys_path("sys/module/mlx5_core/version")).strip() == "24.10-1.1.4"
    assert mofed.service("openibd").is_enabled
    assert "DOCA-OFED 24.10-1.1.4 loaded" in mofed.check_output("/etc/init.d/openibd status")


def test_nothing_of_doca_ofed_where_it_is_not_planned(inbox, pcie):
    for host in (inbox, pcie):
        assert not host.file("/etc/apt/sources.list.d/doca.list").exists
        assert not host.file("/etc/apt/preferences.d/doca-ofed.pref").exists
