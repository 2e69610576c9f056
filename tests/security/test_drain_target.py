"""Drains fail closed (plugins/module_utils/apply/drain.py target): a host that must be drained before a
reload or reboot, but whose Node cannot be read, found or told apart, is refused with a message
naming it and why; a Node registered under another form of the name is found by its label."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.module_utils.apply import drain as _drain


def node(name, hostname=None, **annotations):
    labels = {"kubernetes.io/hostname": hostname or name}
    return {"metadata": {"name": name, "labels": labels, "annotations": annotations}}


NAMES = ["gpu-node-01", "gpu-node-01", "gpu-node-01", "gpu-node-01.dc1.example.com"]
FOUND_NONE = {"resources": []}


def target(by_name, by_label=None, kubelet=True, mode="auto", required=True, names=None):
    by_label = FOUND_NONE if by_label is None else by_label
    names = NAMES if names is None else names
    return _drain.target("gpu-node-01", mode, required, names, by_name, by_label, kubelet, "gpu_driver_k8s_node_name")


def test_the_node_found_by_the_plans_name_is_drained():
    out = target({"resources": [node("gpu-node-01")]})
    assert out["in_cluster"] and out["name"] == "gpu-node-01" and not out["refuse"]


def test_a_node_registered_under_its_fqdn_is_found_by_its_hostname_label():
    fqdn = node("gpu-node-01.dc1.example.com")
    other = node("gpu-node-02.dc1.example.com")
    out = target(FOUND_NONE, {"resources": [other, fqdn]})
    assert out["in_cluster"] and out["name"] == "gpu-node-01.dc1.example.com" and not out["refuse"]


@pytest.mark.parametrize(
    "by_name, by_label, why",
    [
        ({"failed": True, "msg": "Invalid kube-config file. No configuration found."}, FOUND_NONE, "No configuration"),
        ({"failed": True, "msg": "Max retries exceeded (connection refused)"}, FOUND_NONE, "connection refused"),
        (FOUND_NONE, FOUND_NONE, "no Node named 'gpu-node-01' or labelled kubernetes.io/hostname"),
        (FOUND_NONE, {"failed": True, "msg": "Forbidden"}, "Forbidden"),
        (FOUND_NONE, {"resources": [node("a", "gpu-node-01"), node("b", "gpu-node-01")]}, "several Nodes"),
    ],
)
def test_a_kubelet_host_that_cannot_be_drained_is_refused_naming_it_and_why(by_name, by_label, why):
    out = target(by_name, by_label)
    assert not out["in_cluster"]
    said = "gpu-node-01 is not reloaded or rebooted: it must be drained first (it runs a kubelet)"
    assert out["refuse"].startswith(said)
    assert why in out["refuse"] and "gpu_driver_k8s_node_name" in out["refuse"]


def test_always_needs_the_node_even_without_a_kubelet():
    out = target(FOUND_NONE, FOUND_NONE, kubelet=False, mode="always")
    assert "gpu_driver_k8s_drain is always" in out["refuse"]


def test_a_host_that_is_no_kubernetes_node_is_reloaded_without_a_drain():
    out = target({"failed": True, "msg": "No configuration found"}, FOUND_NONE, kubelet=False)
    assert out == {"in_cluster": False, "name": "gpu-node-01", "node": {}, "refuse": ""}


def test_nothing_is_refused_when_no_reload_follows_and_never_drains_nothing():
    assert target(FOUND_NONE, FOUND_NONE, required=False)["refuse"] == ""
    assert target({"resources": [node("gpu-node-01")]}, mode="never")["in_cluster"] is False
