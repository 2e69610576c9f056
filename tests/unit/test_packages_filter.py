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
    assert changes(names, QUERY, "hold") == ["rdma-core", "libibverbs1"]
    assert changes(names, QUERY, "install") == ["doca-ofed", "mlnx-ofed-kernel-dkms"]


def test_a_run_with_every_selection_right_has_nothing_to_do():
    assert changes(["doca-ofed", "mlnx-ofed-kernel-dkms"], QUERY, "hold") == []


def test_a_package_the_query_did_not_list_is_left_to_dpkg_selections():
    assert changes(["doca-ofed", "ibverbs-utils"], QUERY, "hold") == ["ibverbs-utils"]
    assert changes(["doca-ofed"], "", "hold") == ["doca-ofed"]


def test_a_multi_arch_package_is_held_only_when_every_architecture_is():
    query = "libibverbs1 hold ok installed\nlibibverbs1 install ok installed\n"
    assert changes(["libibverbs1"], query, "hold") == ["libibverbs1"]
    assert changes(["libibverbs1"], "libibverbs1 hold ok installed\n" * 2, "hold") == []


def test_an_unknown_selection_is_refused_with_the_allowed_values():
    with pytest.raises(AnsibleFilterError, match=r"one of install, hold, deinstall, purge, got 'held'"):
        changes(["doca-ofed"], QUERY, "held")


def test_names_piped_in_from_a_select_are_read_once():
    # The roles pipe `packages | select('in', ansible_facts.packages)`, a lazy sequence, into the filter.
    names = (n for n in ["doca-ofed", "rdma-core"])
    assert changes(names, QUERY, "hold") == ["rdma-core"]
