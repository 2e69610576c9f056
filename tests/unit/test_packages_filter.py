"""plugins/filter/packages.py: which packages still need their dpkg selection changed."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.rollout.plugins.filter.packages import FilterModule

changes = FilterModule().filters()["dpkg_selection_changes"]

# The format of `dpkg-query -W -f='${Package} ${Status}\n' NAME...` (dpkg-query(1)).
QUERY = """doca-ofed hold ok installed
mlnx-ofed-kernel-dkms hold ok installed
rdma-core install ok installed
libibverbs1 install ok installed
"""


def test_only_packages_not_yet_at_the_selection_are_returned():
    names = ["doca-ofed", "mlnx-ofed-kernel-dkms", "rdma-core", "libibverbs1"]
    assert changes(QUERY, names, "hold") == ["rdma-core", "libibverbs1"]
    assert changes(QUERY, names, "install") == ["doca-ofed", "mlnx-ofed-kernel-dkms"]


def test_a_run_with_every_selection_right_has_nothing_to_do():
    assert changes(QUERY, ["doca-ofed", "mlnx-ofed-kernel-dkms"], "hold") == []


def test_a_package_the_query_did_not_list_is_left_to_dpkg_selections():
    assert changes(QUERY, ["doca-ofed", "ibverbs-utils"], "hold") == ["ibverbs-utils"]
    assert changes("", ["doca-ofed"], "hold") == ["doca-ofed"]


def test_a_multi_arch_package_is_held_only_when_every_architecture_is():
    query = "libibverbs1 hold ok installed\nlibibverbs1 install ok installed\n"
    assert changes(query, ["libibverbs1"], "hold") == ["libibverbs1"]
    assert changes("libibverbs1 hold ok installed\n" * 2, ["libibverbs1"], "hold") == []


def test_an_unknown_selection_is_refused_with_the_allowed_values():
    with pytest.raises(AnsibleFilterError, match=r"one of install, hold, deinstall, purge, got 'held'"):
        changes(QUERY, ["doca-ofed"], "held")
