"""A run that changes gpufabric_k8s_device_allocation is refused while Pods hold GPU or rail devices:
the cluster's mode is read from the GPU Operator's custom resource, the Pods that hold devices are
named (GPUs, MIG slices, SR-IOV VFs, RDMA shared devices, DRA claims), the operators' own
namespaces and finished Pods are left out, and the filters read kubernetes.core.k8s_info's results."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.plan import (
    allocation_change_refusal,
    allocation_cluster_mode,
    allocation_mode_reads,
)
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.allocation_change import (
    SHOWN,
    cluster_mode,
    device_users,
    refusal,
)


def pod(name, namespace="team-a", phase="Running", requests=None, limits=None, init=None, claims=None):
    container = {"name": "main", "resources": {}}
    if requests:
        container["resources"]["requests"] = requests
    if limits:
        container["resources"]["limits"] = limits
    spec = {"containers": [container]}
    if init:
        spec["initContainers"] = [{"name": "init", "resources": {"limits": init}}]
    if claims:
        spec["resourceClaims"] = [{"name": c, "resourceClaimTemplateName": c} for c in claims]
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": {"phase": phase}}


@pytest.mark.parametrize(
    ("policies", "clusters", "mode"),
    [([{}], [], "device_plugin"), ([], [{}], "dra"), ([{}], [{}], "dra"), ([], [], None), (None, None, None)],
)
def test_the_cluster_mode_is_read_from_the_operator_resource(policies, clusters, mode):
    assert cluster_mode(policies, clusters) == mode


def test_each_kind_of_device_is_named_and_other_pods_are_not():
    pods = [
        pod("trainer", limits={"nvidia.com/gpu": 8, "cpu": 4}),
        pod("mig", requests={"nvidia.com/mig-1g.10gb": 1}),
        pod("vf", limits={"nvidia.com/sriov_rail0": 1}),
        pod("rdma", limits={"rdma/rdma_shared_rail0": 1}),
        pod("init-only", init={"nvidia.com/gpu": 1}),
        pod("claims", claims=["gpus", "nics"]),
        pod("web", limits={"cpu": 1, "memory": "1Gi"}),
        pod("done", phase="Succeeded", limits={"nvidia.com/gpu": 8}),
        pod("crashed", phase="Failed", limits={"nvidia.com/gpu": 8}),
        pod("exporter", namespace="gpu-operator", limits={"nvidia.com/gpu": 1}),
        "not a pod",
    ]
    assert device_users(pods, ["gpu-operator", ""]) == [
        "team-a/claims (resource claims gpus, nics)",
        "team-a/init-only (nvidia.com/gpu)",
        "team-a/mig (nvidia.com/mig-1g.10gb)",
        "team-a/rdma (rdma/rdma_shared_rail0)",
        "team-a/trainer (nvidia.com/gpu)",
        "team-a/vf (nvidia.com/sriov_rail0)",
    ]


def test_a_pending_pod_counts_it_will_be_scheduled_with_the_old_devices():
    assert device_users([pod("queued", phase="Pending", limits={"nvidia.com/gpu": 1})]) == [
        "team-a/queued (nvidia.com/gpu)"
    ]


def test_a_change_with_device_users_is_refused_naming_the_variable_both_modes_and_the_pods():
    message = refusal("dra", "device_plugin", ["team-a/trainer (nvidia.com/gpu)"])
    assert message.startswith(
        "gpufabric_k8s_device_allocation: this run would move the cluster from device_plugin to dra"
    )
    assert "1 Pod(s) still hold GPU or rail devices: team-a/trainer (nvidia.com/gpu)." in message
    assert "Nothing was changed" in message
    assert "keep gpufabric_k8s_device_allocation: device_plugin" in message


def test_a_long_list_is_cut_and_counted():
    users = [f"team-a/p{i:02d} (nvidia.com/gpu)" for i in range(SHOWN + 3)]
    message = refusal("device_plugin", "dra", users)
    assert f"{SHOWN + 3} Pod(s)" in message
    assert f"p{SHOWN - 1:02d}" in message and f"p{SHOWN:02d}" not in message
    assert "(and 3 more)" in message


@pytest.mark.parametrize(
    ("planned", "current", "users"),
    [
        ("dra", "dra", ["team-a/x (nvidia.com/gpu)"]),  # no change
        ("dra", None, ["team-a/x (nvidia.com/gpu)"]),  # first run: no operator resource yet
        ("dra", "device_plugin", []),  # the maintenance window: nothing holds devices
    ],
)
def test_no_refusal_without_a_change_or_without_device_users(planned, current, users):
    assert refusal(planned, current, users) is None


def looped(policy, gpu_cluster):
    reads = allocation_mode_reads()
    found = {"device_plugin": policy, "dra": gpu_cluster}
    return {"results": [{"item": read, "resources": [{}] if found[read["mode"]] else []} for read in reads]}


def test_the_reads_name_the_operator_resources_the_plan_gives():
    assert [(r["kind"], r["name"], r["mode"]) for r in allocation_mode_reads()] == [
        ("ClusterPolicy", "cluster-policy", "device_plugin"),
        ("GPUCluster", "gpu-cluster", "dra"),
    ]


@pytest.mark.parametrize(
    ("policy", "gpu_cluster", "mode"),
    [(True, False, "device_plugin"), (False, True, "dra"), (False, False, "")],
)
def test_the_mode_filter_reads_the_looped_result(policy, gpu_cluster, mode):
    assert allocation_cluster_mode(looped(policy, gpu_cluster)) == mode


def test_the_refusal_filter_reads_the_pods_result_and_skips_namespaces():
    pods = {
        "resources": [
            pod("trainer", limits={"nvidia.com/gpu": 8}),
            pod("dp", "gpu-operator", limits={"nvidia.com/gpu": 1}),
        ]
    }
    message = allocation_change_refusal(pods, "dra", "device_plugin", ["gpu-operator"])
    assert "1 Pod(s)" in message and "team-a/trainer" in message and "gpu-operator/dp" not in message
    assert allocation_change_refusal(pods, "dra", "", ["gpu-operator"]) == ""


@pytest.mark.parametrize("bad", [None, [], "text"])
def test_the_filters_refuse_what_is_not_a_k8s_info_result(bad):
    with pytest.raises(AnsibleFilterError, match="allocation_cluster_mode"):
        allocation_cluster_mode(bad)
    with pytest.raises(AnsibleFilterError, match="allocation_change_refusal"):
        allocation_change_refusal(bad, "dra", "device_plugin")
