# Copyright: (c) 2026, gpufabric.rollout contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package names the host roles share (kernel headers) and the read of what is missing, which
decides whether a role asks apt at all."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.rollout.plugins.filter.plan import FilterModule
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages

FILTERS = FilterModule().filters()

# The shape package_facts returns (ansible.builtin.package_facts, manager apt).
FACTS = {
    "dkms": [{"name": "dkms", "version": "3.0.10-8+deb12u1", "source": "apt"}],
    "linux-headers-6.1.0-28-amd64": [{"name": "linux-headers-6.1.0-28-amd64", "version": "6.1.119-1"}],
    "nfs-common": [],
}


@pytest.mark.parametrize(
    "family, kernel, expected",
    [
        ("Debian", "6.1.0-28-amd64", "linux-headers-6.1.0-28-amd64"),
        ("Debian", "", "linux-headers-generic"),
        ("RedHat", "5.14.0-427.el9.x86_64", "kernel-devel-5.14.0-427.el9.x86_64"),
        ("RedHat", None, "kernel-devel"),
    ],
)
def test_kernel_headers_by_family(family, kernel, expected):
    assert _packages.kernel_headers(family, kernel) == expected
    assert FILTERS["kernel_headers_package"](kernel, family) == expected


def test_doca_prerequisites_name_the_same_headers():
    plan = _doca.profile_packages("doca-ofed", kernel="6.1.0-28-amd64", family="Debian")
    assert plan["prerequisites"] == ["dkms", FILTERS["kernel_headers_package"]("6.1.0-28-amd64")]


def test_missing_keeps_order_and_treats_empty_entries_as_absent():
    wanted = ["nvme-cli", "dkms", "nfs-common", "linux-headers-6.1.0-28-amd64"]
    assert _packages.missing(wanted, FACTS) == ["nvme-cli", "nfs-common"]


def test_missing_filter_takes_one_name_or_a_list():
    assert FILTERS["packages_missing"]("dkms", FACTS) == []
    assert FILTERS["packages_missing"]("linux-headers-6.1.0-31-amd64", FACTS) == ["linux-headers-6.1.0-31-amd64"]
    assert FILTERS["packages_missing"]([], FACTS) == []


def test_missing_without_a_package_read_wants_everything():
    assert FILTERS["packages_missing"](["dkms"], None) == ["dkms"]


def test_missing_compares_pinned_versions_exactly_or_by_prefix():
    facts = {
        "doca-ofed": [{"version": "3.1.0-091000"}],
        "nvidia-gds-12-8": [{"version": "12.8.1-1"}],
        "doca-ofed-rpm": [{"version": "3.1.0", "release": "091000.el9"}],
    }
    wanted = [
        "doca-ofed=3.1.0-091000",  # installed at that version
        "nvidia-gds-12-8=12.8.0-1",  # installed, at another version
        "nvidia-gds-12-8=12.8.*",  # a version starting so
        "doca-ofed=3.2.*",
        "doca-ofed-rpm=3.1.0-091000.el9",  # RPM: version-release
        "libcufile-12-8=12.8.1-1",  # not installed
    ]
    assert _packages.missing(wanted, facts) == [
        "nvidia-gds-12-8=12.8.0-1",
        "doca-ofed=3.2.*",
        "libcufile-12-8=12.8.1-1",
    ]
