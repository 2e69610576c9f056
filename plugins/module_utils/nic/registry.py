# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NIC drivers the collection knows, by kernel driver name, and the look-ups over them.

``nic_driver(name)``: the driver, or ``NicDriverError`` naming the unknown one and the known.
``nic_model(vendor_id, device_id)``: the model of a device any known driver handles.

Pure Python (>= 3.8), stdlib only; copied onto hosts with the RoCE apply engine.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.base import NicDriver
from ansible_collections.gpufabric.rollout.plugins.module_utils.nic.mlx5 import MLX5

DRIVERS: Dict[str, NicDriver] = {d.name: d for d in (MLX5,)}
# The driver of a NIC that names none (the RoCE plan's interfaces: discovery's rail NICs, mlx5 today).
DEFAULT_DRIVER = MLX5


class NicDriverError(Exception):
    """A NIC's driver is not one the collection knows."""


def nic_driver(name: Optional[str]) -> NicDriver:
    """The driver called ``name`` (None or empty: ``DEFAULT_DRIVER``)."""
    if not name:
        return DEFAULT_DRIVER
    driver = DRIVERS.get(name)
    if driver is None:
        raise NicDriverError(
            f"NIC driver {name!r} is not supported (supported: {', '.join(sorted(DRIVERS))}): "
            "its QoS tools and sysfs settings are unknown to this collection"
        )
    return driver


def nic_model(vendor_id: str, device_id: str) -> Tuple[Optional[str], bool]:
    """(model, whether the device id is a VF's) of a PCI device, (None, False) when no known driver handles it."""
    for driver in DRIVERS.values():
        found = driver.model(vendor_id, device_id)
        if found is not None:
            return found
    return None, False
