# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rails: one NIC per GPU from the GPU x NIC path-class matrix (a minimum-cost assignment).

Pure Python (>= 3.8), stdlib only.
"""

from __future__ import annotations

from typing import List

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

    Every NIC serves at most ceil(GPUs / NICs) GPUs; the total path-class rank is minimised,
    ties go to the NIC at the GPU's proportional position (GPU i of G prefers NIC i*N//G), so
    the result is deterministic and never gives two GPUs one NIC while another NIC is idle.
    """
    g = len(classes)
    if g == 0 or not classes[0]:
        return []
    nn = len(classes[0])
    cap = -(-g // nn)
    big = 10 * (g + nn + 1)
    cost = []
    for i, row in enumerate(classes):
        pref = i * nn // g
        line = []
        for j in range(nn):
            c = RANK[row[j]] * big * big + abs(j - pref) * big
            line.extend(c + s for s in range(cap))
        cost.append(line)
    cols = assign(cost)
    return [c // cap for c in cols]
