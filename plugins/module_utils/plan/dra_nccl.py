# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra mode: the node groups' NCCL environment (the NCCL ConfigMap Pods read) against what a claim
puts in the Pod (plan/dra.py ``delivered``: per rail the RDMA device and the interface, both under
their host names).

- ``NCCL_IB_HCA`` must name exactly the RDMA devices of the group's rail NICs, the NICs the claim
  templates select: a name no claim can deliver is never found in the Pod, and a rail NIC the list
  leaves out is claimed (and taken from every other Pod) but never used. A claim of fewer sets
  delivers some of them; NCCL uses the listed devices it finds (docs/facts.md, "NCCL environment").
- ``NCCL_SOCKET_IFNAME`` must select none of the rail interfaces. With the device plugins Multus
  names the rails ``net1``.. in the Pod; dra.net moves them in under their host names (docs/facts.md,
  "DRA drivers: names and device attributes", what a Pod gets from dranet), so a prefix such as
  ``en`` or an exclusion list such as ``^lo,docker`` that was harmless there would put NCCL's
  bootstrap and socket traffic on a rail. Prefixes, ``=`` (exact names) and ``^`` (exclude, first)
  as NCCL reads them (docs/facts.md, "NCCL environment").

Pure and typed, no Ansible imports.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra import VARIABLE


def _entries(value: str) -> Tuple[bool, bool, List[str]]:
    """(exclude, exact, names) of an NCCL interface list (``^`` first, then ``=``)."""
    text = str(value).strip()
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    return exclude, exact, [e.strip() for e in text.split(",") if e.strip()]


def socket_selects(value: str, name: str) -> bool:
    """Whether NCCL_SOCKET_IFNAME ``value`` lets NCCL use the interface ``name``."""
    exclude, exact, entries = _entries(value)
    hit = any(name == e if exact else name.startswith(e) for e in entries)
    return not hit if exclude else hit


def hca_devices(value: str) -> List[str]:
    """The RDMA devices NCCL_IB_HCA names, in its order (``=mlx5_0:1,mlx5_3:1`` -> mlx5_0, mlx5_3)."""
    return [e.split(":", 1)[0] for e in _entries(value)[2]]


def problems(section: Optional[Mapping[str, Any]], nccl: Mapping[str, Mapping[str, str]]) -> List[str]:
    """Every node group whose NCCL environment does not fit what its claims deliver; [] with the
    device plugins (no dra section)."""
    out: List[str] = []
    for group in (section or {}).get("groups") or []:
        name = group["name"]
        env = nccl.get(name) or {}
        rails = group.get("rails") or []
        delivered = [str(r["rdma_device"]) for r in rails]
        listed = hca_devices(env.get("NCCL_IB_HCA", ""))
        if listed != delivered:
            never = [d for d in listed if d not in delivered]
            unused = [d for d in delivered if d not in listed]
            why = "; ".join(
                part
                for part in (
                    f"it names {', '.join(never)}, which no claim can deliver" if never else "",
                    f"it leaves out {', '.join(unused)}, which the claims take" if unused else "",
                    "" if never or unused else "its order is not the rails' order",
                )
                if part
            )
            out.append(
                f"{VARIABLE}: dra, but node group {name}: NCCL_IB_HCA {env.get('NCCL_IB_HCA')!r} does not match the "
                f"rail NICs its claim templates deliver ({', '.join(delivered)}): {why}"
            )
        socket = env.get("NCCL_SOCKET_IFNAME")
        taken = [str(r["netdev"]) for r in rails if socket and socket_selects(socket, str(r["netdev"]))]
        if taken:
            out.append(
                f"gpufabric_rails.socket_ifname: {socket!r} selects the rail interface(s) {', '.join(taken)} of node "
                f"group {name}, which {VARIABLE}: dra moves into the Pod under those names (dra.net); NCCL's "
                "socket traffic would take a rail. Name the Pod's own interface exactly (the default '=eth0')"
            )
    return out
