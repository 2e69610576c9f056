"""lab/hardware/nic_driver_sysfs.py: the mlx5 driver flavour a lab node boots with and the
sysfs each flavour lays over the hardware tree."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "lab/hardware/nic_driver_sysfs.py"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


nic_driver = _load("nic_driver_sysfs", SCRIPT)
SNAPSHOTS = _load("snapshots_build", REPO / "lab/snapshots/build.py")


def test_boot_flavour_is_mofed_once_doca_ofed_modules_are_installed(tmp_path):
    (tmp_path / "ofed-release").write_text("OFED-internal-24.10-1.1.4\n")
    (tmp_path / "nic-driver").write_text("inbox\n")
    assert nic_driver.boot_flavour(str(tmp_path / "ofed-release"), str(tmp_path / "nic-driver")) == "mofed"


@pytest.mark.parametrize("configured", ["inbox", "mofed"])
def test_boot_flavour_follows_the_configured_one_without_doca_ofed(tmp_path, configured):
    (tmp_path / "nic-driver").write_text(configured + "\n")
    assert nic_driver.boot_flavour(str(tmp_path / "none"), str(tmp_path / "nic-driver")) == configured


def test_boot_flavour_defaults_to_inbox(tmp_path):
    assert nic_driver.boot_flavour(str(tmp_path / "none"), str(tmp_path / "none")) == "inbox"


def test_boot_flavour_refuses_an_unknown_flavour(tmp_path):
    (tmp_path / "nic-driver").write_text("ofed\n")
    with pytest.raises(ValueError, match="unknown NIC driver flavour 'ofed'"):
        nic_driver.boot_flavour(str(tmp_path / "none"), str(tmp_path / "nic-driver"))


def test_usage_error(tmp_path):
    argv = [sys.executable, str(SCRIPT), "ofed", str(tmp_path)]
    res = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert res.returncode == 2
    assert "mofed|inbox|boot" in res.stderr


def test_loading_doca_ofed_over_inbox_adds_mofed_sysfs_at_power_on_values(tmp_path):
    """inbox at boot, then openibd start (mofed): the MOFED files appear with power-on values,
    and running it again puts changed values back (a driver reload loses runtime QoS)."""
    root = SNAPSHOTS.materialize("dgx-h200-8x8@1", str(tmp_path / "sysroot"))
    run = [sys.executable, str(SCRIPT)]
    subprocess.run([*run, "inbox", root], check=True)
    net = Path(root) / "sys/class/net/enp24s0np0"
    assert not (net / "qos").exists()
    assert (Path(root) / "sys/kernel/debug/mlx5/0000:18:00.0/cc_params/np_cnp_dscp").read_text() == "48\n"
    subprocess.run([*run, "mofed", root], check=True)
    assert (net / "qos/trust").read_text() == "pcp\n"
    assert (net / "ecn/roce_np/enable/3").read_text() == "0\n"
    assert (net / "ecn/roce_np/cnp_dscp").read_text() == "48\n"
    assert (Path(root) / "sys/class/infiniband/mlx5_0/tc/1/traffic_class").read_text() == ""
    (net / "qos/trust").write_text("dscp\n")
    (net / "ecn/roce_np/enable/3").write_text("1\n")
    subprocess.run([*run, "mofed", root], check=True)
    assert (net / "qos/trust").read_text() == "pcp\n"
    assert (net / "ecn/roce_np/enable/3").read_text() == "0\n"
