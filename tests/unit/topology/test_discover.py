"""discover() on every snapshot against hand-written expectations (tests/unit/topology/expected).

Each expected/<snapshot>.yml lists every field of every GPU and NIC (compared as whole dicts,
so a field added or lost fails), the PCIe bridges, host bridges, path classes, rails, NCCL
values and warnings. Where the snapshot carries an nvidia-smi matrix, the GPU x NIC classes
derived from PCIe are checked against it (an independent source).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.discover import topology as T
from ansible_collections.gpufabric.rollout.plugins.module_utils.parsers import topology as P
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl

EXPECTED = Path(__file__).resolve().parent / "expected"
CASES = sorted(p.stem for p in EXPECTED.glob("*.yml"))


def load(name):
    with open(EXPECTED / f"{name}.yml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@pytest.fixture(scope="module")
def facts_of(sysroot):
    cache = {}

    def get(name):
        if name not in cache:
            root = sysroot(name)
            topo = os.path.join(root, "nvidia-smi-topo-m.txt")
            text = Path(topo).read_text(encoding="utf-8") if os.path.exists(topo) else None
            cache[name] = (T.discover(root, text), text)
        return cache[name]

    return get


def test_every_snapshot_has_expectations(snapshots):
    names = {n.split("@")[0] for n in CASES}
    assert names == set(snapshots.known_names())


@pytest.mark.parametrize("case", CASES)
def test_top_level(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    assert facts["schema_version"] == 1
    assert set(facts) == {
        "schema_version", "sysroot", "virtualized", "cpu", "system", "iommu", "numa_nodes",
        "gpus", "nics", "pcie", "paths", "rails", "rails_excluded", "rail_pool_out", "warnings",
    }  # fmt: skip
    for key in ("virtualized", "iommu", "cpu", "system", "numa_nodes"):
        assert facts[key] == exp[key], key


@pytest.mark.parametrize("case", CASES)
def test_gpus(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    want = [{k: v for k, v in g.items() if k != "<<"} for g in exp["gpus"]]
    assert facts["gpus"] == want


@pytest.mark.parametrize("case", CASES)
def test_nics(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    assert len(facts["nics"]) == len(exp["nics"])
    for got, want in zip(facts["nics"], exp["nics"]):
        want = dict(want)
        want_ports = want.pop("ports")
        got = dict(got)
        got_ports = got.pop("ports")
        assert got == want, want["bdf"]
        assert len(got_ports) == len(want_ports)
        for gp, wp in zip(got_ports, want_ports):
            wp = dict(wp)
            gp = dict(gp)
            gids = gp.pop("gids")
            if "gids" in wp:
                assert gids == wp.pop("gids")
            else:
                assert len(gids) == wp.pop("gid_count")
                # every reported entry is non-zero and carries its attributes
                assert all(e["gid"] != "0000:0000:0000:0000:0000:0000:0000:0000" and e["type"] for e in gids)
            assert gp == wp, f"{want['rdma_device']} port {wp['port']}"
            v2 = gp["roce_v2_ipv4"]
            if v2:
                # the chosen entry is the first RoCE v2 entry with an IPv4-mapped GID
                first = next(e for e in gids if e["type"] == "RoCE v2" and e["ipv4"])
                assert v2["gid_index"] == first["index"]


@pytest.mark.parametrize("case", CASES)
def test_pcie_tree(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    assert facts["pcie"]["host_bridges"] == exp["host_bridges"]
    hb_numa = {h["name"]: h["numa_node"] for h in exp["host_bridges"]}
    got = facts["pcie"]["bridges"]
    assert [b["bdf"] for b in got] == [row[0] for row in exp["bridges"]]
    for b, row in zip(got, exp["bridges"]):
        bdf, typ, parent, ids, ctl = row[:5]
        speed = dict(exp.get("bridge_speed") or {})
        if len(row) > 5:
            speed.update(row[5])
        assert b["type"] == typ, bdf
        assert b["parent"] == parent, bdf
        assert f"{b['vendor_id']}:{b['device_id']}" == ids, bdf
        assert b["class"] == "0x060400"
        assert b["subsystem_vendor_id"] == b["vendor_id"]
        assert b["numa_node"] == hb_numa[b["host_bridge"]]
        assert (b["pci_path"][-1] if b["pci_path"] else b["host_bridge"]) == parent
        assert b["pcie"] == speed, bdf
        if ctl is None:
            assert b["acs"] is None
        else:
            assert b["acs"] == {"ctl": ctl, "redirect": bool(ctl & 0x0C)}


def _expand(spec, names):
    if set(spec) == {"all"}:
        return {a: {b: spec["all"] for b in names if b != a} for a in names}
    return spec


@pytest.mark.parametrize("case", CASES)
def test_paths(case, facts_of):
    exp = load(case)
    facts, text = facts_of(exp["snapshot"])
    gpus = [g["name"] for g in facts["gpus"]]
    paths = facts["paths"]
    if exp.get("gpu_nic_from_nvidia_smi"):
        smi = P.parse_topo_matrix(text)["matrix"]
        nics = [n["rdma_device"] for n in facts["nics"]]
        assert paths["gpu_nic"] == {g: {n: smi[g][n] for n in nics} for g in gpus}
        assert paths["nvidia_smi"] == smi
    else:
        assert paths["gpu_nic"] == exp["gpu_nic"]
        assert paths["nvidia_smi"] is None or text is not None
    assert paths["gpu_gpu"] == _expand(exp["gpu_gpu"], gpus)
    assert paths["nvlink"] == _expand(exp["nvlink"], gpus)


@pytest.mark.parametrize("case", CASES)
def test_rails(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    got = [[r["rail"], r["gpu"], r["nic"], r["netdev"], r["path"]] for r in facts["rails"]]
    assert got == exp["rails"]
    # the netdev carrying the RoCE v2 IPv4 address and its 802.1Q VLAN id: the rail NIC's own netdev
    # and None unless the expectations name another (rails_roce: {rail: [netdev, vid]})
    roce = {r["rail"]: [r["roce_netdev"], r["roce_vlan"]] for r in facts["rails"]}
    assert roce == {r[0]: exp.get("rails_roce", {}).get(r[0], [r[3], None]) for r in exp["rails"]}
    by_name = {g["name"]: g["bdf"] for g in facts["gpus"]}
    nic_bdf = {n["rdma_device"]: n["bdf"] for n in facts["nics"]}
    for r in facts["rails"]:
        assert r["gpu_bdf"] == by_name[r["gpu"]]
        assert r["nic_bdf"] == nic_bdf[r["nic"]]


@pytest.mark.parametrize("case", CASES)
def test_the_plan_derives_nccl_from_the_rails(case, facts_of):
    """Discovery names no NCCL setting; the plan's NCCL_IB_HCA and NCCL_NET_GDR_LEVEL of these facts."""
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    ib_hca = _nccl.ib_hca(facts) if facts["rails"] else None
    assert {"ib_hca": ib_hca, "net_gdr_level": _nccl.net_gdr_level(facts)} == exp["planned_nccl"]


@pytest.mark.parametrize("case", CASES)
def test_warnings(case, facts_of):
    exp = load(case)
    facts, _sysroot = facts_of(exp["snapshot"])
    assert [[w["class"], w["device"]] for w in facts["warnings"]] == exp["warnings"]
    for w in facts["warnings"]:
        assert w["class"] in T.WARNING_CLASSES
        assert w["device"] in w["message"]


def test_every_warning_class_is_exercised():
    seen = set()
    for case in CASES:
        seen.update(w[0] for w in load(case)["warnings"])
    assert seen == set(T.WARNING_CLASSES)


def test_node_variants_share_hardware_but_not_identity(facts_of):
    one, _one_root = facts_of("dgx-h200-8x8@1")
    two, _two_root = facts_of("dgx-h200-8x8@2")
    assert [g["bdf"] for g in one["gpus"]] == [g["bdf"] for g in two["gpus"]]
    assert one["rails"] == two["rails"]
    for a, b in zip(one["nics"], two["nics"]):
        assert a["bdf"] == b["bdf"]
        assert a["node_guid"] != b["node_guid"]
        assert a["ports"][0]["mac"] != b["ports"][0]["mac"]
        if a["role"] == "compute":
            r = a["rail"]
            assert a["ports"][0]["roce_v2_ipv4"]["ipv4"] == f"10.{r}.1.1"
            assert b["ports"][0]["roce_v2_ipv4"]["ipv4"] == f"10.{r}.2.1"
