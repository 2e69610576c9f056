"""Node plan sections that depend on what the node runs: the NCCL version (nccl.conf entries) and the
RDMA stack found on the node (whether nvidia-peermem can work). The host_layer molecule scenario runs
one NCCL version for all its nodes (the plan refuses nodes that disagree), so the older NCCL's
entries are proven here, from the lab's discovery fixtures."""

from __future__ import annotations

import copy

import pytest
from conftest import check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node


def plan_of(specs, facts, **variables):
    values, problems = check(specs, "node", dict(copy.deepcopy(lab_intent()), **variables))
    assert problems == []
    return _plan_node.plan_node(values, facts)


def rail_gid_indexes(topology):
    nics = {nic["rdma_device"]: nic for nic in topology["nics"]}
    indexes = set()
    for rail in topology["rails"]:
        for port in nics[rail["nic"]]["ports"]:
            if port.get("roce_v2_ipv4"):
                indexes.add(port["roce_v2_ipv4"]["gid_index"])
    return indexes


@pytest.mark.parametrize(
    ("nccl_version", "gid_index"),
    [("2.27.3", False), ("2.21.0", False), ("2.20.3", True), ("2.18.1", True)],
)
def test_nccl_entries_follow_the_nccl_version(specs, nccl_version, gid_index):
    """NCCL before 2.21 cannot pick the RoCE v2 IPv4 GID itself: the plan adds the rails' index from
    discovery; from 2.21 on the entry is left out. Everything else is the same for every version."""
    facts = node_facts(1)
    entries = plan_of(specs, facts, gpufabric_nccl_version=nccl_version)["nccl"]["entries"]
    current = plan_of(specs, facts, gpufabric_nccl_version="2.27.3")["nccl"]["entries"]
    (index,) = rail_gid_indexes(facts["topology"])
    if gid_index:
        assert entries.pop("NCCL_IB_GID_INDEX") == str(index)
    assert "NCCL_IB_GID_INDEX" not in entries
    assert entries == current
    assert list(entries) == ["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_TC", "NCCL_NET_GDR_LEVEL", "NCCL_TOPO_FILE"]
    assert entries["NCCL_IB_HCA"] == "=" + ",".join(f"mlx5_{n}:1" for n in (0, 1, 3, 4, 5, 6, 8, 9))
    assert entries["NCCL_NET_GDR_LEVEL"] == "PIX"  # every rail of the DGX snapshot is PIX


PROPRIETARY = {"gpudirect": {"driver_flavour": "proprietary", "driver_version": "535.183.01", "cuda_version": "12.2"}}


@pytest.mark.parametrize(
    "doca",
    [
        # DOCA-OFED's ofed_info and kernel modules installed, the inbox stack still loaded
        {"kind": "doca_ofed", "profiles": ["doca-ofed"], "loaded": "inbox"},
        # only ofed_info seen (DOCA-OFED installed without its metapackage)
        {"kind": "doca_ofed", "profiles": [], "loaded": "inbox"},
        {"kind": "mlnx_ofed", "profiles": [], "loaded": "ofed"},
        {"kind": "inbox", "profiles": [], "loaded": "ofed"},
    ],
    ids=["doca-ofed-installed", "ofed-info-only", "mlnx-ofed", "ofed-loaded"],
)
def test_an_installed_mofed_stack_makes_peermem_possible_without_doca_ofed_managed(specs, doca):
    facts = node_facts(1, doca=doca, **copy.deepcopy(PROPRIETARY))
    plan = plan_of(specs, facts, gpufabric_doca_ofed_enabled=False, gpufabric_gds_enabled=False)
    assert plan["doca_ofed"] is None
    assert plan["gpudirect_rdma"]["mofed"] is True
    assert plan["gpudirect_rdma"]["method"] == "peermem"


@pytest.mark.parametrize(
    "doca",
    [
        {"kind": "doca_ofed", "profiles": ["doca-ofed-userspace"], "loaded": "inbox"},
        {"kind": "inbox", "profiles": [], "loaded": "inbox"},
        {"kind": "none", "profiles": [], "loaded": "none"},
    ],
    ids=["user-space-profile-only", "inbox", "none"],
)
def test_without_mofed_kernel_modules_peermem_is_refused(specs, doca):
    facts = node_facts(1, doca=doca, **copy.deepcopy(PROPRIETARY))
    with pytest.raises(_plan_node.PlanError) as refused:
        plan_of(specs, facts, gpufabric_doca_ofed_enabled=False, gpufabric_gds_enabled=False)
    problems = refused.value.problems
    assert any("gpudirect_rdma_method" in p and "MOFED/DOCA-OFED is not installed" in p for p in problems), problems


def test_the_node_plan_carries_the_nccl_topology_file_of_its_discovery(specs):
    """The one NCCL topology XML of the node: rendered in the plan from the discovered GPUs and rail
    NICs; nccl_config writes it as NCCL_TOPO_FILE and the topology role as nccl-topo.xml."""
    facts = node_facts(1)
    xml = plan_of(specs, facts)["nccl"]["topology_xml"]
    assert xml.startswith('<system version="1">')
    assert xml.count("<gpu ") == len(facts["topology"]["gpus"])
    for rail in facts["topology"]["rails"]:
        assert f'name="{rail["nic"]}"' in xml
