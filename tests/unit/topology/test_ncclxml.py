"""NCCL topology XML rendered from the facts, against NCCL's own dump and NCCL's layout rules."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import topology as P
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import ncclxml as X

REPO = Path(__file__).resolve().parents[3]


def facts_for(sysroot, name):
    root = Path(sysroot(name))
    topo = root / "nvidia-smi-topo-m.txt"
    return T.discover(str(root), topo.read_text(encoding="utf-8") if topo.exists() else None)


def test_real_h200_matches_nccl_dump(sysroot):
    """NCCL_TOPO_DUMP_FILE from a PyTorch all-reduce on the real H200 (lab/snapshots/h200-real)."""
    ours = X.render_nccl_topo_xml(facts_for(sysroot, "h200-real"))
    theirs = (REPO / "lab/snapshots/h200-real/nccl-topo-dump.xml").read_text(encoding="utf-8")
    result = X.compare_topo_xml(ours, theirs)
    assert result["differences"] == []
    assert result["compared"]["gpus"] == ["0000:00:06.0"]
    assert result["ignored"] == ["eth0"]  # NCCL's socket NIC (virtio), not an RDMA device
    # the same numaid and CPU identity as NCCL wrote
    cpu_ours = ET.fromstring(ours).find("cpu").attrib
    cpu_theirs = ET.fromstring(theirs).find("cpu").attrib
    for key in ("numaid", "arch", "vendor", "familyid", "modelid"):
        assert cpu_ours[key] == cpu_theirs[key], key


def test_compare_reports_differences(sysroot):
    ours = X.render_nccl_topo_xml(facts_for(sysroot, "h200-real"))
    theirs = ours.replace('link_width="0"', 'link_width="16"').replace('sm="90"', 'sm="80"')
    result = X.compare_topo_xml(ours, theirs)
    assert not result["equal"]
    assert any("link_width" in d for d in result["differences"])
    assert any("gpu sm" in d for d in result["differences"])


@pytest.mark.parametrize(
    ("snapshot", "gpu", "parents", "speed", "width"),
    [
        # GPU0 sits on a top switch: parent = that switch's upstream port (root port and the
        # downstream port are skipped, as NCCL walks sysfs two levels at a time)
        ("dgx-h200-8x8@1", "0000:19:00.0", ["0000:16:00.0"], "32.0 GT/s PCIe", "16"),
        # GPU1 sits on the nested switch: top upstream port, then the nested upstream port
        ("dgx-h200-8x8@1", "0000:1e:00.0", ["0000:16:00.0", "0000:1c:00.0"], "32.0 GT/s PCIe", "16"),
        # on a root port directly: straight under <cpu>
        ("pcie-l40s-4x2@1", "0000:e1:00.0", [], "16.0 GT/s PCIe", "16"),
        # on the root bus of a VM: under <cpu>, and width 0 because the host bridge has none
        ("vm-2gpu@1", "0000:00:05.0", [], "32.0 GT/s PCIe", "0"),
    ],
)
def test_nesting_and_links(sysroot, snapshot, gpu, parents, speed, width):
    view = X._pci_view(X.render_nccl_topo_xml(facts_for(sysroot, snapshot)))
    assert view[gpu]["parents"] == parents
    assert view[gpu]["attrs"]["link_speed"] == speed
    assert view[gpu]["attrs"]["link_width"] == width


def test_dgx_layout(sysroot):
    facts = facts_for(sysroot, "dgx-h200-8x8@1")
    xml = X.render_nccl_topo_xml(facts)
    root = ET.fromstring(xml)
    assert root.tag == "system"
    assert root.get("version") == "1"
    cpus = root.findall("cpu")
    assert [c.get("numaid") for c in cpus] == ["0", "1"]
    assert cpus[0].get("affinity") == facts["numa_nodes"][0]["cpumap"]
    busids = {p.get("busid") for p in root.iter("pci")}
    bridges = {b["bdf"]: b["type"] for b in facts["pcie"]["bridges"]}
    # only switch upstream ports appear among the bridges
    assert {bridges[b] for b in busids if b in bridges} == {"switch_upstream"}
    gpus = root.findall(".//gpu")
    assert [g.get("dev") for g in gpus] == [str(i) for i in range(8)]
    for g in gpus:
        links = g.findall("nvlink")
        assert [(n.get("target"), n.get("count"), n.get("tclass")) for n in links] == [
            ("fffffff:ff:ff.0", "18", "0x068000")
        ]
    nets = {n.get("name"): n for n in root.iter("net")}
    # mlx5_7's port is DOWN: NCCL's IB transport gives it no NET device
    assert sorted(nets) == [f"mlx5_{i}" for i in range(10) if i != 7]
    assert nets["mlx5_0"].get("speed") == "400000"
    assert nets["mlx5_0"].get("gdr") == "1"
    assert nets["mlx5_2"].get("gdr") == "0"  # storage NIC
    # every child list is ordered by bus id, as NCCL keeps it
    for node in root.iter():
        ids = [c.get("busid") for c in node if c.tag == "pci"]
        assert ids == sorted(ids)


def test_direct_nvlink_pairs_point_at_the_peer():
    facts = {
        "gpus": [
            {"index": 0, "name": "GPU0", "bdf": "0000:01:00.0", "sm": 89, "numa_node": 0, "pci_path": [],
             "class": "0x030200", "vendor_id": "10de", "device_id": "26b9",
             "pcie": {"max_speed": "16.0 GT/s PCIe", "max_width": 16}},
            {"index": 1, "name": "GPU1", "bdf": "0000:02:00.0", "sm": 89, "numa_node": 0, "pci_path": [],
             "class": "0x030200", "vendor_id": "10de", "device_id": "26b9",
             "pcie": {"max_speed": "16.0 GT/s PCIe", "max_width": 16}},
        ],
        "nics": [],
        "pcie": {"bridges": []},
        "numa_nodes": [{"id": 0, "cpulist": "0-7", "cpumap": "ff"}],
        "cpu": {"arch": "x86_64"},
        "paths": {"nvlink": {"GPU0": {"GPU1": 4}, "GPU1": {"GPU0": 4}}},
    }  # fmt: skip
    view = X._pci_view(X.render_nccl_topo_xml(facts))
    assert view["0000:01:00.0"]["nvlink"] == [("0000:02:00.0", "4", "0x030200")]


# Captured on a 2x H200 host (NVLink through NVSwitches not visible as PCI devices) by
# tests/hardware/h200_compare.sh; see lab/snapshots/h200-real/README.md.
REAL_X2 = Path(__file__).resolve().parents[3] / "lab" / "snapshots" / "h200-real" / "x2"


def test_nvswitch_target_is_what_nccl_dumped_on_a_real_host():
    dump = ET.parse(REAL_X2 / "nccl-topo-dump.xml").getroot()
    links = {(n.get("target"), n.get("count"), n.get("tclass")) for n in dump.iter("nvlink")}
    assert links == {(X.NVSWITCH_TARGET, "18", "0x068000")}


def test_real_two_gpu_matrix_gives_nv18_both_ways():
    parsed = P.parse_topo_matrix((REAL_X2 / "nvidia-smi-topo-m.txt").read_text())
    assert parsed["devices"] == ["GPU0", "GPU1"]
    assert parsed["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert parsed["matrix"]["GPU1"]["GPU0"] == "NV18"
    assert parsed["cpu_affinity"] == {"GPU0": "0-31", "GPU1": "0-31"}


def _nic(name, bdf, port=1, state="ACTIVE", link="Ethernet"):
    return {
        "rdma_device": name, "bdf": bdf, "pci_path": [], "numa_node": 0, "class": "0x020000",
        "vendor_id": "15b3", "device_id": "1021", "node_guid": "b83f:d203:00c4:1000",
        "pcie": {"max_speed": "32.0 GT/s PCIe", "max_width": 16}, "role": "compute",
        "ports": [{"port": port, "state": state, "link_layer": link, "rate_gbps": 400}],
    }  # fmt: skip


def test_net_devices_numbered_as_nccl_does():
    """NCCL numbers NET devices by PCI address (src/transport/net_ib/init.cc), not by name."""
    nics = [
        _nic("mlx5_10", "0000:9a:00.0"),
        _nic("mlx5_2", "0000:1a:00.0"),
        _nic("mlx5_3", "0000:1a:00.1"),  # second port of the same card
        _nic("mlx5_4", "0000:2a:00.0", state="DOWN"),
        _nic("mlx5_5", "0000:3a:00.0", link="Unknown"),
        _nic("mlx5_11", "0001:05:00.0"),
    ]
    facts = {"gpus": [], "nics": nics, "pcie": {"bridges": []}, "numa_nodes": [], "cpu": {}, "paths": {}}
    root = ET.fromstring(X.render_nccl_topo_xml(facts))
    nets = [(n.get("name"), n.get("dev"), n.get("port")) for n in root.iter("net")]
    assert nets == [("mlx5_2", "0", "1"), ("mlx5_3", "1", "2"), ("mlx5_10", "2", "1"), ("mlx5_11", "3", "1")]
    # both ports of the card share the <pci> of function 0, as NCCL merges them
    pci = {p.get("busid"): [n.get("name") for n in p.iter("net")] for p in root.iter("pci")}
    assert pci == {"0000:1a:00.0": ["mlx5_2", "mlx5_3"], "0000:9a:00.0": ["mlx5_10"], "0001:05:00.0": ["mlx5_11"]}
