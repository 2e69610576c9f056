"""gpufabric_k8s_device_allocation: dra on an API server: refused, naming the variable and the server's
version, unless the server is Kubernetes 1.34 or later and serves resource.k8s.io/v1; the filter
reads kubernetes.core.k8s_cluster_info's result."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.filter.plan import dra_api_refusal
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan.dra_server import refusal, server_version

SERVED = ["v1", "apps/v1", "resource.k8s.io/v1", "resource.k8s.io/v1beta2"]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [("v1.36.0", (1, 36)), ("v1.34.2-eks-1a2b3c", (1, 34)), ("1.33", (1, 33)), ("", ()), (None, ()), ("next", ())],
)
def test_server_version(text, numbers):
    assert server_version(text) == numbers


@pytest.mark.parametrize("version", ["v1.34.0", "v1.36.1", "v2.0.0"])
def test_a_server_with_the_dra_api_is_accepted(version):
    assert refusal(version, SERVED) is None


def test_an_older_server_is_refused_naming_the_variable_and_the_version():
    message = refusal("v1.33.4", ["v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"])
    assert message.startswith("gpufabric_k8s_device_allocation: dra needs resource.k8s.io/v1")
    assert (
        "the API server runs v1.33.4 (Kubernetes v1.33.4, older than 1.34; it does not serve resource.k8s.io/v1)"
        in message
    )
    assert message.endswith("set gpufabric_k8s_device_allocation: device_plugin")


def test_a_new_server_without_the_group_is_refused():
    message = refusal("v1.35.0", ["v1", "apps/v1"])
    assert "runs v1.35.0 (it does not serve resource.k8s.io/v1)" in message


def test_an_unreadable_version_is_refused_even_with_the_api():
    assert "older than 1.34" in refusal("", SERVED)


def test_the_filter_reads_k8s_cluster_info():
    info = {"version": {"server": {"kubernetes": {"gitVersion": "v1.32.9"}}}, "apis": {k: {} for k in SERVED[:2]}}
    assert "runs v1.32.9" in dra_api_refusal(info)
    info = {"version": {"server": {"kubernetes": {"gitVersion": "v1.36.0"}}}, "apis": {k: {} for k in SERVED}}
    assert dra_api_refusal(info) == ""
