"""Module package_holds: one dpkg-query, and one dpkg --set-selections for what differs.

dpkg-query's Status field is "WANT ERROR STATUS" (deb-control(5), dpkg-query(1)); the lines below
are in the format of `dpkg-query -W -f='${Package} ${Status}\\n'`.
"""

import json

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.gpufabric.rollout.plugins.modules import package_holds

QUERY = """\
doca-ofed hold ok installed
mlnx-ofed-kernel-dkms install ok installed
rdma-core install ok installed
libibverbs1 hold ok installed
libibverbs1 install ok installed
ibverbs-utils install ok config-files
"""


def run(monkeypatch, capsys, args, query=(1, QUERY, "dpkg-query: no packages found matching absent"), set_rc=0):
    calls = []

    def run_command(self, argv, data=None, check_rc=False, binary_data=False, **_):
        calls.append((argv, data))
        if argv[0] == "dpkg-query":
            return query
        return set_rc, "", "dpkg: error: unexpected line" if set_rc else ""

    monkeypatch.setattr(AnsibleModule, "run_command", run_command)
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        package_holds.main()
    return exc.value.code, json.loads(capsys.readouterr().out), calls


def test_the_selection_of_every_installed_package_is_read():
    wants = package_holds.parse_query(QUERY)
    # A package held on one architecture only is not held; a removed one (config-files) is not installed.
    assert wants == {
        "doca-ofed": "hold",
        "mlnx-ofed-kernel-dkms": "install",
        "rdma-core": "install",
        "libibverbs1": "mixed",
    }


def test_only_the_installed_packages_that_differ_are_set_in_one_call(monkeypatch, capsys):
    names = ["doca-ofed", "mlnx-ofed-kernel-dkms", "rdma-core", "libibverbs1", "ibverbs-utils", "absent"]
    code, result, calls = run(monkeypatch, capsys, {"name": names, "selection": "hold"})

    assert code == 0 and result["changed"] is True
    assert result["changed_packages"] == ["mlnx-ofed-kernel-dkms", "rdma-core", "libibverbs1"]
    assert result["not_installed"] == ["ibverbs-utils", "absent"]
    assert calls[0][0][:3] == ["dpkg-query", "-W", "-f=${Package} ${Status}\\n"] and calls[0][0][3:] == names
    assert calls[1] == (
        ["dpkg", "--set-selections"],
        "mlnx-ofed-kernel-dkms hold\nrdma-core hold\nlibibverbs1 hold\n",
    )
    assert len(calls) == 2


def test_nothing_is_set_when_every_selection_is_right(monkeypatch, capsys):
    code, result, calls = run(monkeypatch, capsys, {"name": ["doca-ofed"], "selection": "hold"})
    assert code == 0 and result["changed"] is False and result["changed_packages"] == []
    assert [call[0][0] for call in calls] == ["dpkg-query"]


def test_release_sets_install_on_the_held_ones(monkeypatch, capsys):
    code, result, calls = run(monkeypatch, capsys, {"name": ["doca-ofed", "rdma-core"], "selection": "install"})
    assert code == 0 and result["changed_packages"] == ["doca-ofed"]
    assert calls[1][1] == "doca-ofed install\n"


def test_check_mode_reports_the_change_and_the_diff_without_setting_it(monkeypatch, capsys):
    args = {"name": ["doca-ofed", "rdma-core"], "selection": "hold", "_ansible_check_mode": True, "_ansible_diff": True}
    code, result, calls = run(monkeypatch, capsys, args)
    assert code == 0 and result["changed"] is True and result["changed_packages"] == ["rdma-core"]
    assert result["diff"] == {
        "before": "doca-ofed hold\nrdma-core install\n",
        "after": "doca-ofed hold\nrdma-core hold\n",
    }
    assert [call[0][0] for call in calls] == ["dpkg-query"]


def test_a_failing_dpkg_query_or_set_selections_fails_naming_it(monkeypatch, capsys):
    code, result, calls = run(
        monkeypatch, capsys, {"name": ["rdma-core"]}, query=(2, "", "dpkg-query: error: database locked")
    )
    assert code == 1 and result["msg"] == "dpkg-query failed (exit 2): dpkg-query: error: database locked"
    assert len(calls) == 1

    code, result, calls = run(monkeypatch, capsys, {"name": ["rdma-core"]}, set_rc=2)
    assert code == 1 and result["msg"].startswith("dpkg --set-selections failed (exit 2)")
    assert result["changed_packages"] == ["rdma-core"]


def test_a_wrong_selection_is_refused_naming_the_choices(monkeypatch, capsys):
    code, result, calls = run(monkeypatch, capsys, {"name": ["rdma-core"], "selection": "held"})
    assert code == 1 and "selection" in result["msg"] and "hold, install" in result["msg"]
    assert calls == []
