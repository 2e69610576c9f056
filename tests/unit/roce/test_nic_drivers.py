"""The NIC driver seam (plugins/module_utils/nic): the registry picks a driver by its kernel name and
refuses one it does not know, naming it; device ids count only with their vendor; the QoS engine
takes its tools from the interface's driver and refuses an interface whose driver is unknown before
it runs anything."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import qos_engine as _qos_engine
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic import registry
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.mlx5 import MLX5


def test_the_registry_picks_mlx5_by_name_and_by_default():
    assert registry.nic_driver("mlx5_core") is MLX5
    assert registry.nic_driver(None) is MLX5
    assert [t.name for t in MLX5.qos_tools] == ["mlnx_qos", "dcb"]


def test_an_unknown_driver_is_refused_by_name():
    with pytest.raises(registry.NicDriverError, match=r"'ice' is not supported \(supported: mlx5_core\)"):
        registry.nic_driver("ice")


def test_device_ids_carry_their_vendor():
    assert registry.nic_model("15b3", "1021") == ("ConnectX-7", False)
    assert registry.nic_model("15b3", "101e") == ("ConnectX VF", True)
    # the same device id under another vendor is not a ConnectX
    assert registry.nic_model("8086", "1021") == (None, False)


class NoCalls:
    """A Host whose every use fails the test: the engine must refuse before touching the host."""

    def __getattr__(self, name):
        raise AssertionError(f"the engine used the host ({name}) for an unknown driver")


def test_the_engine_refuses_an_interface_of_an_unknown_driver():
    iface = {"netdev": "ens1f0", "driver": "bnxt_en", "dscp2prio": {}, "pfc": [0] * 8}
    with pytest.raises(_qos_engine.QosError, match="ens1f0: NIC driver 'bnxt_en' is not supported"):
        _qos_engine.run_plan_interfaces([iface], "auto", NoCalls(), check_mode=True)


def test_mlx5_paths():
    assert MLX5.ecn_enable("ens1f0", "roce_np", 3) == "sys/class/net/ens1f0/ecn/roce_np/enable/3"
    assert MLX5.cnp_files("ens1f0") == (
        "sys/class/net/ens1f0/ecn/roce_np/cnp_dscp",
        "sys/class/net/ens1f0/ecn/roce_np/cnp_802p_prio",
    )
    assert MLX5.debugfs_cnp_files("0000:18:00.0") == (
        "sys/kernel/debug/mlx5/0000:18:00.0/cc_params/np_cnp_dscp",
        "sys/kernel/debug/mlx5/0000:18:00.0/cc_params/np_cnp_prio",
    )
