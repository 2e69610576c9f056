# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""iproute2 ``dcb`` as a QoS tool (the kernel's DCB netlink interface; man dcb-app, dcb-pfc,
dcb-ets, dcb-buffer): any driver with dcbnl support.

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping

from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.base import QosTool, query
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.qos import (
    parse_dcb_app,
    parse_dcb_buffer,
    parse_dcb_ets,
    parse_dcb_pfc,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Host


class Dcb(QosTool):
    name = "dcb"
    source = "iproute2"

    def read(self, iface: Mapping[str, Any], io: Host) -> Dict[str, Any]:
        nd = iface["netdev"]
        raw = {}  # type: Dict[str, Any]
        raw.update(query(io, parse_dcb_app, ["dcb", "-N", "app", "show", "dev", nd]))
        raw.update(query(io, parse_dcb_pfc, ["dcb", "pfc", "show", "dev", nd]))
        raw["cable_len"] = raw.get("delay")
        if iface.get("ets"):
            raw.update(query(io, parse_dcb_ets, ["dcb", "ets", "show", "dev", nd]))
        if iface.get("buffer_size") or iface.get("prio2buffer"):
            raw.update(query(io, parse_dcb_buffer, ["dcb", "buffer", "show", "dev", nd]))
        return raw

    def commands(
        self, netdev: str, changed: List[str], want: Mapping[str, Any], raw: Mapping[str, Any]
    ) -> List[List[str]]:
        nd = netdev
        cmds = []
        if "trust" in changed and want["trust"] == "pcp":
            cmds.append(["dcb", "app", "flush", "dev", nd, "dscp-prio"])
        if "dscp2prio" in changed or ("trust" in changed and want["trust"] == "dscp"):
            pairs = [f"{d}:{want['dscp2prio'][d][0]}" for d in sorted(want["dscp2prio"], key=int)]
            cmds.append(["dcb", "app", "replace", "dev", nd, "dscp-prio", *pairs])
        if "default_prio" in changed:
            cmds.append(["dcb", "app", "replace", "dev", nd, "default-prio", str(want["default_prio"])])
        if "pfc" in changed or "cable_len" in changed:
            cmd = ["dcb", "pfc", "set", "dev", nd, "prio-pfc"]
            cmd += [f"{p}:{'on' if v else 'off'}" for p, v in enumerate(want["pfc"])]
            if "cable_len" in want:
                cmd += ["delay", str(want["cable_len"])]
            cmds.append(cmd)
        if "ets" in changed:
            ets = want["ets"]
            cmds.append(
                ["dcb", "ets", "set", "dev", nd, "prio-tc"]
                + [f"{p}:{t}" for p, t in enumerate(ets["prio_tc"])]
                + ["tc-tsa"]
                + [f"{t}:{s}" for t, s in enumerate(ets["tsa"])]
                + ["tc-bw"]
                + [f"{t}:{b}" for t, b in enumerate(ets["tc_bw"])]
            )
        if "prio2buffer" in changed or "buffer_size" in changed:
            cmd = ["dcb", "buffer", "set", "dev", nd]
            if "prio2buffer" in want:
                cmd += ["prio-buffer"] + [f"{p}:{b}" for p, b in enumerate(want["prio2buffer"])]
            if "buffer_size" in want:
                cmd += ["buffer-size"] + [f"{b}:{s}" for b, s in enumerate(want["buffer_size"])]
            cmds.append(cmd)
        return cmds


DCB = Dcb()
