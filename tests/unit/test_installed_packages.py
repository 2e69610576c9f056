"""Module installed_packages: ansible_facts.packages from one dpkg-query or rpm query.

The dpkg lines are in the format of `dpkg-query -W -f='${Package} ${Version} ${Architecture}
${db:Status-Abbrev}\\n'` (dpkg-query(1); the status letters are deb-control(5)'s want/status/error
flags); the rpm lines in that of `rpm -qa --queryformat '%{NAME} %{EPOCH} %{VERSION} %{RELEASE}
%{ARCH}\\n'` (rpm(8): EPOCH prints "(none)" for a package without one). The versions are those of
Debian 12 and RHEL 9 packages.
"""

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.module_utils.shared import packages as _packages
from ansible_collections.gpufabric.rollout.plugins.modules import installed_packages

DPKG = """\
dkms 3.0.10-8+deb12u1 all ii
doca-ofed 2.9.1-1 amd64 hi
libc6 2.36-9+deb12u9 amd64 ii
libc6 2.36-9+deb12u9 i386 ii
ibverbs-utils 2410mlnx54-1.2410068 amd64 rc
nfs-common 1:2.6.2-4 amd64 iU
rdma-core 2410mlnx54-1.2410068 amd64 iF
mlnx-tools 2410mlnx54-1.2410068 amd64 un
broken line
"""

RPM = """\
kernel 5.14.0 427.13.1.el9_4 x86_64
kernel (none) 5.14.0 427.13.1.el9_4 x86_64
kernel (none) 5.14.0 503.11.1.el9_5 x86_64
nfs-utils 1 2.5.4 27.el9 x86_64
gpg-pubkey (none) fd431d51 4ae0493b (none)
"""


def test_dpkg_lists_every_package_on_the_node_and_no_other():
    facts = _packages.parse_dpkg_query(DPKG)
    # rc (configuration files left) and un (never installed) are not on the node; unpacked (U) and
    # half-configured (F) packages are, as apt's cache counts them installed.
    assert sorted(facts) == ["dkms", "doca-ofed", "libc6", "nfs-common", "rdma-core"]
    assert facts["doca-ofed"] == [{"version": "2.9.1-1"}]
    assert facts["nfs-common"][0]["version"] == "1:2.6.2-4"  # the epoch stays in a Debian version
    assert len(facts["libc6"]) == 2, "one entry per installed architecture (multiarch)"
    assert {key for entries in facts.values() for e in entries for key in e} <= set(_packages.ENTRY_FIELDS["dpkg"])


def test_rpm_keeps_version_release_and_epoch_apart_and_every_installed_version():
    facts = _packages.parse_rpm_query(RPM)
    assert sorted(facts) == ["gpg-pubkey", "kernel", "nfs-utils"]  # the 4-field line is not a package
    assert facts["kernel"] == [
        {"version": "5.14.0", "release": "427.13.1.el9_4"},  # no epoch: none is set
        {"version": "5.14.0", "release": "503.11.1.el9_5"},
    ]
    assert facts["nfs-utils"] == [{"epoch": 1, "version": "2.5.4", "release": "27.el9"}]
    assert {key for entries in facts.values() for e in entries for key in e} <= set(_packages.ENTRY_FIELDS["rpm"])
    # what the roles compare: RPM versions as dnf pins them (version-release)
    assert _packages.installed_versions(facts["kernel"]) == ["5.14.0-427.13.1.el9_4", "5.14.0-503.11.1.el9_5"]
    assert _packages.missing(["nfs-utils=2.5.4-27.el9", "kernel=5.14.0-5*", "rdma-core"], facts) == ["rdma-core"]


def run(monkeypatch, capsys, args, found=("dpkg-query", "rpm"), result=(0, DPKG, "")):
    calls = []

    def run_command(self, argv, check_rc=False, **_):
        calls.append(argv)
        return result

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(
        AnsibleModule, "get_bin_path", lambda self, name, *a, **k: f"/usr/bin/{name}" if name in found else None
    )
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        installed_packages.main()
    return exc.value.code, json.loads(capsys.readouterr().out), calls


def test_auto_reads_dpkg_with_one_query_and_changes_nothing(monkeypatch, capsys):
    code, out, calls = run(monkeypatch, capsys, {"_ansible_check_mode": True})
    assert code == 0 and out["changed"] is False and out["manager"] == "dpkg"
    assert calls == [["dpkg-query", "-W", "-f=" + _packages.DPKG_QUERY_FORMAT]]
    assert out["ansible_facts"]["packages"] == _packages.parse_dpkg_query(DPKG)


def test_auto_reads_rpm_where_there_is_no_dpkg(monkeypatch, capsys):
    code, out, calls = run(monkeypatch, capsys, {}, found=("rpm",), result=(0, RPM, ""))
    assert code == 0 and out["manager"] == "rpm"
    assert calls == [["rpm", "-qa", "--queryformat", _packages.RPM_QUERY_FORMAT]]
    assert out["ansible_facts"]["packages"]["nfs-utils"][0]["release"] == "27.el9"


def test_a_missing_tool_or_a_failed_query_fails_naming_it(monkeypatch, capsys):
    code, out, calls = run(monkeypatch, capsys, {"manager": "rpm"}, found=("dpkg-query",))
    assert code == 1 and calls == []
    assert out["msg"] == "manager: rpm needs rpm, which is not on the PATH of this host"
    code, out, _calls = run(monkeypatch, capsys, {}, result=(2, "", "dpkg-query: error: cannot open status\n"))
    assert code == 1 and out["msg"] == "dpkg-query -W failed (exit 2): dpkg-query: error: cannot open status"
