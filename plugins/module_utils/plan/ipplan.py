# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""IP arithmetic for the per-rail address plan (all of it through netaddr).

Pure functions: carve per-rail subnets out of a supernet, find overlaps, check gateways and pool
capacity. Errors are raised as IPPlanError with a message naming the rail and the numbers.
"""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

try:
    from netaddr import AddrFormatError, IPAddress, IPNetwork

    HAS_NETADDR = True
except ImportError:  # netaddr is a controller requirement (requirements.txt); say so instead of a traceback
    HAS_NETADDR = False

    class AddrFormatError(Exception):  # type: ignore[no-redef]
        """Stand-in so the except clauses stay valid without netaddr."""

    IPAddress = IPNetwork = None  # type: ignore[assignment,misc]


class IPPlanError(ValueError):
    """The intent cannot be turned into an address plan; the message says why."""


def require_netaddr() -> None:
    if not HAS_NETADDR:
        raise IPPlanError("the netaddr Python package is required on the Ansible controller (pip install netaddr)")


def network(value: str, what: str) -> IPNetwork:
    """Parse a CIDR strictly (host bits must be zero)."""
    require_netaddr()
    try:
        net = IPNetwork(str(value))
    except (AddrFormatError, ValueError, TypeError) as exc:
        raise IPPlanError(f"{what}: {value!r} is not a CIDR ({exc})") from None
    if "/" not in str(value):
        raise IPPlanError(f"{what}: {value!r} has no prefix length; write it as a.b.c.d/nn")
    if net.network != net.ip:
        raise IPPlanError(f"{what}: {value} has host bits set; the network is {net.cidr}")
    return net.cidr


def width(net: IPNetwork) -> int:
    """Address width in bits (32 for IPv4, 128 for IPv6)."""
    return 32 if net.version == 4 else 128


def address(value: str, what: str) -> IPAddress:
    try:
        return IPAddress(str(value))
    except (AddrFormatError, ValueError, TypeError) as exc:
        raise IPPlanError(f"{what}: {value!r} is not an IP address ({exc})") from None


def overlaps(a: IPNetwork, b: IPNetwork) -> bool:
    return a.first <= b.last and b.first <= a.last


def find_overlaps(named: Sequence[Tuple[str, IPNetwork]]) -> List[Tuple[str, IPNetwork, str, IPNetwork]]:
    """Every overlapping pair among (name, network), in input order.

    Sort-and-sweep on the first address so thousands of networks stay cheap.
    """
    order = sorted(range(len(named)), key=lambda i: (named[i][1].version, named[i][1].first, i))
    found = []  # type: List[Tuple[int, int]]
    active = []  # type: List[int]
    for i in order:
        net = named[i][1]
        active = [j for j in active if named[j][1].version == net.version and named[j][1].last >= net.first]
        for j in active:
            found.append((min(i, j), max(i, j)))
        active.append(i)
    found.sort()
    return [(named[i][0], named[i][1], named[j][0], named[j][1]) for i, j in found]


def carve(
    supernet: IPNetwork, prefixlen: int, count: int, avoid: Iterable[IPNetwork] = (), what: str = "supernet"
) -> List[IPNetwork]:
    """The first `count` /prefixlen subnets of supernet that overlap none of `avoid`."""
    if prefixlen < supernet.prefixlen or prefixlen > width(supernet):
        raise IPPlanError(
            "%s %s cannot be carved into /%d subnets (prefix must be between /%d and /%d)"
            % (what, supernet, prefixlen, supernet.prefixlen, width(supernet))
        )
    avoid = list(avoid)
    out = []  # type: List[IPNetwork]
    for sub in supernet.subnet(prefixlen):
        if len(out) == count:
            break
        if any(overlaps(sub, a) for a in avoid):
            continue
        out.append(sub)
    if len(out) < count:
        total = 2 ** (prefixlen - supernet.prefixlen)
        raise IPPlanError(
            "%s %s holds %d /%d subnets, %d of them free of other networks, but %d rails need one each"
            % (what, supernet, total, prefixlen, len(out), count)
        )
    return out


def default_gateway(subnet: IPNetwork) -> IPAddress:
    """First host address (.1 for an IPv4 /24)."""
    return IPAddress(subnet.first + 1, subnet.version)


def check_gateway(rail: str, subnet: IPNetwork, gateway: IPAddress) -> None:
    if not (subnet.first <= int(gateway) <= subnet.last):
        raise IPPlanError(
            f"rail {rail}: gateway {gateway} is outside its subnet {subnet} "
            f"({IPAddress(subnet.first, subnet.version)} - {IPAddress(subnet.last, subnet.version)})"
        )
    if subnet.version == 4 and subnet.prefixlen < 31 and int(gateway) in (subnet.first, subnet.last):
        raise IPPlanError(
            "rail {}: gateway {} is the {} address of {}".format(
                rail, gateway, "network" if int(gateway) == subnet.first else "broadcast", subnet
            )
        )


def usable_addresses(subnet: IPNetwork, gateway: Optional[IPAddress]) -> int:
    """Addresses a pool can hand out: all but network and broadcast (IPv4 < /31) and the gateway."""
    size = subnet.size
    if subnet.version == 4 and subnet.prefixlen < 31:
        size -= 2
    if gateway is not None:
        size -= 1
    return size


def check_ip_capacity(
    rail: str, subnet: IPNetwork, gateway: Optional[IPAddress], nodes: int, block: int
) -> Dict[str, int]:
    """Refuse a pool smaller than nodes x per-node block; return the numbers."""
    usable = usable_addresses(subnet, gateway)
    need = nodes * block
    if need > usable:
        raise IPPlanError(
            "rail %s: pool %s is too small: %d usable addresses (%d minus network, broadcast%s) "
            "but %d nodes x %d per node need %d"
            % (rail, subnet, usable, subnet.size, ", gateway" if gateway is not None else "", nodes, block, need)
        )
    return {"usable": usable, "needed": need, "free": usable - need}


def prefix_for_block(subnet: IPNetwork, block: int) -> int:
    """Longest per-node prefix with room for `block` host addresses (plus network/broadcast on IPv4)."""
    need = block + (2 if subnet.version == 4 else 0)
    bits = max(0, (need - 1).bit_length())
    return width(subnet) - bits


def check_prefix_capacity(rail: str, subnet: IPNetwork, per_node_prefix: int, nodes: int) -> Dict[str, int]:
    """CIDRPool: refuse when subnet has fewer /per_node_prefix blocks than nodes."""
    if per_node_prefix < subnet.prefixlen or per_node_prefix > width(subnet):
        raise IPPlanError(
            "rail %s: per-node prefix /%d does not fit in %s (must be between /%d and /%d)"
            % (rail, per_node_prefix, subnet, subnet.prefixlen, width(subnet))
        )
    blocks = 2 ** (per_node_prefix - subnet.prefixlen)
    if nodes > blocks:
        raise IPPlanError(
            "rail %s: pool %s is too small: it holds %d per-node /%d blocks but %d nodes need one each"
            % (rail, subnet, blocks, per_node_prefix, nodes)
        )
    return {"usable": blocks, "needed": nodes, "free": blocks - nodes}
