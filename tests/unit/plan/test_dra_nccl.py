"""dra mode: the node groups' NCCL ConfigMaps against what a claim puts in the Pod
(plugins/module_utils/plan/dra_nccl.py): NCCL_IB_HCA names exactly the rail NICs the claim
templates select, and NCCL_SOCKET_IFNAME selects no rail interface (dra.net keeps their host names).
device_plugin mode is not checked (test_dra_in_plan.py keeps its plan as it was)."""

from __future__ import annotations

import copy

import pytest
from conftest import lab_intent
from test_dra_in_plan import cluster_plan

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import dra_nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.node import PlanError

DRA = {"gpufabric_k8s_device_allocation": "dra", "gpu_operator_components": {"device_plugin": False}}
GROUP = "h200-connectx-7-8r"
RAILS = ["mlx5_0", "mlx5_1", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_8", "mlx5_9"]


@pytest.fixture(scope="module")
def dra_plan(specs):
    return cluster_plan(specs, DRA)[1]


def test_the_configmap_names_exactly_the_nics_a_claim_delivers_in_rail_order(dra_plan):
    group = dra_plan["dra"]["groups"][0]
    assert [r["rdma_device"] for r in group["rails"]] == RAILS
    assert [r["netdev"] for r in group["rails"]][:2] == ["enp24s0np0", "enp31s0np0"]
    env = dra_plan["network"]["nccl"][GROUP]
    assert dra_nccl.hca_devices(env["NCCL_IB_HCA"]) == RAILS
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0"
    configmap = next(o for o in dra_plan["network"]["objects"]["rdma_networks"] if o["kind"] == "ConfigMap")
    assert configmap["data"] == env
    assert dra_nccl.problems(dra_plan["dra"], dra_plan["network"]["nccl"]) == []


def test_an_hca_list_that_differs_from_the_claims_is_named(dra_plan):
    section = dra_plan["dra"]
    for value, why in (
        ("=" + ",".join(f"{d}:1" for d in RAILS[:-1]), "it leaves out mlx5_9, which the claims take"),
        ("=" + ",".join(f"{d}:1" for d in [*RAILS, "mlx5_2"]), "it names mlx5_2, which no claim can deliver"),
        ("=" + ",".join(f"{d}:1" for d in reversed(RAILS)), "its order is not the rails' order"),
    ):
        nccl = {GROUP: {"NCCL_IB_HCA": value, "NCCL_SOCKET_IFNAME": "=eth0"}}
        (problem,) = dra_nccl.problems(section, nccl)
        assert problem.startswith(f"gpufabric_k8s_device_allocation: dra, but node group {GROUP}: NCCL_IB_HCA ")
        assert problem.endswith(why), problem
    assert dra_nccl.problems(None, {GROUP: {"NCCL_IB_HCA": "=mlx5_2:1"}}) == [], "device_plugin: not checked"


@pytest.mark.parametrize(
    ("value", "name", "selected"),
    [
        ("=eth0", "eth0", True),
        ("=eth0", "enp24s0np0", False),
        ("=eth", "eth0", False),
        ("eth", "eth0", True),
        ("en", "enp24s0np0", True),
        ("eth,en", "enp24s0np0", True),
        ("^lo,docker", "enp24s0np0", True),
        ("^lo,docker", "docker0", False),
        ("^=lo", "lo0", True),
        ("^=lo", "lo", False),
    ],
)
def test_socket_ifname_is_read_as_nccl_reads_it(value, name, selected):
    assert dra_nccl.socket_selects(value, name) is selected


@pytest.mark.parametrize("value", ["en", "^lo,docker"])
def test_a_socket_ifname_that_takes_a_rail_is_refused_in_dra_mode_only(specs, value):
    changed = {"gpufabric_rails": dict(lab_intent()["gpufabric_rails"], socket_ifname=value)}
    _values, plugins = cluster_plan(specs, changed)
    assert plugins["network"]["nccl"][GROUP]["NCCL_SOCKET_IFNAME"] == value, "device_plugin: Multus names them net1.."
    with pytest.raises(PlanError) as raised:
        cluster_plan(specs, dict(DRA, **copy.deepcopy(changed)))
    text = str(raised.value)
    assert f"gpufabric_rails.socket_ifname: '{value}' selects the rail interface(s) enp24s0np0, " in text
    assert f"of node group {GROUP}, which gpufabric_k8s_device_allocation: dra moves into the Pod" in text
