"""The nccl.conf planner against topology fixtures (see fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from intent_support import fabric

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "cases.yml").read_text())["cases"]


def _run(case):
    topology = yaml.safe_load((FIXTURES / case["topology"]).read_text())
    return _nccl.plan(
        topology,
        fabric(**case["fabric"]),
        case["nccl_version"],
        case["socket_ifname"],
        topo_file=case.get("topo_file"),
        gid_index_override=case.get("gid_index"),
        gdr_level=case.get("gdr_level", "auto"),
        extra=case.get("extra"),
    )


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "expect" in c))
def test_plan(name):
    case = CASES[name]
    entries = _run(case)
    assert dict(entries) == case["expect"]
    # The file is rendered in plan order and reads back to the same entries.
    text = _nccl.render(entries, header="# managed")
    assert text.startswith("# managed\n")
    assert list(_nccl.parse(text).items()) == list(entries.items())


@pytest.mark.parametrize("name", sorted(n for n, c in CASES.items() if "error" in c))
def test_plan_refused(name):
    case = CASES[name]
    with pytest.raises(_nccl.NcclPlanError) as info:
        _run(case)
    assert case["error"] in str(info.value)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("dgx-8rail.yml", "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1"),
        ("shared-nic.yml", "=mlx5_0:1"),  # two GPUs on one NIC: listed once
        ("two-rail-mixed-gid.yml", "=mlx5_0:1,mlx5_1:2"),  # the port that carries the rail's netdev
    ],
)
def test_planned_hca_lists_each_rail_nic_once_in_rail_order(name, expected):
    topology = yaml.safe_load((FIXTURES / name).read_text())
    assert _nccl.ib_hca(topology) == expected


@pytest.mark.parametrize(
    ("paths", "level"),
    [
        (["PIX", "PIX"], "PIX"),
        (["PIX", "PXB"], "PXB"),  # the worst rail decides
        (["PXB", "PHB"], "PHB"),
        (["PIX", "NODE"], "PHB"),  # capped at PHB
        (["SYS"], "PHB"),
        ([], None),  # no rails: NCCL decides
        (["PIX", None], None),  # a rail without a path class: NCCL decides
    ],
)
def test_net_gdr_level_is_the_worst_rail_path_capped_at_phb(paths, level):
    topology = {"rails": [{"rail": i, "nic": f"mlx5_{i}", "path": p} for i, p in enumerate(paths)]}
    assert _nccl.net_gdr_level(topology) == level


def test_ib_hca_refuses_more_than_nccl_takes():
    with pytest.raises(_nccl.NcclPlanError, match="NCCL_IB_HCA takes at most 32"):
        _nccl.ib_hca_value([(f"mlx5_{i}", 1) for i in range(33)])
    assert _nccl.ib_hca_value([(f"mlx5_{i}", 1) for i in range(32)]).count(",") == 31


@pytest.mark.parametrize(
    ("version", "older_than_2_21"),
    [
        ("2.20.5", True),
        ("2.21", False),
        ("2.21.0", False),
        ("v2.9.9", True),
        ("2.100.1", False),
        ("2.19.3-1+cuda12.2", True),
        ("3.0", False),
    ],
)
def test_gid_index_version_boundary(version, older_than_2_21):
    assert _nccl.needs_gid_index(version) is older_than_2_21


def _one_rail(first_gid: str) -> dict:
    """One rail port whose GID table is laid out as the kernel lists it (sysfs ports/1/gids/N):
    the MAC-derived IPv6 GID first (RoCE v1 and v2), the IPv4-mapped GID after."""
    ipv4 = "0000:0000:0000:0000:0000:ffff:0a00:0101"
    gids = [
        {"index": 0, "gid": first_gid, "type": "IB/RoCE v1", "ndev": "eth1", "ipv4": None},
        {"index": 1, "gid": first_gid, "type": "RoCE v2", "ndev": "eth1", "ipv4": None},
        {"index": 2, "gid": ipv4, "type": "IB/RoCE v1", "ndev": "eth1", "ipv4": "10.0.1.1"},
        {"index": 3, "gid": ipv4, "type": "RoCE v2", "ndev": "eth1", "ipv4": "10.0.1.1"},
    ]
    port = {"port": 1, "netdev": "eth1", "gids": gids, "roce_v2_ipv4": {"gid_index": 3, "gid": ipv4}}
    return {
        "nics": [{"rdma_device": "mlx5_0", "ports": [port]}],
        "rails": [{"rail": 0, "gpu": "GPU0", "nic": "mlx5_0", "netdev": "eth1"}],
    }


@pytest.mark.parametrize(
    "first_gid, index, refused",
    [
        ("fe80:0000:0000:0000:ba3f:d2ff:fe00:0100", 1, True),
        ("fe80:0000:0000:0000:ba3f:d2ff:fe00:0100", 0, True),
        ("febf:0000:0000:0000:ba3f:d2ff:fe00:0100", 1, True),  # fe80::/10 ends at febf
        ("fec0:0000:0000:0000:ba3f:d2ff:fe00:0100", 1, False),  # site-local, not link-local
        ("fe80:0000:0000:0000:ba3f:d2ff:fe00:0100", 3, False),  # the RoCE v2 IPv4 GID
    ],
)
def test_old_nccl_refuses_an_explicit_link_local_gid_index(first_gid, index, refused):
    topology = _one_rail(first_gid)
    if not refused:
        entries = _nccl.plan(topology, fabric(), "2.20.5", "eth0", gid_index_override=index)
        assert entries["NCCL_IB_GID_INDEX"] == str(index)
        return
    with pytest.raises(_nccl.NcclPlanError) as info:
        _nccl.plan(topology, fabric(), "2.20.5", "eth0", gid_index_override=index)
    message = str(info.value)
    assert message.startswith(f"nccl_config_ib_gid_index: {index} is a link-local GID")
    assert "mlx5_0 port 1 (eth1)" in message and "RoCE v2 IPv4 GID is index 3" in message
