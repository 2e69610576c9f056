# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""In ``gpufabric_k8s_device_allocation: dra`` mode: does each GPU node publish, in its ResourceSlices,
the devices its node group's claim templates were planned from?

The templates pair each GPU with a rail NIC by ``resource.kubernetes.io/pcieRoot`` and pick the rail
NICs by ``dra.net/ifName``, both taken from discovery (plan/dra.py). A node whose drivers publish
another root, another interface name, a NIC without RDMA or fewer GPUs on a root has a template
that never fits there: its Pods stay Pending. The check reads what the drivers publish and names the
difference, one read-back check per node (category ``host``), before anyone schedules on it.

- ``devices(slices, node)``: the node's published GPUs (their roots) and rail-capable NICs (by
  interface name), from the ResourceSlices of the two drivers.
- ``checks(dra, slices, hosts)``: the check records of the run's nodes (``hosts``: Kubernetes Node
  name -> inventory host, the report's node).

Attribute names: a ResourceSlice names an attribute of the driver's own domain either qualified
(``dra.net/ifName``) or not (``type`` for ``gpu.nvidia.com/type``), Kubernetes API reference,
ResourceSlice, ``devices[].attributes``; both are read. Pure, no Ansible imports.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import (
    GPU_DRIVER,
    NIC_DRIVER,
    PCIE_ROOT,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.gates import _check

CATEGORY = "host"
SUBJECT = "DRA devices"
NAME = "published as planned (ResourceSlices)"
SHOWN = 6


def _shown(value: Any) -> str:
    """A value a driver published, as the report prints it: the characters a PCIe root or an
    interface name uses, at most 64 (a node's driver must not write lines into the report)."""
    text = re.sub(r"[^A-Za-z0-9:._/@-]", "?", str(value))
    return text[:64] + ("..." if len(text) > 64 else "")


def _attribute(device: Mapping[str, Any], driver: str, name: str) -> Any:
    attrs = device.get("attributes") or {}
    value = attrs.get(name) if "/" in name else attrs.get(f"{driver}/{name}", attrs.get(name))
    if not isinstance(value, Mapping):
        return None
    for kind in ("string", "bool", "int", "version"):
        if kind in value:
            return value[kind]
    return None


def devices(slices: Optional[Sequence[Any]], node: str) -> Dict[str, Any]:
    """``{"gpus": {root: count}, "nics": {ifName: {"root": root, "rdma": bool}}}`` of ``node``."""
    gpus: Dict[str, int] = {}
    nics: Dict[str, Dict[str, Any]] = {}
    for item in slices or []:
        spec = (item or {}).get("spec") or {} if isinstance(item, Mapping) else {}
        if spec.get("nodeName") != node:
            continue
        driver = spec.get("driver")
        for device in spec.get("devices") or []:
            if not isinstance(device, Mapping):
                continue
            root = _attribute(device, str(driver), PCIE_ROOT)
            if driver == GPU_DRIVER and _attribute(device, GPU_DRIVER, "type") == "gpu":
                gpus[str(root)] = gpus.get(str(root), 0) + 1
            elif driver == NIC_DRIVER:
                name = _attribute(device, NIC_DRIVER, "dra.net/ifName")
                if name:
                    rdma = _attribute(device, NIC_DRIVER, "dra.net/rdma") is True
                    nics[str(name)] = {"root": root, "rdma": rdma}
    return {"gpus": gpus, "nics": nics}


def differences(planned: Sequence[Mapping[str, Any]], found: Mapping[str, Any]) -> List[str]:
    """What ``found`` (devices()) lacks for the group's planned rails (plan/dra.py published())."""
    out: List[str] = []
    wanted_gpus: Dict[str, int] = {}
    for rail in planned:
        for root in rail.get("gpu_roots") or []:
            wanted_gpus[str(root)] = wanted_gpus.get(str(root), 0) + 1
        nic = found["nics"].get(str(rail["netdev"]))
        label = f"rail {rail['rail']} NIC {rail['netdev']}"
        if nic is None:
            out.append(f"{label}: {NIC_DRIVER} publishes no device with that interface")
        elif nic["root"] != rail["nic_root"]:
            out.append(
                f"{label}: {NIC_DRIVER} publishes it on PCIe root {_shown(nic['root'])}, planned {rail['nic_root']}"
            )
        elif not nic["rdma"]:
            out.append(f"{label}: {NIC_DRIVER} publishes it without RDMA")
    for root, count in sorted(wanted_gpus.items()):
        have = found["gpus"].get(root, 0)
        if have < count:
            out.append(f"PCIe root {root}: {GPU_DRIVER} publishes {have} GPU(s), planned {count}")
    return out


def checks(
    dra: Optional[Mapping[str, Any]], slices: Optional[Sequence[Any]], hosts: Mapping[str, str]
) -> List[Dict[str, Any]]:
    """One check per node of the run that is in a dra node group."""
    out: List[Dict[str, Any]] = []
    for group in (dra or {}).get("groups") or []:
        planned = group.get("devices") or []
        wanted = f"{len(planned)} rail NIC(s) and {sum(len(r.get('gpu_roots') or []) for r in planned)} GPU(s)"
        for node in group.get("nodes") or []:
            if node not in hosts:
                continue
            missing = differences(planned, devices(slices, node))
            shown = "; ".join(missing[:SHOWN]) + (f"; and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
            out.append(
                _check(
                    CATEGORY,
                    hosts[node],
                    SUBJECT,
                    NAME,
                    measured=shown or f"{wanted} on their planned PCIe roots",
                    expected=f"{wanted} on their planned PCIe roots",
                    unit="",
                    passed=not missing,
                    detail=f"node group {group['name']}: its claim templates fit this node only with these devices",
                )
            )
    return out
