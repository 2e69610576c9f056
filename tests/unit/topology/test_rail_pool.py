"""Rails from healthy, GPU-local NICs, on layouts of this file's own.

The base is the lab's 8-GPU layout (lab/snapshots/layouts/dgx-h200-8x8.json: two-level PCIe
switches, each GPU PIX to its own ConnectX-7 and PXB to its neighbour's). Its two storage NICs
are replaced by four dual-port ConnectX-7 cards on CPU root ports, numbered after the switch
NICs (a dual-port card is two PCI functions, each its own mlx5 device), and each complex has both
NICs on its top switch and both GPUs on the nested one. With the CPU-attached NICs in the matching,
GPU6 got mlx5_7 and GPU7 mlx5_6 (likewise GPU2/GPU3 and GPU4/GPU5; issue 38).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.discover.report import format_report
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl

REPO = Path(__file__).resolve().parents[3]


def _cpu_card(bus, numa, first_bus, storage):
    nics = [
        {
            "kind": "nic",
            "model": "cx7",
            "bdf": f"0000:{first_bus}:00.{fn}",
            "netdev": f"enp{int(first_bus, 16)}s0f{fn}np{fn}",
            "port": {"ipv4": [f"storage:{storage + fn}"]},
        }
        for fn in (0, 1)
    ]
    rp = {"kind": "root_port", "model": "intel_rp", "bdf": f"0000:{bus}:01.0", "acs": 29, "children": nics}
    return {"bus": f"0000:{bus}", "numa": numa, "devices": [rp]}


def layout(down=None, slow=None):
    spec = json.loads((REPO / "lab/snapshots/layouts/dgx-h200-8x8.json").read_text(encoding="utf-8"))
    spec = copy.deepcopy(spec)
    switched = [hb for hb in spec["host_bridges"] if hb["devices"][0]["children"][0]["kind"] == "switch"]
    for hb in switched:
        # both NICs of a complex on its top switch, both GPUs on the nested one: each GPU is
        # equally near (PXB) to both NICs, the tie that went to the wrong NIC
        top = hb["devices"][0]["children"][0]["downstream"]
        nested = top[2]["children"][0]["downstream"]
        top[1]["children"], nested[1]["children"] = nested[1]["children"], top[1]["children"]
    cards = [_cpu_card("c8", 0, "c9", 0), _cpu_card("d0", 0, "d1", 2), _cpu_card("d8", 1, "d9", 4),
             _cpu_card("e0", 1, "e1", 6)]  # fmt: skip
    spec["host_bridges"] = sorted(switched + cards, key=lambda hb: hb["bus"])
    for nic in _nics(spec):
        if nic["bdf"] == down:
            nic["port"]["state"] = "DOWN"
        if nic["bdf"] == slow:
            nic["port"]["rate"] = "200 Gb/sec (4X HDR)"
    return spec


def _nics(node):
    if isinstance(node, dict):
        if node.get("kind") == "nic":
            yield node
        for value in node.values():
            yield from _nics(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nics(value)


def discover(snapshots, tmp_path, spec, **kwargs):
    snapshots._Builder(spec, 1, snapshots._Writer(str(tmp_path))).build()
    return T.discover(str(tmp_path), None, **kwargs)


def rails_of(facts):
    return [(r["gpu"], r["nic"], r["path"]) for r in facts["rails"]]


SWITCH_NICS = [f"mlx5_{i}" for i in range(8)]
CPU_NICS = [f"mlx5_{i}" for i in range(8, 16)]


def test_cpu_attached_dual_port_nics_stay_out_of_the_matching(snapshots, tmp_path):
    facts = discover(snapshots, tmp_path, layout())
    roles = {n["rdma_device"]: n["role"] for n in facts["nics"]}
    assert sorted(roles, key=T.name_key) == [f"mlx5_{i}" for i in range(16)]
    # of two equally near NICs, the first GPU of a complex gets the lower one: no swap
    assert rails_of(facts) == [(f"GPU{i}", nic, "PXB") for i, nic in enumerate(SWITCH_NICS)]
    assert [r["rail"] for r in facts["rails"]] == list(range(8))
    assert _nccl.ib_hca(facts) == "=" + ",".join(f"{n}:1" for n in SWITCH_NICS)
    assert {n: roles[n] for n in CPU_NICS} == dict.fromkeys(CPU_NICS, "storage")
    assert [x["nic"] for x in facts["rail_pool_out"]] == CPU_NICS
    assert all("CPU root port" in x["reason"] for x in facts["rail_pool_out"])
    assert facts["rails_excluded"] == []


def test_identical_nodes_give_identical_rails(snapshots, tmp_path):
    one = discover(snapshots, tmp_path / "a", layout())
    two = discover(snapshots, tmp_path / "b", layout())
    assert one["rails"] == two["rails"]
    assert _nccl.ib_hca(one) == _nccl.ib_hca(two)
    assert _nccl.net_gdr_level(one) == _nccl.net_gdr_level(two)


def test_rail_nics_keeps_a_cpu_attached_nic_in_the_pool(snapshots, tmp_path):
    facts = discover(snapshots, tmp_path, layout(), rail_nics=["mlx5_8"])
    assert "mlx5_8" not in [x["nic"] for x in facts["rail_pool_out"]]
    # in the pool, but farther than every GPU's own switch NICs: left over as a storage NIC
    assert [r[1] for r in rails_of(facts)] == SWITCH_NICS
    assert {n["rdma_device"]: n["role"] for n in facts["nics"]}["mlx5_8"] == "storage"


def test_a_down_rail_nic_is_never_a_rail(snapshots, tmp_path):
    facts = discover(snapshots, tmp_path, layout(down="0000:9f:00.0"))
    nics = {n["bdf"]: n for n in facts["nics"]}
    dead = nics["0000:9f:00.0"]["rdma_device"]
    assert dead == "mlx5_5"
    assert dead not in [r["nic"] for r in facts["rails"]]
    assert dead not in _nccl.ib_hca(facts)
    assert nics["0000:9f:00.0"]["role"] == "other"
    (excluded,) = facts["rails_excluded"]
    assert excluded["nic"] == dead
    assert excluded["gpus"] == ["GPU5"]
    assert "DOWN" in excluded["state"]
    # GPU5 now shares GPU4's NIC on their switch; the other GPUs keep theirs
    got = rails_of(facts)
    assert got[5] == ("GPU5", "mlx5_4", "PXB")
    assert [g for i, g in enumerate(got) if i != 5] == [
        (f"GPU{i}", nic, "PXB") for i, nic in enumerate(SWITCH_NICS) if i != 5
    ]
    assert _nccl.ib_hca(facts) == "=" + ",".join(f"{n}:1" for n in SWITCH_NICS if n != dead)


def test_a_rail_nic_with_a_slower_link_is_never_a_rail(snapshots, tmp_path):
    facts = discover(snapshots, tmp_path, layout(slow="0000:3a:00.0"))
    (excluded,) = facts["rails_excluded"]
    assert excluded["nic"] == "mlx5_2"
    assert excluded["gpus"] == ["GPU2"]
    assert "200.0 Gb/s, below the other rail NICs' 400.0 Gb/s" in excluded["state"]
    assert "mlx5_2" not in [r["nic"] for r in facts["rails"]]
    report = format_report(facts)
    assert "  not a rail: mlx5_2 (0000:3a:00.0) mlx5_2/1" in report and "needed by GPU2" in report
    assert "  storage: mlx5_8 (0000:c9:00.0) on a CPU root port" in report


def test_a_nic_without_a_roce_v2_ipv4_gid_is_never_a_rail(sysroot):
    """lab/snapshots/layouts/roce-vlan-gid.json: mlx5_1 has no IPv4 address yet."""
    facts = T.discover(sysroot("roce-vlan-gid@1"))
    (excluded,) = facts["rails_excluded"]
    assert (excluded["nic"], excluded["gpus"]) == ("mlx5_1", ["GPU1"])
    assert "no RoCE v2 GID with an IPv4 address" in excluded["state"]
    assert _nccl.ib_hca(facts) == "=mlx5_0:1"
    assert "-> mlx5_0 enp68s0np0 (RoCE on enp68s0np0.100) [PIX]" in format_report(facts)
