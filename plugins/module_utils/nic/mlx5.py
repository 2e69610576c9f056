# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mlx5_core: NVIDIA (Mellanox) ConnectX and BlueField, as a ``NicDriver``, and ``mlnx_qos`` (the
MOFED/DOCA mlnx-tools QoS command) as its preferred QoS tool, iproute2 ``dcb`` the other.

Sources: torvalds/linux drivers/net/ethernet/mellanox/mlx5/core/main.c (PCI table: vendor
0x15b3 and the device ids), Mellanox/mlnx-tools python/mlnx_qos (options and output), the MOFED
per-netdev ECN sysfs (``/sys/class/net/IF/ecn/roce_{np,rp}``) and the mlx5 debugfs
``cc_params`` (inbox driver).

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.base import NicDriver, QosTool, csv, query
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.dcb import DCB
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import parse_mlnx_qos
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Host

DRIVER = "mlx5_core"
VENDOR_ID = "15b3"
MAX_MTU = 9978  # mlx5 hard maximum
# Device ids (main.c PCI table) -> (model, whether the id is a VF's)
MODELS: Dict[str, Tuple[str, bool]] = {
    "1017": ("ConnectX-5", False),
    "1018": ("ConnectX-5", True),
    "1019": ("ConnectX-5 Ex", False),
    "101a": ("ConnectX-5 Ex", True),
    "101b": ("ConnectX-6", False),
    "101c": ("ConnectX-6", True),
    "101d": ("ConnectX-6 Dx", False),
    "101e": ("ConnectX VF", True),
    "101f": ("ConnectX-6 Lx", False),
    "1021": ("ConnectX-7", False),
    "1023": ("ConnectX-8", False),
    "1025": ("ConnectX-9", False),
    "a2d6": ("BlueField-2", False),
    "a2dc": ("BlueField-3", False),
}


class MlnxQos(QosTool):
    name = "mlnx_qos"
    source = "MOFED/DOCA mlnx-tools"

    def read(self, iface: Mapping[str, Any], io: Host) -> Dict[str, Any]:
        raw = query(io, parse_mlnx_qos, ["mlnx_qos", "-i", iface["netdev"], "-a"])
        raw["delay"] = raw.get("cable_len")
        return raw

    def commands(
        self, netdev: str, changed: List[str], want: Mapping[str, Any], raw: Mapping[str, Any]
    ) -> List[List[str]]:
        cmds = []
        base = ["mlnx_qos", "-i", netdev]
        if "trust" in changed:
            cmds.append([*base, "--trust", want["trust"]])
        if "dscp2prio" in changed:
            args = []
            for d in sorted(want["dscp2prio"], key=int):
                prio = want["dscp2prio"][d][0]
                for old in raw.get("dscp2prio", {}).get(int(d), []):
                    if old != prio:
                        args += ["--dscp2prio", f"del,{d},{old}"]
                args += ["--dscp2prio", f"set,{d},{prio}"]
            cmds.append(base + args)
        if "pfc" in changed or "cable_len" in changed:
            # mlnx_qos sends PFC enable and delay (cable length) in one dcbnl call: passing only one
            # of them resets the other to 0, so always pass both.
            pfc = want.get("pfc", raw.get("pfc"))
            cable = want.get("cable_len", raw.get("cable_len") or 0)
            cmds.append([*base, "--pfc", csv(pfc), "--cable_len", str(cable)])
        if "ets" in changed:
            ets = want["ets"]
            cmds.append(
                [*base, "--prio_tc", csv(ets["prio_tc"]), "--tsa", csv(ets["tsa"]), "--tcbw", csv(ets["tc_bw"])]
            )
        if "prio2buffer" in changed:
            cmds.append([*base, "--prio2buffer", csv(want["prio2buffer"])])
        if "buffer_size" in changed:
            cmds.append([*base, "--buffer_size", csv(want["buffer_size"])])
        if "default_prio" in changed:
            cmds.append([*base, "--defltprio", f"set,{want['default_prio']}"])
        return cmds


MLNX_QOS = MlnxQos()


class Mlx5(NicDriver):
    name = DRIVER
    vendor_id = VENDOR_ID
    models = MODELS
    max_mtu = MAX_MTU
    qos_tools = (MLNX_QOS, DCB)
    ecn_points = ("roce_np", "roce_rp")

    def ecn_dir(self, netdev: str) -> str:
        return f"sys/class/net/{netdev}/ecn"

    def ecn_enable(self, netdev: str, point: str, prio: Any) -> str:
        return f"{self.ecn_dir(netdev)}/{point}/enable/{prio}"

    def cnp_files(self, netdev: str) -> Tuple[str, str]:
        ecn = self.ecn_dir(netdev)
        return ecn + "/roce_np/cnp_dscp", ecn + "/roce_np/cnp_802p_prio"

    def debugfs_cnp_files(self, bdf: str) -> Tuple[str, str]:
        cc = f"sys/kernel/debug/mlx5/{bdf}/cc_params"
        return cc + "/np_cnp_dscp", cc + "/np_cnp_prio"


MLX5 = Mlx5()
