# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The interface of a NIC driver and of a QoS tool.

``NicDriver``: what the collection needs to know about one kernel NIC driver: its name, the PCI
vendor id and device ids (with model names) it handles, its limits, the QoS tools that set its
ports' DCB state (in order of preference) and where it exposes ECN and CNP settings.
``QosTool``: one such tool: how to read a port's DCB state and the commands that change it.
``plugins/module_utils/nic/registry.py`` picks a driver by name; ``mlx5.py`` is the one today.

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.host import Host
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import ParseError


def query(io: Host, parser: Callable[[str], Dict[str, Any]], argv: List[str]) -> Dict[str, Any]:
    """Run a read-only tool call and parse its output; a ParseError names the call (tool and netdev)."""
    out = io.runner.check(argv)
    try:
        return parser(out)
    except ParseError as exc:
        raise exc.within(" ".join(argv)) from None


def csv(values: Sequence[Any]) -> str:
    return ",".join(str(v) for v in values)


class QosTool:
    """A command that reads and sets a port's DCB state: trust, DSCP to priority, default priority,
    PFC with its delay (cable length), ETS and the receive buffers."""

    name = ""
    # where the command comes from, for the message when no tool is installed
    source = ""

    def read(self, iface: Mapping[str, Any], io: Host) -> Dict[str, Any]:
        """The port's DCB state as the parsers return it, with both ``cable_len`` and ``delay``."""
        raise NotImplementedError

    def commands(
        self, netdev: str, changed: List[str], want: Mapping[str, Any], raw: Mapping[str, Any]
    ) -> List[List[str]]:
        """The calls that set the ``changed`` keys to ``want`` (``raw``: what ``read`` returned)."""
        raise NotImplementedError


class NicDriver:
    """One kernel NIC driver."""

    # the kernel driver's name (the PCI device's ``driver`` link)
    name = ""
    # the PCI vendor id of the devices it handles (lower-case hex, no 0x)
    vendor_id = ""
    # device id -> (model, whether the id is a virtual function's)
    models = {}  # type: Mapping[str, Tuple[str, bool]]
    # the largest netdev MTU the driver accepts
    max_mtu = 0
    # the QoS tools that set its ports' DCB state, preferred first
    qos_tools = ()  # type: Tuple[QosTool, ...]
    # the ECN reaction and notification points with per-priority switches
    ecn_points = ()  # type: Tuple[str, ...]

    def model(self, vendor_id: str, device_id: str) -> Optional[Tuple[str, bool]]:
        """(model, is a VF id) of a device this driver handles, else None."""
        if vendor_id != self.vendor_id:
            return None
        return self.models.get(device_id)

    def ecn_dir(self, netdev: str) -> str:
        """The per-netdev ECN sysfs folder (relative to the sysroot)."""
        raise NotImplementedError

    def ecn_enable(self, netdev: str, point: str, prio: Any) -> str:
        """The file switching ECN on or off for one point and priority."""
        raise NotImplementedError

    def cnp_files(self, netdev: str) -> Tuple[str, str]:
        """(CNP DSCP file, CNP 802.1p priority file) in the ECN sysfs folder."""
        raise NotImplementedError

    def debugfs_cnp_files(self, bdf: str) -> Tuple[str, str]:
        """(CNP DSCP file, CNP priority file) in debugfs, for a driver without the ECN sysfs folder."""
        raise NotImplementedError
