# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The human-readable topology report (GPUs, NICs, path classes, rails, warnings) from the facts.

Pure Python (>= 3.8), stdlib only.
"""

from __future__ import annotations

from typing import Any, Dict, List


def format_report(facts: Dict[str, Any], hostname: str = "") -> str:
    """Human-readable report: GPUs, NICs, path-class matrix, rails, warnings."""
    out: List[str] = []
    title = f"Topology of {hostname}" if hostname else "Topology"
    out.append(title)
    out.append("=" * len(title))
    sysinfo = facts.get("system") or {}
    cpu = facts.get("cpu") or {}
    out.append(
        f"System: {sysinfo.get('vendor') or '?'} {sysinfo.get('product') or ''}".rstrip()
        + f"; CPU {cpu.get('model_name') or '?'}; NUMA nodes {len(facts['numa_nodes'])}; "
        + f"virtualized {'yes' if facts['virtualized'] else 'no'}; IOMMU "
        + (f"on ({facts['iommu']['groups']} groups)" if facts["iommu"]["enabled"] else "off")
    )
    out.append("")
    out.append(f"GPUs ({len(facts['gpus'])}):")
    for g in facts["gpus"]:
        lk = g["pcie"]
        out.append(
            f"  {g['name']:<5} {g['bdf']}  {g['model'] or g['device_id']:<6} numa {_na(g['numa_node']):<3} "
            f"PCIe {_na(lk['current_speed_gts'])}/{_na(lk['max_speed_gts'])} GT/s "
            f"x{_na(lk['current_width'])}/x{_na(lk['max_width'])}  driver {g['driver'] or '-'}"
        )
    out.append("")
    out.append(f"RDMA NICs ({len(facts['nics'])}):")
    for n in facts["nics"]:
        for p in n["ports"] or [{}]:
            v2 = p.get("roce_v2_ipv4") or {}
            out.append(
                f"  {n['rdma_device']:<8} {n['bdf']}  {(n['model'] or n['device_id']):<13} {n['function']} "
                f"numa {_na(n['numa_node']):<3} {p.get('netdev') or '-':<16} {p.get('state') or '-':<6} "
                f"{_na(p.get('rate_gbps'))} Gb/s mtu {_na(p.get('mtu'))}  "
                f"RoCEv2 {('idx ' + str(v2['gid_index']) + ' ' + v2['ipv4']) if v2 else '-'}  "
                f"{n['role']}{' rail ' + str(n['rail']) if n['rail'] is not None else ''}"
            )
    out.append("")
    nic_names = [n["rdma_device"] for n in facts["nics"]]
    gpu_names = [g["name"] for g in facts["gpus"]]
    if gpu_names:
        cols = gpu_names + nic_names
        width = max([6, *(len(c) + 1 for c in cols)])
        out.append("Path classes (GPU x GPU, GPU x NIC):")
        out.append(" " * 7 + "".join(c.ljust(width) for c in cols))
        for g in gpu_names:
            cells = []
            for c in cols:
                if c == g:
                    cells.append("X")
                elif c in facts["paths"]["gpu_gpu"].get(g, {}):
                    cells.append(facts["paths"]["gpu_gpu"][g][c])
                else:
                    cells.append(facts["paths"]["gpu_nic"][g].get(c, "?"))
            out.append(g.ljust(7) + "".join(x.ljust(width) for x in cells))
        out.append("")
    out.append("Rails:")
    if not facts["rails"]:
        out.append("  (none)")
    for r in facts["rails"]:
        roce = r.get("roce_netdev")
        via = f" (RoCE on {roce})" if roce and roce != r["netdev"] else ""
        out.append(
            f"  rail {r['rail']}: {r['gpu']} ({r['gpu_bdf']}) -> {r['nic']} {r['netdev'] or ''}{via} [{r['path']}]"
        )
    for x in facts.get("rails_excluded") or []:
        out.append(f"  not a rail: {x['nic']} ({x['bdf']}) {x['state']}; needed by {', '.join(x['gpus']) or '-'}")
    for x in facts.get("rail_pool_out") or []:
        out.append(f"  {x['role']}: {x['nic']} ({x['bdf']}) {x['reason']}")
    out.append("")
    out.append(f"Warnings ({len(facts['warnings'])}):")
    if not facts["warnings"]:
        out.append("  (none)")
    for w in facts["warnings"]:
        out.append(f"  [{w['class']}] {w['device']}: {w['message']}")
    return "\n".join(out) + "\n"


def _na(v: Any) -> str:
    return "-" if v is None else str(v)
