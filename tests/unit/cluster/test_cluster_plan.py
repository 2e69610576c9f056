"""Cluster planner on the fixture clusters: 8 nodes x 8 rails, and mixed hardware (cases/plans.yml)."""

# ruff: noqa: UP031  -- %-formatting kept for the many-field messages (these strings are compared in tests)

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from intent_support import cluster_plan
from netaddr import IPNetwork
from validate import _SCHEMAS, validate

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import nccl as _nccl
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.network_objects import render_files
from ansible_collections.gpufabric.rollout.plugins.module_utils.proof.cluster_report import report_text

CASES = yaml.safe_load((Path(__file__).parent / "cases" / "plans.yml").read_text())


def _plan(case, dgx, mixed):
    facts = dgx if case["cluster"] == "dgx" else mixed
    return facts, cluster_plan(
        case["intent"], facts, case.get("cidrs"), case.get("fabric"), case.get("nccl_version", "2.27.3")
    )


def _all(plan):
    return [o for part in ("network_operator", "rdma_networks", "sriov_networks") for o in plan["objects"][part]]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_every_object_validates(case, dgx, mixed):
    plan = _plan(case, dgx, mixed)[1]
    checked = {validate(o) for o in _all(plan)}
    assert "core" in checked  # the NCCL ConfigMaps
    assert ("crd" in checked) == bool(_SCHEMAS)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_plan_shape(case, dgx, mixed):
    facts, plan = _plan(case, dgx, mixed)
    exp = case["expect"]
    assert len(plan["node_groups"]) == exp["groups"]
    assert sorted(n for g in plan["node_groups"] for n in g["nodes"]) == sorted(facts)
    assert [o["kind"] for o in plan["objects"]["network_operator"]] == exp["policies"]
    pools = [o for o in plan["objects"]["rdma_networks"] if o["kind"] in ("IPPool", "CIDRPool")]
    if exp["pool_kind"] is None:
        assert pools == []
    else:
        assert [p["kind"] for p in pools] == [exp["pool_kind"]] * len(plan["rails"])
    if "per_node_prefix" in exp:
        assert {p["spec"]["perNodeNetworkPrefix"] for p in pools} == {exp["per_node_prefix"]}
    nads = [o for o in plan["objects"]["rdma_networks"] if o["kind"] == "NetworkAttachmentDefinition"]
    per_rail = exp["nads_per_rail"]
    for rail in plan["rails"]:
        mine = [n for n in nads if n["metadata"]["labels"]["gpufabric.io/rail"] == rail["name"]]
        want = per_rail if isinstance(per_rail, int) else per_rail.get(rail["rail"], 1)
        assert len(mine) == want, rail["name"]
    if "subnets" in exp:
        assert [r["subnet"] for r in plan["rails"]] == exp["subnets"]
    kinds = {}
    for o in plan["objects"]["sriov_networks"]:
        kinds[o["kind"]] = kinds.get(o["kind"], 0) + 1
    assert kinds == exp.get("sriov_kinds", {})
    gid = [o for o in plan["objects"]["rdma_networks"] if o["metadata"]["name"] == "nccl-gid-index"]
    assert bool(gid) == exp.get("gid_script", False)
    # file names for render mode are unique
    assert len({f["file"] for f in render_files(_all(plan))}) == len(_all(plan))


def _device_plugin_entries(policy):
    return json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])["configList"]


def test_dgx_selectors_match_discovered_nics(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16"}, dgx, {}, None, "2.27.3")
    entries = _device_plugin_entries(plan["objects"]["network_operator"][0])
    assert [e["resourceName"] for e in entries] == ["rail%d" % i for i in range(8)]
    for entry in entries:
        rail = int(entry["resourceName"][4:])
        for node, facts in dgx.items():
            nic = next(n for n in facts["nics"] if n.get("rail") == rail)
            sel = entry["selectors"]
            assert nic["vendor_id"] in sel["vendors"], node
            assert nic["device_id"] in sel["deviceIDs"], node
            assert nic["driver"] in sel["drivers"], node
            assert sel["ifNames"] == [n["netdevs"][0] for n in facts["nics"] if n.get("rail") == rail]
        # no other compute NIC of any node is selected by this rail's resource
        others = {n["netdevs"][0] for f in dgx.values() for n in f["nics"] if n.get("rail") not in (None, rail)}
        assert not others & set(entry["selectors"]["ifNames"])


def test_dgx_nads_pools_and_nccl(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16", "block_size": 64}, dgx, {"pod": "10.244.0.0/16"}, None, "2.27.3")
    objs = {(o["kind"], o["metadata"]["name"]): o for o in plan["objects"]["rdma_networks"]}
    example = dgx["gpu-node-1"]
    for rail in plan["rails"]:
        nic = next(n for n in example["nics"] if n.get("rail") == rail["rail"])
        nad = objs[("NetworkAttachmentDefinition", rail["name"])]
        conf = json.loads(nad["spec"]["config"])
        assert conf["master"] == nic["netdevs"][0]
        assert conf["mtu"] == 9000
        assert conf["ipam"] == {"type": "nv-ipam", "poolName": rail["name"]}
        assert nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"] == "rdma/" + rail["name"]
        pool = objs[("IPPool", rail["name"])]
        assert pool["spec"]["perNodeBlockSize"] == 64
        assert IPNetwork(pool["spec"]["gateway"]) in IPNetwork(pool["spec"]["subnet"])
        assert rail["capacity"]["needed"] == 8 * 64
    env = plan["nccl"]["h200-connectx-7-8r"]
    hcas = ["{}:1".format(next(n for n in example["nics"] if n.get("rail") == r)["rdma_device"]) for r in range(8)]
    assert env["NCCL_IB_HCA"] == "=" + ",".join(hcas)
    assert env["NCCL_IB_HCA"] == _nccl.ib_hca(example)  # the value the node's nccl.conf gets
    assert env["NCCL_IB_TC"] == "106"
    assert env["NCCL_SOCKET_IFNAME"] == "=eth0"
    assert "GPUFABRIC_NCCL_GID_SCRIPT" not in env
    labels = plan["node_labels"]["gpu-node-4"]
    assert labels["gpufabric.io/node-group"] == "h200-connectx-7-8r"
    assert labels["gpufabric.io/rails"] == "8"
    assert labels["gpufabric.io/gpu-model"] == example["gpus"][0]["model"]
    assert labels["gpufabric.io/rail-numa"] == ".".join(
        str(next(n for n in example["nics"] if n.get("rail") == r)["numa_node"]) for r in range(8)
    )
    # node_labels owns every key the plan sets (one no longer wanted is removed from the Node)
    assert set(labels) <= set(plan["node_label_owned"])


def test_mixed_cluster_node_policies_select_their_group(mixed):
    rails = [{"rail": 0}, {"rail": 1}] + [{"rail": r, "node_groups": ["h200-connectx-7-8r"]} for r in range(2, 8)]
    plan = cluster_plan({"supernet": "10.200.0.0/16", "rails": rails}, mixed, {}, None, "2.27.3")
    ncp, *nnps = plan["objects"]["network_operator"]
    assert "rdmaSharedDevicePlugin" not in ncp["spec"]
    by_group = {p["spec"]["nodeSelector"]["gpufabric.io/node-group"]: p for p in nnps}
    assert sorted(by_group) == sorted(g["name"] for g in plan["node_groups"])
    for group in plan["node_groups"]:
        entries = _device_plugin_entries(by_group[group["name"]])
        facts = mixed[group["nodes"][0]]
        assert len(entries) == len(group["rail_indexes"])
        for entry in entries:
            nic = next(n for n in facts["nics"] if n.get("rail") == int(entry["resourceName"][4:]))
            assert entry["selectors"]["deviceIDs"] == [nic["device_id"]]
            assert entry["selectors"]["ifNames"] == [nic["netdevs"][0]]
    l40s = next(g for g in plan["node_groups"] if g["gpu_model"] != mixed["h200-node-1"]["gpus"][0]["model"])
    assert plan["nccl"][l40s["name"]]["NCCL_IB_HCA"].count(":1") == 2
    pool2 = next(
        o for o in plan["objects"]["rdma_networks"] if o["kind"] == "IPPool" and o["metadata"]["name"] == "rail2"
    )
    assert pool2["spec"]["nodeSelector"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [
        "h200-connectx-7-8r"
    ]


def test_old_nccl_gets_gid_script(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16"}, dgx, {}, None, "2.18.5")
    env = plan["nccl"]["h200-connectx-7-8r"]
    assert env["GPUFABRIC_NCCL_GID_SCRIPT"].endswith("find-gid-index.sh")
    cm = next(o for o in plan["objects"]["rdma_networks"] if o["metadata"]["name"] == "nccl-gid-index")
    assert cm["data"]["find-gid-index.sh"].startswith("#!/bin/sh")


def test_report_lists_rails_pools_nads(dgx):
    plan = cluster_plan({"supernet": "10.200.0.0/16"}, dgx, {}, None, "2.27.3")
    text = report_text(plan)
    for rail in plan["rails"]:
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(rail["name"] + " "))
        assert rail["subnet"] in line and rail["resource"] in line and "8 nodes" in line
