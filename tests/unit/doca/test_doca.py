"""DOCA-OFED planning, repository indexes and stack detection (fixtures/README.md names the sources)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca as _doca
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_index as _doca_index
from ansible_collections.gpufabric.rollout.plugins.module_utils.plan import doca_stack as _doca_stack

FIXTURES = Path(__file__).parent / "fixtures"
CASES = yaml.safe_load((FIXTURES / "cases.yml").read_text())


def _text(*parts):
    return (FIXTURES.joinpath(*parts)).read_text()


@pytest.mark.parametrize("case", CASES["repo_url"], ids=lambda c: c["url"] if "url" in c else c["error"][:30])
def test_repo_url(case):
    if "error" in case:
        with pytest.raises(_doca.DocaError, match=None) as info:
            _doca.repo_url(case["base"], case["release"], case["os"], case["arch"])
        assert case["error"] in str(info.value)
    else:
        url = _doca.repo_url(case["base"], case["release"], case["os"], case["arch"])
        assert url == case["url"]
        assert _doca.apt_source(url, "/etc/apt/keyrings/doca.asc") == (
            "deb [signed-by=/etc/apt/keyrings/doca.asc] {} ./".format(case["url"])
        )


@pytest.mark.parametrize("case", CASES["os_token"], ids=lambda c: c["token"])
def test_os_token(case):
    assert _doca.os_token(case["distribution"], case["version"]) == case["token"]


@pytest.mark.parametrize("case", CASES["arch_token"], ids=lambda c: c["machine"])
def test_arch_token(case):
    if "error" in case:
        with pytest.raises(_doca.DocaError) as info:
            _doca.arch_token(case["machine"])
        assert case["error"] in str(info.value)
    else:
        assert _doca.arch_token(case["machine"]) == case["token"]


def test_dnf_repo_rendering():
    url = _doca.repo_url(_doca.DEFAULT_BASE_URL, "2.9.1", _doca.os_token("RedHat", "9.4"), _doca.arch_token("x86_64"))
    text = _doca.dnf_repo(url, _doca.gpg_key_url(_doca.DEFAULT_BASE_URL))
    assert text.splitlines() == [
        "[doca]",
        "name=NVIDIA DOCA-Host",
        "baseurl=https://linux.mellanox.com/public/repo/doca/2.9.1/rhel9.4/x86_64/",
        "enabled=1",
        "gpgcheck=1",
        "gpgkey=https://linux.mellanox.com/public/repo/doca/GPG-KEY-Mellanox.pub",
        "module_hotfixes=1",
    ]
    unsigned = _doca.dnf_repo("file:///srv/doca/", "", repo_id="doca-mirror", gpgcheck=False, module_hotfixes=False)
    assert "gpgkey" not in unsigned and "gpgcheck=0" in unsigned and unsigned.startswith("[doca-mirror]\n")
    with pytest.raises(_doca.DocaError, match="doca_ofed_repo_id"):
        _doca.dnf_repo(url, "", repo_id="bad id")


@pytest.mark.parametrize("case", CASES["profiles"], ids=lambda c: "{}-{}".format(c["profile"], c.get("storage")))
def test_profile_packages(case):
    args = (case["profile"], case.get("storage", []), case.get("kernel", ""), case.get("family", "Debian"))
    if "error" in case:
        with pytest.raises(_doca.DocaError) as info:
            _doca.profile_packages(*args)
        assert case["error"] in str(info.value)
        return
    plan = _doca.profile_packages(*args)
    assert plan["install"] == case["install"]
    assert plan["prerequisites"] == case["prerequisites"]
    assert plan["dkms_modules"] == case["dkms_modules"]
    assert set(case["holds"]) <= set(plan["hold"])
    assert not set(case.get("not_held", [])) & set(plan["hold"])


@pytest.mark.parametrize(("left", "right", "order"), CASES["version_order"])
def test_compare_versions_like_dpkg(left, right, order):
    assert _doca_index.compare_versions(left, right) == order
    assert _doca_index.compare_versions(left=right, right=left) == -order


def test_packages_index():
    index = _doca_index.parse_packages_index(_text("Packages"))
    assert index["doca-ofed"] == ["2.9.1-0.1.4", "2.9.2-0.1.8"]
    # the continuation line "Version: 9.9.9" inside a Description is not a field
    assert index["doca-roce"] == ["2.9.2-0.1.8"]
    assert index["mlnx-ofed-kernel-dkms"] == ["24.10.OFED.24.10.1.1.4.1-1", "24.10.OFED.24.10.2.1.8.1-1"]
    assert set(index) == {"doca-ofed", "doca-roce", "mlnx-ofed-kernel-dkms", "rdmacm-utils"}


@pytest.mark.parametrize("case", CASES["select_version"], ids=lambda c: "{}={}".format(c["package"], c["wanted"]))
def test_select_version(case):
    index = _doca_index.parse_packages_index(_text("Packages"))
    if "error" in case:
        with pytest.raises(_doca.DocaError) as info:
            _doca_index.select_version(index, case["package"], case["wanted"])
        assert case["error"] in str(info.value)
    else:
        assert _doca_index.select_version(index, case["package"], case["wanted"]) == case["selected"]


def test_dnf_metadata():
    assert _doca_index.primary_location(_text("repodata", "repomd.xml")) == "repodata/2222-primary.xml.gz"
    index = _doca_index.parse_primary_xml(_text("repodata", "primary.xml"))
    assert index["doca-ofed"] == ["2.9.1-0.1.4.el9", "2.9.2-0.1.8.el9"]
    assert index["kmod-iser"] == ["1:24.10-OFED.24.10.2.1.8.1.rhel9u4"]
    assert _doca_index.select_version(index, "doca-ofed", "2.9.2") == "2.9.2-0.1.8.el9"


@pytest.mark.parametrize(("name", "expected"), sorted(CASES["ofed_info"].items()))
def test_ofed_info(name, expected):
    assert _doca_stack.parse_ofed_info(_text("ofed_info", name)) == expected


@pytest.mark.parametrize(("version", "release"), CASES["dkms_release"])
def test_release_from_dkms_version(version, release):
    assert _doca_stack.ofed_release_from_dkms_version(version) == release


def test_release_matches():
    assert _doca.release_matches("24.10-1.1.4.0.200", "24.10-1.1.4")
    assert _doca.release_matches("24.10-1.1.4", "24.10-1.1.4")
    assert not _doca.release_matches("24.10-1.1.40", "24.10-1.1.4")
    assert not _doca.release_matches(None, "24.10-1.1.4")


def test_dkms_status_formats():
    new = _doca_stack.parse_dkms_status(_text("dkms", "dkms3.txt"))
    assert [(e["module"], e["version"], e["kernel"], e["state"]) for e in new] == [
        ("mlnx-nfsrdma", "24.10.OFED.24.10.1.1.4.1", "6.8.0-45-generic", "installed"),
        ("mlnx-ofed-kernel", "24.10.OFED.24.10.1.1.4.1", "6.8.0-45-generic", "installed"),
        ("nvidia", "565.57.01", "6.8.0-45-generic", "installed"),
    ]
    old = _doca_stack.parse_dkms_status(_text("dkms", "dkms2.txt"))
    assert old[0] == {
        "module": "mlnx-ofed-kernel",
        "version": "5.8",
        "kernel": "5.15.0-91-generic",
        "arch": "x86_64",
        "state": "installed",
    }
    assert old[1]["module"] == "nvidia" and old[1]["state"] == "added" and old[1]["kernel"] == ""


@pytest.mark.parametrize("case", CASES["detect"], ids=lambda c: c["name"])
def test_detect_stack(case):
    stack = _doca_stack.detect_stack(_text("ofed_info", case["ofed_info"]), case["packages"], case["modules"])
    for key, value in case["expect"].items():
        assert stack[key] == value, key
    if "pending" in case:
        reason = _doca.pending_reload(stack, case["pending"]["expected"], case["pending"]["profile_kernel"])
        if case["pending"]["reason"] is None:
            assert reason is None
        else:
            assert case["pending"]["reason"] in reason


def test_metapackage_depends_give_exact_component_versions():
    depends = _doca_index.parse_packages_depends(_text("Packages"))
    assert set(depends) == {"doca-ofed", "doca-roce"}
    pinned = _doca_index.exact_dependencies(depends["doca-ofed"]["2.9.1-0.1.4"])
    assert pinned == {
        "mlnx-ofed-kernel-dkms": "24.10.OFED.24.10.1.1.4.1-1",
        "mlnx-ofed-kernel-utils": "24.10.OFED.24.10.1.1.4.1-1",
        "mlnx-tools": "24.10-0.2410068",
    }
    assert _doca_index.exact_dependencies("a (>= 1), b:amd64 (= 2.0-1), e") == {"b": "2.0-1"}
