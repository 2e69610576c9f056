# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan the NCCL environment from discovered topology facts and fabric intent.

``environment`` is the one place the NCCL_* variables of a rail set are written: the node plan
(plan.node.nccl_section, through ``plan``) feeds /etc/nccl.conf with it, and the cluster plan
(plan.network_objects.nccl_env) the Pods' NCCL ConfigMap. Pure functions, no Ansible imports,
unit-tested directly. Facts behind each variable (NVIDIA/nccl docs/userguide env.rst):

* ``NCCL_IB_HCA``: ``=`` makes every entry an exact device name (without it ``mlx5_1`` also
  matches ``mlx5_10``..``mlx5_19``); entries are ``<hca>:<port>``; at most 32 HCAs.
* ``NCCL_IB_TC``: the full 8-bit traffic class, the fabric's ``roce_tos`` (DSCP << 2 | ECN
  bits, resolved once by the plan: intent.network_rules.tos_for).
* ``NCCL_IB_GID_INDEX``: from NCCL 2.21 on, ``-1`` (the default) picks the RoCE v2 IPv4 GID by
  itself and NVIDIA advises against setting it; older releases need the show_gids index.
* ``NCCL_SOCKET_IFNAME``: prefixes, ``=`` for an exact name, ``^`` to exclude.
* ``NCCL_NET_GDR_LEVEL``: LOC, PIX, PXB, PHB or SYS; planned as the worst GPU-NIC path class of
  the rails, capped at PHB (``net_gdr_level``).
* ``NCCL_TOPO_FILE``: an NCCL topology XML loaded before detection.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import PATH_CLASSES, RANK
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import as_text, shorten, version_numbers

GID_INDEX_DYNAMIC_SINCE = (2, 21, 0)
MAX_IB_HCA = 32
# Where a Pod's init step finds the GID-index script (the nccl-gid-index ConfigMap, NCCL < 2.21).
POD_GID_SCRIPT = "/opt/gpufabric/find-gid-index.sh"
_VERSION = re.compile(r"^\s*v?([0-9]{1,9})(?:\.([0-9]{1,9}))?(?:\.([0-9]{1,9}))?(?:[-+.].*)?$", re.ASCII)


class NcclPlanError(ValueError):
    """Intent and facts do not give a consistent nccl.conf; the message names the input."""


def parse_version(version: Any) -> Tuple[int, int, int]:
    """'2.27.3' -> (2, 27, 3); '2.18' -> (2, 18, 0); '2.19.3-1+cuda12.2' -> (2, 19, 3)."""
    match = _VERSION.match(str(version))
    if not match or re.search(r"[0-9]{10}", str(version)):
        raise NcclPlanError(f"gpufabric_nccl_version: '{shorten(str(version))}' is not a version like 2.27.3")
    return (*version_numbers(str(version).strip()), 0, 0)[:3]  # type: ignore[return-value]


def needs_gid_index(nccl_version: Any) -> bool:
    """NCCL older than 2.21 cannot pick the RoCE v2 GID by itself."""
    return parse_version(nccl_version) < GID_INDEX_DYNAMIC_SINCE


def _nic_by_rdma(topology: Mapping[str, Any]) -> Dict[str, Mapping[str, Any]]:
    return {nic.get("rdma_device"): nic for nic in topology.get("nics") or [] if nic.get("rdma_device")}


def _rail_port(nic: Optional[Mapping[str, Any]], netdev: Optional[str]) -> Optional[Mapping[str, Any]]:
    if not nic:
        return None
    ports = nic.get("ports") or []
    for port in ports:
        if netdev and port.get("netdev") == netdev:
            return port
    return ports[0] if ports else None


def rails_in_order(topology: Mapping[str, Any]) -> List[Mapping[str, Any]]:
    """One entry per rail NIC, in rail order.

    ``gpufabric_topology.rails`` has one entry per GPU; GPUs that share a NIC (a 2-GPU VM with one
    NIC, or two GPUs per switch) repeat it. NCCL_IB_HCA lists each NIC once.
    """
    rails = list(topology.get("rails") or [])
    if not rails:
        raise NcclPlanError("gpufabric_topology.rails: no rails were discovered, NCCL_IB_HCA cannot be planned")
    by_nic: Dict[str, Mapping[str, Any]] = {}
    for rail in sorted(rails, key=lambda item: (item.get("rail", 0), str(item.get("gpu", "")))):
        if not rail.get("nic"):
            raise NcclPlanError("gpufabric_topology.rails: rail {!r} has no nic".format(rail.get("rail")))
        by_nic.setdefault(rail["nic"], rail)
    return list(by_nic.values())


def rail_ports(topology: Mapping[str, Any]) -> List[Tuple[str, int]]:
    """(RDMA device, port) per rail NIC in rail order; the port is the one carrying the rail's netdev."""
    nics = _nic_by_rdma(topology)
    out = []
    for rail in rails_in_order(topology):
        port = _rail_port(nics.get(rail["nic"]), rail.get("netdev"))
        out.append((rail["nic"], int(port.get("port", 1)) if port else 1))
    return out


def ib_hca_value(ports: Sequence[Tuple[str, int]]) -> str:
    """[('mlx5_0', 1), ('mlx5_3', 1)] -> '=mlx5_0:1,mlx5_3:1' (exact names, the order given)."""
    if not ports:
        raise NcclPlanError("gpufabric_topology.rails: no rails were discovered, NCCL_IB_HCA cannot be planned")
    if len(ports) > MAX_IB_HCA:
        raise NcclPlanError(f"gpufabric_topology.rails: {len(ports)} rails, NCCL_IB_HCA takes at most {MAX_IB_HCA}")
    return "=" + ",".join(f"{device}:{int(port)}" for device, port in ports)


def ib_hca(topology: Mapping[str, Any]) -> str:
    """'=mlx5_0:1,mlx5_3:1': NCCL_IB_HCA of the node's rails (``rail_ports``)."""
    return ib_hca_value(rail_ports(topology))


def net_gdr_level(topology: Mapping[str, Any]) -> Optional[str]:
    """NCCL_NET_GDR_LEVEL for the discovered rails: the worst GPU-NIC path class of any rail,
    capped at PHB (past the host bridge GPUDirect RDMA is not worth it); None (NCCL decides) without
    rails or when a rail has no path class."""
    paths = [rail.get("path") for rail in topology.get("rails") or []]
    if not paths or any(path not in RANK for path in paths):
        return None
    worst = max(RANK[path] for path in paths)
    return PATH_CLASSES[min(worst, RANK["PHB"])]


def environment(
    ports: Sequence[Tuple[str, int]],
    socket_if: str,
    fabric: Mapping[str, Any],
    nccl_version: Any,
    gdr_level: Optional[str],
    gid_index: Optional[int] = None,
    gid_script: Optional[str] = None,
) -> OrderedDict[str, str]:
    """The NCCL_* environment of one rail set, for nccl.conf and for the Pods' ConfigMap alike.

    ``ports``: (RDMA device, port) in rail order; ``socket_if``: NCCL_SOCKET_IFNAME as written;
    ``fabric``: the checked gpufabric_fabric with ``roce_tos`` resolved. NCCL older than 2.21 needs
    the RoCE v2 GID index: ``gid_index`` (a host's, known from discovery) or, where the index is
    only known where NCCL runs (a Pod's interface), ``gid_script``, the path of the script that
    finds it (``GPUFABRIC_NCCL_GID_SCRIPT``).
    """
    entries: OrderedDict[str, str] = OrderedDict()
    entries["NCCL_IB_HCA"] = ib_hca_value(ports)
    entries["NCCL_SOCKET_IFNAME"] = str(socket_if)
    entries["NCCL_IB_TC"] = str(int(fabric["roce_tos"]))
    if needs_gid_index(nccl_version):
        if gid_script:
            entries["GPUFABRIC_NCCL_GID_SCRIPT"] = str(gid_script)
        elif gid_index is not None:
            entries["NCCL_IB_GID_INDEX"] = str(int(gid_index))
        else:
            raise NcclPlanError(f"gpufabric_nccl_version: NCCL {nccl_version} (older than 2.21) needs a GID index")
    if gdr_level:
        entries["NCCL_NET_GDR_LEVEL"] = str(gdr_level)
    return entries


def gid_index(topology: Mapping[str, Any]) -> int:
    """The RoCE v2 IPv4 GID index shared by every rail port (NCCL takes one value)."""
    nics = _nic_by_rdma(topology)
    found = {}
    for rail in rails_in_order(topology):
        port = _rail_port(nics.get(rail["nic"]), rail.get("netdev"))
        gid = (port or {}).get("roce_v2_ipv4") or {}
        if gid.get("gid_index") is None:
            raise NcclPlanError(
                "gpufabric_topology: rail {} ({}) has no RoCE v2 IPv4 GID; NCCL older than 2.21 needs "
                "NCCL_IB_GID_INDEX (set nccl_config_ib_gid_index, or give the rail netdev an IPv4 address)".format(
                    rail.get("rail"), rail["nic"]
                )
            )
        found[rail["nic"]] = int(gid["gid_index"])
    values = sorted(set(found.values()))
    if len(values) != 1:
        raise NcclPlanError(
            "gpufabric_topology: the rail NICs have different RoCE v2 IPv4 GID indexes ({}); NCCL_IB_GID_INDEX "
            "takes one value: set nccl_config_ib_gid_index or upgrade NCCL to 2.21+".format(
                ", ".join(f"{nic}={index}" for nic, index in sorted(found.items()))
            )
        )
    return values[0]


def check_gid_index(topology: Mapping[str, Any], index: int, nccl_version: Any) -> None:
    """An explicit NCCL_IB_GID_INDEX (NCCL < 2.21 takes it as given on every rail port) must not be
    a link-local GID (fe80::/10, derived from the MAC, as the kernel's GID table lists it first):
    traffic on it carries no routable address, so RoCE v2 across the fabric's subnets fails."""
    for rail in rails_in_order(topology):
        port = _rail_port(_nic_by_rdma(topology).get(rail["nic"]), rail.get("netdev")) or {}
        for entry in port.get("gids") or []:
            gid = str(entry.get("gid") or "").lower()
            if entry.get("index") != index or not gid.startswith(("fe8", "fe9", "fea", "feb")):
                continue
            v2 = (port.get("roce_v2_ipv4") or {}).get("gid_index")
            hint = f" (its RoCE v2 IPv4 GID is index {v2})" if v2 is not None else ""
            raise NcclPlanError(
                f"nccl_config_ib_gid_index: {index} is a link-local GID ({gid}) on rail NIC {rail['nic']} port "
                f"{port.get('port', 1)} ({entry.get('ndev') or port.get('netdev')}){hint}; NCCL {nccl_version} "
                "(older than 2.21) would use it as given. Set nccl_config_ib_gid_index to the RoCE v2 IPv4 GID "
                "index, or leave it unset for the plan to find it"
            )


def socket_ifname(value: Any) -> str:
    """A bare name becomes an exact match ('eth0' -> '=eth0'); prefixes/excludes pass through."""
    if isinstance(value, (list, tuple)):
        names = [str(item) for item in value]
        if not names:
            raise NcclPlanError("nccl_config_socket_ifname: empty list")
        return "=" + ",".join(names) if not any(n[:1] in "=^" for n in names) else ",".join(names)
    text = str(value or "").strip()
    if not text:
        raise NcclPlanError("nccl_config_socket_ifname: no interface (set it, or gather facts for the default route)")
    if text[:1] in "=^":
        return text
    return "=" + text


def plan(
    topology: Mapping[str, Any],
    fabric: Mapping[str, Any],
    nccl_version: Any,
    socket_if: Any,
    topo_file: Optional[str] = None,
    gid_index_override: Optional[int] = None,
    gdr_level: Optional[str] = "auto",
    extra: Optional[Mapping[str, Any]] = None,
) -> OrderedDict[str, str]:
    """The ordered NCCL_* entries of /etc/nccl.conf.

    ``fabric`` is the checked gpufabric_fabric with ``roce_tos`` resolved; the variables' ranges
    and choices are the plan's checks (argument specs, _intent_rules). ``gdr_level``: ``auto``
    takes ``net_gdr_level`` of the discovered rails; ``None``/empty leaves NCCL's
    own choice; otherwise one of LOC/PIX/PXB/PHB/SYS.
    """
    ports = rail_ports(topology)
    ifname = socket_ifname(socket_if)
    index = None
    if needs_gid_index(nccl_version):
        if gid_index_override is not None:
            check_gid_index(topology, gid_index_override, nccl_version)
        index = gid_index_override if gid_index_override is not None else gid_index(topology)
    elif gid_index_override is not None:
        raise NcclPlanError(
            f"nccl_config_ib_gid_index: NCCL {nccl_version} (>= 2.21) picks the GID itself; NVIDIA advises "
            "not to set NCCL_IB_GID_INDEX there. Leave nccl_config_ib_gid_index unset."
        )
    if gdr_level == "auto":
        gdr_level = net_gdr_level(topology)
    entries = environment(ports, ifname, fabric, nccl_version, gdr_level, gid_index=index)
    if topo_file:
        if not str(topo_file).startswith("/"):
            raise NcclPlanError(f"nccl_config_topo_file: {topo_file!r} must be an absolute path")
        entries["NCCL_TOPO_FILE"] = str(topo_file)
    for key, value in (extra or {}).items():
        if key in entries:
            raise NcclPlanError(f"nccl_config_extra: {key} is planned from facts and intent; it cannot be overridden")
        text = ("1" if value else "0") if isinstance(value, bool) else str(value)
        if "\n" in text:
            raise NcclPlanError(f"nccl_config_extra: {key} has a newline in its value")
        entries[str(key)] = text
    return entries


def render(entries: Mapping[str, Any], header: str = "") -> str:
    """nccl.conf text: optional comment header, then one VAR=value per line."""
    lines = [header.rstrip("\n")] if header else []
    lines.extend(f"{key}={value}" for key, value in entries.items())
    return "\n".join(lines) + "\n"


def parse(text: Any) -> OrderedDict[str, str]:
    """Read back a nccl.conf (VAR=value lines; '#' comments, blank lines and other lines ignored)."""
    entries: OrderedDict[str, str] = OrderedDict()
    for line in as_text(text, "nccl.conf").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        key, value = stripped.split("=", 1)
        entries[key.strip()] = value.strip()
    return entries
