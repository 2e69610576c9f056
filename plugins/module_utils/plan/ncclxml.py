# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render an NCCL topology file (NCCL_TOPO_FILE) from ``gpufabric_topology`` facts.

The layout follows what NCCL itself builds from sysfs and dumps with NCCL_TOPO_DUMP_FILE
(NVIDIA/nccl src/graph/xml.cc, xml.h; docs/facts.md, "NCCL topology file"):

* ``<system version="1">`` holds one ``<cpu>`` per NUMA id (``numaid`` = the device's
  ``numa_node``, ``-1`` when unknown), with ``affinity`` (the node's cpumap, left out when the
  node is unknown, as NCCL does), ``arch``, ``vendor``, ``familyid``, ``modelid``.
* PCI functions nest the way NCCL walks sysfs: from a device it goes up two path components at
  a time (skipping a switch's downstream port and landing on its upstream port) and stops at a
  host bridge. So a GPU behind a switch sits in a ``<pci>`` for the switch upstream port; root
  ports and downstream ports do not appear; a device on a root port sits directly in ``<cpu>``.
* ``link_speed`` is the lower of the device's ``max_link_speed`` and its parent's (the sysfs
  string, e.g. ``32.0 GT/s PCIe``); ``link_width`` is the lower of the two ``max_link_width``
  values, where a missing parent value (a host bridge) counts as 0, as in NCCL.
* ``<gpu dev sm rank gdr>`` with ``<nvlink target count tclass>`` children from the NVLink
  counts of `nvidia-smi topo -m`; an 18-link SM90 GPU is taken to hang off NVSwitches
  (``target="fffffff:ff:ff.0" tclass="0x068000"``, what NCCL 2.27 dumped on a 2x H200 host whose switches are not
  visible as a PCI device), other counts are direct GPU links (``tclass="0x030200"``).
* ``<nic><net name dev speed port latency guid maxconn gdr/></nic>`` in the ``<pci>`` of the NIC's
  bus with device and function 0, numbered and ordered as NCCL's IB transport does
  (:func:`nccl_net_devices`).
Children of a node are ordered by bus id, as NCCL keeps them.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterator, List, Optional, Tuple
from xml.sax.saxutils import quoteattr

from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers.topology import parse_speed

NVSWITCH_TARGET = "fffffff:ff:ff.0"


class _Node:
    def __init__(self, tag: str, attrs: List[Tuple[str, str]]):
        self.tag = tag
        self.attrs = attrs
        self.subs: List[_Node] = []

    def key(self) -> str:
        for k, v in self.attrs:
            if k == "busid":
                return v
        return ""

    def render(self, out: List[str], depth: int) -> None:
        pad = "  " * depth
        attrs = "".join(f" {k}={quoteattr(v)}" for k, v in self.attrs)
        if not self.subs:
            out.append(f"{pad}<{self.tag}{attrs}/>")
            return
        out.append(f"{pad}<{self.tag}{attrs}>")
        for s in self.subs:
            s.render(out, depth + 1)
        out.append(f"{pad}</{self.tag}>")


def _nccl_link(dev: Dict[str, Any], parent: Optional[Dict[str, Any]]) -> Tuple[str, str]:
    dspeed = dev["pcie"].get("max_speed") or ""
    pspeed = (parent or {}).get("pcie", {}).get("max_speed") or ""
    dv = parse_speed(dspeed)
    pv = parse_speed(pspeed)
    speed = pspeed if (pv is not None and (dv is None or pv < dv)) else dspeed
    dw = dev["pcie"].get("max_width") or 0
    pw = (parent or {}).get("pcie", {}).get("max_width") or 0
    return speed, str(min(dw, pw))


def _hex_guid(guid: Optional[str]) -> str:
    if not guid:
        return "0x0"
    return "0x" + (guid.replace(":", "").lstrip("0") or "0")


def _bdf_key(bdf: str) -> Tuple[int, ...]:
    """(domain, bus, device, function) as numbers: mlx5_10 on 0000:9a:00.0 after mlx5_2 on 0000:1a:00.0."""
    m = re.match(r"^([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\.([0-7])$", bdf or "")
    if not m:
        return ()
    return tuple(int(x, 16) for x in m.groups())


def merged_busid(bdf: str) -> str:
    """The PCI node NCCL hangs a NIC's ``<net>`` in: device and function set to 0 (ports, VFs merged)."""
    return bdf.rsplit(":", 1)[0] + ":00.0" if _bdf_key(bdf) else bdf


def _numeric_name(name: str) -> Tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name or ""))


def nccl_net_devices(nics: List[Dict[str, Any]]) -> List[Tuple[Dict[str, Any], Dict[str, Any], int]]:
    """The NET devices of NCCL's IB transport, in NCCL's index order: [(nic, port, port attribute)].

    NVIDIA/nccl src/transport/net_ib/init.cc (ncclIbInitDevices, ncclIbCompareDevs,
    ncclIbGetRealPort, ncclIbGetPhysProperties): one device per port whose state is ACTIVE and
    whose link layer is InfiniBand or Ethernet; the list is then sorted by the device's PCI
    address (NCCL_IB_DEVICE_PCI_ORDER, on by default), devices without one last; the index in
    that list is the ``dev`` of ``<net>``. The ``port`` NCCL reports is the verbs port plus the
    number of earlier devices on the same PCI bus (the other ports of a multi-port NIC). Devices
    with equal addresses keep verbs order, taken here as the numeric order of their names.
    """
    found = []
    for n in nics:
        for p in n.get("ports") or []:
            if p.get("link_layer") not in ("Ethernet", "InfiniBand") or p.get("state") != "ACTIVE":
                continue
            key = _bdf_key(n.get("bdf") or "")
            found.append((not key, key, _numeric_name(n.get("rdma_device") or ""), p.get("port") or 0, n, p))
    found.sort(key=lambda f: f[:4])
    out = []
    seen: List[Tuple[int, ...]] = []
    for _order, key, _dev, _bus, n, p in found:
        bus = key[:2]
        real = sum(1 for b in seen if key and b == bus)
        seen.append(bus)
        out.append((n, p, int(p.get("port") or 0) + real))
    return out


class _Tree:
    """The CPU and PCI nodes of the topology, each made once: a PCI device hangs where NCCL's sysfs
    walk puts it (two path components up, stopping at the host bridge), under its NUMA node's CPU."""

    def __init__(self, facts: Dict[str, Any]) -> None:
        self.bridges = {b["bdf"]: b for b in facts["pcie"]["bridges"]}
        self.numa_by_id = {n["id"]: n for n in facts.get("numa_nodes", [])}
        self.cpu_info = facts.get("cpu") or {}
        self.cpus: Dict[str, _Node] = {}
        self.pcis: Dict[str, _Node] = {}

    def cpu_node(self, numa: Optional[int]) -> _Node:
        numaid = str(numa) if numa is not None else "-1"
        if numaid not in self.cpus:
            attrs = [("numaid", numaid)]
            node = self.numa_by_id.get(numa) if numa is not None else None
            if node and node.get("cpumap"):
                attrs.append(("affinity", node["cpumap"]))
            for key, attr in (("arch", "arch"), ("vendor", "vendor"), ("family", "familyid"), ("model", "modelid")):
                if self.cpu_info.get(key) is not None:
                    attrs.append((attr, str(self.cpu_info[key])))
            self.cpus[numaid] = _Node("cpu", attrs)
        return self.cpus[numaid]

    def pci_node(self, dev: Dict[str, Any], bdf: str) -> _Node:
        if bdf in self.pcis:
            return self.pcis[bdf]
        path = dev.get("pci_path") or []
        parent = self.bridges.get(path[-1]) if path else None
        speed, width = _nccl_link(dev, parent)
        attrs = [
            ("busid", bdf),
            ("class", dev.get("class") or ""),
            ("vendor", "0x" + dev["vendor_id"]),
            ("device", "0x" + dev["device_id"]),
            ("subsystem_vendor", "0x" + (dev.get("subsystem_vendor_id") or "0000")),
            ("subsystem_device", "0x" + (dev.get("subsystem_device_id") or "0000")),
            ("link_speed", speed),
            ("link_width", width),
        ]
        node = _Node("pci", attrs)
        self.pcis[bdf] = node
        # NCCL's parent: two path components up, stopping at the host bridge
        if len(path) >= 2:
            up = self.bridges.get(path[-2])
            parent_node = self.pci_node(up, path[-2]) if up else self.cpu_node(dev.get("numa_node"))
        else:
            parent_node = self.cpu_node(dev.get("numa_node"))
        parent_node.subs.append(node)
        return node


def _gpu_node(g: Dict[str, Any], peers: Dict[str, int], gpu_bdf: Dict[str, str]) -> _Node:
    """A GPU with its NVLinks: one to the NVSwitch for a Hopper GPU with 18 links to every peer,
    else one per peer GPU."""
    gattrs = [("dev", str(g["index"]))]
    if g.get("sm") is not None:
        gattrs.append(("sm", str(g["sm"])))
    gattrs += [("rank", str(g["index"])), ("gdr", "1")]
    gnode = _Node("gpu", gattrs)
    counts = set(peers.values())
    if peers and counts == {18} and g.get("sm") == 90:
        gnode.subs.append(_Node("nvlink", [("target", NVSWITCH_TARGET), ("count", "18"), ("tclass", "0x068000")]))
    else:
        for peer in sorted(peers, key=lambda p: gpu_bdf[p]):
            gnode.subs.append(
                _Node(
                    "nvlink",
                    [("target", gpu_bdf[peer]), ("count", str(peers[peer])), ("tclass", "0x030200")],
                )
            )
    return gnode


def _add_nics(tree: _Tree, nics: List[Dict[str, Any]]) -> None:
    """One ``nic`` per PCI function (ports of one merged device share it), one ``net`` per port, in
    NCCL's device order."""
    by_pci: Dict[str, _Node] = {}
    for dev_index, (n, p, port) in enumerate(nccl_net_devices(nics)):
        busid = merged_busid(n["bdf"])
        if busid not in by_pci:
            owner = next((x for x in nics if x["bdf"] == busid), n)
            nic = _Node("nic", [])
            tree.pci_node(owner, busid).subs.append(nic)
            by_pci[busid] = nic
        speed = int((p.get("rate_gbps") or 0) * 1000)
        by_pci[busid].subs.append(
            _Node(
                "net",
                [
                    ("name", n["rdma_device"]),
                    ("dev", str(dev_index)),
                    ("speed", str(speed)),
                    ("port", str(port)),
                    ("latency", "0"),
                    ("guid", _hex_guid(n.get("node_guid"))),
                    ("maxconn", "131072"),
                    ("gdr", "1" if n.get("role") == "compute" else "0"),
                ],
            )
        )


def _sort(node: _Node) -> None:
    node.subs.sort(key=lambda s: (s.tag != "pci", s.key()))
    for s in node.subs:
        _sort(s)


def render_nccl_topo_xml(facts: Dict[str, Any]) -> str:
    """NCCL_TOPO_FILE text for the GPUs and RDMA NICs in ``facts``."""
    tree = _Tree(facts)
    nvlink = facts.get("paths", {}).get("nvlink") or {}
    gpu_bdf = {g["name"]: g["bdf"] for g in facts["gpus"]}
    for g in facts["gpus"]:
        tree.pci_node(g, g["bdf"]).subs.append(_gpu_node(g, nvlink.get(g["name"]) or {}, gpu_bdf))
    _add_nics(tree, facts["nics"])
    system = _Node("system", [("version", "1")])
    for numaid in sorted(tree.cpus, key=int):
        system.subs.append(tree.cpus[numaid])
    _sort(system)
    out: List[str] = []
    system.render(out, 0)
    return "\n".join(out) + "\n"


PCI_KEYS = ("class", "vendor", "device", "subsystem_vendor", "subsystem_device", "link_speed", "link_width")


def _pci_view(text: str) -> Dict[str, Any]:
    """busid -> {attrs, parents (busids up to the cpu), numaid, gpu attrs, net names}."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(text)
    out: Dict[str, Any] = {}

    def walk(node, parents: List[str], numaid: Optional[str]) -> None:
        for child in node:
            if child.tag == "cpu":
                walk(child, [], child.get("numaid"))
            elif child.tag == "pci":
                busid = (child.get("busid") or "").lower()
                gpu = child.find("gpu")
                nets = [n.get("name") for n in child.iter("net")]
                out[busid] = {
                    "attrs": {k: child.get(k) for k in PCI_KEYS},
                    "parents": list(parents),
                    "numaid": numaid,
                    "gpu": {k: gpu.get(k) for k in ("dev", "sm", "rank", "gdr")} if gpu is not None else None,
                    "nvlink": sorted((n.get("target"), n.get("count"), n.get("tclass")) for n in gpu.iter("nvlink"))
                    if gpu is not None
                    else [],
                    "nets": nets if child.find("nic") is not None else [],
                }
                walk(child, [*parents, busid], numaid)

    walk(root, [], None)
    return out


def _pairs(
    kind: str, a: Dict[str, Any], b: Dict[str, Any], busids: List[str], compared: List[str], diffs: List[str]
) -> Iterator[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    """(busid, ours, theirs) for the bus ids in both views; the others are noted as differences."""
    for busid in busids:
        if busid not in a or busid not in b:
            diffs.append(f"{kind} {busid} only in {'ours' if busid in a else 'theirs'}")
            continue
        compared.append(busid)
        yield busid, a[busid], b[busid]


def _differ(label: str, ours: Dict[str, Any], theirs: Dict[str, Any], keys: Tuple[str, ...]) -> List[str]:
    return [f"{label} {k}: ours {ours[k]!r}, theirs {theirs[k]!r}" for k in keys if ours[k] != theirs[k]]


def compare_topo_xml(ours: str, theirs: str, rdma_nets: Optional[List[str]] = None) -> Dict[str, Any]:
    """Compare two NCCL topology XMLs on what matters for placement.

    Checked for every GPU in either file: present in both, same PCI attributes (class, ids,
    link_speed, link_width), same chain of parent PCI nodes, same CPU numaid, same gpu dev/sm and
    NVLink list; for every RDMA NIC: same attributes and parents. ``rdma_nets``: names of the RDMA
    devices (others in ``theirs``, like NCCL's socket NICs, are listed as ignored).
    Returns {"equal": bool, "differences": [...], "compared": {...}, "ignored": [...]}.
    """
    a = _pci_view(ours)
    b = _pci_view(theirs)
    diffs: List[str] = []
    compared: Dict[str, List[str]] = {"gpus": [], "nics": []}
    gpus = sorted({k for k, v in a.items() if v["gpu"]} | {k for k, v in b.items() if v["gpu"]})
    for busid, x, y in _pairs("GPU", a, b, gpus, compared["gpus"], diffs):
        diffs += _differ(f"GPU {busid}", x["attrs"], y["attrs"], PCI_KEYS)
        diffs += _differ(f"GPU {busid}", x, y, ("parents", "numaid", "nvlink"))
        diffs += _differ(f"GPU {busid} gpu", x["gpu"], y["gpu"], ("dev", "sm"))
    rdma = set(rdma_nets or [])
    ignored: List[str] = []
    nic_a = {k: v for k, v in a.items() if v["nets"]}
    nic_b = {k: v for k, v in b.items() if v["nets"] and (not rdma or set(v["nets"]) & rdma)}
    for k, v in b.items():
        if v["nets"] and k not in nic_b:
            ignored.extend(v["nets"])
    for busid, x, y in _pairs("NIC", nic_a, nic_b, sorted(set(nic_a) | set(nic_b)), compared["nics"], diffs):
        diffs += _differ(f"NIC {busid}", x["attrs"], y["attrs"], PCI_KEYS)
        diffs += _differ(f"NIC {busid}", x, y, ("parents",))
    # nets NCCL attached straight to a cpu (virtual/socket NICs) are not PCI: list them as ignored
    import xml.etree.ElementTree as ET

    for cpu in ET.fromstring(theirs).iter("cpu"):
        for nic in cpu.findall("nic"):
            ignored.extend(n.get("name") for n in nic.iter("net"))
    return {"equal": not diffs, "differences": diffs, "compared": compared, "ignored": sorted(set(ignored))}
