"""The plan's part of the rolling upgrade: the host driver the collection installs
(gpufabric_gpu_driver.packages), each node's upgrade section, its record, and the version skew of
the cluster plan."""

from __future__ import annotations

import copy

import pytest
from conftest import HERE, check, lab_intent, node_facts

from ansible_collections.gpufabric.rollout.plugins.action.plan import load_skew_rules
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import cluster as _plan_cluster
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node as _plan_node
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import node_records as _node_records
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import upgrade as _upgrade

SKEW = load_skew_rules(str(HERE.parents[2]))
PACKAGES = ["nvidia-kernel-open-dkms", "nvidia-driver-cuda"]
INDEX = {"packages": {name: ["580.95.05-1", "580.105.08-1"] for name in PACKAGES}}


def intent(**changes):
    variables = copy.deepcopy(lab_intent())
    variables["gpufabric_gpu_driver"] = {"managed_by": "host", "version": "580.105.08", "packages": list(PACKAGES)}
    variables.update(changes)
    return variables


def facts(node=1, driver_installed="580.95.05-1", doca_installed="2.9.1-0.1.4", **changes):
    out = node_facts(node)
    packages = {}
    if driver_installed:
        packages.update({name: [{"version": driver_installed}] for name in PACKAGES})
    if doca_installed:
        packages["doca-ofed"] = [{"version": doca_installed}]
    out["ansible"]["packages"] = packages
    out["driver_index"] = copy.deepcopy(INDEX)
    out["doca"] = {"kind": "doca_ofed", "loaded": "ofed", "loaded_release": "24.10-1.1.4"}
    out.update(changes)
    return out


def plan_of(specs, variables, node_facts_):
    values, problems = check(specs, "node", variables)
    assert problems == []
    return _plan_node.plan_node(values, node_facts_)


def test_a_host_driver_to_install_is_planned_for_its_target(specs):
    plan = plan_of(specs, intent(), facts())
    driver = plan["gpu_driver"]
    assert driver["managed_by"] == "host"
    assert driver["version"] == "580.105.08" and driver["kernel_module"] == "open"
    assert driver["packages"] == PACKAGES
    assert driver["installed"] == "580.95.05-1" and driver["loaded"] == "580.95.05"
    # The decisions take the target, not the older driver still loaded.
    assert plan["gpudirect_rdma"]["driver"] == {"flavour": "open", "version": "580.105.08"}
    # The lab's DOCA repository carries 2.9.1 only in the test index: the node is at its DOCA target.
    assert plan["doca_ofed"]["selected"] == "2.9.1-0.1.4"


def test_the_node_plan_says_what_an_upgrade_changes(specs):
    plan = plan_of(specs, intent(), facts())
    section = plan["upgrade"]
    assert section["window"] is True
    # The lab intent uses DMA-BUF (no nvidia-peermem) and GDS with nvidia-fs on the host.
    assert section["changes"] == ["NVIDIA driver 580.95.05 -> 580.105.08 (module reload)", "nvidia-fs reload"]
    by_layer = {layer["layer"]: layer["action"] for layer in section["layers"]}
    assert by_layer == {"doca_ofed": "none", "gpu_driver": "install+reload", "nvidia_fs": "reload", "qos": "none"}


def test_a_node_at_its_targets_has_nothing_to_change(specs):
    variables = intent(gpufabric_gpu_driver={"managed_by": "host", "version": "580.95.05", "packages": list(PACKAGES)})
    plan = plan_of(specs, variables, facts())
    assert plan["upgrade"] == {"layers": plan["upgrade"]["layers"], "changes": [], "window": False}


def test_the_driver_repository_is_derived_from_the_os_or_given(specs):
    plan = plan_of(specs, intent(), facts())
    assert plan["gpu_driver"]["repo_url"] == "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64"
    given = plan_of(specs, intent(gpu_driver_repo_url="file:///srv/cuda/"), facts())
    assert given["gpu_driver"]["repo_url"] == "file:///srv/cuda"


def test_the_record_carries_the_upgrade_section_and_the_record_version_moved(specs):
    plan = plan_of(specs, intent(), facts())
    record = _node_records.node_record(plan, node_facts(1)["topology"])
    assert record["record_version"] == 4
    assert record["upgrade"] == {"changes": plan["upgrade"]["changes"], "window": True}


def test_the_cluster_plan_reports_unvalidated_pairs_as_notes(specs):
    records = {}
    for index, host in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        variables = intent(gpufabric_k8s_node_name=host)
        records[host] = _node_records.node_record(
            plan_of(specs, variables, facts(index)), node_facts(index)["topology"]
        )
    values, problems = check(specs, "cluster", dict(lab_intent(), network_operator_chart_version="25.10.0"))
    assert problems == []
    result = _plan_cluster.plan(values, records, skew_rules=SKEW)
    assert result["skew_notes"] == []
    # A GPU Operator release whose documentation does not validate the lab's Network Operator release.
    older = dict(values, gpu_operator_chart_version="v25.10.1", gpu_operator_chart_path="")
    notes = _plan_cluster.plan(older, records, skew_rules=SKEW)["skew_notes"]
    assert notes and "not among the Network Operator releases" in notes[0]
    assert (
        "version skew: network_operator_chart_version" in _plan_cluster.plan(older, records, skew_rules=SKEW)["summary"]
    )


def test_the_upgrade_plan_batches_the_lab_nodes(specs):
    records = {}
    for index, host in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        variables = intent(gpufabric_k8s_node_name=host)
        records[host] = _node_records.node_record(
            plan_of(specs, variables, facts(index)), node_facts(index)["topology"]
        )
    values, problems = check(specs, "upgrade", lab_intent())
    assert problems == []
    result = _upgrade.plan(values, records, [], {}, SKEW)
    assert result["batches"] == [["gpu-node-01"], ["gpu-node-02"]]
    assert "gpu-node-02 (Node gpu-node-02): NVIDIA driver 580.95.05 -> 580.105.08 (module reload)" in result["summary"]


@pytest.mark.parametrize("operator_version", ["580.95.05", "595.91.07"])
def test_operator_drivers_in_the_matrix_pass(specs, operator_version):
    nodriver = {"driver_version": None, "driver_flavour": None, "driver_loaded": False, "cuda_version": None}
    records = {}
    for index, host in ((1, "gpu-node-01"), (2, "gpu-node-02")):
        variables = dict(
            lab_intent(),
            gpufabric_k8s_node_name=host,
            gpufabric_gpu_driver={"managed_by": "operator", "version": operator_version, "kernel_module": "open"},
        )
        node = node_facts(index)
        node["gpudirect"].update(nodriver)
        records[host] = _node_records.node_record(plan_of(specs, variables, node), node["topology"])
    values, problems = check(specs, "cluster", lab_intent())
    assert problems == []
    notes = _plan_cluster.plan(values, records, skew_rules=SKEW)["skew_notes"]
    # no note on the drivers; the default Network Operator (26.4.1) is newer than the GPU Operator
    # v26.7 documentation's validated list, which is the one note
    assert [n.split(":")[0] for n in notes] == ["network_operator_chart_version"]
