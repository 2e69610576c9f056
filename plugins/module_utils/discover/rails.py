# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rails: one NIC per GPU from the GPU x NIC path-class matrix (a minimum-cost assignment).

Pure Python (>= 3.8), stdlib only.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.pci import RANK


def assign(cost: List[List[int]]) -> List[int]:
    """Minimum-cost assignment of n rows to distinct columns (n <= m), Hungarian method.

    Returns the column of each row. Deterministic for a given matrix.
    """
    n = len(cost)
    if n == 0:
        return []
    m = len(cost[0])
    if m < n:
        raise ValueError("more rows than columns")
    inf = float("inf")
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)
    way = [0] * (m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = inf
            j1 = 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    result = [0] * n
    for j in range(1, m + 1):
        if p[j]:
            result[p[j] - 1] = j - 1
    return result


def plan_rails(classes: List[List[str]]) -> List[int]:
    """Assign each GPU (row) a NIC (column) from a GPU x NIC path-class matrix.

    Every NIC serves at most ceil(GPUs / NICs) GPUs. The total path-class rank is minimised
    first, then the number of GPUs that share a NIC (so no NIC stays idle while two GPUs share
    one); among the assignments that are equal on both, GPU 0 gets the lowest NIC column it can,
    then GPU 1, and so on. The result depends only on the matrix: identical nodes get identical
    rails, and ties go to the lowest index.
    """
    g = len(classes)
    if g == 0 or not classes[0]:
        return []
    nn = len(classes[0])
    cap = -(-g // nn)
    share = g + 1  # one more GPU sharing a NIC costs less than one rank step over all GPUs
    big = share * (g + 1)
    forbidden = big * (len(RANK) + 1) * (g + 1)

    def costs(fixed: Dict[int, int]) -> List[List[int]]:
        out = []
        for i, row in enumerate(classes):
            line = []
            for j in range(nn):
                c = RANK[row[j]] * big
                if i in fixed and fixed[i] != j:
                    c = forbidden
                line.extend(c + s * share for s in range(cap))
            out.append(line)
        return out

    def total(cost: List[List[int]], cols: List[int]) -> int:
        return sum(cost[i][c] for i, c in enumerate(cols))

    base = costs({})
    best = total(base, assign(base))
    fixed: Dict[int, int] = {}
    for i in range(g):
        for j in range(nn):
            trial = {**fixed, i: j}
            cost = costs(trial)
            if total(cost, assign(cost)) == best:
                fixed = trial
                break
    return [fixed[i] for i in range(g)]


def name_key(name: str) -> Tuple[Any, ...]:
    """Sort key comparing the numbers in a device name as numbers: mlx5_2 before mlx5_10."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name or "") if t)


def rail_port(nic: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The port a rail uses: the NIC's first InfiniBand or Ethernet port."""
    return next((p for p in nic.get("ports") or [] if p.get("link_layer") in ("Ethernet", "InfiniBand")), None)


def classify_pool(
    pool: List[Dict[str, Any]], gpu_nic: Dict[str, Dict[str, str]], keep: Set[str]
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Split the rail candidates into the GPU matching pool and the NICs classified out of it.

    A NIC that shares no PCIe switch with any GPU (its nearest GPU is PHB or farther: a CPU root
    port) is a storage NIC when every GPU has a NIC on a PCIe switch it shares; a NIC of
    another model whose link rate differs from the rail model's is another speed class (role
    other). The rail model is the model of most switch-local NICs (ties: of the lowest-named).
    NICs in ``keep`` (rdma device, netdev or BDF, lower case) stay in the pool.
    Returns (pool, [{nic, bdf, role, reason}]).
    """
    out: List[Dict[str, Any]] = []

    def kept(n: Dict[str, Any]) -> bool:
        return bool({n["bdf"], n["rdma_device"].lower(), *(x.lower() for x in n.get("netdevs") or [])} & keep)

    def nearest(n: Dict[str, Any]) -> int:
        ranks = [RANK[row[n["rdma_device"]]] for row in gpu_nic.values() if n["rdma_device"] in row]
        return min(ranks) if ranks else RANK["SYS"]

    local = [n for n in pool if nearest(n) <= RANK["PXB"]]
    every_gpu_local = bool(gpu_nic) and all(
        any(RANK[row.get(n["rdma_device"], "SYS")] <= RANK["PXB"] for n in local) for row in gpu_nic.values()
    )
    if every_gpu_local:
        rest = []
        for n in pool:
            if n in local or kept(n):
                rest.append(n)
            else:
                out.append(
                    {
                        "nic": n["rdma_device"],
                        "bdf": n["bdf"],
                        "role": "storage",
                        "reason": "on a CPU root port: it shares no PCIe switch with a GPU",
                    }
                )
        pool = rest
    models: Dict[str, int] = {}
    for n in sorted(local if every_gpu_local else pool, key=lambda x: name_key(x["rdma_device"])):
        models[n["device_id"]] = models.get(n["device_id"], 0) + 1
    if not models:
        return pool, out
    rail_model = max(models, key=lambda m: (models[m], -list(models).index(m)))
    rates = [
        (rail_port(n) or {}).get("rate_gbps")
        for n in pool
        if n["device_id"] == rail_model and (rail_port(n) or {}).get("state") == "ACTIVE"
    ]
    rail_rate = max((r for r in rates if r), default=None)
    rest = []
    for n in pool:
        rate = (rail_port(n) or {}).get("rate_gbps")
        if n["device_id"] != rail_model and rail_rate and rate != rail_rate and not kept(n):
            out.append(
                {
                    "nic": n["rdma_device"],
                    "bdf": n["bdf"],
                    "role": "other",
                    "reason": f"another speed class: {rate} Gb/s, the rail NICs run at {rail_rate} Gb/s",
                }
            )
        else:
            rest.append(n)
    return rest, out


def unhealthy(nic: Dict[str, Any], rail_rate: Optional[float]) -> Optional[str]:
    """Why ``nic`` cannot carry a rail (port not ACTIVE, no RoCE v2 IPv4 GID, link slower than
    ``rail_rate``), or None when it can."""
    port = rail_port(nic)
    if port is None:
        return "no InfiniBand or Ethernet port"
    name = f"{nic['rdma_device']}/{port['port']} ({port.get('netdev') or 'no netdev'})"
    if port.get("state") != "ACTIVE":
        return f"{name} port is {port.get('state')} / {port.get('phys_state')}"
    if port.get("link_layer") == "Ethernet" and not port.get("roce_v2_ipv4"):
        return f"{name} has no RoCE v2 GID with an IPv4 address"
    if rail_rate and port.get("rate_gbps") and port["rate_gbps"] < rail_rate:
        return f"{name} link runs at {port['rate_gbps']} Gb/s, below the other rail NICs' {rail_rate} Gb/s"
    return None


def healthy_rails(
    pool: List[Dict[str, Any]], gpu_names: List[str], classes: Callable[[List[Dict[str, Any]]], List[List[str]]]
) -> Tuple[List[Dict[str, Any]], List[int], List[Dict[str, Any]]]:
    """Match GPUs to the healthy NICs of ``pool``; name the unhealthy NICs and the GPUs that needed them.

    ``classes(nics)`` gives the GPU x NIC path-class matrix of ``nics``. The GPUs that needed an
    unhealthy NIC are those the matching over the whole pool gives it. Returns (healthy pool, the
    NIC column of each GPU in it, [{nic, bdf, state, gpus}]).
    """
    rates = [(rail_port(n) or {}).get("rate_gbps") for n in pool if (rail_port(n) or {}).get("state") == "ACTIVE"]
    rail_rate = max((r for r in rates if r), default=None)
    bad = {n["rdma_device"]: unhealthy(n, rail_rate) for n in pool}
    excluded: List[Dict[str, Any]] = []
    if any(bad.values()):
        full = plan_rails(classes(pool))
        for col, n in enumerate(pool):
            if bad[n["rdma_device"]]:
                needed = [gpu_names[gi] for gi, c in enumerate(full) if c == col]
                excluded.append(
                    {"nic": n["rdma_device"], "bdf": n["bdf"], "state": bad[n["rdma_device"]], "gpus": needed}
                )
    good = [n for n in pool if not bad[n["rdma_device"]]]
    return good, (plan_rails(classes(good)) if good else []), excluded
