# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest bandwidth tests (``ib_write_bw``, ``ib_read_bw``, ``ib_send_bw``): command lines and
output parsing.

Output layout (linux-rdma/perftest ``src/perftest_parameters.c`` ``ctx_print_test_info`` and
``print_report_bw``; header strings ``RESULT_FMT*`` in ``src/perftest_parameters.h``):

* optional CUDA lines (``initializing CUDA``, ``Picking device No. N``, ``device name = [..]``);
* a preamble of ``Key : value`` pairs, two per line on some lines, separated by tabs
  (``Dual-port``/``Device``, ``Number of qps``/``Transport type``, ``Link type``, ``GID index``,
  ``Mtu : 4096[B]``...), under a title such as ``RDMA_Write BW Test``;
* ``local address`` / ``remote address`` lines;
* the result header ``#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]`` with U
  ``Gb/sec`` (``--report_gbits``: bytes / 125000000) or ``MiB/sec`` (``MB/sec`` in older
  releases; both bytes / 0x100000), then one row per message size (``-a`` gives many).

Bandwidths are returned in Gb/s whatever the unit printed. Pure Python (>= 3.8), no Ansible
imports; ``PerftestError`` is the only exception raised for bad input. Numbers are read as ASCII
digits, at most 20 of them (_parse.MAX_DIGITS), so no output can make a conversion fail.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared.parse import integer_or_none

MIB_TO_GBPS = 1048576 * 8 / 1e9  # one MiB/s in Gb/s
TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw")

_HEADER = re.compile(
    r"^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>Gb/sec|MiB/sec|MB/sec)\]\s+BW average\[(?P=unit)\]\s+MsgRate\[Mpps\]"
)
_UINT = r"[0-9]{1,20}"
_DEC = r"[0-9]{1,20}(?:\.[0-9]{1,20})?"
_ROW = re.compile(rf"^\s*({_UINT})\s+({_UINT})\s+({_DEC})\s+({_DEC})\s+({_DEC})(?:\s|$)", re.ASCII)
_TITLE = re.compile(r"^\s*(\S.*?\b(?:BW|Bandwidth)\b.*?Test)\s*$")
# Two "Key : value" pairs share a line, separated by tabs or a run of spaces before the next key.
_SPLIT = re.compile(r"(?<=\S)\s{2,}(?=[A-Za-z][\w .*/-]*?\s*:)")
_CUDA_NAME = re.compile(r"device name = \[(?P<name>[^\]]*)\]")
_CUDA_PICK = re.compile(rf"Picking (?:device No\.|GPU number)\s*(?P<index>{_UINT})", re.ASCII)


class PerftestError(ValueError):
    """perftest output that cannot be read as a bandwidth test result."""


def _num(text: str) -> Any:
    value = integer_or_none(text, 0)
    return text if value is None else value


def parse(text: str) -> Dict[str, Any]:
    """Parse the output of one perftest bandwidth run (server or client side).

    Returns ``{test, role, unit, device, transport, link_type, gid_index, mtu, qps, cuda,
    rows: [{bytes, iterations, bw_peak_gbps, bw_avg_gbps, msg_rate_mpps}], bw_avg_gbps,
    bw_avg_bytes}``, where ``bw_avg_gbps`` is the best average over the rows and ``bw_avg_bytes``
    its message size. Raises PerftestError when there is no result header or no complete row.
    """
    if not isinstance(text, str):
        raise PerftestError(f"perftest output must be text, got {type(text).__name__}")
    info: Dict[str, str] = {}
    title: Optional[str] = None
    unit: Optional[str] = None
    rows: List[Dict[str, Any]] = []
    cuda: Optional[Dict[str, Any]] = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            if unit is not None and header.group("unit") != unit:
                raise PerftestError("perftest output has result tables in two units")
            unit = header.group("unit")
            continue
        if unit is not None:
            row = _ROW.match(line)
            if row:
                size, iters, peak, avg, rate = row.groups()
                factor = 1.0 if unit == "Gb/sec" else MIB_TO_GBPS
                rows.append(
                    {
                        "bytes": int(size),
                        "iterations": int(iters),
                        "bw_peak_gbps": float(peak) * factor,
                        "bw_avg_gbps": float(avg) * factor,
                        "msg_rate_mpps": float(rate),
                    }
                )
                continue
        pick = _CUDA_PICK.search(line)
        if pick:
            cuda = dict(cuda or {}, index=int(pick.group("index")))
        name = _CUDA_NAME.search(line)
        if name:
            cuda = dict(cuda or {}, name=name.group("name").strip())
        if title is None:
            match = _TITLE.match(line)
            if match and ":" not in line:
                title = match.group(1)
                continue
        if ":" in line and not line.lstrip().startswith(("local address", "remote address", "GID:")):
            for part in _SPLIT.split(line.strip()):
                key, sep, value = part.partition(":")
                if sep and key.strip() and value.strip():
                    info.setdefault(key.strip(), value.strip())
    if unit is None:
        raise PerftestError("no perftest result header ('#bytes #iterations BW peak[...]') in the output")
    if not rows:
        raise PerftestError("the perftest result table has no complete row (bytes, iterations, peak, average, rate)")
    best = max(rows, key=lambda r: r["bw_avg_gbps"])
    mtu = re.match(_UINT, info.get("Mtu", ""), re.ASCII)
    gid = info.get("GID index")
    qps = info.get("Number of qps")
    return {
        "test": title,
        "role": "server" if "Waiting for client" in text else "client",
        "unit": unit,
        "device": info.get("Device"),
        "transport": info.get("Transport type"),
        "link_type": info.get("Link type"),
        "gid_index": integer_or_none(gid),
        "mtu": int(mtu.group(0)) if mtu else None,
        "qps": integer_or_none(qps, 0),
        "cuda": cuda,
        "rows": rows,
        "bw_avg_gbps": best["bw_avg_gbps"],
        "bw_avg_bytes": best["bytes"],
    }


def command(
    tool: str,
    device: str,
    *,
    server: Optional[str] = None,
    port: int = 18515,
    gid_index: Optional[int] = None,
    size: Optional[int] = None,
    all_sizes: bool = False,
    duration: Optional[int] = None,
    qps: int = 1,
    use_cuda: Optional[int] = None,
    cuda_dmabuf: bool = False,
    extra: Sequence[str] = (),
) -> List[str]:
    """argv for one side of a perftest bandwidth run (``server`` None = the listening side).

    Both sides must get the same options except ``server``; ``--report_gbits`` is always given so
    the figures come in Gb/s, and ``-F`` so a CPU-frequency warning does not end the run.
    """
    if tool not in TOOLS:
        raise PerftestError(f"tool is '{tool}'; allowed: {', '.join(TOOLS)}")
    if not device or not re.fullmatch(r"[A-Za-z0-9_.:-]+", device):
        raise PerftestError(f"RDMA device '{device}' is not a device name such as mlx5_0")
    if all_sizes and size:
        raise PerftestError("give either size or all_sizes, not both")
    argv = [tool, "-d", device, "-i", "1", "-p", str(int(port)), "-q", str(int(qps)), "-F", "--report_gbits"]
    if gid_index is not None:
        argv += ["-x", str(int(gid_index))]
    if all_sizes:
        argv.append("-a")
    elif size:
        argv += ["-s", str(int(size))]
    if duration:
        argv += ["-D", str(int(duration))]
    if use_cuda is not None:
        argv.append(f"--use_cuda={int(use_cuda)}")
        if cuda_dmabuf:
            argv.append("--use_cuda_dmabuf")
    argv += list(extra)
    if server:
        argv.append(server)
    return argv


def options_of(argv: Sequence[str]) -> Dict[str, Any]:
    """The options of a perftest argv that the simulators and the report need (inverse of command)."""
    out: Dict[str, Any] = {"device": None, "port": 18515, "gid_index": None, "size": 65536, "all_sizes": False}
    out.update({"duration": None, "qps": 1, "use_cuda": None, "gbits": False, "server": None})
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if arg in ("-d", "--ib-dev") and nxt is not None:
            out["device"], i = nxt, i + 1
        elif arg in ("-p", "--port") and nxt is not None:
            out["port"], i = _num(nxt), i + 1
        elif arg in ("-x", "--gid-index") and nxt is not None:
            out["gid_index"], i = _num(nxt), i + 1
        elif arg in ("-s", "--size") and nxt is not None:
            out["size"], i = _num(nxt), i + 1
        elif arg in ("-D", "--duration") and nxt is not None:
            out["duration"], i = _num(nxt), i + 1
        elif arg in ("-q", "--qp") and nxt is not None:
            out["qps"], i = _num(nxt), i + 1
        elif arg in ("-i", "--ib-port", "-m", "--mtu", "-n", "--iters") and nxt is not None:
            i += 1
        elif arg in ("-a", "--all"):
            out["all_sizes"] = True
        elif arg.startswith("--use_cuda="):
            out["use_cuda"] = _num(arg.split("=", 1)[1])
        elif arg in ("--report_gbits", "--report-gbits"):
            out["gbits"] = True
        elif not arg.startswith("-"):
            out["server"] = arg
        i += 1
    return out


def plan_ring(
    nodes: Sequence[str],
    topologies: Dict[str, Dict[str, Any]],
    *,
    memories: Sequence[str] = ("host",),
    base_port: int = 18515,
    tool: str = "ib_write_bw",
    size: int = 1 << 20,
    duration: Optional[int] = 5,
) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """Per-rail perftest runs over a ring of nodes: node i's rail r NIC sends to node i+1's rail r
    NIC (with two nodes, both directions). Returns ``{node: {servers: [...], clients: [...]}}``;
    each run has ``rail, device, peer, memory, port, argv`` (clients also ``server``). Ports are
    ``base_port + 2 x rail`` (+1 for GPU memory), the same on both sides. GPU memory uses the
    rail's own GPU (``--use_cuda=<its index>``). Rails that a node lacks, or whose NIC has no
    RoCE v2 IPv4 address, are listed under ``skipped``."""
    for memory in memories:
        if memory not in ("host", "gpu"):
            raise PerftestError(f"memory kind '{memory}'; allowed: host, gpu")
    out: Dict[str, Dict[str, List[Dict[str, Any]]]] = {n: {"servers": [], "clients": [], "skipped": []} for n in nodes}
    if len(nodes) < 2:
        return out

    def rails(node: str) -> Dict[int, Dict[str, Any]]:
        topo = topologies.get(node) or {}
        gpus = {g.get("name"): g.get("index") for g in topo.get("gpus") or []}
        nics = {n.get("rdma_device"): n for n in topo.get("nics") or []}
        found = {}
        for rail in topo.get("rails") or []:
            nic = nics.get(rail.get("nic")) or {}
            port = next(iter(nic.get("ports") or []), {}) or {}
            if rail.get("rail") in found:
                continue
            found[rail["rail"]] = {
                "device": rail.get("nic"),
                "roce": port.get("roce_v2_ipv4"),
                "gpu": gpus.get(rail.get("gpu")),
            }
        return found

    ring = list(nodes) if len(nodes) > 2 else [nodes[0], nodes[1]]
    for i, node in enumerate(ring):
        peer = ring[(i + 1) % len(ring)]
        mine, theirs = rails(node), rails(peer)
        for rail in sorted(set(mine) | set(theirs)):
            a, b = mine.get(rail), theirs.get(rail)
            if not a or not b or not a["roce"] or not b["roce"]:
                out[node]["skipped"].append(
                    {"rail": rail, "peer": peer, "why": "no NIC with a RoCE v2 IPv4 GID on both"}
                )
                continue
            for memory in memories:
                port = base_port + 2 * rail + (1 if memory == "gpu" else 0)
                common = {"rail": rail, "memory": memory, "port": port}
                srv = command(
                    tool,
                    b["device"],
                    port=port,
                    gid_index=b["roce"]["gid_index"],
                    size=size,
                    duration=duration,
                    use_cuda=b["gpu"] if memory == "gpu" else None,
                )
                cli = command(
                    tool,
                    a["device"],
                    server=b["roce"]["ipv4"],
                    port=port,
                    gid_index=a["roce"]["gid_index"],
                    size=size,
                    duration=duration,
                    use_cuda=a["gpu"] if memory == "gpu" else None,
                )
                out[peer]["servers"].append(dict(common, device=b["device"], peer=node, argv=srv))
                out[node]["clients"].append(
                    dict(common, device=a["device"], peer=peer, server=b["roce"]["ipv4"], argv=cli)
                )
    return out
