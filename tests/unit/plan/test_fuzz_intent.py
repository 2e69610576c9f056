"""Fuzz the intent checker: any value of any variable gives problems or values, never an exception."""

from __future__ import annotations

import copy

from conftest import check, lab_intent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "yes", "3", "-1", "10.0.0.0/8", "fd00::/8", "{{ oops", "2.x", "=eth0", "^lo", "9" * 5000]),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=12,
)
NODE_VARS = ["gpufabric_fabric", "gpufabric_nccl_version", "gpufabric_sysroot", "roce_ets", "roce_buffer_size",
             "roce_pfc_priorities", "nccl_config_extra", "gpudirect_storage_filesystems", "doca_ofed_version",
             "topology_fail_on", "gpufabric_k8s_node_name", "roce_bakend"]  # fmt: skip
CLUSTER_VARS = ["gpufabric_rails", "gpufabric_cluster_cidrs", "gpufabric_k8s_mode", "network_operator_chart_version",
                "network_operator_extra_values", "rdma_networks_wait_timeout"]  # fmt: skip
FABRIC_KEYS = ["lossless_priority", "data_dscp", "cnp_dscp", "cnp_priority", "roce_tos", "mtu", "ecn", "pfc",
               "rdma_netns_mode", "transport", "lossles_priority"]  # fmt: skip
RAILS_KEYS = ["supernet", "rail_prefix", "block_size", "rails", "nad_type", "label_prefix", "nad_namespace",
              "per_node_prefix", "socket_ifname", "cni_version"]  # fmt: skip

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def _problems_are_text(problems):
    assert isinstance(problems, list)
    assert all(isinstance(p, str) and p for p in problems)


@SETTINGS
@given(name=st.sampled_from(NODE_VARS), value=VALUES)
def test_any_node_variable_value(specs, name, value):
    variables = copy.deepcopy(lab_intent())
    variables[name] = value
    _values, problems = check(specs, "node", variables)
    _problems_are_text(problems)


@SETTINGS
@given(key=st.sampled_from(FABRIC_KEYS), value=VALUES)
def test_any_fabric_key_value(specs, key, value):
    variables = copy.deepcopy(lab_intent())
    variables["gpufabric_fabric"] = dict(variables["gpufabric_fabric"], **{key: value})
    _values, problems = check(specs, "node", variables)
    _problems_are_text(problems)


@SETTINGS
@given(name=st.sampled_from(CLUSTER_VARS), value=VALUES)
def test_any_cluster_variable_value(specs, name, value):
    variables = copy.deepcopy(lab_intent())
    variables[name] = value
    _values, problems = check(specs, "cluster", variables)
    _problems_are_text(problems)


@SETTINGS
@given(key=st.sampled_from(RAILS_KEYS), value=VALUES)
def test_any_rails_key_value(specs, key, value):
    variables = copy.deepcopy(lab_intent())
    variables["gpufabric_rails"] = dict(variables["gpufabric_rails"], **{key: value})
    _values, problems = check(specs, "cluster", variables)
    _problems_are_text(problems)
